// The one list of policies: their names, their tunables (key, range,
// meaning) and how each is built from a PolicySpec.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "services/flow/cpu_memory_policy.h"
#include "services/flow/gpu_fragmentation_policy.h"
#include "services/flow/load_spreading_policy.h"
#include "services/flow/network_aware_policy.h"
#include "services/flow/policy_spec.h"
#include "services/flow/priority_policy.h"
#include "services/flow/profile_policy.h"
#include "services/flow/quincy_policy.h"
#include "services/flow/scheduling_policy.h"

namespace flowsched::flow {
namespace {

// Ranges keep every cost a policy derives within solver::kMaxArcCost (2^30)
// at the policy's largest multiplier (1,000 slots, 1,000 priorities);
// profiles clamp their placement costs to it as well.
constexpr double kMaxCost = 1e8;
constexpr double kMaxUnitCost = 1e6;

// A field of a policy's Params struct as a tunable.
template <typename Params>
struct Tunable {
  PolicyParameter info;
  std::function<void(Params&, double)> set;
  std::function<double(const Params&)> get;
};

// A tunable of type T named `name`, set and read through `member_of`, which
// gives the T inside a Params (const or not).
template <typename T, typename Params, typename MemberOf>
Tunable<Params> MakeTunable(std::string name, MemberOf member_of, double min,
                            double max, std::string help) {
  return {
      {.name = std::move(name),
       .integer = std::is_integral_v<T>,
       .min = min,
       .max = max,
       .default_value = 0,
       .help = std::move(help)},
      [member_of](Params& p, double v) { member_of(p) = static_cast<T>(v); },
      [member_of](const Params& p) {
        return static_cast<double>(member_of(p));
      }};
}

template <typename Params, typename T>
Tunable<Params> Field(std::string name, T Params::*member, double min,
                      double max, std::string help) {
  return MakeTunable<T, Params>(
      std::move(name), [member](auto& p) -> auto& { return p.*member; }, min,
      max, std::move(help));
}

// A field of a struct member of a policy's Params (Params::*outer, its
// field *member) as a tunable.
template <typename Params, typename Inner, typename T>
Tunable<Params> NestedField(std::string name, Inner Params::*outer,
                            T Inner::*member, double min, double max,
                            std::string help) {
  return MakeTunable<T, Params>(
      std::move(name),
      [ outer, member ](auto& p) -> auto& { return (p.*outer).*member; }, min,
      max, std::move(help));
}

// Quincy's costs (QuincyNetworkParams), as the fields of `outer`.
template <typename Params>
std::vector<Tunable<Params>> QuincyCostTunables(
    QuincyNetworkParams Params::*outer) {
  using Q = QuincyNetworkParams;
  return {
      NestedField("omega", outer, &Q::omega, 0, 1000,
                  "cost per second a task waits"),
      NestedField("psi", outer, &Q::psi, 0, 1000,
                  "cost per GB read across a rack switch"),
      NestedField("xi", outer, &Q::xi, 0, 1000,
                  "cost per GB read across the core switch"),
      NestedField("delta_computer", outer, &Q::delta_computer, 0, 1,
                  "share of a task's input a preferred computer holds"),
      NestedField("delta_rack", outer, &Q::delta_rack, 0, 1,
                  "share of a task's input a preferred rack holds"),
      NestedField("max_preferences", outer, &Q::max_preferences, 0, 100,
                  "preference arcs per kind (computers, racks) per task"),
      NestedField("omega_cap", outer, &Q::omega_cap, 1, 1 << 28,
                  "the largest waiting or data cost, in cost units"),
      NestedField("stay_bonus", outer, &Q::stay_bonus, 0, 1000,
                  "units a running task's own computer costs less"),
      NestedField("theta_step_us", outer, &Q::theta_step_us, 1000, 60e6,
                  "resolution of the running-time discount, microseconds"),
      NestedField("theta_bits", outer, &Q::theta_bits, 0, 10,
                  "significant bits of the running time past 16 steps"),
  };
}

struct RegistryEntry {
  std::string name;
  std::vector<PolicyParameter> parameters;  // defaults filled in
  std::function<std::unique_ptr<SchedulingPolicy>(const PolicySpec&)> make;
  // What the ranges alone cannot say (relations between values); null: none.
  std::function<absl::Status(const PolicySpec&)> check;
};

// An entry for a policy built as `Policy(params)` from `defaults` with the
// spec's values set through `tunables`, whose params `check` (if given)
// accepts.
template <typename Policy, typename Params>
RegistryEntry Entry(
    std::string name, Params defaults, std::vector<Tunable<Params>> tunables,
    std::type_identity_t<std::function<absl::Status(const Params&)>> check =
        nullptr) {
  RegistryEntry entry{
      .name = std::move(name), .parameters = {}, .make = {}, .check = {}};
  for (const Tunable<Params>& tunable : tunables) {
    PolicyParameter info = tunable.info;
    info.default_value = tunable.get(defaults);
    entry.parameters.push_back(std::move(info));
  }
  const auto params_of =
      [defaults, tunables = std::move(tunables)](const PolicySpec& spec) {
        Params params = defaults;
        for (const Tunable<Params>& tunable : tunables) {
          auto value = spec.values.find(tunable.info.name);
          if (value != spec.values.end()) tunable.set(params, value->second);
        }
        return params;
      };
  entry.make = [params_of](const PolicySpec& spec) {
    return std::unique_ptr<SchedulingPolicy>(
        std::make_unique<Policy>(params_of(spec)));
  };
  if (check) {
    entry.check = [params_of,
                   check = std::move(check)](const PolicySpec& spec) {
      return check(params_of(spec));
    };
  }
  return entry;
}

std::vector<Tunable<LoadSpreadingParams>> LoadSpreadingTunables() {
  using P = LoadSpreadingParams;
  return {
      Field("per_task_cost", &P::per_task_cost, 0, kMaxUnitCost,
            "the k-th new task on a machine costs per_task_cost * "
            "(running + k - 1)"),
      Field("unscheduled_cost", &P::unscheduled_cost, 1, kMaxCost,
            "cost of a task waiting a round (keep above per_task_cost * "
            "the most slots a machine has)"),
      Field("preemption_cost", &P::preemption_cost, 0, kMaxCost,
            "cost of a running task leaving its machine"),
      Field("min_shape_machines", &P::min_shape_machines, 1, 1e6,
            "least machines a request shape's class reaches"),
      Field("shape_machines_per_task", &P::shape_machines_per_task, 1, 1e3,
            "machines a request shape's class reaches per waiting task"),
      Field("gang_first_after_s", &P::gang_first_after_s, 0, 86'400,
            "seconds a gang waits before its shape is offered room first"),
  };
}

std::vector<Tunable<CpuMemoryParams>> CpuMemoryTunables() {
  using P = CpuMemoryParams;
  return {
      Field("util_scale", &P::util_scale, 1, kMaxUnitCost,
            "cost of a machine at full utilisation"),
      Field("unscheduled_cost", &P::unscheduled_cost, 1, kMaxCost,
            "cost of a task waiting a round"),
      Field("preemption_cost", &P::preemption_cost, 0, kMaxCost,
            "cost of a running task leaving its machine"),
      Field("preferred_discount", &P::preferred_discount, 0, kMaxUnitCost,
            "discount on machines matching the preferred labels"),
      Field("gang_first_after_s", &P::gang_first_after_s, 0, 86'400,
            "seconds a gang waits before its shape is offered room first"),
  };
}

std::vector<Tunable<ProfileParams>> ProfileTunables() {
  using P = ProfileParams;
  std::vector<Tunable<ProfileParams>> tunables = {
      Field("spread", &P::spread, 0, kMaxUnitCost,
            "weight of load spreading: dominant utilisation after k tasks"),
      Field("pack", &P::pack, 0, kMaxUnitCost,
            "weight of packing: room a machine keeps after one task"),
      Field("preferred_labels", &P::preferred_labels, 0, kMaxUnitCost,
            "discount on machines matching the preferred labels"),
      Field("model_affinity", &P::model_affinity, 0, kMaxUnitCost,
            "weight of a machine's devices not of a preferred model"),
      Field("locality", &P::locality, 0, kMaxUnitCost,
            "cost of a machine outside the rack holding a task's input"),
      Field("tasks", &P::tasks, 0, kMaxUnitCost,
            "cost of each task a machine already has (load spreading)"),
      Field("network", &P::network, 0, kMaxUnitCost,
            "cost per MiB/s a machine's link carries after k tasks "
            "(reported use or requests, the larger; network-aware)"),
      Field("fragmentation", &P::fragmentation, 0, kMaxUnitCost,
            "weight of the GPU fragmentation one task adds (FGD's score)"),
      Field("fragmentation_levels", &P::fragmentation_levels, 0, 1000,
            "levels of the fragmentation score (0: the delta over 64,000 "
            "milli-GPU)"),
      Field("workload_coverage", &P::workload_coverage, 0.01, 1,
            "share of the tasks whose shapes make fragmentation's expected "
            "workload"),
      Field("first_fit", &P::first_fit, 0, kMaxUnitCost,
            "weight of a machine's position in id order (first fit)"),
      Field("unscheduled_cost", &P::unscheduled_cost, 1, kMaxCost,
            "cost of a priority-0 task waiting a round (above every "
            "placement's)"),
      Field("priority_step", &P::priority_step, 0, 1e5,
            "extra waiting cost per priority level"),
      Field("max_priority", &P::max_priority, 0, 1000,
            "priorities are clamped to [0, max_priority]"),
      Field("wait", &P::wait, 0, kMaxUnitCost,
            "extra waiting cost per second a task has waited (Quincy)"),
      Field("wait_cap_s", &P::wait_cap_s, 1, 604'800,
            "seconds of waiting the wait cost counts at most"),
      Field("preemption_cost", &P::preemption_cost, 0, kMaxCost,
            "cost of a running task leaving its machine"),
      Field("max_tasks_per_machine", &P::max_tasks_per_machine, 0, 1e6,
            "tasks a machine may run, running ones included (0: its slots)"),
      Field("network_room_by_use", &P::network_room_by_use, 0, 1,
            "1: a machine's spare bandwidth is its capacity less the larger "
            "of reported use and requests"),
      Field("shape_machines_per_task", &P::shape_machines_per_task, 0, 1e3,
            "machines a shape reserves on per waiting task (0: all it fits)"),
      Field("min_shape_machines", &P::min_shape_machines, 1, 1e6,
            "least machines a shape reserves on when capped"),
      Field("pool_slot_tasks", &P::pool_slot_tasks, 0, 1,
            "1: tasks asking for a slot only share one pool priced by tasks"),
      Field("room_pool", &P::room_pool, 0, 1,
            "1: tasks asking for CPU, memory or network only also share a "
            "pool reaching machines with room for the largest such ask in "
            "every free slot (needs pool_slot_tasks, a cap, tasks as the "
            "only term, not preemptive)"),
      Field("preemptive", &P::preemptive, 0, 1,
            "1: higher priorities may displace running tasks (needs the "
            "pool); with quincy: running tasks may be preempted or moved"),
      Field("migration_cost", &P::migration_cost, 0, kMaxCost,
            "cost of moving a running task through the pool (preemptive)"),
      Field("gang_first_after_s", &P::gang_first_after_s, 0, 86'400,
            "seconds a gang waits before its shape is offered room first"),
      Field("gate", &P::gate, 0, 1,
            "1: one new task per machine a round, through a gate every "
            "fitting shape reaches at one task's price (gpu-fgd's network)"),
      Field("quincy", &P::quincy, 0, 1,
            "1: Quincy's network (X, racks, preferred computers) priced by "
            "omega, psi and xi, with fair shares; preemptive: running "
            "tasks may move"),
      Field("fair", &P::fair, 0, 1,
            "with quincy: 1 bounds each job by its fair share, 0 by one "
            "task and all of its tasks"),
      Field("admission_limit", &P::admission_limit, 0, 1e6,
            "with quincy: jobs admitted to the cluster (0: all)"),
  };
  for (Tunable<ProfileParams>& tunable :
       QuincyCostTunables(&P::quincy_network)) {
    tunable.info.help = absl::StrCat("with quincy: ", tunable.info.help);
    tunables.push_back(std::move(tunable));
  }
  return tunables;
}

std::vector<Tunable<PriorityParams>> PriorityTunables() {
  using P = PriorityParams;
  return {
      Field("per_task_cost", &P::per_task_cost, 0, kMaxUnitCost,
            "load spreading within a priority"),
      Field("unscheduled_cost", &P::unscheduled_cost, 1, kMaxCost,
            "cost of a priority-0 task waiting a round"),
      Field("priority_step", &P::priority_step, 0, 1e5,
            "extra waiting cost per priority level"),
      Field("preemption_penalty", &P::preemption_penalty, 0, kMaxCost,
            "cost of preempting a running task"),
      Field("migration_cost", &P::migration_cost, 0, kMaxCost,
            "cost of moving a running task"),
      Field("max_priority", &P::max_priority, 0, 1000,
            "priorities are clamped to [0, max_priority]"),
      Field("gang_first_after_s", &P::gang_first_after_s, 0, 86'400,
            "seconds a gang waits before its shape is offered room first"),
  };
}

std::vector<Tunable<NetworkAwareParams>> NetworkAwareTunables() {
  using P = NetworkAwareParams;
  return {
      Field("unscheduled_cost", &P::unscheduled_cost, 1, kMaxCost,
            "cost of a task waiting a round"),
      Field("preemption_cost", &P::preemption_cost, 0, kMaxCost,
            "cost of a running task leaving its machine"),
      Field("gang_first_after_s", &P::gang_first_after_s, 0, 86'400,
            "seconds a gang waits before its shape is offered room first"),
  };
}

std::vector<Tunable<GpuFragmentationParams>> GpuFragmentationTunables() {
  using P = GpuFragmentationParams;
  return {
      Field("score_levels", &P::score_levels, 0, 1000,
            "levels of the sigmoid fragmentation score (0: exact delta)"),
      Field("first_fit", &P::first_fit, 0, 1,
            "1: equal scores go to the machine earliest in id order"),
      Field("best_fit", &P::best_fit, 0, 100,
            "weight of the most-allocated term, in score levels"),
      Field("model_affinity", &P::model_affinity, 0, 1000,
            "cost, in score levels, of devices of a model not preferred"),
      Field("unscheduled_cost", &P::unscheduled_cost, 1, kMaxCost,
            "cost of a task waiting a round (above every placement's)"),
      Field("preemption_cost", &P::preemption_cost, 0, kMaxCost,
            "cost of a running task leaving its machine"),
      Field("workload_coverage", &P::workload_coverage, 0.01, 1,
            "share of the tasks whose shapes make the expected workload"),
  };
}

std::vector<Tunable<QuincyParams>> QuincyTunables() {
  std::vector<Tunable<QuincyParams>> tunables =
      QuincyCostTunables(&QuincyParams::network);
  tunables.push_back(Field("admission_limit", &QuincyParams::admission_limit, 0,
                           1e6, "jobs admitted to the cluster (0: all)"));
  return tunables;
}

const std::vector<RegistryEntry>& Registry() {
  static const std::vector<RegistryEntry>* const kRegistry = [] {
    auto* entries = new std::vector<RegistryEntry>();
    entries->push_back(Entry<LoadSpreadingPolicy>(
        "load-spreading", LoadSpreadingParams{}, LoadSpreadingTunables()));
    entries->push_back(Entry<CpuMemoryPolicy>("cpu-memory", CpuMemoryParams{},
                                              CpuMemoryTunables()));
    entries->push_back(Entry<ProfilePolicy>("profile", ProfileParams{},
                                            ProfileTunables(), CheckProfile));
    entries->push_back(Entry<PriorityPolicy>("priority", PriorityParams{},
                                             PriorityTunables()));
    entries->push_back(Entry<NetworkAwarePolicy>(
        "network-aware", NetworkAwareParams{}, NetworkAwareTunables()));
    entries->push_back(Entry<GpuFragmentationPolicy>(
        "gpu-fgd", GpuFragmentationParams{}, GpuFragmentationTunables()));
    for (QuincyVariant variant :
         {QuincyVariant::kQfp, QuincyVariant::kQf, QuincyVariant::kQp,
          QuincyVariant::kQ, QuincyVariant::kQfpx}) {
      const QuincyParams defaults = QuincyParams::ForVariant(variant);
      entries->push_back(Entry<QuincyPolicy>(QuincyVariantName(variant),
                                             defaults, QuincyTunables()));
    }
    return entries;
  }();
  return *kRegistry;
}

const RegistryEntry* FindEntry(std::string_view name) {
  for (const RegistryEntry& entry : Registry()) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// absl's string functions take absl::string_view, which is not
// std::string_view in this build.
std::string_view Trim(std::string_view text) {
  while (!text.empty() &&
         absl::ascii_isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() &&
         absl::ascii_isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> items;
  size_t start = 0;
  for (size_t comma = text.find(','); comma != std::string_view::npos;
       comma = text.find(',', start)) {
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  items.push_back(text.substr(start));
  return items;
}

std::vector<std::string> ParameterNames(const RegistryEntry& entry) {
  std::vector<std::string> names;
  for (const PolicyParameter& parameter : entry.parameters) {
    names.push_back(parameter.name);
  }
  return names;
}

}  // namespace

std::vector<std::string> PolicyNames() {
  std::vector<std::string> names;
  for (const RegistryEntry& entry : Registry()) names.push_back(entry.name);
  return names;
}

std::vector<PolicyParameter> PolicyParameters(std::string_view policy) {
  const RegistryEntry* entry = FindEntry(policy);
  return entry == nullptr ? std::vector<PolicyParameter>{} : entry->parameters;
}

absl::StatusOr<PolicySpec> ParsePolicySpec(std::string_view text) {
  const size_t colon = text.find(':');
  PolicySpec spec;
  spec.name = std::string(Trim(text.substr(0, colon)));
  const RegistryEntry* entry = FindEntry(spec.name);
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown policy '", spec.name,
                     "'; known: ", absl::StrJoin(PolicyNames(), ", ")));
  }
  if (colon == std::string_view::npos) return spec;
  std::map<std::string, double> given;
  for (std::string_view item : SplitCommas(text.substr(colon + 1))) {
    item = Trim(item);
    const size_t eq = item.find('=');
    const std::string key(Trim(item.substr(0, eq)));
    if (eq == std::string_view::npos || key.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", spec.name, ": expected key=value, got '",
                       std::string(item), "'"));
    }
    const PolicyParameter* parameter = nullptr;
    for (const PolicyParameter& p : entry->parameters) {
      if (p.name == key) parameter = &p;
    }
    if (parameter == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy ", spec.name, " has no parameter '", key,
          "' (known: ", absl::StrJoin(ParameterNames(*entry), ", "), ")"));
    }
    const std::string value_text(Trim(item.substr(eq + 1)));
    double value = 0;
    if (!absl::SimpleAtod(value_text, &value) || !std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", spec.name, ": ", key,
                       " must be a number, got '", value_text, "'"));
    }
    if (parameter->integer && value != std::floor(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", spec.name, ": ", key,
                       " must be an integer, got ", value_text));
    }
    if (value < parameter->min || value > parameter->max) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy ", spec.name, ": ", key, " must be in [",
          FormatParameterValue(parameter->min), ", ",
          FormatParameterValue(parameter->max), "], got ", value_text));
    }
    if (!given.emplace(key, value).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", spec.name, ": ", key, " is given twice"));
    }
    if (value != parameter->default_value) spec.values[key] = value;
  }
  if (entry->check) {
    const absl::Status checked = entry->check(spec);
    if (!checked.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", spec.name, ": ", checked.message()));
    }
  }
  return spec;
}

std::string FormatParameterValue(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buffer[64];
  const std::to_chars_result result =
      std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string FormatPolicySpec(const PolicySpec& spec) {
  if (spec.values.empty()) return spec.name;
  std::vector<std::string> items;
  for (const auto& [key, value] : spec.values) {
    items.push_back(absl::StrCat(key, "=", FormatParameterValue(value)));
  }
  return absl::StrCat(spec.name, ":", absl::StrJoin(items, ","));
}

absl::StatusOr<std::string> CanonicalPolicySpec(std::string_view text) {
  absl::StatusOr<PolicySpec> spec = ParsePolicySpec(text);
  if (!spec.ok()) return spec.status();
  return FormatPolicySpec(*spec);
}

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> MakePolicy(
    std::string_view spec_text) {
  absl::StatusOr<PolicySpec> spec = ParsePolicySpec(spec_text);
  if (!spec.ok()) return spec.status();
  return FindEntry(spec->name)->make(*spec);
}

}  // namespace flowsched::flow
