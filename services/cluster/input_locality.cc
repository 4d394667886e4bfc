#include "services/cluster/input_locality.h"

#include <algorithm>

namespace flowsched::cluster {
namespace {

// The position of `key` in a vector sorted by key, pairs.size() if absent.
template <typename Pairs, typename Key>
size_t Position(const Pairs& pairs, const Key& key) {
  auto it = std::lower_bound(
      pairs.begin(), pairs.end(), key,
      [](const auto& pair, const Key& k) { return pair.first < k; });
  return it != pairs.end() && it->first == key
             ? static_cast<size_t>(it - pairs.begin())
             : pairs.size();
}

// The value of `key` in a vector sorted by key, 0 if absent.
template <typename Pairs, typename Key>
int64_t Find(const Pairs& pairs, const Key& key) {
  const size_t at = Position(pairs, key);
  return at < pairs.size() ? pairs[at].second : 0;
}

// Sorts `items` by key_of and folds each run of equal keys into one item:
// fold(kept, other) for every further item of the run.
template <typename T, typename KeyOf, typename Fold>
void FoldByKey(std::vector<T>& items, KeyOf key_of, Fold fold) {
  std::sort(items.begin(), items.end(),
            [&](const T& a, const T& b) { return key_of(a) < key_of(b); });
  size_t out = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (out > 0 && key_of(items[out - 1]) == key_of(items[i])) {
      fold(items[out - 1], items[i]);
    } else {
      items[out++] = items[i];
    }
  }
  items.resize(out);
}

}  // namespace

int64_t InputLocation::OnMachine(MachineId machine) const {
  return Find(on_machine, machine);
}

int64_t InputLocation::InRack(std::string_view rack) const {
  return Find(in_rack, rack);
}

size_t InputLocation::RackEntry(std::string_view rack) const {
  return Position(in_rack, rack);
}

InputLocation LocateInput(
    const std::vector<DataLocality>& input, int64_t input_bytes,
    absl::FunctionRef<const std::string*(const DataLocality&)> rack_of) {
  InputLocation where;
  // Machine entries with their rack; rack entries (stated); the bytes of
  // departed holders by the rack their entry names. Views into `input` and
  // into the racks rack_of returns, which outlive this call.
  struct Held {
    MachineId machine;
    std::string_view rack;
    int64_t bytes;
  };
  std::vector<Held> held;
  std::vector<std::pair<std::string_view, int64_t>> stated;
  std::vector<std::pair<std::string_view, int64_t>> departed;
  int64_t nowhere = 0;  // on machines without a rack
  for (const DataLocality& entry : input) {
    if (entry.bytes <= 0) continue;
    if (entry.machine.value() == 0) {
      if (!entry.rack.empty()) stated.emplace_back(entry.rack, entry.bytes);
      continue;
    }
    const std::string* rack = rack_of(entry);
    if (rack == nullptr) {
      nowhere += entry.bytes;
      if (!entry.rack.empty()) departed.emplace_back(entry.rack, entry.bytes);
      continue;
    }
    held.push_back({entry.machine, *rack, entry.bytes});
  }
  auto rack_key = [](const auto& pair) { return pair.first; };
  auto add_bytes = [](auto& kept, const auto& other) {
    kept.second += other.second;
  };
  FoldByKey(stated, rack_key, add_bytes);
  FoldByKey(departed, rack_key, add_bytes);
  // L_m, then per rack the sum of its machines' L_m and the largest one
  // (rack_of names one rack per machine).
  FoldByKey(
      held, [](const Held& h) { return h.machine; },
      [](Held& kept, const Held& other) { kept.bytes += other.bytes; });
  struct RackSum {
    std::string_view rack;
    int64_t sum = 0;
    int64_t largest = 0;
  };
  std::vector<RackSum> machines;
  for (const Held& h : held) {
    where.on_machine.emplace_back(h.machine, h.bytes);
    machines.push_back({h.rack, h.bytes, h.bytes});
  }
  FoldByKey(
      machines, [](const RackSum& r) { return r.rack; },
      [](RackSum& kept, const RackSum& other) {
        kept.sum += other.sum;
        kept.largest = std::max(kept.largest, other.largest);
      });
  // Without a rack entry a rack holds its machines' sum. A rack entry
  // states the rack's bytes; a listed holder that is gone takes at most
  // its own bytes with it (it may have held the only copy), and what a
  // remaining machine holds is in the rack whatever the entry says.
  // Both lists are sorted by rack: merge them into B_l.
  size_t m = 0;
  for (const auto& [rack, bytes] : stated) {
    for (; m < machines.size() && machines[m].rack < rack; ++m) {
      where.in_rack.emplace_back(machines[m].rack, machines[m].sum);
    }
    int64_t left = std::max<int64_t>(0, bytes - Find(departed, rack));
    if (m < machines.size() && machines[m].rack == rack) {
      left = std::max(left, machines[m].largest);
      ++m;
    }
    if (left > 0) where.in_rack.emplace_back(rack, left);
  }
  for (; m < machines.size(); ++m) {
    where.in_rack.emplace_back(machines[m].rack, machines[m].sum);
  }
  int64_t sum = 0;
  int64_t most = 0;
  for (const auto& [rack, bytes] : where.in_rack) {
    sum += bytes;
    most = std::max(most, bytes);
  }
  where.total = std::max(input_bytes > 0 ? input_bytes : sum + nowhere, most);
  return where;
}

InputLocation LocateInput(const TaskSpec& spec, const ClusterState& state) {
  return LocateInput(spec.input, spec.input_bytes,
                     [&](const DataLocality& entry) -> const std::string* {
                       const Machine* machine =
                           state.FindMachine(entry.machine);
                       return machine == nullptr ? nullptr : &machine->rack;
                     });
}

}  // namespace flowsched::cluster
