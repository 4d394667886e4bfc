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
  // The graph manager's ledger (proto/flowsched/v1/ledger.proto): what it
  // applied, in order; the state is rebuilt from it and the events.
  std::string ledger = "flowsched.ledger";
  // Names the graph managers' leader lease (bus::LeaderLease); no records.
  std::string leader = "flowsched.leader";

  // Prefix + "events", "rounds", "placements", "dead-letters", "ledger",
  // "leader"; a prefix lets tests and several clusters share one broker.
  static TopicNames WithPrefix(std::string_view prefix);
};

struct TopicSpec {
  std::string name;
  int partitions = 1;
};

// events 4, rounds 1 (one totally ordered stream of solver rounds),
// placements 4, dead-letters 1, ledger 1 (one total order), leader 1. Retention
// and compaction each topic needs: services/bus/README.md.
std::vector<TopicSpec> DefaultTopicSpecs(const TopicNames& names);

}  // namespace flowsched::bus
