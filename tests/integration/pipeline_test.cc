// The walking skeleton end to end: the embedded broker, the graph manager
// and the solver worker run as separate processes on 127.0.0.1; events go
// in through `flowsched submit` (and raw bytes through kcat), decisions come
// out on the placements topic and are read by `flowsched tail` and by kcat.

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "flowsched/v1/dead_letter.pb.h"
#include "flowsched/v1/placements.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// Decisions as a consumer sees them, applied once per idempotency key.
struct ConsumerView {
  std::map<uint64_t, uint64_t> task_machine;
  std::set<std::string> keys;
  size_t duplicates = 0;
};

ConsumerView ApplyDecisions(const std::string& tail_output) {
  ConsumerView view;
  for (const std::string& line : Lines(tail_output)) {
    v1::PlacementRecord record;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &record).ok())
        << line;
    if (!record.has_decision()) continue;
    const v1::PlacementDecision& d = record.decision();
    if (!view.keys.insert(d.idempotency_key()).second) {
      ++view.duplicates;
      continue;
    }
    if (d.action() == v1::ACTION_PREEMPT) {
      view.task_machine.erase(d.task_id());
    } else {
      view.task_machine[d.task_id()] = d.machine_id();
    }
  }
  return view;
}

std::string FinishedTasks(uint64_t first_task, uint64_t count,
                          uint64_t tasks_per_job) {
  std::string lines;
  for (uint64_t t = first_task; t < first_task + count; ++t) {
    lines += absl::StrCat(R"({"task_finished":{"job_id":")",
                          (t - 1) / tasks_per_job + 1, R"(","task_id":")", t,
                          "\"}}\n");
  }
  return lines;
}

TEST_F(PipelineTest, PlacesAllTasksWithinSlotsAndReplacesFinishedOnes) {
  // 100 machines with 4 slots each, 300 tasks in 30 jobs.
  CommandResult workload = Flowsched(
      "generate --machines 100 --slots 4 --racks 10 --jobs 30 "
      "--tasks-per-job 10");
  ASSERT_EQ(workload.exit_code, 0) << workload.err;
  Submit(workload.out);
  WaitForStatus(
      [](const auto& s) {
        return s.tasks_submitted() == 300 && s.tasks_running() == 300 &&
               !s.round_in_flight();
      },
      60, "300 tasks placed");

  std::map<uint64_t, uint64_t> placed = TaskPlacements();
  ASSERT_EQ(placed.size(), 300u);
  std::map<uint64_t, int> per_machine;
  for (const auto& [task, machine] : placed) {
    EXPECT_NE(machine, 0u) << "task " << task << " waits";
    ++per_machine[machine];
  }
  for (const auto& [machine, count] : per_machine) {
    EXPECT_LE(count, 4) << "machine " << machine << " exceeds its slots";
  }
  // Load spreading: 300 tasks on 100 machines is 3 each.
  EXPECT_EQ(per_machine.size(), 100u);

  // A consumer of the placements topic reaches the same placement.
  CommandResult tail = Flowsched("tail --from-beginning --idle-ms 1500");
  ASSERT_EQ(tail.exit_code, 0) << tail.err;
  ConsumerView view = ApplyDecisions(tail.out);
  EXPECT_EQ(view.duplicates, 0u);
  EXPECT_EQ(view.task_machine, placed);

  // 100 tasks finish and 100 new ones arrive: all new ones get placed.
  Submit(FinishedTasks(1, 100, 10));
  CommandResult more = Flowsched(
      "generate --what jobs --jobs 10 --tasks-per-job 10 --first-job-id 31 "
      "--first-task-id 301 --seed 2");
  ASSERT_EQ(more.exit_code, 0) << more.err;
  Submit(more.out);
  WaitForStatus(
      [](const auto& s) {
        return s.tasks_submitted() == 400 && s.tasks() == 300 &&
               s.tasks_running() == 300 && !s.round_in_flight();
      },
      60, "the 100 new tasks placed");
  placed = TaskPlacements();
  ASSERT_EQ(placed.size(), 300u);
  per_machine.clear();
  for (const auto& [task, machine] : placed) {
    EXPECT_GT(task, 100u) << "finished task " << task << " is still there";
    EXPECT_NE(machine, 0u) << "task " << task << " waits";
    ++per_machine[machine];
  }
  for (const auto& [machine, count] : per_machine) {
    EXPECT_LE(count, 4) << "machine " << machine << " exceeds its slots";
  }
}

TEST_F(PipelineTest, KcatReadsTheSameDecisionsFromThePlacementsTopic) {
  CommandResult workload =
      Flowsched("generate --machines 20 --slots 4 --jobs 6 --tasks-per-job 8");
  ASSERT_EQ(workload.exit_code, 0) << workload.err;
  Submit(workload.out);
  WaitForStatus(
      [](const auto& s) {
        return s.tasks_running() == 48 && !s.round_in_flight();
      },
      60, "48 tasks placed");

  CommandResult tail =
      Flowsched("tail --from-beginning --decisions-only --idle-ms 1500");
  ASSERT_EQ(tail.exit_code, 0) << tail.err;
  std::multiset<std::string> our_keys;
  for (const std::string& line : Lines(tail.out)) {
    v1::PlacementRecord record;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(line, &record).ok());
    our_keys.insert(absl::StrCat("machine/", record.decision().machine_id()));
  }
  ASSERT_EQ(our_keys.size(), 48u);

  // kcat, a third-party client, reads the raw topic: every decision key
  // appears, in the partition its machine id maps to.
  CommandResult kcat = Shell(
      absl::StrCat(KCAT_BINARY, " -C -q -e -b ", Bootstrap(),
                   " -t flowsched.placements -o beginning -f '%p %k\\n'"));
  ASSERT_EQ(kcat.exit_code, 0) << kcat.err;
  std::multiset<std::string> kcat_keys;
  for (const std::string& line : Lines(kcat.out)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    ASSERT_EQ(fields.size(), 2u) << line;
    if (!absl::StartsWith(fields[1], "machine/")) continue;
    kcat_keys.insert(fields[1]);
    uint64_t machine = 0;
    ASSERT_TRUE(absl::SimpleAtoi(fields[1].substr(8), &machine));
    EXPECT_EQ(std::to_string(machine % 4), fields[0]) << line;
  }
  EXPECT_EQ(kcat_keys, our_keys);
}

TEST_F(PipelineTest, RandomBytesBecomeDeadLettersWhilePlacementGoesOn) {
  CommandResult machines =
      Flowsched("generate --what machines --machines 10 --slots 4");
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);

  // 40 records of random bytes, produced by kcat (one file, one record).
  std::mt19937 rng(42);
  std::string files;
  for (int i = 0; i < 40; ++i) {
    const std::string path = absl::StrCat(dir_, "/garbage-", i);
    std::ofstream out(path, std::ios::binary);
    std::uniform_int_distribution<int> byte(0, 255), length(1, 300);
    const int n = length(rng);
    for (int b = 0; b < n; ++b) out.put(static_cast<char>(byte(rng)));
    files += " " + path;
  }
  CommandResult produced = Shell(absl::StrCat(
      KCAT_BINARY, " -P -b ", Bootstrap(), " -t flowsched.events", files));
  ASSERT_EQ(produced.exit_code, 0) << produced.err;
  // And an event that decodes but names unknown ids (a task id the jobs
  // below do not use: read after them, a known one gets another reason).
  Submit(R"({"task_finished":{"job_id":"999","task_id":"99999"}})"
         "\n");

  CommandResult job =
      Flowsched("generate --what jobs --jobs 2 --tasks-per-job 10");
  ASSERT_EQ(job.exit_code, 0);
  Submit(job.out);
  // Random bytes can happen to decode as a valid but empty event; every
  // record is either applied or dead-lettered, none lost. The garbage is
  // spread over the four event partitions, so the tasks may be placed
  // before the last of it is read: wait for every record.
  v1::GraphManagerStatus status = WaitForStatus(
      [](const auto& s) {
        return s.tasks_running() == 20 &&
               s.events_applied() + s.events_rejected() == 10u + 40 + 1 + 2 &&
               !s.round_in_flight();
      },
      60, "20 tasks placed and every record applied or refused");
  CommandResult letters =
      Flowsched("tail --topic dead-letters --from-beginning --idle-ms 1500");
  ASSERT_EQ(letters.exit_code, 0) << letters.err;
  size_t unknown_task = 0;
  const std::vector<std::string> lines = Lines(letters.out);
  EXPECT_EQ(lines.size(), status.events_rejected());
  for (const std::string& line : lines) {
    v1::DeadLetter letter;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(line, &letter).ok());
    EXPECT_EQ(letter.topic(), "flowsched.events");
    EXPECT_FALSE(letter.reason().empty());
    EXPECT_EQ(letter.service(), "graph-manager");
    if (letter.reason().find("unknown task 99999") != std::string::npos) {
      EXPECT_EQ(letter.code(), "FAILED_PRECONDITION");
      ++unknown_task;
    }
  }
  EXPECT_EQ(unknown_task, 1u);
  EXPECT_GE(status.events_rejected(), 35u);  // nearly all garbage is refused
}

}  // namespace
}  // namespace flowsched::testing
