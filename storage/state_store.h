#pragma once

// The graph manager's durable state: a RocksDB database behind a small API.
//
// Atomicity: everything that must survive together goes into one StateBatch
// and one Commit(). In particular, a batch of applied Kafka records carries
// the offsets it consumed (StateBatch::SetOffset), so after a SIGKILL at any
// moment the store holds either the whole batch with its offsets or neither,
// and consuming resumes exactly after the last durable batch.
//
// Durability: writes always go through RocksDB's write-ahead log. With
// OpenOptions::sync_writes (the default) Commit() returns only after the WAL
// is fsynced, so a committed batch also survives a machine crash; without it a
// committed batch survives a process crash but a power loss may drop the
// newest batches (always whole batches, oldest kept first).
//
// Thread-safety: all StateStore methods may be called concurrently (RocksDB's
// DB is thread-safe; Commit and Clear are serialized internally). Each read
// sees a consistent snapshot. A StateBatch is a plain value with no locking:
// build it on one thread, then hand it to Commit().
//
// Keys are opaque bytes here; storage/keys.h defines the layout the graph
// manager uses.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowsched::storage {

// A set of writes applied atomically by StateStore::Commit(), in the order
// they were added (a Put after a DeletePrefix of the same key survives).
class StateBatch {
 public:
  StateBatch();
  ~StateBatch();
  StateBatch(StateBatch&& other) noexcept;
  StateBatch& operator=(StateBatch&& other) noexcept;
  StateBatch(const StateBatch&) = delete;
  StateBatch& operator=(const StateBatch&) = delete;

  void Put(std::string_view key, std::string_view value);
  void Delete(std::string_view key);
  // Deletes every key in [begin, end).
  void DeleteRange(std::string_view begin, std::string_view end);
  // Deletes every key starting with `prefix`. A prefix without an upper bound
  // (empty, or all 0xff bytes) poisons the batch; use StateStore::Clear().
  void DeletePrefix(std::string_view prefix);
  // Records that `next_offset` is the next offset to consume from
  // topic/partition. A negative offset or partition poisons the batch: such a
  // value would be a caller bug (e.g. a librdkafka logical offset), and
  // writing it would break resumption.
  void SetOffset(std::string_view topic, int32_t partition,
                 int64_t next_offset);

  // Number of operations added so far.
  size_t operation_count() const;
  bool empty() const;
  // Approximate serialized size, for callers that bound batch sizes.
  size_t byte_size() const;

 private:
  friend class StateStore;
  struct Rep;
  // Allocated on first write, so a default-constructed or moved-from batch is
  // simply empty.
  Rep& rep();
  std::unique_ptr<Rep> rep_;
};

class StateStore {
 public:
  struct OpenOptions {
    bool create_if_missing = true;
    // Opens with DB::OpenForReadOnly: no lock taken, nothing written (the WAL
    // is replayed in memory only), every write returns FailedPrecondition.
    // Meant for `flowsched inspect` on a stopped instance's directory.
    bool read_only = false;
    // fsync the WAL on every Commit().
    bool sync_writes = true;
    // Flush the memtables to SST files when the store is destroyed, so the
    // next Open reads SST files instead of replaying the WAL. Only speed:
    // the WAL holds every committed batch either way.
    bool flush_on_close = true;
    // How long Open waits while another process holds the store's lock,
    // probing the lock itself (not the database, whose every open rotates
    // the info log): a process killed a moment ago keeps it until its last
    // thread has exited, after its main thread is reported gone (a
    // supervisor restarting it at once would otherwise fail).
    int lock_wait_ms = 0;
  };

  // Errors: NotFound if there is no store at `dir` and it may not be created
  // (create_if_missing=false, or read_only); DataLoss (message names `dir`)
  // if the directory is damaged; Unavailable if another process holds it open
  // (after OpenOptions::lock_wait_ms) or on I/O errors.
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(
      const std::string& dir, const OpenOptions& options);
  // Deletes the store's files at `dir` (works on a damaged store, which is
  // how the graph manager starts over when it rebuilds from the topics). OK
  // if `dir` does not exist. The store must not be open.
  static absl::Status Destroy(const std::string& dir);

  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // std::nullopt if the key is absent.
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) const;

  // Calls `visit` for every key starting with `prefix`, in key order, over a
  // consistent snapshot. Stops at and returns the first non-OK status from
  // `visit`. The views are valid only during the call.
  absl::Status ScanPrefix(
      std::string_view prefix,
      const std::function<absl::Status(std::string_view key,
                                       std::string_view value)>& visit) const;

  // Applies the batch as one atomic RocksDB write. An empty batch is a no-op.
  absl::Status Commit(StateBatch batch);

  // Next offset to consume, per partition of `topic`.
  absl::StatusOr<std::map<int32_t, int64_t>> LoadOffsets(
      std::string_view topic) const;

  // Removes every key in one atomic write.
  absl::Status Clear();

  // Reads every SST file and checks its block checksums (RocksDB's
  // VerifyChecksum): DataLoss names the damaged file. Costs one full read of
  // the store, so it is meant for startup.
  absl::Status VerifyChecksums() const;

  // True if the store holds no key at all.
  absl::StatusOr<bool> IsEmpty() const;

  // Flushes memtables to SST files. Never needed for durability (the WAL
  // already has everything); useful before copying a directory.
  absl::Status Flush();

  std::string dir() const;
  bool read_only() const;

 private:
  struct Impl;
  // Lets Open() use std::make_unique while nobody else can construct.
  struct PassKey {
    explicit PassKey() = default;
  };

 public:
  StateStore(PassKey, std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace flowsched::storage
