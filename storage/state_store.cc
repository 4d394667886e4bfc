#include "storage/state_store.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/iterator.h"
#include "rocksdb/memtablerep.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "services/common/status_macros.h"
#include "storage/keys.h"
#include "storage/rocksdb_status.h"

namespace flowsched::storage {
namespace {

namespace fs = std::filesystem;
using internal::FromRocksDbStatus;

rocksdb::Slice ToSlice(std::string_view s) {
  return rocksdb::Slice(s.data(), s.size());
}

// Sized for the graph manager: a few GiB of state at most, written in many
// small batches, read mostly at startup. Memory stays bounded; nothing here
// trades durability for speed.
rocksdb::Options MakeOptions(const StateStore::OpenOptions& open_options) {
  rocksdb::Options options;
  options.create_if_missing = open_options.create_if_missing;
  // Fail loudly on damage instead of serving a partial state: the graph
  // manager then rebuilds from the topics (DESIGN.md, guarantee 3).
  options.paranoid_checks = true;
  // A torn or damaged WAL tail recovers to the last whole batch before it.
  // Every batch carries its own offsets, so that prefix is a consistent state
  // and consuming resumes right after it.
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  options.write_buffer_size = 16 << 20;
  options.max_write_buffer_number = 3;
  // Bounds recovery time: a large WAL forces a memtable flush.
  options.max_total_wal_size = 64 << 20;
  options.max_background_jobs = 2;
  options.max_open_files = 256;
  options.keep_log_file_num = 4;
  options.max_log_file_size = 16 << 20;
  // Memtable inserts were a third of the graph manager's CPU while it
  // ingested a burst of submissions (perf: skiplist key comparisons; every
  // event writes ~5.5 keys). A vector memtable appends and sorts once when
  // it is flushed. Its price, sorting on every read of the live memtable,
  // is paid only where this store is read: at startup (RocksDB flushes the
  // memtables it recovers from the WAL during Open) and by the offline
  // `flowsched data` commands. It takes one writer at a time, which the
  // graph manager is.
  options.memtable_factory.reset(new rocksdb::VectorRepFactory());
  options.allow_concurrent_memtable_write = false;

  // LZ4 is cheap enough for a write-heavy store and shrinks protobuf records;
  // fall back to none if this RocksDB build lacks it.
  const std::vector<rocksdb::CompressionType> supported =
      rocksdb::GetSupportedCompressions();
  options.compression = std::find(supported.begin(), supported.end(),
                                  rocksdb::kLZ4Compression) != supported.end()
                            ? rocksdb::kLZ4Compression
                            : rocksdb::kNoCompression;

  rocksdb::BlockBasedTableOptions table_options;
  table_options.block_cache = rocksdb::NewLRUCache(32 << 20);
  // Point lookups (Get of an entity) skip SST files without the key.
  table_options.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  options.table_factory.reset(
      rocksdb::NewBlockBasedTableFactory(table_options));
  return options;
}

// True if `dir` holds files that only an existing database would have. Used
// to tell "no store yet" from "store whose CURRENT file was lost": RocksDB
// would treat the latter as empty and, with create_if_missing, start over
// silently.
bool HasDatabaseFiles(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("MANIFEST-") || name.ends_with(".sst") ||
        name.ends_with(".log")) {
      return true;
    }
  }
  return false;
}

absl::Status ReadOnlyError(const std::string& dir) {
  return absl::FailedPreconditionError(
      fmt::format("state store {} is open read-only", dir));
}

}  // namespace

// ---------------------------------------------------------------------------
// StateBatch

struct StateBatch::Rep {
  rocksdb::WriteBatch batch;
  // The first invalid operation; Commit() returns it and writes nothing, so a
  // bad batch never lands half-applied.
  absl::Status error;

  void Poison(absl::Status status) {
    if (error.ok()) error = std::move(status);
  }
  void Check(const rocksdb::Status& status, std::string_view what) {
    if (!status.ok()) Poison(FromRocksDbStatus(status, what));
  }
};

StateBatch::StateBatch() = default;
StateBatch::~StateBatch() = default;
StateBatch::StateBatch(StateBatch&& other) noexcept = default;
StateBatch& StateBatch::operator=(StateBatch&& other) noexcept = default;

StateBatch::Rep& StateBatch::rep() {
  if (rep_ == nullptr) rep_ = std::make_unique<Rep>();
  return *rep_;
}

void StateBatch::Put(std::string_view key, std::string_view value) {
  Rep& r = rep();
  r.Check(r.batch.Put(ToSlice(key), ToSlice(value)), "batch put");
}

void StateBatch::Delete(std::string_view key) {
  Rep& r = rep();
  r.Check(r.batch.Delete(ToSlice(key)), "batch delete");
}

void StateBatch::DeleteRange(std::string_view begin, std::string_view end) {
  Rep& r = rep();
  if (begin > end) {
    r.Poison(absl::InvalidArgumentError(
        "DeleteRange: begin key sorts after end key"));
    return;
  }
  r.Check(r.batch.DeleteRange(ToSlice(begin), ToSlice(end)),
          "batch delete range");
}

void StateBatch::DeletePrefix(std::string_view prefix) {
  const std::string end = PrefixSuccessor(prefix);
  if (end.empty()) {
    rep().Poison(absl::InvalidArgumentError(
        "DeletePrefix: prefix has no upper bound; use StateStore::Clear()"));
    return;
  }
  DeleteRange(prefix, end);
}

void StateBatch::SetOffset(std::string_view topic, int32_t partition,
                           int64_t next_offset) {
  if (partition < 0 || next_offset < 0) {
    rep().Poison(absl::InvalidArgumentError(fmt::format(
        "SetOffset({}, partition {}, offset {}): partition and offset must "
        "be non-negative",
        topic, partition, next_offset)));
    return;
  }
  Put(OffsetKey(topic, partition), EncodeOffsetValue(next_offset));
}

size_t StateBatch::operation_count() const {
  return rep_ == nullptr ? 0 : rep_->batch.Count();
}

bool StateBatch::empty() const { return operation_count() == 0; }

size_t StateBatch::byte_size() const {
  return rep_ == nullptr ? 0 : rep_->batch.GetDataSize();
}

// ---------------------------------------------------------------------------
// StateStore

struct StateStore::Impl {
  std::string dir;
  bool read_only = false;
  bool flush_on_close = false;
  rocksdb::WriteOptions write_options;
  std::unique_ptr<rocksdb::DB> db;
  // RocksDB serializes writes anyway; this also makes Clear()'s
  // find-last-key-then-delete atomic with respect to Commit().
  std::mutex write_mu;
};

StateStore::StateStore(PassKey, std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
StateStore::~StateStore() {
  // OpenOptions::flush_on_close. Best effort: the WAL still has everything
  // if the flush fails, and a crash skips this anyway.
  if (impl_ != nullptr && impl_->db != nullptr && impl_->flush_on_close) {
    impl_->db->Flush(rocksdb::FlushOptions()).PermitUncheckedError();
  }
}

namespace {

// Returns once the store's lock at `dir` is free, or after `wait_ms`, or at
// once on any error but a held lock (DB::Open then reports what it finds).
// Probes with RocksDB's own lock (Env::LockFile), not DB::Open: each Open
// rotates the info log, and keep_log_file_num would then purge the LOG of
// the process that held the lock, the one a post-mortem wants.
void WaitWhileLocked(const std::string& dir, int wait_ms) {
  rocksdb::Env* env = rocksdb::Env::Default();
  const std::string lock_path = dir + "/LOCK";
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    rocksdb::FileLock* lock = nullptr;
    const rocksdb::Status status = env->LockFile(lock_path, &lock);
    if (status.ok()) {
      env->UnlockFile(lock).PermitUncheckedError();
      return;
    }
    // Held by another process, or by this one (RocksDB's own words).
    const std::string text = status.ToString();
    const bool held =
        text.find("While lock file") != std::string::npos ||
        text.find("lock hold by current process") != std::string::npos;
    if (!held || std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(
    const std::string& dir, const OpenOptions& options) {
  const fs::path path(dir);
  std::error_code ec;
  if (!fs::exists(path / "CURRENT", ec)) {
    if (HasDatabaseFiles(path)) {
      return absl::DataLossError(fmt::format(
          "state store {} has database files but no CURRENT file", dir));
    }
    if (!options.create_if_missing || options.read_only) {
      return absl::NotFoundError(fmt::format("no state store at {}", dir));
    }
  }

  const rocksdb::Options db_options = MakeOptions(options);
  rocksdb::DB* raw_db = nullptr;
  if (!options.read_only && options.lock_wait_ms > 0) {
    WaitWhileLocked(dir, options.lock_wait_ms);
  }
  const rocksdb::Status status =
      options.read_only ? rocksdb::DB::OpenForReadOnly(db_options, dir, &raw_db)
                        : rocksdb::DB::Open(db_options, dir, &raw_db);
  // RocksDB 7.8 hands out an owning raw pointer; own it before anything else.
  std::unique_ptr<rocksdb::DB> db(raw_db);
  const std::string context = fmt::format("open state store {}", dir);
  if (status.IsPathNotFound()) {
    // CURRENT exists (checked above), so a missing file is one the store
    // itself references, e.g. the MANIFEST named in CURRENT.
    return absl::DataLossError(
        fmt::format("{}: {}", context, status.ToString()));
  }
  if (!status.ok()) return FromRocksDbStatus(status, context);
  if (db == nullptr) {
    return absl::InternalError(fmt::format("{}: no database handle", context));
  }

  auto impl = std::make_unique<Impl>();
  impl->dir = dir;
  impl->read_only = options.read_only;
  impl->flush_on_close = options.flush_on_close && !options.read_only;
  impl->write_options.sync = options.sync_writes;
  impl->write_options.disableWAL = false;
  impl->db = std::move(db);
  return std::make_unique<StateStore>(PassKey(), std::move(impl));
}

absl::Status StateStore::Destroy(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return absl::OkStatus();
  const rocksdb::Status status = rocksdb::DestroyDB(dir, rocksdb::Options());
  FLOWSCHED_RETURN_IF_ERROR(
      FromRocksDbStatus(status, fmt::format("destroy state store {}", dir)));
  // Only removes the directory if DestroyDB left it empty: files RocksDB does
  // not know are not ours to delete.
  fs::remove(dir, ec);
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> StateStore::Get(
    std::string_view key) const {
  std::string value;
  const rocksdb::Status status =
      impl_->db->Get(rocksdb::ReadOptions(), ToSlice(key), &value);
  if (status.IsNotFound()) return std::optional<std::string>();
  FLOWSCHED_RETURN_IF_ERROR(FromRocksDbStatus(
      status, fmt::format("get from state store {}", impl_->dir)));
  return std::optional<std::string>(std::move(value));
}

absl::Status StateStore::ScanPrefix(
    std::string_view prefix,
    const std::function<absl::Status(std::string_view key,
                                     std::string_view value)>& visit) const {
  // The bound lets RocksDB stop at the end of the family instead of reading
  // into the next one; it must outlive the iterator.
  const std::string upper = PrefixSuccessor(prefix);
  const rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions read_options;
  if (!upper.empty()) read_options.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db->NewIterator(read_options));
  for (it->Seek(ToSlice(prefix)); it->Valid(); it->Next()) {
    const std::string_view key = it->key().ToStringView();
    // Without an upper bound (prefix of 0xff bytes) the range check is ours.
    if (!key.starts_with(prefix)) break;
    FLOWSCHED_RETURN_IF_ERROR(visit(key, it->value().ToStringView()));
  }
  return FromRocksDbStatus(it->status(),
                           fmt::format("scan state store {}", impl_->dir));
}

absl::Status StateStore::VerifyChecksums() const {
  return FromRocksDbStatus(
      impl_->db->VerifyChecksum(),
      fmt::format("verify checksums of state store {}", impl_->dir));
}

absl::StatusOr<bool> StateStore::IsEmpty() const {
  std::unique_ptr<rocksdb::Iterator> it(
      impl_->db->NewIterator(rocksdb::ReadOptions()));
  it->SeekToFirst();
  const bool empty = !it->Valid();
  FLOWSCHED_RETURN_IF_ERROR(FromRocksDbStatus(
      it->status(), fmt::format("scan state store {}", impl_->dir)));
  return empty;
}

absl::Status StateStore::Commit(StateBatch batch) {
  if (batch.rep_ != nullptr && !batch.rep_->error.ok()) {
    return batch.rep_->error;
  }
  if (batch.empty()) return absl::OkStatus();
  if (impl_->read_only) return ReadOnlyError(impl_->dir);
  const std::lock_guard<std::mutex> lock(impl_->write_mu);
  return FromRocksDbStatus(
      impl_->db->Write(impl_->write_options, &batch.rep_->batch),
      fmt::format("commit to state store {}", impl_->dir));
}

absl::StatusOr<std::map<int32_t, int64_t>> StateStore::LoadOffsets(
    std::string_view topic) const {
  std::map<int32_t, int64_t> offsets;
  FLOWSCHED_RETURN_IF_ERROR(ScanPrefix(
      OffsetTopicPrefix(topic),
      [&](std::string_view key, std::string_view value) -> absl::Status {
        FLOWSCHED_ASSIGN_OR_RETURN(const OffsetKeyParts parts,
                                   DecodeOffsetKey(key));
        FLOWSCHED_ASSIGN_OR_RETURN(const int64_t next_offset,
                                   DecodeOffsetValue(value));
        offsets[parts.partition] = next_offset;
        return absl::OkStatus();
      }));
  return offsets;
}

absl::Status StateStore::Clear() {
  if (impl_->read_only) return ReadOnlyError(impl_->dir);
  const std::lock_guard<std::mutex> lock(impl_->write_mu);
  // One range tombstone from the smallest possible key to just past the
  // largest existing one covers every key, whatever its family, in a single
  // atomic write.
  std::string end;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        impl_->db->NewIterator(rocksdb::ReadOptions()));
    it->SeekToLast();
    FLOWSCHED_RETURN_IF_ERROR(FromRocksDbStatus(
        it->status(), fmt::format("clear state store {}", impl_->dir)));
    if (!it->Valid()) return absl::OkStatus();
    end = it->key().ToString();
  }
  end.push_back('\0');
  rocksdb::WriteBatch batch;
  const std::string context = fmt::format("clear state store {}", impl_->dir);
  FLOWSCHED_RETURN_IF_ERROR(FromRocksDbStatus(
      batch.DeleteRange(rocksdb::Slice(), rocksdb::Slice(end)), context));
  return FromRocksDbStatus(impl_->db->Write(impl_->write_options, &batch),
                           context);
}

absl::Status StateStore::Flush() {
  if (impl_->read_only) return ReadOnlyError(impl_->dir);
  return FromRocksDbStatus(impl_->db->Flush(rocksdb::FlushOptions()),
                           fmt::format("flush state store {}", impl_->dir));
}

std::string StateStore::dir() const { return impl_->dir; }

bool StateStore::read_only() const { return impl_->read_only; }

}  // namespace flowsched::storage
