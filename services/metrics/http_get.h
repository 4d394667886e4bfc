#pragma once

// Tests and `bench e2e`'s scraper only: one HTTP/1.0 GET to
// 127.0.0.1:<port>, reading the response until the server closes the
// connection.

#include <string>

#include "absl/status/statusor.h"

namespace flowsched::metrics {

struct HttpResponse {
  int status = 0;
  std::string body;
};

// Unavailable when the connection fails or times out (`timeout_ms` per
// send or receive), DataLoss for a response without a status line.
absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path,
                                     int timeout_ms = 5000);

}  // namespace flowsched::metrics
