#include "services/bus/topics.h"

namespace flowsched::bus {

TopicNames TopicNames::WithPrefix(std::string_view prefix) {
  const std::string p(prefix);
  TopicNames names;
  names.events = p + "events";
  names.rounds = p + "rounds";
  names.placements = p + "placements";
  names.dead_letters = p + "dead-letters";
  names.ledger = p + "ledger";
  names.leader = p + "leader";
  return names;
}

std::vector<TopicSpec> DefaultTopicSpecs(const TopicNames& names) {
  return {
      {names.events, 4},       {names.rounds, 1}, {names.placements, 4},
      {names.dead_letters, 1}, {names.ledger, 1}, {names.leader, 1},
  };
}

}  // namespace flowsched::bus
