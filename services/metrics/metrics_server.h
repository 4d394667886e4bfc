#pragma once

// A service's HTTP endpoint on one listener (CivetWeb):
//   /metrics  the registry in Prometheus' text format 0.0.4;
//   /healthz  200 while the process serves requests at all;
//   /readyz   200 once the service declared itself ready (SetReady), 503
//             before and after (recovering, standby, stepping down).
// prometheus::Exposer cannot serve /readyz (its CivetWeb server is private
// and its endpoints always answer 200), so the server is CivetWeb's own
// CivetServer, the one the Exposer wraps, with the registry serialised by
// prometheus-cpp's TextSerializer.
//
// Lifecycle: Start() listens and serves on CivetWeb's threads until the
// server is destroyed. Thread-safety: SetReady may be called from any
// thread; the registry must outlive the server.

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "services/metrics/listen_address.h"

namespace prometheus {
class Registry;
}

namespace flowsched::metrics {

class MetricsServer {
 public:
  // Unavailable when the address cannot be bound (in use, not local).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const ListenAddress& address, const prometheus::Registry& registry);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // The bound port (the kernel's choice for port 0).
  [[nodiscard]] int port() const { return port_; }
  void SetReady(bool ready) { ready_.store(ready); }
  [[nodiscard]] bool ready() const { return ready_.load(); }

 private:
  struct Handlers;
  MetricsServer() = default;

  std::atomic<bool> ready_{false};
  int port_ = 0;
  // Declared last: destroyed (joining CivetWeb's threads) before the
  // handlers and the flag they read.
  std::unique_ptr<Handlers> handlers_;
};

}  // namespace flowsched::metrics
