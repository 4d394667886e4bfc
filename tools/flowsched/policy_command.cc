// `flowsched policy set NAME[:key=value,...]` and `flowsched policy list`:
// switching the scheduling policy of a running graph manager through the events
// topic.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "flowsched/v1/events.pb.h"
#include "fmt/format.h"
#include "services/bus/producer.h"
#include "services/common/logging.h"
#include "services/flow/policy_spec.h"
#include "services/flow/scheduling_policy.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/event_submitter.h"

namespace flowsched::tools {

CommandMain AddPolicyCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "policy", "Switch the scheduling policy of the running graph manager");
  cmd->require_subcommand(1);
  auto* set = cmd->add_subcommand(
      "set",
      "Publish a SetPolicy event: the graph manager rebuilds the network "
      "under the policy before its next round and keeps it across restarts");
  auto* list = cmd->add_subcommand(
      "list", "Print the known policies and the parameters each takes");
  auto name = std::make_shared<std::string>();
  auto params = std::make_shared<std::vector<std::string>>();
  set->add_option("policy", *name,
                  "Policy name, or NAME:key=value,... (see `flowsched policy "
                  "list`)")
      ->required();
  set->add_option("--param", *params,
                  "A parameter of the policy as key=value (repeatable)");
  return [&flags, set, list, name, params]() {
    if (list->parsed()) {
      for (const std::string& known : flow::PolicyNames()) {
        fmt::print("{}\n", known);
        for (const flow::PolicyParameter& p : flow::PolicyParameters(known)) {
          fmt::print("  {} = {}  [{}, {}]{}  {}\n", p.name,
                     flow::FormatParameterValue(p.default_value),
                     flow::FormatParameterValue(p.min),
                     flow::FormatParameterValue(p.max),
                     p.integer ? " integer" : "", p.help);
        }
      }
      return 0;
    }
    (void)set;
    InitLogging("policy", flags.log_level == "info" ? "warn" : flags.log_level,
                flags.log_format);
    std::string text = *name;
    if (!params->empty()) {
      text += text.find(':') == std::string::npos ? ":" : ",";
      text += absl::StrJoin(*params, ",");
    }
    // Checked here with the registry the graph manager uses, so a typo is
    // refused at once instead of becoming a dead letter.
    auto canonical = flow::CanonicalPolicySpec(text);
    if (!canonical.ok()) {
      std::cerr << "flowsched policy set: " << canonical.status().message()
                << "\n";
      return 2;
    }
    const std::string spec = *canonical;
    auto kafka = ResolveKafka(flags);
    if (!kafka.ok()) {
      std::cerr << "flowsched policy set: " << kafka.status().message() << "\n";
      return 2;
    }
    auto producer = bus::Producer::Create(*kafka);
    if (!producer.ok()) {
      std::cerr << "flowsched policy set: " << producer.status().message()
                << "\n";
      return 1;
    }
    v1::ClusterEvent event;
    event.set_event_id(fmt::format("set-policy-{}", spec));
    event.set_source("cli");
    event.mutable_set_policy()->set_policy(spec);
    // Partition 0: a graph manager in deterministic mode reads only that
    // one, and any other reads all partitions.
    absl::Status sent =
        SubmitEvents(**producer, Topics(flags).events, {event}, 0);
    if (!sent.ok()) {
      std::cerr << "flowsched policy set: " << sent.message() << "\n";
      return 1;
    }
    fmt::print(stderr,
               "requested policy {}; `flowsched status` shows it once the "
               "graph manager applied it\n",
               spec);
    return 0;
  };
}

}  // namespace flowsched::tools
