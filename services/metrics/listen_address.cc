#include "services/metrics/listen_address.h"

#include <arpa/inet.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flowsched::metrics {

std::string ListenAddress::ToString() const {
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<ListenAddress> ParseListenAddress(std::string_view view) {
  // absl::string_view is its own type in Debian's abseil.
  const std::string text(view);
  auto invalid = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-address expects IPV4:PORT (e.g. 127.0.0.1:9464, or "
        "127.0.0.1:0 for a free port), got '",
        text, "': ", why));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return invalid("no port");
  ListenAddress address;
  address.host = text.substr(0, colon);
  in_addr parsed{};
  if (::inet_pton(AF_INET, address.host.c_str(), &parsed) != 1) {
    return invalid("the host is not an IPv4 address");
  }
  uint32_t port = 0;
  const std::string port_text = text.substr(colon + 1);
  if (port_text.empty() || !absl::SimpleAtoi(port_text, &port) ||
      port > 65535) {
    return invalid("the port is not a number in [0, 65535]");
  }
  address.port = static_cast<uint16_t>(port);
  return address;
}

}  // namespace flowsched::metrics
