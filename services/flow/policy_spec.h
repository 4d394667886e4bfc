#pragma once

// A policy with its tunables: "NAME" or "NAME:key=value,key=value". The
// graph manager stores the canonical text with the network and names it in
// ledger claims, so a restart or a replay rebuilds the same network; the
// `--policy` flag, `flowsched policy set` and the config file's
// `policy.parameters` all end up as this text.
//
// Canonical form: the name alone when every value is the policy's default,
// otherwise the keys that differ from it, sorted, each value in the
// shortest form that reads back to the same number. Two texts that build
// the same policy have the same canonical form.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace flowsched::flow {

// One tunable of a policy: its key, whether it takes integers only, the
// closed range it accepts, its default and its meaning in a line.
struct PolicyParameter {
  std::string name;
  bool integer = true;
  double min = 0;
  double max = 0;
  double default_value = 0;
  std::string help;
};

// The tunables of `policy` (a name of PolicyNames()), in a fixed order;
// empty for an unknown name.
std::vector<PolicyParameter> PolicyParameters(std::string_view policy);

struct PolicySpec {
  std::string name;
  std::map<std::string, double> values;  // only keys that differ from defaults
};

// InvalidArgument naming the problem: an unknown policy (with the known
// names), an unknown key (with the policy's keys), a value that is not a
// number, not an integer where one is needed, out of range, or a key given
// twice.
absl::StatusOr<PolicySpec> ParsePolicySpec(std::string_view text);

// The canonical text of a valid spec.
std::string FormatPolicySpec(const PolicySpec& spec);

// ParsePolicySpec then FormatPolicySpec.
absl::StatusOr<std::string> CanonicalPolicySpec(std::string_view text);

// The shortest decimal text that reads back as `value` ("0.5", "20").
std::string FormatParameterValue(double value);

}  // namespace flowsched::flow
