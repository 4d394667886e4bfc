#pragma once

// How the services of one data directory run, remembered beside its state
// in <data-dir>/deployment so that a later `flowsched up` (after a crash,
// with no flags) starts them the same way: same brokers and topics, same
// round cutting (a deterministic run only reproduces its digest under one
// setting), same solver, same number of workers, same HA mode.
//
// The file is text, one "key value" per line after "version 1", written
// atomically by the first `up` (and by `up --reset-deployment`). Settings
// that would change what the state means are fixed: an `up` that asks for
// another value is refused (ResolveDeployment). The log format is not: an
// explicit --log-format replaces the stored one. --log-level and --kafka
// settings are not stored; each `up` passes its own.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowsched::tools {

struct Deployment {
  std::string brokers;  // empty: the embedded broker of the data directory
  bool legacy_broker = false;
  std::string topic_prefix = "flowsched.";
  uint64_t cut_every_events = 0;
  bool cut_at_ticks = false;
  // The policy a fresh store starts with. The graph manager keeps its
  // active policy in its store (`flowsched policy set` changes it), so this
  // is not the policy in force.
  std::string initial_policy = "load-spreading";
  std::string algorithm = "incremental";
  int solver_workers = 1;
  bool ha = false;
  std::string log_format = "text";  // "text" or "json"

  bool operator==(const Deployment&) const = default;
};

// The settings one `up` command line gave; unset ones take the stored (or,
// for a new deployment, the default) value.
struct DeploymentRequest {
  std::optional<std::string> brokers;
  std::optional<bool> legacy_broker;
  std::optional<std::string> topic_prefix;
  std::optional<uint64_t> cut_every_events;
  std::optional<bool> cut_at_ticks;
  std::optional<std::string> initial_policy;
  std::optional<std::string> algorithm;
  std::optional<int> solver_workers;
  std::optional<bool> ha;
  std::optional<std::string> log_format;
};

inline constexpr int kDeploymentVersion = 1;
inline constexpr int kMaxSolverWorkers = 16;

[[nodiscard]] std::string DeploymentPath(const std::string& data_dir);
[[nodiscard]] std::string FormatDeployment(const Deployment& deployment);
// InvalidArgument naming the line for anything but a complete, valid
// version-1 file: unknown version, unknown, repeated or missing keys, bad
// values.
absl::StatusOr<Deployment> ParseDeployment(std::string_view text);

// nullopt when the data directory has no deployment file yet; DataLoss
// (with the path and what is wrong) when it does not parse.
absl::StatusOr<std::optional<Deployment>> ReadDeploymentFile(
    const std::string& data_dir);
// Unavailable when it cannot be written.
absl::Status WriteDeploymentFile(const std::string& data_dir,
                                 const Deployment& deployment);

// The deployment to run: `stored` (nullopt for a new one) with the
// settings of `request`. FailedPrecondition when the request contradicts a
// fixed stored setting; the message names each one (stored and requested
// value) and how to change them on purpose. InvalidArgument for a request
// that is invalid on its own.
absl::StatusOr<Deployment> ResolveDeployment(
    const std::optional<Deployment>& stored, const DeploymentRequest& request,
    const std::string& data_dir);

}  // namespace flowsched::tools
