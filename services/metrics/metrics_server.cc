#include "services/metrics/metrics_server.h"

#include <CivetServer.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace flowsched::metrics {
namespace {

bool Reply(mg_connection* conn, int status, std::string_view reason,
           std::string_view content_type, std::string_view body) {
  mg_printf(conn,
            "HTTP/1.1 %d %.*s\r\nContent-Type: %.*s\r\n"
            "Content-Length: %zu\r\nConnection: close\r\n\r\n",
            status, static_cast<int>(reason.size()), reason.data(),
            static_cast<int>(content_type.size()), content_type.data(),
            body.size());
  mg_write(conn, body.data(), body.size());
  return true;
}

}  // namespace

// Named, not anonymous: MetricsServer::Handlers holds these by value, and a
// member of a type with internal linkage is -Wsubobject-linkage once this
// file is compiled as part of a unity batch.
namespace internal {

class MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(const prometheus::Registry& registry)
      : registry_(registry) {}
  using CivetHandler::handleGet;
  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    std::ostringstream body;
    prometheus::TextSerializer().Serialize(body, registry_.Collect());
    return Reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                 body.str());
  }

 private:
  const prometheus::Registry& registry_;
};

class HealthHandler : public CivetHandler {
 public:
  using CivetHandler::handleGet;
  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    return Reply(conn, 200, "OK", "text/plain", "ok\n");
  }
};

class ReadyHandler : public CivetHandler {
 public:
  explicit ReadyHandler(const std::atomic<bool>& ready) : ready_(ready) {}
  using CivetHandler::handleGet;
  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    if (ready_.load()) return Reply(conn, 200, "OK", "text/plain", "ready\n");
    return Reply(conn, 503, "Service Unavailable", "text/plain", "not ready\n");
  }

 private:
  const std::atomic<bool>& ready_;
};

}  // namespace internal

struct MetricsServer::Handlers {
  Handlers(const prometheus::Registry& registry, const std::atomic<bool>& ready)
      : metrics(registry), ready_handler(ready) {}
  internal::MetricsHandler metrics;
  internal::HealthHandler health;
  internal::ReadyHandler ready_handler;
  // Last: stopped before the handlers it calls are destroyed.
  std::unique_ptr<CivetServer> server;
};

MetricsServer::~MetricsServer() = default;

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const ListenAddress& address, const prometheus::Registry& registry) {
  auto server = std::unique_ptr<MetricsServer>(new MetricsServer());
  server->handlers_ = std::make_unique<Handlers>(registry, server->ready_);
  const std::vector<std::string> options = {
      "listening_ports", address.ToString(), "num_threads", "2"};
  try {
    server->handlers_->server = std::make_unique<CivetServer>(options);
  } catch (const CivetException& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics server cannot listen on ", address.ToString(),
                     ": ", e.what()));
  }
  CivetServer& civet = *server->handlers_->server;
  civet.addHandler("/metrics", server->handlers_->metrics);
  civet.addHandler("/healthz", server->handlers_->health);
  civet.addHandler("/readyz", server->handlers_->ready_handler);
  const std::vector<int> ports = civet.getListeningPorts();
  if (ports.empty() || ports.front() <= 0) {
    return absl::UnavailableError(absl::StrCat(
        "metrics server on ", address.ToString(), " reports no bound port"));
  }
  server->port_ = ports.front();
  return server;
}

}  // namespace flowsched::metrics
