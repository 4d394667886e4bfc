#pragma once

// The names and default sizes of flowsched's Kafka topics.

#include <string>
#include <string_view>
#include <vector>

namespace flowsched::bus {

inline constexpr std::string_view kDefaultTopicPrefix = "flowsched.";

struct TopicNames {
  std::string events = "flowsched.events";
  std::string rounds = "flowsched.rounds";
  std::string placements = "flowsched.placements";
  std::string dead_letters = "flowsched.dead-letters";

  // Prefix + "events", "rounds", "placements", "dead-letters"; a prefix
  // lets tests and several clusters share one broker.
  static TopicNames WithPrefix(std::string_view prefix);
};

struct TopicSpec {
  std::string name;
  int partitions = 1;
};

// events 4, rounds 1 (one totally ordered stream of solver rounds),
// placements 4, dead-letters 1.
std::vector<TopicSpec> DefaultTopicSpecs(const TopicNames& names);

}  // namespace flowsched::bus
