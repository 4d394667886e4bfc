#include "tools/sim/openb_reader.h"

#include <fstream>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace flowsched::sim {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// The cluster state's default caps (ValidationLimits): 2^32 millicores,
// 2^50 bytes of memory.
constexpr int64_t kMaxCpuMilli = int64_t{1} << 32;
constexpr int64_t kMaxMemoryMib = int64_t{1} << 30;

// Records an error when a read CPU or memory value is above its cap.
template <typename Rows>
void CheckCaps(Rows& rows, std::optional<int64_t> cpu,
               std::optional<int64_t> memory) {
  if (cpu.has_value() && *cpu > kMaxCpuMilli) {
    rows.Error(absl::StrCat("cpu_milli ", *cpu, " is too large"));
  }
  if (memory.has_value() && *memory > kMaxMemoryMib) {
    rows.Error(absl::StrCat("memory_mib ", *memory, " is too large"));
  }
}

// One CSV file read row by row: the header's column positions, the current
// row's fields, and the errors so far.
class CsvRows {
 public:
  CsvRows(std::istream& in, std::string name)
      : in_(in), name_(std::move(name)) {}

  // Reads the header; InvalidArgument if empty or a required column is
  // missing.
  absl::Status ReadHeader(const std::vector<std::string>& required) {
    std::string line;
    if (!std::getline(in_, line)) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": empty file"));
    }
    ++line_number_;
    Trim(line);
    const std::vector<std::string> columns = absl::StrSplit(line, ',');
    for (size_t i = 0; i < columns.size(); ++i) position_[columns[i]] = i;
    column_count_ = columns.size();
    for (const std::string& column : required) {
      if (!position_.contains(column)) {
        return absl::InvalidArgumentError(
            absl::StrCat(name_, ":1: no column '", column, "' in the header"));
      }
    }
    return absl::OkStatus();
  }

  // The next non-empty row; false at the end. A row with the wrong number
  // of fields is recorded as an error and skipped.
  bool Next() {
    std::string line;
    while (std::getline(in_, line)) {
      ++line_number_;
      Trim(line);
      if (line.empty()) continue;
      fields_ = absl::StrSplit(line, ',');
      if (fields_.size() != column_count_) {
        Error(absl::StrCat(fields_.size(), " columns, the header has ",
                           column_count_));
        continue;
      }
      return true;
    }
    return false;
  }

  [[nodiscard]] bool Has(const std::string& column) const {
    return position_.contains(column);
  }
  // REQUIRES: Has(column).
  [[nodiscard]] const std::string& Field(const std::string& column) const {
    return fields_[position_.at(column)];
  }
  // A non-negative integer field; records an error and returns nullopt
  // otherwise (empty allowed when `empty_value` is set).
  std::optional<int64_t> Count(const std::string& column,
                               std::optional<int64_t> empty_value = {}) {
    const std::string& text = Field(column);
    if (text.empty() && empty_value.has_value()) return empty_value;
    int64_t value = 0;
    if (!absl::SimpleAtoi(text, &value)) {
      Error(absl::StrCat(column, " '", text, "' is not an integer"));
      return std::nullopt;
    }
    if (value < 0) {
      Error(absl::StrCat(column, " ", value, " is negative"));
      return std::nullopt;
    }
    return value;
  }

  void Error(const std::string& why) {
    ++error_count_;
    row_ok_ = false;
    if (errors_.size() < kMaxReportedErrors) {
      errors_.push_back(absl::StrCat(name_, ":", line_number_, ": ", why));
    }
  }
  // Whether the current row has had no error; resets for the next row.
  bool TakeRowOk() { return std::exchange(row_ok_, true); }

  // OK, or InvalidArgument listing the errors.
  [[nodiscard]] absl::Status Finish() const {
    if (error_count_ == 0) return absl::OkStatus();
    std::string message = absl::StrCat(error_count_, " bad rows");
    for (const std::string& error : errors_)
      absl::StrAppend(&message, "\n  ", error);
    if (error_count_ > errors_.size()) {
      absl::StrAppend(&message, "\n  ...");
    }
    return absl::InvalidArgumentError(message);
  }

 private:
  static void Trim(std::string& line) {
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) {
      line.pop_back();
    }
  }

  std::istream& in_;
  std::string name_;
  std::map<std::string, size_t> position_;
  size_t column_count_ = 0;
  std::vector<std::string> fields_;
  uint64_t line_number_ = 0;
  uint64_t error_count_ = 0;
  std::vector<std::string> errors_;
  bool row_ok_ = true;
};

// Records a duplicate name as the row's error.
void CheckUnique(CsvRows& rows, std::set<std::string>& seen,
                 const std::string& name) {
  if (name.empty()) {
    rows.Error("empty name");
  } else if (!seen.insert(name).second) {
    rows.Error(absl::StrCat("duplicate name '", name, "'"));
  }
}

// The columns every node and pod row starts with: a unique name, CPU and
// memory (nullopt where the row's value is bad, recorded as its error).
struct NamedResources {
  std::string name;
  std::optional<int64_t> cpu_milli, memory_mib;
};
NamedResources ReadNamedResources(CsvRows& rows, std::set<std::string>& seen,
                                  const std::string& name_column) {
  NamedResources out{.name = rows.Field(name_column)};
  CheckUnique(rows, seen, out.name);
  out.cpu_milli = rows.Count("cpu_milli");
  out.memory_mib = rows.Count("memory_mib");
  CheckCaps(rows, out.cpu_milli, out.memory_mib);
  return out;
}

template <typename Record>
absl::StatusOr<std::vector<Record>> OpenAndRead(
    const std::string& path,
    absl::StatusOr<std::vector<Record>> (*read)(std::istream&,
                                                const std::string&)) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  return read(in, path);
}

}  // namespace

absl::StatusOr<std::vector<OpenbNode>> ReadOpenbNodes(std::istream& in,
                                                      const std::string& name) {
  CsvRows rows(in, name);
  if (auto s =
          rows.ReadHeader({"sn", "cpu_milli", "memory_mib", "gpu", "model"});
      !s.ok()) {
    return s;
  }
  std::vector<OpenbNode> nodes;
  std::set<std::string> seen;
  while (rows.Next()) {
    const NamedResources named = ReadNamedResources(rows, seen, "sn");
    OpenbNode node{.name = named.name};
    const auto gpus = rows.Count("gpu");
    node.model = rows.Field("model");
    if (gpus.has_value()) {
      if (*gpus > kMaxOpenbDevices) {
        rows.Error(
            absl::StrCat("gpu ", *gpus, " is more than ", kMaxOpenbDevices));
      } else if (*gpus > 0 && node.model.empty()) {
        rows.Error("gpu without a model");
      }
    }
    if (!rows.TakeRowOk()) continue;
    node.cpu_milli = *named.cpu_milli;
    node.memory_mib = *named.memory_mib;
    node.gpus = static_cast<uint32_t>(*gpus);
    nodes.push_back(std::move(node));
  }
  if (auto s = rows.Finish(); !s.ok()) return s;
  return nodes;
}

absl::StatusOr<std::vector<OpenbPod>> ReadOpenbPods(std::istream& in,
                                                    const std::string& name) {
  CsvRows rows(in, name);
  if (auto s = rows.ReadHeader({"name", "cpu_milli", "memory_mib", "num_gpu",
                                "gpu_milli", "gpu_spec"});
      !s.ok()) {
    return s;
  }
  std::vector<OpenbPod> pods;
  std::set<std::string> seen;
  while (rows.Next()) {
    const NamedResources named = ReadNamedResources(rows, seen, "name");
    OpenbPod pod{.name = named.name};
    const auto num_gpu = rows.Count("num_gpu");
    const auto gpu_milli = rows.Count("gpu_milli");
    if (num_gpu.has_value() && gpu_milli.has_value()) {
      if (*num_gpu > kMaxOpenbDevices) {
        rows.Error(absl::StrCat("num_gpu ", *num_gpu, " is more than ",
                                kMaxOpenbDevices));
      } else if (*gpu_milli > cluster::kMilliPerDevice) {
        rows.Error(absl::StrCat("gpu_milli ", *gpu_milli, " is above 1000"));
      } else if (*num_gpu > 0 && *gpu_milli == 0) {
        rows.Error(absl::StrCat("num_gpu ", *num_gpu, " with gpu_milli 0"));
      } else if (*num_gpu == 0 && *gpu_milli > 0) {
        rows.Error(absl::StrCat("gpu_milli ", *gpu_milli, " with num_gpu 0"));
      } else if (*num_gpu > 1 && *gpu_milli < cluster::kMilliPerDevice) {
        rows.Error(absl::StrCat("a fraction (gpu_milli ", *gpu_milli, ") of ",
                                *num_gpu, " devices"));
      }
    }
    if (const std::string& spec = rows.Field("gpu_spec"); !spec.empty()) {
      std::vector<std::string> models = absl::StrSplit(spec, '|');
      for (const std::string& model : models) {
        if (model.empty())
          rows.Error(absl::StrCat("empty model in '", spec, "'"));
      }
      pod.gpu_spec = std::move(models);
    }
    for (const auto& [column, field] :
         {std::pair{"qos", &pod.qos}, std::pair{"pod_phase", &pod.pod_phase}}) {
      if (rows.Has(column)) *field = rows.Field(column);
    }
    for (const auto& [column, field] :
         {std::pair{"creation_time", &pod.creation_time},
          std::pair{"deletion_time", &pod.deletion_time},
          std::pair{"scheduled_time", &pod.scheduled_time}}) {
      if (!rows.Has(column)) continue;
      if (auto value = rows.Count(column, -1)) *field = *value;
    }
    if (!rows.TakeRowOk()) continue;
    pod.cpu_milli = *named.cpu_milli;
    pod.memory_mib = *named.memory_mib;
    pod.num_gpu = static_cast<uint32_t>(*num_gpu);
    pod.gpu_milli = *gpu_milli;
    pods.push_back(std::move(pod));
  }
  if (auto s = rows.Finish(); !s.ok()) return s;
  return pods;
}

absl::StatusOr<std::vector<OpenbNode>> ReadOpenbNodeFile(
    const std::string& path) {
  return OpenAndRead<OpenbNode>(path, &ReadOpenbNodes);
}

absl::StatusOr<std::vector<OpenbPod>> ReadOpenbPodFile(
    const std::string& path) {
  return OpenAndRead<OpenbPod>(path, &ReadOpenbPods);
}

cluster::MachineAdded ToMachineAdded(const OpenbNode& node, MachineId id) {
  cluster::MachineAdded added{
      .machine = id,
      .rack = "",
      .capacity = {.cpu_millis = node.cpu_milli,
                   .memory_bytes = node.memory_mib * kMiB},
      .task_slots = kOpenbTaskSlots};
  if (node.gpus > 0) {
    added.accelerators.push_back({.count = node.gpus, .model = node.model});
  }
  return added;
}

cluster::TaskSpec ToTaskSpec(const OpenbPod& pod, TaskId id) {
  cluster::TaskSpec spec;
  spec.id = id;
  spec.request = {.cpu_millis = pod.cpu_milli,
                  .memory_bytes = pod.memory_mib * kMiB};
  if (pod.num_gpu > 0) {
    if (pod.gpu_milli < cluster::kMilliPerDevice) {
      spec.accelerator.milli = pod.gpu_milli;
    } else {
      spec.accelerator.whole = pod.num_gpu;
    }
    spec.accelerator.models = pod.gpu_spec;
  }
  return spec;
}

}  // namespace flowsched::sim
