#include "services/metrics/http_get.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flowsched::metrics {

absl::StatusOr<HttpResponse> HttpGet(int port, const std::string& path,
                                     int timeout_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  timeval timeout{};
  timeout.tv_sec = timeout_ms / 1000;
  timeout.tv_usec = (timeout_ms % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string raw;
  absl::Status failed;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                sizeof(address)) != 0) {
    failed = absl::UnavailableError(absl::StrCat("connect to 127.0.0.1:", port,
                                                 ": ", std::strerror(errno)));
  } else {
    const std::string request =
        absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      failed = absl::UnavailableError("send failed");
    }
    char buffer[4096];
    while (failed.ok()) {
      const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      if (n == 0) break;
      if (n < 0) {
        failed = absl::UnavailableError(
            absl::StrCat("receiving from 127.0.0.1:", port, path, ": ",
                         std::strerror(errno)));
        break;
      }
      raw.append(buffer, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (!failed.ok()) return failed;
  // "HTTP/1.x NNN reason\r\n...\r\n\r\nbody"
  const size_t space = raw.find(' ');
  const size_t header_end = raw.find("\r\n\r\n");
  HttpResponse response;
  if (space == std::string::npos || header_end == std::string::npos ||
      !absl::SimpleAtoi(raw.substr(space + 1, 3), &response.status)) {
    return absl::DataLossError(
        absl::StrCat("no HTTP response from 127.0.0.1:", port, path));
  }
  response.body = raw.substr(header_end + 4);
  return response;
}

}  // namespace flowsched::metrics
