// Guarantee 2 in deterministic mode: rounds are cut every N events, so a
// run of a log with services SIGKILLed at random moments must end with the
// same state digest as a crash-free run of the same log. Every graph
// manager restart must also report the digest read from its data directory
// after the kill, and decisions must agree per idempotency key. Each
// restart is a plain `flowsched up` with no flags, right after the kill:
// the deployment stored by the first `up` keeps the cut mode.
//
// CRASH_EVENTS and CRASH_KILLS size the run: the default suite builds a
// short one; `crash_long_test` (label long-crash) replays 20,000 events
// with 30 kills.

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "flowsched/v1/events.pb.h"
#include "flowsched/v1/placements.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr int kCutEvery = 50;
constexpr int kMachines = 60;
constexpr int kSlots = 4;
constexpr size_t kChunk = 250;  // events between kill points
constexpr size_t kPiece = 37;   // events per submit

std::string Json(const v1::ClusterEvent& event) {
  std::string json;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(event, &json).ok());
  return json;
}

// A seeded log of `count` events: machines, then jobs arriving, tasks
// finishing and failing, machines failing and coming back; a few events
// are invalid on purpose (they must be dead-lettered the same way).
std::vector<std::string> MakeLog(size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> log;
  std::vector<uint64_t> live;  // live task ids
  std::map<uint64_t, uint64_t> job_of;
  std::set<uint64_t> down_machines;
  uint64_t next_job = 1, next_task = 1;
  auto add = [&](v1::ClusterEvent e) {
    e.set_event_id(absl::StrCat("e", log.size()));
    log.push_back(Json(e));
  };
  for (uint64_t m = 1; m <= kMachines; ++m) {
    v1::ClusterEvent e;
    e.mutable_machine_added()->set_machine_id(m);
    e.mutable_machine_added()->set_rack(absl::StrCat("r", m % 6));
    e.mutable_machine_added()->set_task_slots(kSlots);
    add(e);
  }
  while (log.size() < count) {
    const int dice = std::uniform_int_distribution<int>(0, 99)(rng);
    v1::ClusterEvent e;
    // Arrivals roughly balance departures, around the cluster's 240 slots.
    if (dice < 12 || live.size() < 150) {
      const uint64_t tasks = std::uniform_int_distribution<uint64_t>(1, 8)(rng);
      auto* job = e.mutable_job_submitted();
      job->set_job_id(next_job);
      for (uint64_t t = 0; t < tasks; ++t) {
        job->add_tasks()->set_task_id(next_task);
        job_of[next_task] = next_job;
        live.push_back(next_task++);
      }
      ++next_job;
    } else if ((dice < 75 || dice >= 83) && !live.empty()) {
      const size_t i =
          std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng);
      const uint64_t task = live[i];
      if (dice < 70 || dice >= 83) {
        e.mutable_task_finished()->set_job_id(job_of[task]);
        e.mutable_task_finished()->set_task_id(task);
        live.erase(live.begin() + static_cast<long>(i));
      } else {
        e.mutable_task_failed()->set_job_id(job_of[task]);
        e.mutable_task_failed()->set_task_id(task);
      }
    } else if (dice < 80) {
      const uint64_t m =
          std::uniform_int_distribution<uint64_t>(1, kMachines)(rng);
      if (down_machines.erase(m) > 0) {
        e.mutable_machine_added()->set_machine_id(m);
        e.mutable_machine_added()->set_task_slots(kSlots);
      } else if (down_machines.size() < 5) {
        e.mutable_machine_failed()->set_machine_id(m);
        down_machines.insert(m);
      } else {
        continue;
      }
    } else {
      // Invalid on purpose: an unknown task finishing.
      e.mutable_task_finished()->set_job_id(999'999);
      e.mutable_task_finished()->set_task_id(next_task + 1'000'000);
    }
    add(e);
  }
  return log;
}

class DeterministicCrashTest : public PipelineTest {
 protected:
  DeterministicCrashTest() {
    up_flags_ = absl::StrCat("--cut-every-events ", kCutEvery);
  }

  // Waits until the graph manager applied or rejected `events` and no
  // round is due or in flight for a while (the follow-up rounds are done).
  void WaitQuiet(size_t events) {
    uint64_t last_rounds = ~uint64_t{0};
    int stable = 0;
    WaitForStatus(
        [&](const auto& s) {
          if (s.events_applied() + s.events_rejected() != events ||
              s.round_in_flight()) {
            stable = 0;
            return false;
          }
          stable = s.rounds_completed() == last_rounds ? stable + 1 : 0;
          last_rounds = s.rounds_completed();
          return stable >= 10;  // ~1 s without a new round
        },
        240, "the whole log applied");
  }

  std::string Digest() {
    CommandResult digest = Flowsched("inspect digest");
    EXPECT_EQ(digest.exit_code, 0) << digest.err;
    return std::string(absl::StripAsciiWhitespace(digest.out));
  }

  // Replays `log` into the current data directory, with `kills` SIGKILLs
  // spread over it; returns the final digest after a clean stop. Before the
  // stop it reads every decision with `tail` into `decisions_json` (the
  // embedded broker keeps records in memory only).
  std::string Replay(const std::vector<std::string>& log, int kills,
                     uint64_t seed, int* digest_checks,
                     std::string* decisions_json) {
    std::mt19937 rng(static_cast<uint32_t>(seed));
    const size_t chunks = (log.size() + kChunk - 1) / kChunk;
    std::set<size_t> kill_after;
    while (kills > 0 && static_cast<int>(kill_after.size()) <
                            std::min<int>(kills, static_cast<int>(chunks))) {
      kill_after.insert(
          std::uniform_int_distribution<size_t>(0, chunks - 1)(rng));
    }
    int kills_left = kills;
    for (size_t c = 0; c < chunks; ++c) {
      // In submissions of kPiece events, which do not divide kCutEvery: the
      // graph manager's polls then end inside cut windows at places that
      // depend on timing, and the state must not depend on them.
      const size_t end = std::min(log.size(), (c + 1) * kChunk);
      for (size_t from = c * kChunk; from < end; from += kPiece) {
        std::string lines;
        for (size_t i = from; i < std::min(end, from + kPiece); ++i) {
          lines += log[i] + "\n";
        }
        CommandResult sent = Flowsched("submit --partition 0 -", lines);
        EXPECT_EQ(sent.exit_code, 0) << sent.err;
      }
      // Several kills per chunk when there are more kills than chunks.
      int here = kill_after.contains(c) ? 1 : 0;
      if (kills_left > static_cast<int>(kill_after.size()) && here) {
        here = 1 + (kills_left - static_cast<int>(kill_after.size())) /
                       static_cast<int>(kill_after.size());
      }
      for (int k = 0; k < here && kills_left > 0; ++k, --kills_left) {
        std::this_thread::sleep_for(std::chrono::milliseconds(
            std::uniform_int_distribution<int>(0, 300)(rng)));
        const bool manager = std::uniform_int_distribution<int>(0, 2)(rng) != 0;
        KillService(manager ? "graph-manager" : "solver-worker");
        std::string offline;
        if (manager) offline = Digest();
        // No flags: the data directory's deployment file brings the
        // graph manager back in the same cut mode.
        CommandResult up = Flowsched("up");
        EXPECT_EQ(up.exit_code, 0) << up.out << up.err;
        if (manager) {
          v1::GraphManagerStatus status = WaitForStatus(
              [](const auto& s) { return !s.digest_at_start().empty(); }, 60,
              "the restarted graph manager");
          EXPECT_EQ(status.digest_at_start(), offline)
              << "a restart did not resume the last durable state";
          ++*digest_checks;
        }
      }
    }
    WaitQuiet(log.size());
    CommandResult tail =
        Flowsched("tail --from-beginning --decisions-only --idle-ms 2000");
    EXPECT_EQ(tail.exit_code, 0) << tail.err;
    *decisions_json = tail.out;
    EXPECT_EQ(Flowsched("down").exit_code, 0);
    return Digest();
  }
};

TEST_F(DeterministicCrashTest, CrashedRunEndsWithTheCrashFreeDigest) {
  const std::vector<std::string> log = MakeLog(CRASH_EVENTS, 7);
  int digest_checks = 0;
  const std::string base_dir = dir_;
  std::string decisions_json;
  const std::string crash_free =
      Replay(log, 0, 1, &digest_checks, &decisions_json);
  ASSERT_EQ(crash_free.size(), 32u);
  // Replay has brought the first run down; TearDown removes only the
  // directory of the second, so the first's goes now (kept on a failure).
  if (!HasFailure()) std::filesystem::remove_all(base_dir);

  // The same log in a fresh data directory and broker, with kills.
  dir_ = base_dir + "-crashed";
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_ + "/cmd");
  ASSERT_EQ(Flowsched("up " + up_flags_).exit_code, 0);
  const std::string crashed =
      Replay(log, CRASH_KILLS, 2, &digest_checks, &decisions_json);
  EXPECT_EQ(crashed, crash_free)
      << "the crashed run ended in another state than the crash-free run";
  EXPECT_GE(digest_checks, 1);

  // Invariants of the final state: no machine over its slots.
  std::map<uint64_t, uint64_t> per_machine;
  for (const auto& [task, machine] : TaskPlacements()) {
    if (machine != 0) ++per_machine[machine];
  }
  for (const auto& [machine, count] : per_machine) {
    EXPECT_LE(count, static_cast<uint64_t>(kSlots)) << "machine " << machine;
  }
  // A consumer deduplicating on the idempotency key sees one effect per
  // (round, task): every record with a key says the same thing.
  std::map<std::string, std::string> by_key;
  std::istringstream lines(decisions_json);
  std::string line;
  size_t decisions = 0;
  while (std::getline(lines, line)) {
    v1::PlacementRecord record;
    ASSERT_TRUE(
        google::protobuf::util::JsonStringToMessage(line, &record).ok());
    const auto& d = record.decision();
    const std::string effect =
        absl::StrCat(d.task_id(), ":", d.machine_id(), ":", d.action());
    auto [it, inserted] = by_key.emplace(
        d.idempotency_key() + "@" + std::to_string(d.graph_epoch()), effect);
    EXPECT_TRUE(inserted || it->second == effect) << d.idempotency_key();
    ++decisions;
  }
  EXPECT_GT(decisions, 0u);
  std::cerr << "replayed " << log.size() << " events twice; " << CRASH_KILLS
            << " kills; " << digest_checks << " restart digests checked; "
            << decisions << " decisions in the crashed run; digest " << crashed
            << "\n";
}

}  // namespace
}  // namespace flowsched::testing
