#include "tools/flowsched/deployment.h"

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "tools/flowsched/process_control.h"

namespace flowsched::tools {
namespace {

constexpr const char* kEmbedded = "embedded";

std::string Bool(bool value) { return value ? "true" : "false"; }

bool ParseBool(absl::string_view text, bool* value) {
  if (text == "true") *value = true;
  if (text == "false") *value = false;
  return text == "true" || text == "false";
}

// A value that must be one word: no spaces, not empty.
bool IsWord(absl::string_view text) {
  return !text.empty() &&
         std::find_if(text.begin(), text.end(), [](char c) {
           return absl::ascii_isspace(static_cast<unsigned char>(c));
         }) == text.end();
}

bool IsLogFormat(absl::string_view text) {
  return text == "text" || text == "json";
}

// One key of the file: how to print it and how to read it back into a
// Deployment (false: the value is invalid; `allowed` says what is).
struct Field {
  const char* key;
  const char* allowed;
  std::function<std::string(const Deployment&)> print;
  std::function<bool(absl::string_view, Deployment&)> parse;
};

const std::vector<Field>& Fields() {
  static const std::vector<Field> kFields = {
      {"brokers", "'embedded' or host:port,...",
       [](const Deployment& d) {
         return d.brokers.empty() ? std::string(kEmbedded) : d.brokers;
       },
       [](absl::string_view v, Deployment& d) {
         d.brokers = v == kEmbedded ? "" : std::string(v);
         return IsWord(v);
       }},
      {"legacy-broker", "true or false",
       [](const Deployment& d) { return Bool(d.legacy_broker); },
       [](absl::string_view v, Deployment& d) {
         return ParseBool(v, &d.legacy_broker);
       }},
      {"topic-prefix", "one word",
       [](const Deployment& d) { return d.topic_prefix; },
       [](absl::string_view v, Deployment& d) {
         d.topic_prefix = std::string(v);
         return IsWord(v);
       }},
      {"cut-every-events", "a count, 0 for clock mode",
       [](const Deployment& d) { return absl::StrCat(d.cut_every_events); },
       [](absl::string_view v, Deployment& d) {
         return absl::SimpleAtoi(v, &d.cut_every_events);
       }},
      {"cut-at-ticks", "true or false",
       [](const Deployment& d) { return Bool(d.cut_at_ticks); },
       [](absl::string_view v, Deployment& d) {
         return ParseBool(v, &d.cut_at_ticks);
       }},
      {"initial-policy", "a policy name",
       [](const Deployment& d) { return d.initial_policy; },
       [](absl::string_view v, Deployment& d) {
         d.initial_policy = std::string(v);
         return IsWord(v);
       }},
      {"algorithm", "a solver algorithm name",
       [](const Deployment& d) { return d.algorithm; },
       [](absl::string_view v, Deployment& d) {
         d.algorithm = std::string(v);
         return IsWord(v);
       }},
      {"solver-workers", "1 to 16",
       [](const Deployment& d) { return absl::StrCat(d.solver_workers); },
       [](absl::string_view v, Deployment& d) {
         return absl::SimpleAtoi(v, &d.solver_workers) &&
                d.solver_workers >= 1 && d.solver_workers <= kMaxSolverWorkers;
       }},
      {"ha", "true or false", [](const Deployment& d) { return Bool(d.ha); },
       [](absl::string_view v, Deployment& d) { return ParseBool(v, &d.ha); }},
      {"log-format", "text or json",
       [](const Deployment& d) { return d.log_format; },
       [](absl::string_view v, Deployment& d) {
         d.log_format = std::string(v);
         return IsLogFormat(v);
       }},
  };
  return kFields;
}

// Appends "  --flag: stored X, requested Y" when a requested fixed setting
// differs from the stored one.
template <typename T, typename Show>
void Compare(const char* flag, const T& stored, const std::optional<T>& wanted,
             Show show, const std::string& note,
             std::vector<std::string>& conflicts) {
  if (!wanted.has_value() || *wanted == stored) return;
  conflicts.push_back(absl::StrCat("  ", flag, ": stored ", show(stored),
                                   ", requested ", show(*wanted), note));
}

}  // namespace

std::string DeploymentPath(const std::string& data_dir) {
  return data_dir + "/deployment";
}

std::string FormatDeployment(const Deployment& deployment) {
  std::string text = absl::StrCat(
      "# How `flowsched up` runs the services of this data directory.\n"
      "# Change it on purpose with `flowsched down`, then `flowsched up "
      "--reset-deployment ...`.\n"
      "version ",
      kDeploymentVersion, "\n");
  for (const Field& field : Fields()) {
    absl::StrAppend(&text, field.key, " ", field.print(deployment), "\n");
  }
  return text;
}

absl::StatusOr<Deployment> ParseDeployment(std::string_view std_text) {
  // Debian's Abseil has its own string_view type.
  const absl::string_view text(std_text.data(), std_text.size());
  Deployment deployment;
  bool versioned = false;
  std::map<std::string, int> seen;  // key -> line
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    const std::string key(line.substr(0, space));
    const absl::string_view value =
        space == absl::string_view::npos
            ? absl::string_view()
            : absl::StripAsciiWhitespace(line.substr(space + 1));
    if (!versioned) {
      int version = 0;
      if (key != "version" || !absl::SimpleAtoi(value, &version)) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", number, ": expected 'version ",
                         kDeploymentVersion, "' first, got '", line, "'"));
      }
      if (version != kDeploymentVersion) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", number, ": version ", version,
                         " is not supported (this flowsched reads version ",
                         kDeploymentVersion, ")"));
      }
      versioned = true;
      continue;
    }
    auto field = std::find_if(Fields().begin(), Fields().end(),
                              [&](const Field& f) { return key == f.key; });
    if (field == Fields().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ": unknown key '", key, "'"));
    }
    if (auto [it, inserted] = seen.emplace(key, number); !inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          "line ", number, ": '", key, "' repeats line ", it->second));
    }
    if (!field->parse(value, deployment)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", number, ": '", key, "' is '", value,
                       "', expected ", field->allowed));
    }
  }
  if (!versioned) return absl::InvalidArgumentError("empty, no version line");
  std::vector<std::string> missing;
  for (const Field& field : Fields()) {
    if (!seen.contains(field.key)) missing.emplace_back(field.key);
  }
  if (!missing.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing ", absl::StrJoin(missing, ", ")));
  }
  return deployment;
}

absl::StatusOr<std::optional<Deployment>> ReadDeploymentFile(
    const std::string& data_dir) {
  const std::string path = DeploymentPath(data_dir);
  std::ifstream in(path);
  if (!in) return std::optional<Deployment>();
  std::stringstream text;
  text << in.rdbuf();
  auto deployment = ParseDeployment(text.str());
  if (!deployment.ok()) {
    return absl::DataLossError(absl::StrCat(
        path, " is not a valid deployment file (",
        deployment.status().message(),
        "); fix it, or remove it and run `flowsched up` with the settings "
        "this data directory was started with"));
  }
  return std::optional<Deployment>(*std::move(deployment));
}

absl::Status WriteDeploymentFile(const std::string& data_dir,
                                 const Deployment& deployment) {
  return WriteFileAtomically(DeploymentPath(data_dir),
                             FormatDeployment(deployment));
}

absl::StatusOr<Deployment> ResolveDeployment(
    const std::optional<Deployment>& stored, const DeploymentRequest& request,
    const std::string& data_dir) {
  if (request.solver_workers.has_value() &&
      (*request.solver_workers < 1 ||
       *request.solver_workers > kMaxSolverWorkers)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--solver-workers ", *request.solver_workers,
                     " is outside 1 to ", kMaxSolverWorkers));
  }
  if (request.log_format.has_value() && !IsLogFormat(*request.log_format)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--log-format '", *request.log_format, "': expected text or json"));
  }
  if (!stored.has_value()) {
    Deployment fresh;
    fresh.brokers = request.brokers.value_or(fresh.brokers);
    fresh.legacy_broker = request.legacy_broker.value_or(fresh.legacy_broker);
    fresh.topic_prefix = request.topic_prefix.value_or(fresh.topic_prefix);
    fresh.cut_every_events =
        request.cut_every_events.value_or(fresh.cut_every_events);
    fresh.cut_at_ticks = request.cut_at_ticks.value_or(fresh.cut_at_ticks);
    fresh.initial_policy =
        request.initial_policy.value_or(fresh.initial_policy);
    fresh.algorithm = request.algorithm.value_or(fresh.algorithm);
    fresh.solver_workers =
        request.solver_workers.value_or(fresh.solver_workers);
    fresh.ha = request.ha.value_or(fresh.ha);
    fresh.log_format = request.log_format.value_or(fresh.log_format);
    return fresh;
  }
  const Deployment& s = *stored;
  auto plain = [](const auto& v) { return absl::StrCat(v); };
  auto flag = [](bool v) { return v ? "on" : "off"; };
  auto brokers = [](const std::string& v) {
    return v.empty() ? std::string("the embedded broker") : v;
  };
  auto cut = [](uint64_t v) {
    return v == 0 ? std::string("0 (rounds follow the clock)")
                  : absl::StrCat(v);
  };
  std::vector<std::string> conflicts;
  Compare("--brokers", s.brokers, request.brokers, brokers, "", conflicts);
  Compare("--legacy-broker", s.legacy_broker, request.legacy_broker, flag, "",
          conflicts);
  Compare("--topic-prefix", s.topic_prefix, request.topic_prefix, plain, "",
          conflicts);
  Compare("--cut-every-events", s.cut_every_events, request.cut_every_events,
          cut, "", conflicts);
  Compare("--cut-at-ticks", s.cut_at_ticks, request.cut_at_ticks, flag, "",
          conflicts);
  if (request.initial_policy.has_value()) {
    Compare("--policy", s.initial_policy, request.initial_policy, plain,
            absl::StrCat(" (--policy only names the policy a fresh data "
                         "directory starts with; switch the running one "
                         "with `flowsched policy set ",
                         *request.initial_policy, "`)"),
            conflicts);
  }
  Compare("--algorithm", s.algorithm, request.algorithm, plain, "", conflicts);
  Compare("--solver-workers", s.solver_workers, request.solver_workers, plain,
          "", conflicts);
  Compare("--ha", s.ha, request.ha, flag, "", conflicts);
  if (!conflicts.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data directory '", data_dir, "' runs with other settings (stored in ",
        DeploymentPath(data_dir), "):\n", absl::StrJoin(conflicts, "\n"),
        "\nRun `flowsched up` without these flags to keep the stored "
        "settings. To change them on purpose: `flowsched down --data-dir ",
        data_dir, "`, then `flowsched up --data-dir ", data_dir,
        " --reset-deployment` with the new flags (the state stays; a "
        "deterministic run reproduces its digest only under one setting)"));
  }
  Deployment resolved = s;
  // Not fixed: how services started from now on write their logs.
  resolved.log_format = request.log_format.value_or(s.log_format);
  return resolved;
}

}  // namespace flowsched::tools
