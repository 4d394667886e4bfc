// `flowsched submit`, `flowsched tail`, `flowsched generate`,
// `flowsched inspect`: getting events in and decisions out, by hand.

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include "flowsched/v1/dead_letter.pb.h"
#include "flowsched/v1/events.pb.h"
#include "flowsched/v1/placements.pb.h"
#include "flowsched/v1/rounds.pb.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "google/protobuf/util/json_util.h"
#include "services/bus/consumer.h"
#include "services/bus/producer.h"
#include "services/cluster/cluster_state.h"
#include "services/cluster/event_decoder.h"
#include "services/common/logging.h"
#include "services/flow/scheduling_policy.h"
#include "services/graph_manager/state_reader.h"
#include "tools/flowsched/commands.h"
#include "tools/flowsched/event_submitter.h"
#include "tools/flowsched/stop_signal.h"
#include "tools/workload/workload_generator.h"

namespace flowsched::tools {
namespace {

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options)
           .ok()) {
    return "{}";
  }
  return json;
}

}  // namespace

CommandMain AddSubmitCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "submit",
      "Publish ClusterEvents given as JSON lines (protobuf JSON mapping of "
      "flowsched.v1.ClusterEvent) from a file or stdin");
  auto file = std::make_shared<std::string>("-");
  auto check = std::make_shared<bool>(false);
  auto partition = std::make_shared<int32_t>(bus::kAnyPartition);
  cmd->add_option("file", *file, "Input file, or - for stdin")
      ->capture_default_str();
  cmd->add_option("--partition", *partition,
                  "Publish every event to this partition (deterministic "
                  "rounds read partition 0 only); default: by entity key")
      ->check(CLI::Range(0, 1'000'000));
  cmd->add_flag("--check", *check,
                "Also validate each event locally and refuse invalid ones");
  return [&flags, file, check, partition]() {
    InitLogging("submit", flags.log_level == "info" ? "warn" : flags.log_level,
                flags.log_format);
    std::ifstream input;
    std::istream* in = &std::cin;
    if (*file != "-") {
      input.open(*file);
      if (!input) {
        std::cerr << "flowsched submit: cannot open " << *file << "\n";
        return 2;
      }
      in = &input;
    }
    ParsedEvents parsed = ParseJsonLines(*in);
    if (*check) {
      cluster::EventDecoder decoder{cluster::ValidationLimits{},
                                    [](std::string_view name) {
                                      return flow::MakePolicy(name).status();
                                    }};
      std::vector<v1::ClusterEvent> valid;
      for (auto& event : parsed.events) {
        auto decoded = decoder.FromProto(event);
        if (decoded.ok()) {
          valid.push_back(std::move(event));
        } else {
          parsed.errors.push_back(fmt::format(
              "event '{}': {}", event.event_id(), decoded.status().ToString()));
        }
      }
      parsed.events = std::move(valid);
    }
    for (const std::string& error : parsed.errors) {
      std::cerr << "flowsched submit: " << error << "\n";
    }
    auto kafka = ResolveKafka(flags);
    if (!kafka.ok()) {
      std::cerr << "flowsched submit: " << kafka.status().message() << "\n";
      return 2;
    }
    auto producer = bus::Producer::Create(*kafka);
    if (!producer.ok()) {
      std::cerr << "flowsched submit: " << producer.status().message() << "\n";
      return 1;
    }
    absl::Status sent = SubmitEvents(**producer, Topics(flags).events,
                                     parsed.events, *partition);
    if (!sent.ok()) {
      std::cerr << "flowsched submit: " << sent.message() << "\n";
      return 1;
    }
    fmt::print(stderr, "submitted {} events ({} lines refused)\n",
               parsed.events.size(), parsed.errors.size());
    return parsed.errors.empty() ? 0 : 2;
  };
}

CommandMain AddTailCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "tail",
      "Print records of a flowsched topic as JSON lines (default: placement "
      "decisions)");
  struct TailOptions {
    std::string topic = "placements";
    bool from_beginning = false;
    bool follow = false;
    bool decisions_only = false;
    int idle_ms = 3000;
    uint64_t max_records = 0;
  };
  auto options = std::make_shared<TailOptions>();
  cmd->add_option("--topic", options->topic,
                  "placements, dead-letters, events or rounds")
      ->check(CLI::IsMember({"placements", "dead-letters", "events", "rounds"}))
      ->capture_default_str();
  cmd->add_flag("--from-beginning", options->from_beginning,
                "Start at the oldest record instead of the newest");
  cmd->add_flag("-f,--follow", options->follow, "Keep waiting for records");
  cmd->add_flag("--decisions-only", options->decisions_only,
                "For placements: print decisions, not markers or requests");
  cmd->add_option("--idle-ms", options->idle_ms,
                  "Without --follow, stop after this long without records")
      ->capture_default_str();
  cmd->add_option("--max", options->max_records, "Stop after N records");
  return [&flags, options]() {
    InitLogging("tail", flags.log_level == "info" ? "warn" : flags.log_level,
                flags.log_format);
    const auto& stop = InstallStopHandlers();
    auto kafka = ResolveKafka(flags);
    if (!kafka.ok()) {
      std::cerr << "flowsched tail: " << kafka.status().message() << "\n";
      return 2;
    }
    const bus::TopicNames names = Topics(flags);
    const std::string topic = options->topic == "placements" ? names.placements
                              : options->topic == "dead-letters"
                                  ? names.dead_letters
                              : options->topic == "events" ? names.events
                                                           : names.rounds;
    auto producer = bus::Producer::Create(*kafka);
    auto consumer = bus::Consumer::Create(*kafka, "flowsched-tail");
    if (!producer.ok() || !consumer.ok()) {
      std::cerr
          << "flowsched tail: cannot connect: "
          << (producer.ok() ? consumer.status() : producer.status()).message()
          << "\n";
      return 1;
    }
    auto partitions = (*producer)->PartitionCount(topic, 10'000);
    if (!partitions.ok()) {
      std::cerr << "flowsched tail: " << partitions.status().message() << "\n";
      return 1;
    }
    std::vector<bus::TopicPartitionOffset> assignment;
    for (int32_t p = 0; p < *partitions; ++p) {
      assignment.push_back(
          {topic, p,
           options->from_beginning ? bus::kOffsetBeginning : bus::kOffsetEnd});
    }
    if (auto s = (*consumer)->Assign(assignment); !s.ok()) {
      std::cerr << "flowsched tail: " << s.message() << "\n";
      return 1;
    }
    uint64_t printed = 0;
    auto last_record = std::chrono::steady_clock::now();
    while (!stop.load()) {
      auto records = (*consumer)->Poll(1000, 100);
      if (!records.ok()) {
        std::cerr << "flowsched tail: " << records.status().message() << "\n";
        continue;
      }
      for (const bus::Record& record : *records) {
        std::string json;
        if (options->topic == "placements") {
          v1::PlacementRecord message;
          if (!message.ParseFromString(record.value)) continue;
          if (options->decisions_only && !message.has_decision()) continue;
          json = ToJson(message);
        } else if (options->topic == "dead-letters") {
          v1::DeadLetter message;
          if (!message.ParseFromString(record.value)) continue;
          json = ToJson(message);
        } else if (options->topic == "events") {
          v1::ClusterEvent message;
          if (!message.ParseFromString(record.value)) {
            json = fmt::format(R"({{"undecodable_bytes":{}}})",
                               record.value.size());
          } else {
            json = ToJson(message);
          }
        } else {
          v1::SolverRound message;
          if (!message.ParseFromString(record.value)) continue;
          json = fmt::format(
              R"({{"round_id":{},"epoch":{},"solver_epoch":{},"snapshot":{},)"
              R"("changes":{}}})",
              message.round_id(), message.epoch(), message.solver_epoch(),
              message.snapshot(), message.changes_size());
        }
        std::cout << json << "\n";
        // Idle means nothing printed: filtered records (markers, resync
        // requests) must not keep the command alive.
        last_record = std::chrono::steady_clock::now();
        if (options->max_records != 0 && ++printed >= options->max_records) {
          std::cout.flush();
          return 0;
        }
      }
      std::cout.flush();
      if (!options->follow && std::chrono::steady_clock::now() - last_record >
                                  std::chrono::milliseconds(options->idle_ms)) {
        break;
      }
    }
    return 0;
  };
}

CommandMain AddGenerateCommand(CLI::App& app, CommonFlags& /*flags*/) {
  auto* cmd = app.add_subcommand(
      "generate",
      "Write a synthetic workload (machines, then jobs) as JSON lines for "
      "`flowsched submit`");
  auto spec = std::make_shared<WorkloadSpec>();
  auto what = std::make_shared<std::string>("all");
  cmd->add_option("--machines", spec->machines, "Machines")
      ->capture_default_str();
  cmd->add_option("--slots", spec->slots_per_machine, "Task slots per machine")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--racks", spec->racks, "Racks")->capture_default_str();
  cmd->add_option("--jobs", spec->jobs, "Jobs")->capture_default_str();
  cmd->add_option("--tasks-per-job", spec->tasks_per_job, "Tasks per job")
      ->capture_default_str();
  cmd->add_option("--first-machine-id", spec->first_machine_id, "")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--first-job-id", spec->first_job_id, "")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--first-task-id", spec->first_task_id, "")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", spec->seed, "Random seed")->capture_default_str();
  cmd->add_flag("--locality", spec->locality,
                "Give each task input data on three random machines");
  cmd->add_option("--what", *what, "machines, jobs or all")
      ->check(CLI::IsMember({"machines", "jobs", "all"}))
      ->capture_default_str();
  return [spec, what]() {
    std::vector<v1::ClusterEvent> events;
    if (*what != "jobs") events = GenerateMachines(*spec);
    if (*what != "machines") {
      for (auto& event : GenerateJobs(*spec))
        events.push_back(std::move(event));
    }
    for (const auto& event : events) std::cout << ToJson(event) << "\n";
    return 0;
  };
}

// One line per machine (id first, as scripts read it), then one indented
// line per named scalar it offers and per accelerator device: used of
// capacity, and the tasks on the device.
void PrintMachines(const cluster::ClusterState& state) {
  std::cout << "machine_id rack task_slots running\n";
  for (const auto& [id, machine] : state.machines()) {
    fmt::print("{} {} {} {}\n", id.value(), machine.rack, machine.task_slots,
               machine.running.size());
    for (const auto& [name, amount] : machine.capacity.scalars) {
      fmt::print("  scalar {} {}/{}\n", name,
                 machine.allocated.scalars.Get(name), amount);
    }
    for (size_t i = 0; i < machine.devices.size(); ++i) {
      const cluster::Device& device = machine.devices[i];
      std::vector<uint64_t> tasks;
      for (TaskId task : device.tasks) tasks.push_back(task.value());
      const std::string holders =
          tasks.empty() ? "-" : fmt::format("{}", fmt::join(tasks, ","));
      fmt::print("  device {} model {} milli {}/{}", i,
                 device.model.empty() ? "-" : device.model, device.used_milli,
                 device.capacity_milli);
      if (device.memory_bytes > 0) {
        fmt::print(" memory {}/{}", device.used_memory_bytes,
                   device.memory_bytes);
      }
      fmt::print(" tasks {}\n", holders);
    }
  }
}

CommandMain AddInspectCommand(CLI::App& app, CommonFlags& flags) {
  auto* cmd = app.add_subcommand(
      "inspect",
      "Read the graph manager's RocksDB state (also of a running or stopped "
      "instance) and print it");
  auto what = std::make_shared<std::string>("tasks");
  cmd->add_option("what", *what,
                  "tasks, machines (with named scalars and per-device use), "
                  "or digest (the state digest a restart of this data "
                  "directory will report)")
      ->check(CLI::IsMember({"tasks", "machines", "digest"}))
      ->capture_default_str();
  return [&flags, what]() {
    auto reader = graph_manager::StateReader::Open(flags.data_dir);
    if (!reader.ok()) {
      std::cerr << "flowsched inspect: " << reader.status().ToString() << "\n";
      return 1;
    }
    absl::Status status;
    if (*what == "digest") {
      absl::StatusOr<std::string> digest = (*reader)->Digest();
      status = digest.status();
      if (status.ok()) std::cout << *digest << "\n";
    } else if (*what == "tasks") {
      std::cout << "task_id job_id machine_id\n";
      status = (*reader)->ForEachTask([](const cluster::Task& task) {
        fmt::print("{} {} {}\n", task.spec.id.value(), task.job.value(),
                   task.machine.value());
        return absl::OkStatus();
      });
    } else {
      // The whole state: device use and allocations are derived from the
      // tasks (RestoreTask), as the graph manager derives them.
      absl::StatusOr<graph_manager::StoredState> stored = (*reader)->Load();
      status = stored.status();
      if (status.ok()) PrintMachines(stored->state);
    }
    if (!status.ok()) {
      std::cerr << "flowsched inspect: " << status.ToString() << "\n";
      return 1;
    }
    return 0;
  };
}

}  // namespace flowsched::tools
