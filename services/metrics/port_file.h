#pragma once

// Where a service publishes the port its metrics server bound:
// <data-dir>/metrics/<name>.port, one line with the port number, so that
// tests and operators find a server started on port 0.

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowsched::metrics {

[[nodiscard]] std::string PortFilePath(const std::string& data_dir,
                                       const std::string& name);

// Writes the file atomically (temporary file, then rename), creating the
// metrics directory. Unavailable when the directory or file cannot be
// written.
absl::Status WritePortFile(const std::string& data_dir, const std::string& name,
                           int port);

// NotFound when the file is missing, InvalidArgument when it does not hold
// a port number.
absl::StatusOr<int> ReadPortFile(const std::string& data_dir,
                                 const std::string& name);

}  // namespace flowsched::metrics
