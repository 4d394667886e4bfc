#include "storage/state_store.h"

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/common/status_matchers.h"
#include "storage/keys.h"

namespace flowsched::storage {
namespace {

namespace fs = std::filesystem;
using ::flowsched::testing::IsOk;
using ::flowsched::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr std::string_view kTopic = "flowsched.events";

class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string pattern =
        fmt::format("{}/flowsched_storage_test_XXXXXX",
                    tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp");
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    dir_ = (root_ / "db").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  std::unique_ptr<StateStore> OpenOrDie(StateStore::OpenOptions options = {}) {
    auto store = StateStore::Open(dir_, options);
    EXPECT_THAT(store, IsOk());
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // All keys under `prefix`, in scan order.
  static std::vector<std::string> Keys(const StateStore& store,
                                       std::string_view prefix) {
    std::vector<std::string> keys;
    EXPECT_THAT(store.ScanPrefix(prefix,
                                 [&](std::string_view key, std::string_view) {
                                   keys.emplace_back(key);
                                   return absl::OkStatus();
                                 }),
                IsOk());
    return keys;
  }

  // Commits batches 0..count-1 of the "applied records" shape: key k/<i> and
  // the offset i+1 together.
  static void CommitRecordBatches(StateStore& store, int count) {
    for (int i = 0; i < count; ++i) {
      StateBatch batch;
      batch.Put(fmt::format("k/{}", i), fmt::format("record {}", i));
      batch.SetOffset(kTopic, 0, i + 1);
      ASSERT_THAT(store.Commit(std::move(batch)), IsOk());
    }
  }

  // The atomicity property: with offset N stored, k/0..k/N-1 exist and
  // nothing else under k/ does. Returns N.
  static int64_t ExpectConsistentPrefix(const StateStore& store) {
    auto offsets = store.LoadOffsets(kTopic);
    EXPECT_THAT(offsets, IsOk());
    if (!offsets.ok()) return -1;
    const int64_t n = offsets->contains(0) ? offsets->at(0) : 0;
    int64_t count = 0;
    EXPECT_THAT(store.ScanPrefix("k/",
                                 [&](std::string_view key, std::string_view) {
                                   const int64_t i =
                                       std::stoll(std::string(key.substr(2)));
                                   EXPECT_LT(i, n) << key;
                                   ++count;
                                   return absl::OkStatus();
                                 }),
                IsOk());
    EXPECT_EQ(count, n);
    for (int64_t i = 0; i < n; ++i) {
      auto value = store.Get(fmt::format("k/{}", i));
      EXPECT_THAT(value, IsOk());
      EXPECT_TRUE(value.ok() && value->has_value()) << "missing k/" << i;
    }
    auto next = store.Get(fmt::format("k/{}", n));
    EXPECT_THAT(next, IsOk());
    EXPECT_FALSE(next.ok() && next->has_value()) << "k/" << n << " present";
    return n;
  }

  std::vector<fs::path> FilesEndingWith(std::string_view suffix) const {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().filename().string().ends_with(suffix)) {
        files.push_back(entry.path());
      }
    }
    return files;
  }

  static void Overwrite(const fs::path& file, std::string_view bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  // Overwrites `length` bytes at `offset` with garbage, keeping the size.
  static void Garble(const fs::path& file, size_t offset, size_t length) {
    std::fstream io(file, std::ios::binary | std::ios::in | std::ios::out);
    io.seekp(static_cast<std::streamoff>(offset));
    const std::string junk(length, '\x5a');
    io.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }

  fs::path root_;
  std::string dir_;
};

TEST_F(StateStoreTest, GetOfMissingKeyIsNullopt) {
  auto store = OpenOrDie();
  auto value = store->Get(JobKey(1));
  ASSERT_THAT(value, IsOk());
  EXPECT_FALSE(value->has_value());
  EXPECT_EQ(store->dir(), dir_);
}

TEST_F(StateStoreTest, CommittedDataPersistsAcrossReopen) {
  {
    auto store = OpenOrDie();
    StateBatch batch;
    batch.Put(JobKey(1), "job one");
    batch.Put(MetaKey("graph_manager"), "meta");
    ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
  }
  auto store = OpenOrDie();
  EXPECT_EQ(store->Get(JobKey(1))->value_or(""), "job one");
  EXPECT_EQ(store->Get(MetaKey("graph_manager"))->value_or(""), "meta");
}

TEST_F(StateStoreTest, ScanPrefixReturnsIdOrderAndOnlyThatFamily) {
  auto store = OpenOrDie();
  StateBatch batch;
  for (uint64_t id : {10, 2, 1, 300})
    batch.Put(JobKey(id), fmt::format("{}", id));
  batch.Put(TaskKey(5), "task");
  batch.Put(MachineKey(3), "machine");
  batch.Put(MetaKey("x"), "meta");
  for (uint32_t dst : {10U, 2U}) batch.Put(ArcKey(1, dst), "arc");
  batch.Put(ArcKey(0, 99), "arc");
  ASSERT_THAT(store->Commit(std::move(batch)), IsOk());

  std::vector<uint64_t> ids;
  ASSERT_THAT(
      store->ScanPrefix(kJobPrefix,
                        [&](std::string_view key, std::string_view value) {
                          auto id = DecodeIdKey(key, kJobPrefix);
                          if (!id.ok()) return id.status();
                          EXPECT_EQ(value, fmt::format("{}", *id));
                          ids.push_back(*id);
                          return absl::OkStatus();
                        }),
      IsOk());
  EXPECT_THAT(ids, ElementsAre(1, 2, 10, 300));

  std::vector<std::pair<uint32_t, uint32_t>> arcs;
  ASSERT_THAT(store->ScanPrefix(kArcPrefix,
                                [&](std::string_view key, std::string_view) {
                                  auto arc = DecodeArcKey(key);
                                  if (!arc.ok()) return arc.status();
                                  arcs.push_back(*arc);
                                  return absl::OkStatus();
                                }),
              IsOk());
  EXPECT_THAT(arcs, ElementsAre(Pair(0, 99), Pair(1, 2), Pair(1, 10)));
  EXPECT_THAT(Keys(*store, kMachinePrefix), ElementsAre(MachineKey(3)));
  EXPECT_THAT(Keys(*store, kMetaPrefix), ElementsAre(MetaKey("x")));
}

TEST_F(StateStoreTest, ScanPrefixStopsAtFirstVisitorError) {
  auto store = OpenOrDie();
  StateBatch batch;
  for (uint64_t id = 0; id < 5; ++id) batch.Put(JobKey(id), "");
  ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
  int visited = 0;
  EXPECT_THAT(store->ScanPrefix(kJobPrefix,
                                [&](std::string_view, std::string_view) {
                                  return ++visited == 2
                                             ? absl::AbortedError("stop here")
                                             : absl::OkStatus();
                                }),
              StatusIs(absl::StatusCode::kAborted, "stop here"));
  EXPECT_EQ(visited, 2);
}

TEST_F(StateStoreTest, ScanPrefixWithoutUpperBound) {
  auto store = OpenOrDie();
  StateBatch batch;
  batch.Put(std::string("\xff\xff", 2), "a");
  batch.Put(std::string("\xff\xff\x01", 3), "b");
  batch.Put(std::string("\xff\xfe", 2), "c");
  batch.Put("j", "d");
  ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
  EXPECT_THAT(
      Keys(*store, std::string("\xff\xff", 2)),
      ElementsAre(std::string("\xff\xff", 2), std::string("\xff\xff\x01", 3)));
  EXPECT_EQ(Keys(*store, "").size(), 4U);
}

TEST_F(StateStoreTest, BatchWithOffsetsIsCommittedTogether) {
  {
    auto store = OpenOrDie();
    StateBatch batch;
    batch.Put(JobKey(7), "job");
    batch.Put(TaskKey(70), "task");
    batch.SetOffset(kTopic, 0, 42);
    batch.SetOffset(kTopic, 3, 7);
    batch.SetOffset(kTopic, 0, 43);  // the later value wins
    batch.SetOffset("flowsched.placements", 0, 5);
    EXPECT_EQ(batch.operation_count(), 6U);
    ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
  }
  auto store = OpenOrDie();
  auto offsets = store->LoadOffsets(kTopic);
  ASSERT_THAT(offsets, IsOk());
  EXPECT_THAT(*offsets, ElementsAre(Pair(0, 43), Pair(3, 7)));
  EXPECT_THAT(*store->LoadOffsets("flowsched.placements"),
              ElementsAre(Pair(0, 5)));
  EXPECT_THAT(*store->LoadOffsets("flowsched"), IsEmpty());
  EXPECT_TRUE(store->Get(JobKey(7))->has_value());
  EXPECT_TRUE(store->Get(TaskKey(70))->has_value());
}

TEST_F(StateStoreTest, LoadOffsetsReportsDamagedValueAsDataLoss) {
  auto store = OpenOrDie();
  StateBatch batch;
  batch.Put(OffsetKey(kTopic, 0), "not eight bytes");
  ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
  EXPECT_THAT(store->LoadOffsets(kTopic),
              StatusIs(absl::StatusCode::kDataLoss, "malformed offset value"));
}

TEST_F(StateStoreTest, InvalidOperationPoisonsTheWholeBatch) {
  auto store = OpenOrDie();
  {
    StateBatch batch;
    batch.Put(JobKey(1), "job");
    batch.SetOffset(kTopic, 0, -1001);  // a librdkafka logical offset
    batch.Put(JobKey(2), "job");
    EXPECT_THAT(store->Commit(std::move(batch)),
                StatusIs(absl::StatusCode::kInvalidArgument, "non-negative"));
  }
  {
    StateBatch batch;
    batch.Put(JobKey(3), "job");
    batch.DeletePrefix("");
    EXPECT_THAT(store->Commit(std::move(batch)),
                StatusIs(absl::StatusCode::kInvalidArgument, "Clear()"));
  }
  {
    StateBatch batch;
    batch.DeleteRange("b", "a");
    EXPECT_THAT(store->Commit(std::move(batch)),
                StatusIs(absl::StatusCode::kInvalidArgument, "DeleteRange"));
  }
  {
    StateBatch batch;
    batch.SetOffset(kTopic, -1, 0);
    EXPECT_TRUE(batch.empty());  // poisoned without operations still fails
    EXPECT_THAT(store->Commit(std::move(batch)),
                StatusIs(absl::StatusCode::kInvalidArgument, "partition"));
  }
  EXPECT_THAT(Keys(*store, ""), IsEmpty());
}

TEST_F(StateStoreTest, BatchAppliesOperationsInOrder) {
  auto store = OpenOrDie();
  StateBatch setup;
  for (uint32_t id = 0; id < 5; ++id) setup.Put(NodeKey(id), "old");
  setup.Put(JobKey(1), "job");
  ASSERT_THAT(store->Commit(std::move(setup)), IsOk());

  // The rebuild-the-network shape: drop the family, write the new one.
  StateBatch batch;
  batch.DeletePrefix(kNodePrefix);
  batch.Put(NodeKey(3), "new");
  batch.Put(NodeKey(9), "new");
  batch.Delete(NodeKey(9));
  ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
  EXPECT_THAT(Keys(*store, kNodePrefix), ElementsAre(NodeKey(3)));
  EXPECT_EQ(store->Get(NodeKey(3))->value_or(""), "new");
  EXPECT_TRUE(store->Get(JobKey(1))->has_value());
}

TEST_F(StateStoreTest, BatchCountsAndMoves) {
  StateBatch batch;
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(batch.operation_count(), 0U);
  batch.Put("a", "1");
  batch.Delete("b");
  batch.SetOffset(kTopic, 1, 2);
  EXPECT_EQ(batch.operation_count(), 3U);
  EXPECT_FALSE(batch.empty());
  EXPECT_GT(batch.byte_size(), 0U);

  StateBatch moved = std::move(batch);
  EXPECT_EQ(moved.operation_count(), 3U);
  // A moved-from batch is empty and usable again.
  EXPECT_TRUE(batch.empty());  // NOLINT(bugprone-use-after-move)
  batch.Put("c", "3");
  EXPECT_EQ(batch.operation_count(), 1U);

  auto store = OpenOrDie();
  EXPECT_THAT(store->Commit(StateBatch()), IsOk());
  EXPECT_THAT(store->Commit(std::move(moved)), IsOk());
  EXPECT_THAT(Keys(*store, "a"), ElementsAre("a"));
}

TEST_F(StateStoreTest, CleanCloseFlushesSoOpenReplaysNoWal) {
  {
    auto store = OpenOrDie();
    CommitRecordBatches(*store, 10);
    EXPECT_TRUE(FilesEndingWith(".sst").empty());  // all in the memtable
  }
  EXPECT_FALSE(FilesEndingWith(".sst").empty());
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(ExpectConsistentPrefix(*store), 10);
}

TEST_F(StateStoreTest, ReadOnlySeesCommittedDataAndRefusesWrites) {
  {
    StateStore::OpenOptions options;
    options.flush_on_close = false;
    auto store = OpenOrDie(options);
    CommitRecordBatches(*store, 10);
  }  // not flushed: the read-only open must replay the WAL
  StateStore::OpenOptions options;
  options.read_only = true;
  auto store = OpenOrDie(options);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->read_only());
  EXPECT_EQ(ExpectConsistentPrefix(*store), 10);

  StateBatch batch;
  batch.Put("k/10", "x");
  EXPECT_THAT(store->Commit(std::move(batch)),
              StatusIs(absl::StatusCode::kFailedPrecondition, "read-only"));
  EXPECT_THAT(store->Clear(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "read-only"));
  EXPECT_THAT(store->Flush(),
              StatusIs(absl::StatusCode::kFailedPrecondition, "read-only"));
  EXPECT_FALSE(store->Get("k/10")->has_value());
}

TEST_F(StateStoreTest, MissingDirectoryIsNotFoundUnlessCreating) {
  StateStore::OpenOptions options;
  options.create_if_missing = false;
  EXPECT_THAT(StateStore::Open(dir_, options),
              StatusIs(absl::StatusCode::kNotFound, dir_));
  options = {};
  options.read_only = true;
  EXPECT_THAT(StateStore::Open(dir_, options),
              StatusIs(absl::StatusCode::kNotFound, dir_));
  EXPECT_FALSE(fs::exists(dir_));

  // An existing but empty directory is no store either.
  fs::create_directories(dir_);
  options = {};
  options.create_if_missing = false;
  EXPECT_THAT(StateStore::Open(dir_, options),
              StatusIs(absl::StatusCode::kNotFound, dir_));
}

TEST_F(StateStoreTest, SecondWriterIsUnavailable) {
  auto first = OpenOrDie();
  EXPECT_THAT(StateStore::Open(dir_, {}),
              StatusIs(absl::StatusCode::kUnavailable, "LOCK"));
  // A read-only reader does not take the lock.
  StateStore::OpenOptions options;
  options.read_only = true;
  EXPECT_THAT(StateStore::Open(dir_, options), IsOk());
}

// A writer that waits for the lock opens the store once the holder lets
// go, and still gives up with Unavailable when it never does.
TEST_F(StateStoreTest, WriterWaitsForTheLockToGo) {
  auto first = OpenOrDie();
  StateStore::OpenOptions options;
  options.lock_wait_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(StateStore::Open(dir_, options),
              StatusIs(absl::StatusCode::kUnavailable, "LOCK"));
  EXPECT_GE(std::chrono::steady_clock::now() - start,
            std::chrono::milliseconds(300));

  options.lock_wait_ms = 30'000;
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    first.reset();
  });
  auto second = StateStore::Open(dir_, options);
  release.join();
  ASSERT_THAT(second, IsOk());
  StateBatch batch;
  batch.Put(JobKey(1), "j");
  EXPECT_THAT((*second)->Commit(std::move(batch)), IsOk());
}

TEST_F(StateStoreTest, ClearRemovesEveryKeyAtomically) {
  auto store = OpenOrDie();
  StateBatch batch;
  batch.Put(JobKey(1), "j");
  batch.Put(TaskKey(2), "t");
  batch.Put(MachineKey(3), "m");
  batch.Put(NodeKey(4), "n");
  batch.Put(ArcKey(4, 5), "a");
  batch.Put(MetaKey("round"), "r");
  batch.Put("", "empty key");
  batch.Put(std::string("\xff\xff\xff", 3), "last");
  batch.SetOffset(kTopic, 0, 9);
  ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
  ASSERT_THAT(store->Flush(), IsOk());  // the data is in SST files too
  StateBatch more;
  more.Put(JobKey(2), "memtable only");
  ASSERT_THAT(store->Commit(std::move(more)), IsOk());

  ASSERT_THAT(store->Clear(), IsOk());
  EXPECT_THAT(Keys(*store, ""), IsEmpty());
  EXPECT_THAT(*store->LoadOffsets(kTopic), IsEmpty());
  EXPECT_THAT(store->Clear(), IsOk());  // clearing an empty store is fine

  StateBatch after;
  after.Put(JobKey(1), "rebuilt");
  ASSERT_THAT(store->Commit(std::move(after)), IsOk());
  store.reset();
  store = OpenOrDie();
  EXPECT_THAT(Keys(*store, ""), ElementsAre(JobKey(1)));
  EXPECT_EQ(store->Get(JobKey(1))->value_or(""), "rebuilt");
}

TEST_F(StateStoreTest, ConcurrentCommitsAndReads) {
  auto store = OpenOrDie(
      {.create_if_missing = true, .read_only = false, .sync_writes = false});
  constexpr int kThreads = 4;
  constexpr int kBatches = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < kBatches; ++i) {
        StateBatch batch;
        batch.Put(JobKey(static_cast<uint64_t>(t) * kBatches +
                         static_cast<uint64_t>(i)),
                  "j");
        batch.SetOffset(kTopic, t, i + 1);
        EXPECT_THAT(store->Commit(std::move(batch)), IsOk());
        EXPECT_THAT(store->LoadOffsets(kTopic), IsOk());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(Keys(*store, kJobPrefix).size(),
            static_cast<size_t>(kThreads * kBatches));
  EXPECT_THAT(*store->LoadOffsets(kTopic),
              UnorderedElementsAre(Pair(0, kBatches), Pair(1, kBatches),
                                   Pair(2, kBatches), Pair(3, kBatches)));
}

TEST_F(StateStoreTest, DestroyRemovesTheStore) {
  {
    auto store = OpenOrDie();
    CommitRecordBatches(*store, 3);
    EXPECT_THAT(StateStore::Destroy(dir_),
                StatusIs(absl::StatusCode::kUnavailable, ""));
  }
  EXPECT_THAT(StateStore::Destroy(dir_), IsOk());
  EXPECT_FALSE(fs::exists(dir_));
  EXPECT_THAT(StateStore::Destroy(dir_), IsOk());  // already gone
}

// --- damaged directories ---------------------------------------------------

class CorruptionTest : public StateStoreTest {
 protected:
  // A store with `count` record batches flushed into an SST file.
  void MakeFlushedStore(int count) {
    // No fsync per batch: Flush() below makes the data durable, and 2000
    // fsyncs would dominate the test's run time.
    auto store = OpenOrDie(
        {.create_if_missing = true, .read_only = false, .sync_writes = false});
    ASSERT_NE(store, nullptr);
    std::mt19937_64 rng(7);
    for (int i = 0; i < count; ++i) {
      StateBatch batch;
      // Random values so that compression cannot shrink the file to nothing.
      std::string value(100, '\0');
      for (char& c : value) c = static_cast<char>(rng());
      batch.Put(fmt::format("k/{}", i), value);
      batch.SetOffset(kTopic, 0, i + 1);
      ASSERT_THAT(store->Commit(std::move(batch)), IsOk());
    }
    ASSERT_THAT(store->Flush(), IsOk());
  }

  // After damage the store either refuses to open with DataLoss naming the
  // directory, or opens and reports DataLoss when the damaged data is read.
  void ExpectDataLossOnOpenOrRead() {
    auto store = StateStore::Open(dir_, {});
    if (!store.ok()) {
      EXPECT_THAT(store, StatusIs(absl::StatusCode::kDataLoss, dir_));
      return;
    }
    EXPECT_THAT((*store)->ScanPrefix("",
                                     [](std::string_view, std::string_view) {
                                       return absl::OkStatus();
                                     }),
                StatusIs(absl::StatusCode::kDataLoss, ""));
  }

  // Damage is recoverable by starting over (then rebuilding from the topics).
  void ExpectDestroyAndRecreateWorks() {
    ASSERT_THAT(StateStore::Destroy(dir_), IsOk());
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    EXPECT_THAT(Keys(*store, ""), IsEmpty());
  }
};

TEST_F(CorruptionTest, GarbageCurrentFile) {
  MakeFlushedStore(10);
  Overwrite(fs::path(dir_) / "CURRENT", "garbage");
  EXPECT_THAT(StateStore::Open(dir_, {}),
              StatusIs(absl::StatusCode::kDataLoss, dir_));
  StateStore::OpenOptions read_only;
  read_only.read_only = true;
  EXPECT_THAT(StateStore::Open(dir_, read_only),
              StatusIs(absl::StatusCode::kDataLoss, dir_));
  ExpectDestroyAndRecreateWorks();
}

TEST_F(CorruptionTest, CurrentNamesMissingManifest) {
  MakeFlushedStore(10);
  Overwrite(fs::path(dir_) / "CURRENT", "MANIFEST-999999\n");
  EXPECT_THAT(StateStore::Open(dir_, {}),
              StatusIs(absl::StatusCode::kDataLoss, dir_));
  ExpectDestroyAndRecreateWorks();
}

TEST_F(CorruptionTest, MissingCurrentFileIsNotAnEmptyStore) {
  MakeFlushedStore(10);
  fs::remove(fs::path(dir_) / "CURRENT");
  EXPECT_THAT(StateStore::Open(dir_, {}),
              StatusIs(absl::StatusCode::kDataLoss, dir_));
  ExpectDestroyAndRecreateWorks();
}

TEST_F(CorruptionTest, GarbledManifest) {
  MakeFlushedStore(10);
  const auto manifests = FilesEndingWith("");  // filtered below
  int garbled = 0;
  for (const auto& file : manifests) {
    if (file.filename().string().starts_with("MANIFEST-")) {
      Overwrite(file, std::string(300, '\x17'));
      ++garbled;
    }
  }
  ASSERT_GT(garbled, 0);
  EXPECT_THAT(StateStore::Open(dir_, {}),
              StatusIs(absl::StatusCode::kDataLoss, dir_));
  ExpectDestroyAndRecreateWorks();
}

TEST_F(CorruptionTest, TruncatedSstFile) {
  MakeFlushedStore(2000);
  const auto ssts = FilesEndingWith(".sst");
  ASSERT_FALSE(ssts.empty());
  for (const auto& sst : ssts) fs::resize_file(sst, fs::file_size(sst) / 2);
  ExpectDataLossOnOpenOrRead();
  ExpectDestroyAndRecreateWorks();
}

TEST_F(CorruptionTest, GarbledSstDataBlock) {
  MakeFlushedStore(2000);
  const auto ssts = FilesEndingWith(".sst");
  ASSERT_FALSE(ssts.empty());
  for (const auto& sst : ssts) Garble(sst, fs::file_size(sst) / 4, 64);
  ExpectDataLossOnOpenOrRead();
  ExpectDestroyAndRecreateWorks();
}

TEST_F(CorruptionTest, GarbledWalRecoversAConsistentPrefixOrFails) {
  {
    // Closed like a crash would leave it: the batches live only in the WAL.
    StateStore::OpenOptions options;
    options.flush_on_close = false;
    auto store = StateStore::Open(dir_, options);
    ASSERT_TRUE(store.ok()) << store.status();
    CommitRecordBatches(**store, 100);
  }
  const auto logs = FilesEndingWith(".log");
  ASSERT_FALSE(logs.empty());
  for (const auto& log : logs) {
    if (fs::file_size(log) > 0) Garble(log, fs::file_size(log) / 2, 16);
  }
  auto store = StateStore::Open(dir_, {});
  if (!store.ok()) {
    EXPECT_THAT(store, StatusIs(absl::StatusCode::kDataLoss, dir_));
    return;
  }
  // Point-in-time recovery: whole batches up to the damage, offsets included.
  const int64_t n = ExpectConsistentPrefix(**store);
  EXPECT_LT(n, 100);
}

// --- kill -9 while committing ----------------------------------------------

class KillTest : public StateStoreTest,
                 public ::testing::WithParamInterface<bool> {};

// The child resumes from the stored offset like the graph manager does and
// commits "apply record i" batches until killed. After every kill the store
// must hold exactly the batches below the stored offset.
TEST_P(KillTest, SigkillMidStreamLeavesWholeBatchesOnly) {
  StateStore::OpenOptions options;
  options.sync_writes = GetParam();
  int64_t previous = 0;
  for (int round = 0; round < 3; ++round) {
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: no gtest here; the exit code tells the parent what failed.
      close(ready[0]);
      auto store = StateStore::Open(dir_, options);
      if (!store.ok()) _exit(2);
      auto offsets = (*store)->LoadOffsets(kTopic);
      if (!offsets.ok()) _exit(3);
      const int64_t first = offsets->contains(0) ? offsets->at(0) : 0;
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::seconds(30);
      const std::string payload(256, 'p');
      for (int64_t i = first;; ++i) {
        StateBatch batch;
        batch.Put(fmt::format("k/{}", i), payload);
        batch.SetOffset(kTopic, 0, i + 1);
        if (!(*store)->Commit(std::move(batch)).ok()) _exit(4);
        if (i == first + 10 && write(ready[1], "r", 1) != 1) _exit(5);
        if (std::chrono::steady_clock::now() > deadline) _exit(6);
      }
    }
    close(ready[1]);
    char byte = 0;
    const ssize_t got = read(ready[0], &byte, 1);
    close(ready[0]);
    if (got == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid, SIGKILL);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_EQ(got, 1) << "child failed before committing; wait status "
                      << wstatus;
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "child exited on its own, wait status " << wstatus;

    auto store = OpenOrDie(options);
    ASSERT_NE(store, nullptr);
    const int64_t n = ExpectConsistentPrefix(*store);
    EXPECT_GT(n, previous + 10) << "round " << round;
    previous = n;
  }
}

INSTANTIATE_TEST_SUITE_P(SyncAndAsync, KillTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "SyncWrites" : "NoSync";
                         });

}  // namespace
}  // namespace flowsched::storage
