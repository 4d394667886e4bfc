#include "services/metrics/port_file.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flowsched::metrics {

std::string PortFilePath(const std::string& data_dir, const std::string& name) {
  return absl::StrCat(data_dir, "/metrics/", name, ".port");
}

absl::Status WritePortFile(const std::string& data_dir, const std::string& name,
                           int port) {
  const std::string path = PortFilePath(data_dir, name);
  std::error_code ec;
  std::filesystem::create_directories(data_dir + "/metrics", ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot create ", data_dir, "/metrics: ", ec.message()));
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << port << "\n";
    if (!out.flush()) {
      return absl::UnavailableError(absl::StrCat("cannot write ", temporary));
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot rename ", temporary, ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ReadPortFile(const std::string& data_dir,
                                 const std::string& name) {
  const std::string path = PortFilePath(data_dir, name);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, " is missing"));
  std::string line;
  int port = 0;
  if (!std::getline(in, line) || !absl::SimpleAtoi(line, &port) || port <= 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " holds no port number"));
  }
  return port;
}

}  // namespace flowsched::metrics
