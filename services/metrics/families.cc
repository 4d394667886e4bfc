#include "services/metrics/families.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace flowsched::metrics {

prometheus::Histogram::BucketBoundaries ExponentialBuckets(double start,
                                                           double factor,
                                                           int count) {
  prometheus::Histogram::BucketBoundaries bounds;
  bounds.reserve(static_cast<size_t>(count));
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

prometheus::Histogram::BucketBoundaries PhaseBuckets() {
  return ExponentialBuckets(0.0001, 2, 18);
}

prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return ExponentialBuckets(0.001, 2, 18);
}

prometheus::Histogram& RoundPhase(prometheus::Registry& registry,
                                  const std::string& phase) {
  return prometheus::BuildHistogram()
      .Name("flowsched_round_phase_duration_seconds")
      .Help(
          "Duration of one phase of a solver round: sync, publish, apply "
          "(graph manager); solve, check, extract, publish (solver worker)")
      .Register(registry)
      .Add({{"phase", phase}}, PhaseBuckets());
}

prometheus::Gauge& ActiveGauge(prometheus::Registry& registry) {
  return prometheus::BuildGauge()
      .Name("flowsched_active")
      .Help("1 while this instance is the active one, 0 while on standby")
      .Register(registry)
      .Add({});
}

DeadLetterCounters::DeadLetterCounters(prometheus::Registry& registry) {
  auto& family = prometheus::BuildCounter()
                     .Name("flowsched_dead_letters_total")
                     .Help(
                         "Records sent to the dead-letter topic, by the "
                         "status code of the reason")
                     .Register(registry);
  for (size_t i = 1; i < by_code_.size(); ++i) {
    std::string code =
        absl::StatusCodeToString(static_cast<absl::StatusCode>(i));
    for (char& c : code) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    by_code_[i] = &family.Add({{"code", code}});
  }
}

void DeadLetterCounters::Count(absl::StatusCode code) {
  const auto index = static_cast<size_t>(code);
  // OK or a code absl may add later: counted as unknown.
  prometheus::Counter* counter =
      index > 0 && index < by_code_.size()
          ? by_code_[index]
          : by_code_[static_cast<size_t>(absl::StatusCode::kUnknown)];
  counter->Increment();
}

ConsumerLagGauges::ConsumerLagGauges(prometheus::Registry& registry)
    : family_(prometheus::BuildGauge()
                  .Name("flowsched_consumer_lag_records")
                  .Help("Records of a consumed partition not consumed yet "
                        "(high watermark minus next offset)")
                  .Register(registry)) {}

void ConsumerLagGauges::Set(const std::string& topic, int32_t partition,
                            int64_t lag) {
  prometheus::Gauge*& child = children_[{topic, partition}];
  if (child == nullptr) {
    child = &family_.Add(
        {{"topic", topic}, {"partition", absl::StrCat(partition)}});
  }
  child->Set(static_cast<double>(lag));
}

}  // namespace flowsched::metrics
