#include "tools/flowsched/config/config_emitter.h"

#include "tools/flowsched/config/config_schema.h"
#include "yaml-cpp/yaml.h"

namespace flowsched::config {

std::string EmitConfig(const Config& config) {
  Config copy = config;  // the field accessors take a mutable Config
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const std::string& section : SectionNames()) {
    out << YAML::Key << section << YAML::Value << YAML::BeginMap;
    for (const ConfigField& field : Fields()) {
      if (field.section != section) continue;
      out << YAML::Key << std::string(field.key) << YAML::Value;
      const FieldRef ref = field.ref(copy);
      switch (field.kind) {
        case FieldKind::kString:
        case FieldKind::kEnum:
        case FieldKind::kPolicy:
          // Quoted so that "", "true" or "123" stay strings.
          out << YAML::DoubleQuoted << *std::get<std::string*>(ref);
          break;
        case FieldKind::kBool:
          out << *std::get<bool*>(ref);
          break;
        case FieldKind::kInt:
          out << *std::get<int64_t*>(ref);
          break;
        case FieldKind::kStringMap: {
          const auto& map = *std::get<std::map<std::string, std::string>*>(ref);
          if (map.empty()) out << YAML::Flow;
          out << YAML::BeginMap;
          for (const auto& [key, value] : map) {
            out << YAML::Key << key << YAML::Value << YAML::DoubleQuoted
                << value;
          }
          out << YAML::EndMap;
          break;
        }
      }
    }
    if (section == "policy") {
      out << YAML::Key << "parameters" << YAML::Value;
      if (copy.policy.parameters.empty()) out << YAML::Flow;
      out << YAML::BeginMap;
      for (const auto& [name, value] : copy.policy.parameters) {
        out << YAML::Key << name << YAML::Value << value;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace flowsched::config
