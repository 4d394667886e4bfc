#pragma once

// The address a service's metrics server listens on: `--metrics-address
// IPV4:PORT`, e.g. 127.0.0.1:9464, or port 0 for a free port chosen by the
// kernel (the bound port is then logged and written to a port file).

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace flowsched::metrics {

struct ListenAddress {
  std::string host;   // an IPv4 address in dotted form
  uint16_t port = 0;  // 0: any free port
  // "host:port", as CivetWeb's listening_ports option takes it.
  [[nodiscard]] std::string ToString() const;
};

// InvalidArgument (naming the flag and the expected form) unless `text` is
// an IPv4 address, a colon and a port in [0, 65535].
absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace flowsched::metrics
