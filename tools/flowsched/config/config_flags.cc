#include "tools/flowsched/config/config_flags.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "tools/flowsched/config/config_schema.h"

namespace flowsched::config {
namespace {

const CLI::Option* FindGiven(const ConfigField& field, const CLI::App& root,
                             const CLI::App& command) {
  const CLI::App& owner = field.IsCommon() ? root : command;
  const CLI::Option* option =
      owner.get_option_no_throw(std::string(field.flag));
  return option != nullptr && option->count() > 0 ? option : nullptr;
}

}  // namespace

std::vector<ConfigProblem> ApplyConfigToFlags(const Config& config,
                                              CLI::App& root,
                                              CLI::App& command) {
  const Config defaults;
  std::vector<ConfigProblem> problems;
  for (const ConfigField& field : Fields()) {
    if (!field.AppliesTo(command.get_name())) continue;
    std::vector<std::string> values = FlagValues(field, config);
    if (values == FlagValues(field, defaults)) continue;
    CLI::App& owner = field.IsCommon() ? root : command;
    CLI::Option* option = owner.get_option_no_throw(std::string(field.flag));
    if (option == nullptr || option->count() > 0) continue;
    option->clear();
    option->add_result(std::move(values));
    try {
      option->run_callback();
    } catch (const CLI::Error& e) {
      problems.push_back(
          {field.Path(),
           absl::StrCat("refused by ", std::string(field.flag), ": ", e.what()),
           0});
    }
  }
  return problems;
}

std::vector<ConfigProblem> OverlayGivenFlags(Config& config,
                                             const CLI::App& root,
                                             const CLI::App& command) {
  std::vector<ConfigProblem> problems;
  for (const ConfigField& field : Fields()) {
    const CLI::Option* option = FindGiven(field, root, command);
    if (option == nullptr) continue;
    std::vector<std::string> values = option->results();
    if (field.kind == FieldKind::kBool) {
      values = {option->as<bool>() ? "true" : "false"};
    }
    absl::Status status = SetFromText(field, config, values);
    if (!status.ok()) {
      problems.push_back(
          {field.Path(),
           absl::StrCat(std::string(field.flag), " ", status.message()), 0});
    }
  }
  return problems;
}

void AddServiceFieldFlags(CLI::App& command) {
  for (const ConfigField& field : Fields()) {
    if (field.IsCommon()) continue;
    const std::string help =
        absl::StrCat(std::string(field.help), " (", field.Path(), ")");
    if (field.kind == FieldKind::kBool) {
      command.add_flag(std::string(field.flag), help);
    } else {
      command.add_option(std::string(field.flag), help);
    }
  }
}

}  // namespace flowsched::config
