#include "tools/sim/trace_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"

namespace flowsched::sim {
namespace {

constexpr size_t kMaxErrorsKept = 10;
constexpr int64_t kAfterEnd = std::numeric_limits<int64_t>::max();

// A field problem, as text for the error message.
using FieldError = std::string;

bool ParseInt(const std::string& field, int64_t& out) {
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, out);
  return ec == std::errc() && ptr == end;
}

// Non-negative integer; `optional` accepts an empty field (returns -1).
bool ParseId(const std::string& field, bool optional, int64_t& out) {
  if (field.empty()) {
    out = -1;
    return optional;
  }
  return ParseInt(field, out) && out >= 0;
}

// A normalised size in [0, 1]; empty reads as 0 (the trace's "missing").
bool ParseNormalised(const std::string& field, double& out) {
  out = 0;
  if (field.empty()) return true;
  const char* end = field.data() + field.size();
  auto [ptr, ec] = std::from_chars(field.data(), end, out);
  return ec == std::errc() && ptr == end && std::isfinite(out) && out >= 0 &&
         out <= 1.0;
}

std::vector<std::string> Fields(const std::string& line) {
  size_t size = line.size();
  if (size > 0 && line[size - 1] == '\r') --size;
  std::vector<std::string> fields(1);
  for (size_t i = 0; i < size; ++i) {
    if (line[i] == ',') {
      fields.emplace_back();
    } else {
      fields.back().push_back(line[i]);
    }
  }
  return fields;
}

// A deterministic mix of the id (splitmix64), so subsamples do not depend
// on the order of the files.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

bool InSample(uint64_t id, double fraction) {
  if (fraction >= 1.0) return true;
  if (fraction <= 0.0) return false;
  return static_cast<double>(Mix(id) >> 11) * 0x1.0p-53 < fraction;
}

absl::Status TraceReader::BadLine(const std::string& name, uint64_t line,
                                  const std::string& why) {
  const std::string message = absl::StrCat(name, ":", line, ": ", why);
  if (options_.bad_lines == BadLinePolicy::kFail) {
    return absl::InvalidArgumentError(message);
  }
  ++stats_.skipped;
  if (stats_.errors.size() < kMaxErrorsKept) stats_.errors.push_back(message);
  return absl::OkStatus();
}

absl::Status TraceReader::MachineLine(const std::string& line) {
  const std::vector<std::string> f = Fields(line);
  if (f.size() != 6) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 6 fields, got ", f.size()));
  }
  int64_t time = 0, machine = 0, type = 0;
  double cpu = 0, memory = 0;
  if (!ParseInt(f[0], time) || time < 0) {
    return absl::InvalidArgumentError("bad timestamp '" + f[0] + "'");
  }
  if (!ParseId(f[1], false, machine)) {
    return absl::InvalidArgumentError("bad machine ID '" + f[1] + "'");
  }
  if (!ParseInt(f[2], type) || type < 0 || type > 2) {
    return absl::InvalidArgumentError("bad event type '" + f[2] +
                                      "' (0 ADD, 1 REMOVE, 2 UPDATE)");
  }
  if (!ParseNormalised(f[4], cpu)) {
    return absl::InvalidArgumentError("bad CPUs '" + f[4] + "' (0..1)");
  }
  if (!ParseNormalised(f[5], memory)) {
    return absl::InvalidArgumentError("bad memory '" + f[5] + "' (0..1)");
  }
  if (time == kAfterEnd) {
    ++stats_.events_after_end;
    return absl::OkStatus();
  }
  const auto id = static_cast<uint64_t>(machine);
  if (!InSample(id, options_.machine_fraction)) return absl::OkStatus();
  auto it = machines_.find(id);
  if (type == 0) {
    if (it != machines_.end()) return absl::OkStatus();  // re-ADD: ignored
    if (options_.max_machines != 0 &&
        machines_.size() >= options_.max_machines) {
      return absl::OkStatus();
    }
    machines_[id] = MachineRecord{.add_us = time, .cpu = cpu, .memory = memory};
  } else if (type == 1 && it != machines_.end() &&
             it->second.remove_us == kForever && time >= it->second.add_us) {
    it->second.remove_us = time;
  }
  return absl::OkStatus();
}

bool TraceReader::KeepJob(uint64_t job) {
  auto [it, inserted] = job_kept_.try_emplace(job, false);
  if (inserted) {
    it->second = InSample(job, options_.job_fraction) &&
                 (options_.max_jobs == 0 || jobs_kept_ < options_.max_jobs);
    jobs_kept_ += it->second ? 1 : 0;
  }
  return it->second;
}

absl::Status TraceReader::TaskLine(const std::string& line) {
  const std::vector<std::string> f = Fields(line);
  if (f.size() != 13) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 13 fields, got ", f.size()));
  }
  int64_t time = 0, missing = 0, job = 0, index = 0, machine = 0, type = 0;
  int64_t sched_class = 0, priority = 0, different = 0;
  double cpu = 0, memory = 0, disk = 0;
  if (!ParseInt(f[0], time) || time < 0) {
    return absl::InvalidArgumentError("bad timestamp '" + f[0] + "'");
  }
  if (!ParseId(f[1], true, missing)) {
    return absl::InvalidArgumentError("bad missing-info '" + f[1] + "'");
  }
  if (!ParseId(f[2], false, job)) {
    return absl::InvalidArgumentError("bad job ID '" + f[2] + "'");
  }
  if (!ParseId(f[3], false, index)) {
    return absl::InvalidArgumentError("bad task index '" + f[3] + "'");
  }
  if (!ParseId(f[4], true, machine)) {
    return absl::InvalidArgumentError("bad machine ID '" + f[4] + "'");
  }
  if (!ParseInt(f[5], type) || type < 0 || type > 8) {
    return absl::InvalidArgumentError("bad event type '" + f[5] + "' (0..8)");
  }
  if (!ParseId(f[7], true, sched_class) || sched_class > 3) {
    return absl::InvalidArgumentError("bad scheduling class '" + f[7] + "'");
  }
  if (!ParseId(f[8], true, priority) || priority > 11) {
    return absl::InvalidArgumentError("bad priority '" + f[8] + "' (0..11)");
  }
  if (!ParseNormalised(f[9], cpu)) {
    return absl::InvalidArgumentError("bad CPU request '" + f[9] + "'");
  }
  if (!ParseNormalised(f[10], memory)) {
    return absl::InvalidArgumentError("bad memory request '" + f[10] + "'");
  }
  if (!ParseNormalised(f[11], disk)) {
    return absl::InvalidArgumentError("bad disk request '" + f[11] + "'");
  }
  if (!ParseId(f[12], true, different) || different > 1) {
    return absl::InvalidArgumentError("bad different-machine flag '" + f[12] +
                                      "'");
  }
  if (time == kAfterEnd) {
    ++stats_.events_after_end;
    return absl::OkStatus();
  }
  if (!KeepJob(static_cast<uint64_t>(job))) return absl::OkStatus();
  const auto key =
      std::make_pair(static_cast<uint64_t>(job), static_cast<uint64_t>(index));
  auto [it, inserted] = tasks_.try_emplace(key);
  TaskRecord& task = it->second;
  if (inserted) task.first_seen = sequence_++;
  if (task.submit_us < 0) task.submit_us = time;  // first event if no SUBMIT
  if (type == 0 || type == 7) {
    // The request of the attempt the simulator replays: the last one
    // before it was scheduled.
    if (task.schedule_us < 0) {
      if (cpu > 0) task.cpu = cpu;
      if (memory > 0) task.memory = memory;
      if (priority >= 0) task.priority = static_cast<int32_t>(priority);
    }
  } else if (type == 1) {
    if (task.schedule_us < 0) task.schedule_us = time;
  } else if (type >= 2 && type <= 6) {
    if (task.schedule_us >= 0 && task.end_us < 0 && time >= task.schedule_us) {
      task.end_us = time;
    }
  }
  return absl::OkStatus();
}

absl::Status TraceReader::ReadMachineEvents(std::istream& in,
                                            const std::string& name) {
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    ++stats_.lines;
    if (absl::Status s = MachineLine(line); !s.ok()) {
      if (auto b = BadLine(name, n, std::string(s.message())); !b.ok()) {
        return b;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status TraceReader::ReadTaskEvents(std::istream& in,
                                         const std::string& name) {
  std::string line;
  for (uint64_t n = 1; std::getline(in, line); ++n) {
    ++stats_.lines;
    if (absl::Status s = TaskLine(line); !s.ok()) {
      if (auto b = BadLine(name, n, std::string(s.message())); !b.ok()) {
        return b;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status TraceReader::ReadFiles(const std::string& machine_events,
                                    const std::string& task_events) {
  std::ifstream machines(machine_events);
  if (!machines) {
    return absl::NotFoundError("cannot open " + machine_events);
  }
  if (auto s = ReadMachineEvents(machines, machine_events); !s.ok()) return s;
  std::ifstream tasks(task_events);
  if (!tasks) return absl::NotFoundError("cannot open " + task_events);
  return ReadTaskEvents(tasks, task_events);
}

Workload TraceReader::Build() {
  Workload workload;
  const uint64_t per_rack = std::max<uint64_t>(1, options_.machines_per_rack);
  uint64_t i = 0;
  for (const auto& [id, m] : machines_) {  // id order
    workload.machines.push_back(
        SimMachine{.id = id,
                   .rack = absl::StrCat("rack-", i++ / per_rack),
                   .add_us = m.add_us,
                   .remove_us = m.remove_us,
                   .cpu = m.cpu,
                   .memory = m.memory});
  }
  std::vector<std::pair<std::pair<uint64_t, uint64_t>, const TaskRecord*>> ran;
  for (const auto& [key, task] : tasks_) {
    if (task.schedule_us < 0) {
      ++stats_.tasks_never_ran;
      continue;
    }
    ran.emplace_back(key, &task);
  }
  std::sort(ran.begin(), ran.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second->submit_us, a.second->first_seen) <
           std::tie(b.second->submit_us, b.second->first_seen);
  });
  uint64_t next_id = 1;
  for (const auto& [key, task] : ran) {
    workload.tasks.push_back(SimTask{
        .task_id = next_id++,
        .job_id = key.first,
        .submit_us = task->submit_us,
        .duration_us =
            task->end_us < 0 ? kForever : task->end_us - task->schedule_us,
        .cpu = task->cpu,
        .memory = task->memory,
        .priority = task->priority});
  }
  return workload;
}

}  // namespace flowsched::sim
