// Hand-run benchmark: what one metric recording costs the services, on
// their own families (GraphManagerMetrics), single-threaded as the services
// record. Prints ns per counter increment, histogram observation (the
// latency layout, values spread over its buckets) and gauge set, the
// median of five timed runs of `--ops` calls each. Multiplied by the counts
// a run's /metrics reports, it bounds what recording cost that run.
//
//   metrics_record_bench [--ops N]     (default 20,000,000)

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "prometheus/registry.h"
#include "services/metrics/graph_manager_metrics.h"

namespace {

// Median over five runs of `ops` calls of `record(i)`, in ns per call.
double NanosPerCall(int64_t ops, const std::function<void(int64_t)>& record) {
  std::array<double, 5> runs{};
  for (double& run : runs) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < ops; ++i) record(i);
    const std::chrono::duration<double, std::nano> spent =
        std::chrono::steady_clock::now() - start;
    run = spent.count() / static_cast<double>(ops);
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t ops = 20'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
      char* end = nullptr;
      ops = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || ops < 1000 || ops > 2'000'000'000) {
        std::fprintf(stderr, "--ops: a count from 1000 to 2e9, not %s\n",
                     argv[i]);
        return 2;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--ops N]\n", argv[0]);
      return 2;
    }
  }
  prometheus::Registry registry;
  flowsched::metrics::GraphManagerMetrics m(registry);
  const double counter =
      NanosPerCall(ops, [&](int64_t) { m.events_applied.Increment(); });
  // 1 ms .. ~1 s: spread over the latency buckets.
  const double histogram = NanosPerCall(ops, [&](int64_t i) {
    m.event_to_placement.Observe(static_cast<double>(i % 1024) * 1e-3);
  });
  const double gauge = NanosPerCall(ops, [&](int64_t i) {
    m.pending_unscheduled.Set(static_cast<double>(i));
  });
  std::printf("ops per run              %lld (median of 5 runs)\n",
              static_cast<long long>(ops));
  std::printf("counter increment        %.1f ns\n", counter);
  std::printf("histogram observation    %.1f ns\n", histogram);
  std::printf("gauge set                %.1f ns\n", gauge);
  return 0;
}
