#include "tools/e2e/metrics_scraper.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "services/metrics/http_get.h"
#include "services/metrics/port_file.h"

namespace flowsched::e2e {

MetricsScraper::MetricsScraper(std::string data_dir, double every_s)
    : data_dir_(std::move(data_dir)),
      every_s_(every_s),
      thread_([this] { Loop(); }) {}

MetricsScraper::~MetricsScraper() { Stop(); }

ScrapeTotals MetricsScraper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return totals_;
}

void MetricsScraper::Loop() {
  const auto period = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(every_s_));
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    lock.unlock();
    ScrapeAll();
    lock.lock();
    // Never catch up with back-to-back scrapes after a slow one.
    next = std::max(next + period, std::chrono::steady_clock::now());
    wake_.wait_until(lock, next, [this] { return stop_; });
  }
}

void MetricsScraper::ScrapeAll() {
  // The names first (no throwing iteration: a file may come or go).
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(
      std::filesystem::path(data_dir_) / "metrics", ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->path().extension() == ".port") {
      names.push_back(it->path().stem().string());
    }
  }
  for (const std::string& name : names) {
    const absl::StatusOr<int> port = metrics::ReadPortFile(data_dir_, name);
    if (!port.ok()) continue;  // being rewritten: next tick
    const auto start = std::chrono::steady_clock::now();
    const absl::StatusOr<metrics::HttpResponse> response =
        metrics::HttpGet(*port, "/metrics", /*timeout_ms=*/2000);
    if (!response.ok() || response->status != 200) {
      ++totals_.failures;
      continue;
    }
    ++totals_.scrapes;
    totals_.bytes += response->body.size();
    totals_.total_ms += std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  }
}

}  // namespace flowsched::e2e
