#pragma once

// Reads the Google cluster trace 2011 format (clusterdata-2011-2, schema
// v2.1): machine_events and task_events CSV files without a header, times in
// microseconds, sizes normalised to the largest machine. The real trace
// ships gzip'd parts (part-00000-of-00500.csv.gz): concatenate and
// decompress them first (`zcat part-*.csv.gz > task_events.csv`).
//
// machine_events: time, machine ID, event type (0 ADD, 1 REMOVE, 2 UPDATE),
//   platform ID, CPUs, memory.
// task_events: time, missing info, job ID, task index, machine ID, event
//   type (0 SUBMIT, 1 SCHEDULE, 2 EVICT, 3 FAIL, 4 FINISH, 5 KILL, 6 LOST,
//   7 UPDATE_PENDING, 8 UPDATE_RUNNING), user, scheduling class, priority,
//   CPU request, memory request, disk request, different-machine
//   restriction.
//
// What the simulator takes from it: a task arrives at its first SUBMIT and
// runs for (first end event after its first SCHEDULE) - (that SCHEDULE), or
// forever if it never ends in the trace; tasks that never ran in the trace
// are dropped (counted). A machine lives from its first ADD to the next
// REMOVE; UPDATEs and re-ADDs are ignored. The trace has no racks: machines
// in machine-id order are grouped into racks of `machines_per_rack`.
// A time of 2^63-1 (the trace's "after the end") drops the event.

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/sim/workload.h"

namespace flowsched::sim {

enum class BadLinePolicy { kSkip, kFail };

struct TraceOptions {
  BadLinePolicy bad_lines = BadLinePolicy::kSkip;
  // Subsampling by a hash of the id (deterministic, independent of order),
  // then a cap on the count (0: none) in order of first appearance.
  double machine_fraction = 1.0;
  double job_fraction = 1.0;
  uint64_t max_machines = 0;
  uint64_t max_jobs = 0;
  uint64_t machines_per_rack = 40;
};

struct TraceStats {
  uint64_t lines = 0;
  uint64_t skipped = 0;             // bad lines (with kSkip)
  std::vector<std::string> errors;  // the first few, "file:line: why"
  uint64_t tasks_never_ran = 0;
  uint64_t events_after_end = 0;
};

class TraceReader {
 public:
  explicit TraceReader(TraceOptions options) : options_(options) {}

  // `name` is used in error messages ("name:line: ...").
  // InvalidArgument on the first bad line with BadLinePolicy::kFail.
  absl::Status ReadMachineEvents(std::istream& in, const std::string& name);
  absl::Status ReadTaskEvents(std::istream& in, const std::string& name);
  // Opens and reads the two files.
  absl::Status ReadFiles(const std::string& machine_events,
                         const std::string& task_events);

  // The workload read so far (machines, then tasks by arrival).
  [[nodiscard]] Workload Build();
  [[nodiscard]] const TraceStats& stats() const { return stats_; }

 private:
  struct TaskRecord {
    int64_t submit_us = -1;
    int64_t schedule_us = -1;
    int64_t end_us = -1;
    double cpu = 0, memory = 0;
    int32_t priority = 0;
    uint64_t first_seen = 0;
  };
  struct MachineRecord {
    int64_t add_us = -1;
    int64_t remove_us = kForever;
    double cpu = 0, memory = 0;
  };
  absl::Status BadLine(const std::string& name, uint64_t line,
                       const std::string& why);
  absl::Status MachineLine(const std::string& line);
  absl::Status TaskLine(const std::string& line);
  bool KeepJob(uint64_t job);

  TraceOptions options_;
  TraceStats stats_;
  std::map<uint64_t, MachineRecord> machines_;
  std::map<std::pair<uint64_t, uint64_t>, TaskRecord> tasks_;
  std::map<uint64_t, bool> job_kept_;
  uint64_t jobs_kept_ = 0;
  uint64_t sequence_ = 0;
};

// Whether `id` falls in the first `fraction` of a deterministic hash space.
[[nodiscard]] bool InSample(uint64_t id, double fraction);

}  // namespace flowsched::sim
