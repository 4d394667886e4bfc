#include "storage/keys.h"

#include <cstddef>
#include <limits>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace flowsched::storage {
namespace {

constexpr uint32_t kSignBit = 0x80000000U;

void AppendBigEndian(std::string& out, uint64_t value, int width) {
  for (int shift = (width - 1) * 8; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

uint64_t ReadBigEndian(std::string_view bytes) {
  uint64_t value = 0;
  for (char c : bytes) {
    value = (value << 8) | static_cast<unsigned char>(c);
  }
  return value;
}

std::string IdKey(std::string_view prefix, uint64_t id, int width) {
  std::string key;
  key.reserve(prefix.size() + static_cast<size_t>(width));
  key.append(prefix);
  AppendBigEndian(key, id, width);
  return key;
}

// Printable rendering of a damaged key for error messages: keys are binary.
std::string Escape(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f && c != '\\') {
      out.push_back(c);
    } else {
      out += fmt::format("\\x{:02x}", u);
    }
  }
  return out;
}

absl::Status Malformed(std::string_view what, std::string_view key) {
  return absl::DataLossError(
      fmt::format("malformed {} key \"{}\"", what, Escape(key)));
}

}  // namespace

std::string JobKey(uint64_t job_id) { return IdKey(kJobPrefix, job_id, 8); }
std::string TaskKey(uint64_t task_id) { return IdKey(kTaskPrefix, task_id, 8); }
std::string MachineKey(uint64_t machine_id) {
  return IdKey(kMachinePrefix, machine_id, 8);
}
std::string NodeKey(uint32_t node_id) { return IdKey(kNodePrefix, node_id, 4); }

std::string ArcKey(uint32_t src, uint32_t dst) {
  std::string key = IdKey(kArcPrefix, src, 4);
  AppendBigEndian(key, dst, 4);
  return key;
}

std::string OffsetTopicPrefix(std::string_view topic) {
  std::string key;
  key.reserve(kOffsetPrefix.size() + 4 + topic.size() + 4);
  key.append(kOffsetPrefix);
  AppendBigEndian(key, topic.size(), 4);
  key.append(topic);
  return key;
}

std::string OffsetKey(std::string_view topic, int32_t partition) {
  std::string key = OffsetTopicPrefix(topic);
  AppendBigEndian(key, static_cast<uint32_t>(partition) ^ kSignBit, 4);
  return key;
}

std::string LedgerKey(uint64_t seq) { return IdKey(kLedgerPrefix, seq, 8); }
std::string DeadLetterKey(uint64_t seq) {
  return IdKey(kDeadLetterPrefix, seq, 8);
}

std::string MetaKey(std::string_view name) {
  std::string key(kMetaPrefix);
  key.append(name);
  return key;
}

absl::StatusOr<uint64_t> DecodeIdKey(std::string_view key,
                                     std::string_view prefix) {
  const size_t width = prefix == kNodePrefix ? 4 : 8;
  if (!key.starts_with(prefix) || key.size() != prefix.size() + width) {
    return Malformed(fmt::format("id (prefix \"{}\")", Escape(prefix)), key);
  }
  return ReadBigEndian(key.substr(prefix.size()));
}

absl::StatusOr<uint32_t> DecodeNodeKey(std::string_view key) {
  absl::StatusOr<uint64_t> id = DecodeIdKey(key, kNodePrefix);
  if (!id.ok()) return id.status();
  return static_cast<uint32_t>(*id);
}

absl::StatusOr<std::pair<uint32_t, uint32_t>> DecodeArcKey(
    std::string_view key) {
  if (!key.starts_with(kArcPrefix) || key.size() != kArcPrefix.size() + 8) {
    return Malformed("arc", key);
  }
  const std::string_view ids = key.substr(kArcPrefix.size());
  return std::pair<uint32_t, uint32_t>(
      static_cast<uint32_t>(ReadBigEndian(ids.substr(0, 4))),
      static_cast<uint32_t>(ReadBigEndian(ids.substr(4, 4))));
}

absl::StatusOr<OffsetKeyParts> DecodeOffsetKey(std::string_view key) {
  constexpr size_t kFixed = kOffsetPrefix.size() + 4 + 4;
  if (!key.starts_with(kOffsetPrefix) || key.size() < kFixed) {
    return Malformed("offset", key);
  }
  const uint64_t topic_size =
      ReadBigEndian(key.substr(kOffsetPrefix.size(), 4));
  if (topic_size != key.size() - kFixed) {
    return Malformed("offset", key);
  }
  OffsetKeyParts parts;
  parts.topic = std::string(key.substr(kOffsetPrefix.size() + 4, topic_size));
  parts.partition = static_cast<int32_t>(
      static_cast<uint32_t>(ReadBigEndian(key.substr(key.size() - 4))) ^
      kSignBit);
  return parts;
}

std::string EncodeOffsetValue(int64_t next_offset) {
  std::string value;
  AppendBigEndian(value, static_cast<uint64_t>(next_offset), 8);
  return value;
}

absl::StatusOr<int64_t> DecodeOffsetValue(std::string_view value) {
  if (value.size() != 8) {
    return absl::DataLossError(
        fmt::format("malformed offset value of {} bytes \"{}\"", value.size(),
                    Escape(value)));
  }
  const uint64_t raw = ReadBigEndian(value);
  if (raw > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::DataLossError(
        fmt::format("negative offset value \"{}\"", Escape(value)));
  }
  return static_cast<int64_t>(raw);
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    const auto last = static_cast<unsigned char>(end.back());
    if (last != 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return end;
}

}  // namespace flowsched::storage
