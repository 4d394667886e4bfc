// Lost or corrupt RocksDB (issue #5, item 6), through the real processes:
// run a workload, stop the graph manager, read the digest of its data
// directory, then delete the state (or damage its files) and start again.
// The graph manager must notice, move a damaged directory aside, rebuild
// from the topics (events + ledger) to exactly that digest, and carry on:
// new events are applied and every task gets placed.

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "tests/integration/pipeline_fixture.h"

namespace flowsched::testing {
namespace {

constexpr uint64_t kMachines = 24, kSlots = 4, kTasksPerJob = 8;

enum class Damage { kDeleted, kCorrupted };

// Overwrites the middle of every MANIFEST and SST file (and WAL, if any)
// with garbage, keeping sizes: RocksDB's checksums must catch it.
int CorruptStoreFiles(const std::string& dir) {
  int damaged = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool target = name.starts_with("MANIFEST-") ||
                        name.ends_with(".sst") || name.ends_with(".log");
    if (!target || !entry.is_regular_file() || entry.file_size() < 16) {
      continue;
    }
    const auto size = static_cast<std::streamoff>(entry.file_size());
    std::fstream file(entry.path(),
                      std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(size / 4);
    const std::string garbage(static_cast<size_t>(size / 2), '\xab');
    file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
    ++damaged;
  }
  return damaged;
}

class RebuildTest : public PipelineTest,
                    public ::testing::WithParamInterface<Damage> {
 protected:
  // Submits `jobs` jobs from job `next_job_` on; returns their task count.
  uint64_t SubmitJobs(uint64_t jobs, const std::string& extra = "") {
    CommandResult generated = Flowsched(absl::StrCat(
        "generate --what jobs --jobs ", jobs, " --tasks-per-job ", kTasksPerJob,
        " --first-job-id ", next_job_, " --first-task-id ",
        (next_job_ - 1) * kTasksPerJob + 1, " --seed ", next_job_));
    EXPECT_EQ(generated.exit_code, 0) << generated.err;
    next_job_ += jobs;
    Submit(extra + generated.out);
    return jobs * kTasksPerJob;
  }
  std::string FinishJob(uint64_t job) {
    std::string events;
    for (uint64_t t = 0; t < kTasksPerJob; ++t) {
      events += absl::StrCat(R"({"task_finished":{"job_id":")", job,
                             R"(","task_id":")",
                             (job - 1) * kTasksPerJob + t + 1, "\"}}\n");
    }
    return events;
  }
  v1::GraphManagerStatus WaitAllPlaced(uint64_t live, uint64_t submitted,
                                       const std::string& what) {
    return WaitForStatus(
        [&](const auto& s) {
          return s.tasks_submitted() == submitted && s.tasks() == live &&
                 s.tasks_running() == live && !s.round_in_flight();
        },
        60, what);
  }
  uint64_t next_job_ = 1;
};

TEST_P(RebuildTest, RebuildsTheSameDigestFromTheTopics) {
  CommandResult machines = Flowsched(absl::StrCat(
      "generate --what machines --machines ", kMachines, " --slots ", kSlots));
  ASSERT_EQ(machines.exit_code, 0);
  Submit(machines.out);
  uint64_t submitted = 0, live = 0;
  // Several waves, so the ledger holds many batches and rounds, finishes
  // among them (freed slots and network nodes are reused).
  for (int wave = 0; wave < 4; ++wave) {
    std::string finishes;
    if (wave >= 2) {
      finishes = FinishJob(static_cast<uint64_t>(wave - 1));
      live -= kTasksPerJob;
    }
    const uint64_t added = SubmitJobs(3, finishes);
    submitted += added;
    live += added;
    WaitAllPlaced(live, submitted, absl::StrCat("wave ", wave, " placed"));
    if (HasFatalFailure()) return;
  }

  StopService("graph-manager");
  CommandResult offline = Flowsched("inspect digest");
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  const std::string digest(absl::StripAsciiWhitespace(offline.out));
  ASSERT_EQ(digest.size(), 32u) << offline.out;

  const std::string state_dir = dir_ + "/state";
  if (GetParam() == Damage::kDeleted) {
    std::filesystem::remove_all(state_dir);
  } else {
    ASSERT_GT(CorruptStoreFiles(state_dir), 0) << "no store files to damage";
  }
  CommandResult up = Flowsched("up");
  ASSERT_EQ(up.exit_code, 0) << up.err;
  v1::GraphManagerStatus rebuilt =
      WaitForStatus([](const auto& s) { return !s.digest_at_start().empty(); },
                    60, "the rebuilt graph manager's status");
  EXPECT_EQ(rebuilt.digest_at_start(), digest)
      << "the state rebuilt from the topics differs from the lost one";
  EXPECT_EQ(rebuilt.tasks_submitted(), submitted);
  if (GetParam() == Damage::kCorrupted) {
    // Moved aside, never deleted.
    int aside = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().filename().string().starts_with("state.damaged-")) {
        ++aside;
      }
    }
    EXPECT_EQ(aside, 1) << "the damaged store was not kept aside";
  }

  // Carries on: more work arrives and is placed.
  const uint64_t added = SubmitJobs(2, FinishJob(3));
  submitted += added;
  live += added - kTasksPerJob;
  WaitAllPlaced(live, submitted, "every task placed after the rebuild");
  ExpectAllPlacedWithinSlots(live, kSlots);
}

INSTANTIATE_TEST_SUITE_P(
    LostOrCorrupt, RebuildTest,
    ::testing::Values(Damage::kDeleted, Damage::kCorrupted),
    [](const ::testing::TestParamInfo<Damage>& param_info) {
      return param_info.param == Damage::kDeleted ? std::string("Deleted")
                                                  : std::string("Corrupted");
    });

}  // namespace
}  // namespace flowsched::testing
