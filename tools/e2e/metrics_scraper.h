#pragma once

// Scrapes every service's /metrics on a period while `bench e2e` runs, as a
// Prometheus server would, so that a run with the endpoints on and scraped
// can be set against one with them off (issue #34: metrics cost <= 2%).
// The services are found through their port files
// (<data-dir>/metrics/*.port, metrics/port_file.h), read again at every
// tick, so a restarted service is scraped on its new port. A scrape that
// fails (a service restarting) is counted, never fatal.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace flowsched::e2e {

struct ScrapeTotals {
  uint64_t scrapes = 0;   // answered with 200
  uint64_t failures = 0;  // refused, timed out or not 200
  double total_ms = 0;    // time in answered scrapes
  uint64_t bytes = 0;     // bodies of answered scrapes
};

class MetricsScraper {
 public:
  // Starts scraping at once and then every `every_s` seconds.
  MetricsScraper(std::string data_dir, double every_s);
  ~MetricsScraper();
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  // Stops the thread (idempotent) and returns the totals.
  ScrapeTotals Stop();

 private:
  void Loop();
  void ScrapeAll();

  const std::string data_dir_;
  const double every_s_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  ScrapeTotals totals_;  // the thread's until Stop joins it
  std::thread thread_;
};

}  // namespace flowsched::e2e
