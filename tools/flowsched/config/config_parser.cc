#include "tools/flowsched/config/config_parser.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/flow/policy_spec.h"
#include "tools/flowsched/config/config_schema.h"
#include "yaml-cpp/yaml.h"

namespace flowsched::config {
namespace {

int LineOf(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

// How a value that has the wrong type looks, for messages.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return "null";
    case YAML::NodeType::Sequence:
      return "a sequence";
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Scalar:
      // Quoted scalars carry the non-specific tag "!": always strings.
      return node.Tag() == "!"
                 ? absl::StrCat("the string \"", node.Scalar(), "\"")
                 : absl::StrCat("\"", node.Scalar(), "\"");
  }
  return "?";
}

bool IsPlainScalar(const YAML::Node& node) {
  return node.IsScalar() && node.Tag() == "?";
}

// Walks the document over a Config, recording every problem.
class Checker {
 public:
  Checker(Config& config, std::vector<ConfigProblem>& problems)
      : config_(config), problems_(problems) {}

  void Document(const YAML::Node& root) {
    if (root.IsNull()) return;  // an empty document: all defaults
    if (!root.IsMap()) {
      Problem("(top level)",
              absl::StrCat("must be a mapping of sections (",
                           absl::StrJoin(SectionNames(), ", "), "), got ",
                           Describe(root)),
              root);
      return;
    }
    ForEachEntry(root, "",
                 [&](const std::string& name, const YAML::Node& key,
                     const YAML::Node& value) {
                   const auto& sections = SectionNames();
                   if (std::find(sections.begin(), sections.end(), name) ==
                       sections.end()) {
                     Problem(name, UnknownSection(name), key);
                     return;
                   }
                   Section(name, key, value);
                 });
  }

 private:
  void Problem(std::string path, std::string why, const YAML::Node& where) {
    problems_.push_back({std::move(path), std::move(why), LineOf(where)});
  }

  // Calls `visit(key, key node, value)` for each entry of the mapping `map`
  // at `path`, reporting non-scalar and duplicate keys instead.
  template <typename Visit>
  void ForEachEntry(const YAML::Node& map, const std::string& path,
                    Visit visit) {
    std::map<std::string, int> first_line;
    for (const auto& entry : map) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) {
        Problem(path.empty() ? "(top level)" : path,
                absl::StrCat("keys must be names, got ", Describe(key)), key);
        continue;
      }
      const std::string name = key.Scalar();
      const std::string entry_path = path.empty() ? name : path + "." + name;
      auto [it, inserted] = first_line.emplace(name, LineOf(key));
      if (!inserted) {
        Problem(entry_path,
                absl::StrCat("duplicate key (first at line ", it->second, ")"),
                key);
        continue;
      }
      visit(name, key, entry.second);
    }
  }

  static std::string UnknownSection(const std::string& name) {
    const std::string closest = ClosestName(name, SectionNames());
    if (!closest.empty()) {
      return absl::StrCat("unknown section; did you mean ", closest, "?");
    }
    for (const ConfigField& field : Fields()) {
      if (field.key == name) {
        return absl::StrCat("unknown section; did you mean ", field.Path(),
                            "?");
      }
    }
    return absl::StrCat(
        "unknown section (known: ", absl::StrJoin(SectionNames(), ", "), ")");
  }

  static std::string UnknownField(const std::string& section,
                                  const std::string& name) {
    const std::vector<std::string> keys = SectionKeys(section);
    std::string closest = ClosestName(name, keys);
    if (!closest.empty()) {
      return absl::StrCat("unknown field; did you mean ", closest, "?");
    }
    closest = ClosestName(name, SectionNames());
    if (!closest.empty()) {
      return absl::StrCat("unknown field; ", closest,
                          " is a top-level section of its own");
    }
    for (const ConfigField& field : Fields()) {
      if (field.key == name) {
        return absl::StrCat("unknown field; did you mean ", field.Path(), "?");
      }
    }
    return absl::StrCat("unknown field (known: ", absl::StrJoin(keys, ", "),
                        ")");
  }

  void Section(const std::string& name, const YAML::Node& key,
               const YAML::Node& value) {
    if (value.IsNull()) return;  // an empty section: its defaults
    if (!value.IsMap()) {
      Problem(
          name,
          absl::StrCat("must be a mapping of fields, got ", Describe(value)),
          key);
      return;
    }
    YAML::Node parameters;
    YAML::Node parameters_key;
    ForEachEntry(value, name,
                 [&](const std::string& field_name, const YAML::Node& field_key,
                     const YAML::Node& field_value) {
                   if (name == "policy" && field_name == "parameters") {
                     parameters =
                         field_value;  // checked once the name is known
                     parameters_key = field_key;
                     return;
                   }
                   for (const ConfigField& field : Fields()) {
                     if (field.section == name && field.key == field_name) {
                       Field(field, field_key, field_value);
                       return;
                     }
                   }
                   Problem(absl::StrCat(name, ".", field_name),
                           UnknownField(name, field_name), field_key);
                 });
    if (parameters_key) PolicyParametersOf(parameters_key, parameters);
  }

  void Field(const ConfigField& field, const YAML::Node& key,
             const YAML::Node& value) {
    std::vector<std::string> text;
    std::string wrong_type;
    switch (field.kind) {
      case FieldKind::kString:
      case FieldKind::kEnum:
      case FieldKind::kPolicy:
        if (!value.IsScalar()) wrong_type = "must be a string";
        break;
      case FieldKind::kBool:
        if (!IsPlainScalar(value)) wrong_type = "must be true or false";
        break;
      case FieldKind::kInt:
        if (!IsPlainScalar(value)) {
          wrong_type = absl::StrCat("must be ", DescribeRange(field));
        }
        break;
      case FieldKind::kStringMap:
        if (!value.IsNull() && !value.IsMap()) {
          wrong_type = "must be a mapping of settings (key: value)";
        }
        break;
    }
    if (!wrong_type.empty()) {
      Problem(field.Path(), absl::StrCat(wrong_type, ", got ", Describe(value)),
              key);
      return;
    }
    if (field.kind == FieldKind::kStringMap) {
      if (value.IsNull()) return;
      bool ok = true;
      ForEachEntry(
          value, field.Path(),
          [&](const std::string& name, const YAML::Node& entry_key,
              const YAML::Node& entry_value) {
            if (!entry_value.IsScalar()) {
              Problem(
                  absl::StrCat(field.Path(), ".", name),
                  absl::StrCat("must be a string, got ", Describe(entry_value)),
                  entry_key);
              ok = false;
              return;
            }
            text.push_back(absl::StrCat(name, "=", entry_value.Scalar()));
          });
      if (!ok) return;
    } else {
      text.push_back(value.Scalar());
    }
    absl::Status status = SetFromText(field, config_, text);
    if (!status.ok()) {
      Problem(field.Path(), std::string(status.message()), key);
    }
  }

  void PolicyParametersOf(const YAML::Node& key, const YAML::Node& value) {
    if (value.IsNull()) return;
    if (!value.IsMap()) {
      Problem("policy.parameters",
              absl::StrCat("must be a mapping of parameter: number, got ",
                           Describe(value)),
              key);
      return;
    }
    const std::string& policy = config_.policy.name;
    const std::vector<flow::PolicyParameter> known =
        flow::PolicyParameters(policy);
    std::vector<std::string> names;
    for (const flow::PolicyParameter& parameter : known) {
      names.push_back(parameter.name);
    }
    const size_t problems_before = problems_.size();
    ForEachEntry(
        value, "policy.parameters",
        [&](const std::string& name, const YAML::Node& entry_key,
            const YAML::Node& entry) {
          const std::string path = absl::StrCat("policy.parameters.", name);
          auto spec = std::find_if(
              known.begin(), known.end(),
              [&](const flow::PolicyParameter& p) { return p.name == name; });
          if (spec == known.end()) {
            std::string why =
                absl::StrCat("unknown parameter of policy \"", policy, "\"");
            if (known.empty()) {
              absl::StrAppend(&why, " (it takes no parameters)");
            } else {
              absl::StrAppend(&why, " (known: ", absl::StrJoin(names, ", "),
                              ")");
              const std::string closest = ClosestName(name, names);
              if (!closest.empty()) {
                absl::StrAppend(&why, "; did you mean ", closest, "?");
              }
            }
            Problem(path, why, entry_key);
            return;
          }
          double number = 0;
          if (!IsPlainScalar(entry) ||
              !absl::SimpleAtod(entry.Scalar(), &number)) {
            Problem(path,
                    absl::StrCat("must be a number, got ", Describe(entry)),
                    entry_key);
            return;
          }
          if (number < spec->min || number > spec->max ||
              (spec->integer && number != std::floor(number))) {
            Problem(path,
                    absl::StrCat("must be ",
                                 spec->integer ? "an integer" : "a number",
                                 " in [", flow::FormatParameterValue(spec->min),
                                 ", ", flow::FormatParameterValue(spec->max),
                                 "], got ", entry.Scalar()),
                    entry_key);
            return;
          }
          config_.policy.parameters[name] = number;
        });
    // Each value in range; now what relates them (a profile's waiting
    // dearer than its dearest placement), as --policy would check it.
    if (problems_.size() != problems_before || known.empty()) return;
    const absl::StatusOr<flow::PolicySpec> spec = flow::ParsePolicySpec(
        flow::FormatPolicySpec({policy, config_.policy.parameters}));
    if (!spec.ok()) {
      Problem("policy.parameters", std::string(spec.status().message()), key);
    }
  }

  Config& config_;
  std::vector<ConfigProblem>& problems_;
};

}  // namespace

std::string ConfigProblem::ToString() const {
  std::string text = absl::StrCat(path, ": ", why);
  if (line > 0) absl::StrAppend(&text, " (line ", line, ")");
  return text;
}

std::vector<ConfigProblem> CheckConfig(std::string_view yaml, Config* config) {
  Config scratch;
  Config& out = config != nullptr ? *config : scratch;
  out = Config();
  std::vector<ConfigProblem> problems;
  std::vector<YAML::Node> documents;
  try {
    documents = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::ParserException& e) {
    problems.push_back({"(yaml)",
                        absl::StrCat("syntax error at column ",
                                     e.mark.column + 1, ": ", e.msg),
                        e.mark.line + 1});
    return problems;
  } catch (const YAML::Exception& e) {
    problems.push_back({"(yaml)", e.what(), 0});
    return problems;
  }
  if (documents.size() > 1) {
    problems.push_back({"(top level)",
                        absl::StrCat("the file holds ", documents.size(),
                                     " YAML documents; expected one"),
                        LineOf(documents[1])});
    return problems;
  }
  if (documents.empty()) return problems;  // empty or only comments
  Checker(out, problems).Document(documents.front());
  return problems;
}

absl::StatusOr<Config> ParseConfig(std::string_view yaml) {
  Config config;
  std::vector<ConfigProblem> problems = CheckConfig(yaml, &config);
  if (!problems.empty()) {
    return absl::InvalidArgumentError(FormatProblems(problems));
  }
  return config;
}

absl::StatusOr<std::string> ReadConfigFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("configuration file '", path, "' is a directory"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read configuration file '", path, "'"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string FormatProblems(const std::vector<ConfigProblem>& problems,
                           std::string_view prefix) {
  std::string text;
  for (const ConfigProblem& problem : problems) {
    if (!text.empty()) text += "\n";
    absl::StrAppend(&text, std::string(prefix), problem.ToString());
  }
  return text;
}

}  // namespace flowsched::config
