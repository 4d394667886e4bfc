#include "tools/flowsched/event_submitter.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "tools/workload/workload_generator.h"

namespace flowsched::tools {

absl::Status SubmitEvents(bus::Producer& producer, const std::string& topic,
                          const std::vector<v1::ClusterEvent>& events,
                          int32_t partition) {
  absl::Status status;
  for (const v1::ClusterEvent& event : events) {
    status.Update(producer.Produce(topic, partition, EventKey(event),
                                   event.SerializeAsString()));
  }
  status.Update(producer.Flush(30'000));
  return status;
}

ParsedEvents ParseJsonLines(std::istream& in) {
  ParsedEvents parsed;
  std::string line;
  size_t number = 0;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  while (std::getline(in, line)) {
    ++number;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    v1::ClusterEvent event;
    auto status = google::protobuf::util::JsonStringToMessage(std::string(text),
                                                              &event, options);
    if (!status.ok()) {
      parsed.errors.push_back(
          absl::StrCat("line ", number, ": ", status.ToString()));
      continue;
    }
    if (event.event_case() == v1::ClusterEvent::EVENT_NOT_SET) {
      parsed.errors.push_back(
          absl::StrCat("line ", number, ": the event names no event type"));
      continue;
    }
    parsed.events.push_back(std::move(event));
  }
  return parsed;
}

}  // namespace flowsched::tools
