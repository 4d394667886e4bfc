#pragma once

// Key layout of the graph manager's RocksDB state store.
//
// Every key starts with a short family prefix. Numbers inside keys are
// fixed-width big-endian, so RocksDB's bytewise order equals numeric order and
// a prefix scan returns a family in id order (id 2 before id 10).
//
//   family        key                                        value
//   ------------  -----------------------------------------  ------------------
//   job           "j/"    + u64 job_id (8 bytes BE)          JobRecord
//   task          "t/"    + u64 task_id (8 bytes BE)         TaskRecord
//   machine       "m/"    + u64 machine_id (8 bytes BE)      MachineRecord
//   node          "n/"    + u32 node_id (4 bytes BE)         NodeRecord
//   arc           "a/"    + u32 src (4 BE) + u32 dst (4 BE)  ArcRecord
//   offset        "o/"    + u32 len(topic) (4 BE) + topic    i64 next offset
//                         + i32 partition (4 BE, sign bit    (8 bytes BE)
//                           flipped)
//   meta          "meta/" + name                             caller-defined
//   ledger        "l/"    + u64 seq (8 bytes BE)             LedgerRecord not
//                                                            yet acknowledged
//                                                            by the broker
//   dead letter   "d/"    + u64 seq (8 bytes BE)             DeadLetter not yet
//                                                            acknowledged by
//                                                            the broker
//
// Values are opaque bytes to storage/ (the graph manager stores the protobuf
// records of proto/flowsched/v1/state.proto), except offsets, whose encoding
// lives here because StateStore reads them back.
//
// Why the odd bits:
// - No family prefix is a prefix of another ("m/" vs "meta/"), so scans of one
//   family never see another.
// - The topic is length-prefixed rather than terminated: any byte string is a
//   valid topic, and the prefix of one topic can never match another topic
//   ("events" vs "events2").
// - The partition's sign bit is flipped so that negative partitions (which
//   Kafka never assigns, but the encoding must stay total) sort first and the
//   rest sort numerically.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace flowsched::storage {

inline constexpr std::string_view kJobPrefix = "j/";
inline constexpr std::string_view kTaskPrefix = "t/";
inline constexpr std::string_view kMachinePrefix = "m/";
inline constexpr std::string_view kNodePrefix = "n/";
inline constexpr std::string_view kArcPrefix = "a/";
inline constexpr std::string_view kOffsetPrefix = "o/";
inline constexpr std::string_view kMetaPrefix = "meta/";
inline constexpr std::string_view kLedgerPrefix = "l/";
inline constexpr std::string_view kDeadLetterPrefix = "d/";

std::string JobKey(uint64_t job_id);
std::string TaskKey(uint64_t task_id);
std::string MachineKey(uint64_t machine_id);
std::string NodeKey(uint32_t node_id);
std::string ArcKey(uint32_t src, uint32_t dst);
std::string OffsetKey(std::string_view topic, int32_t partition);
std::string MetaKey(std::string_view name);
std::string LedgerKey(uint64_t seq);
std::string DeadLetterKey(uint64_t seq);

// The prefix shared by the offset keys of all partitions of `topic`.
std::string OffsetTopicPrefix(std::string_view topic);

// Decodes the id of a single-id key of the family `prefix`. The id width
// follows the layout: 4 bytes for kNodePrefix, 8 bytes for every other prefix.
// DataLoss if the key does not start with `prefix` or has the wrong length:
// keys come from disk, so a malformed one means the store is damaged.
absl::StatusOr<uint64_t> DecodeIdKey(std::string_view key,
                                     std::string_view prefix);
// Same as DecodeIdKey(key, kNodePrefix), typed.
absl::StatusOr<uint32_t> DecodeNodeKey(std::string_view key);
// Returns {src, dst}.
absl::StatusOr<std::pair<uint32_t, uint32_t>> DecodeArcKey(
    std::string_view key);

struct OffsetKeyParts {
  std::string topic;
  int32_t partition = 0;
  bool operator==(const OffsetKeyParts&) const = default;
};
absl::StatusOr<OffsetKeyParts> DecodeOffsetKey(std::string_view key);

// The value stored under an OffsetKey: the next offset to consume.
std::string EncodeOffsetValue(int64_t next_offset);
// DataLoss unless the value is 8 bytes holding a non-negative offset.
absl::StatusOr<int64_t> DecodeOffsetValue(std::string_view value);

// The smallest key greater than every key starting with `prefix`, or "" when
// there is none (empty prefix, or one made only of 0xff bytes). Used as the
// exclusive upper bound of prefix scans and prefix deletes.
std::string PrefixSuccessor(std::string_view prefix);

}  // namespace flowsched::storage
