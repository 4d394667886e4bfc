#include "services/graph_manager/status_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "services/common/percentile.h"

namespace flowsched::graph_manager {
namespace {}  // namespace

void SummarizeTimings(const std::vector<double>& values_ms, v1::Timings& out) {
  out.Clear();
  out.set_count(values_ms.size());
  if (values_ms.empty()) return;
  std::vector<double> sorted = values_ms;
  std::sort(sorted.begin(), sorted.end());
  out.set_p50_ms(NearestRankPercentile(sorted, 0.50));
  out.set_p99_ms(NearestRankPercentile(sorted, 0.99));
  out.set_max_ms(sorted.back());
  out.set_mean_ms(std::accumulate(sorted.begin(), sorted.end(), 0.0) /
                  static_cast<double>(sorted.size()));
}

absl::Status WriteStatusFile(const std::string& path,
                             const v1::GraphManagerStatus& status) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(status, &json, options)
           .ok()) {
    return absl::InternalError("cannot render status as JSON");
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << json << "\n";
    if (!out.good()) {
      return absl::UnavailableError(absl::StrCat("cannot write ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::GraphManagerStatus> ReadStatusFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("no status file at ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  v1::GraphManagerStatus status;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(buffer.str(), &status,
                                                   options)
           .ok()) {
    return absl::DataLossError(
        absl::StrCat("status file ", path, " does not parse"));
  }
  return status;
}

}  // namespace flowsched::graph_manager
