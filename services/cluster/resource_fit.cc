#include "services/cluster/resource_fit.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace flowsched::cluster {
namespace {

// A dimension a machine may leave unreported (capacity 0).
// Compared as request <= capacity - allocated: no sum of two stored values
// can overflow (both are bounded below by 0, not above).
bool FitsReported(int64_t capacity, int64_t allocated, int64_t request) {
  return capacity == 0 || request <= 0 || request <= capacity - allocated;
}

// How many more of `request` fit in one reported dimension.
int64_t CountReported(int64_t capacity, int64_t allocated, int64_t request,
                      int64_t limit) {
  if (capacity == 0 || request <= 0) return limit;
  const int64_t free = capacity - allocated;
  return free < request ? 0 : std::min(limit, free / request);
}

std::string DevicePhrase(const AcceleratorRequest& ask) {
  return ask.models.has_value()
             ? absl::StrCat(absl::StrJoin(*ask.models, "|"), " device")
             : std::string("device");
}

bool HasDeviceMemory(const Device& device, int64_t memory_bytes) {
  return device.memory_bytes == 0 || memory_bytes <= device.memory_bytes;
}

bool HasFreeDeviceMemory(const Device& device, int64_t memory_bytes) {
  return device.memory_bytes == 0 || memory_bytes <= 0 ||
         device.used_memory_bytes + memory_bytes <= device.memory_bytes;
}

// Picks the devices for `ask`, or says why none fit.
Fit FitDevices(const Machine& machine, const AcceleratorRequest& ask) {
  Fit fit;
  const uint32_t needed = ask.device_count();
  uint32_t of_model = 0;
  uint32_t with_memory = 0;
  // A device the ask can use at all (a model it accepts, the memory it
  // asks), counted for the reason when none fits.
  const auto usable = [&](const Device& device) {
    if (!ask.AcceptsModel(device.model)) return false;
    ++of_model;
    if (!HasDeviceMemory(device, ask.memory_bytes)) return false;
    ++with_memory;
    return true;
  };
  if (ask.milli == 0) {
    // Free devices of a preferred model first, then the others.
    std::vector<DeviceShare> others;
    for (uint32_t i = 0; i < machine.devices.size(); ++i) {
      const Device& device = machine.devices[i];
      if (!usable(device)) continue;
      if (device.used_milli != 0 || !device.tasks.empty()) continue;
      const bool preferred =
          ask.preferred_models.empty() || ask.PrefersModel(device.model);
      (preferred ? fit.devices : others).push_back({i, device.capacity_milli});
    }
    for (size_t k = 0; k < others.size() && fit.devices.size() < needed; ++k) {
      fit.devices.push_back(others[k]);
    }
    if (fit.devices.size() > needed) fit.devices.resize(needed);
    std::sort(fit.devices.begin(), fit.devices.end(),
              [](const DeviceShare& a, const DeviceShare& b) {
                return a.index < b.index;
              });
  } else {
    const Device* best = nullptr;
    uint32_t best_index = 0;
    bool best_preferred = false;
    for (uint32_t i = 0; i < machine.devices.size(); ++i) {
      const Device& device = machine.devices[i];
      if (!usable(device)) continue;
      if (device.free_milli() < ask.milli ||
          !HasFreeDeviceMemory(device, ask.memory_bytes)) {
        continue;
      }
      // A preferred model first; then strictly less free milli, so ties
      // keep the lowest index.
      const bool preferred = ask.PrefersModel(device.model);
      if (best == nullptr || (preferred && !best_preferred) ||
          (preferred == best_preferred &&
           device.free_milli() < best->free_milli())) {
        best = &device;
        best_index = i;
        best_preferred = preferred;
      }
    }
    if (best != nullptr) fit.devices.push_back({best_index, ask.milli});
  }
  if (fit.devices.size() == needed) return fit;
  fit.devices.clear();
  const std::string phrase = DevicePhrase(ask);
  if (of_model < needed) {
    fit.reason = absl::StrCat("no ", phrase);
  } else if (with_memory < needed) {
    fit.reason = absl::StrCat(phrase, " memory");
  } else {
    fit.reason = absl::StrCat("no free ", phrase);
  }
  return fit;
}

// The first of CPU, memory, network and the scalars that `request` does not
// fit on `machine`; empty when all fit.
std::string ResourceMisfit(const Machine& machine, const Resources& request) {
  const Resources& capacity = machine.capacity;
  const Resources& allocated = machine.allocated;
  if (!FitsReported(capacity.cpu_millis, allocated.cpu_millis,
                    request.cpu_millis)) {
    return "cpu";
  }
  if (!FitsReported(capacity.memory_bytes, allocated.memory_bytes,
                    request.memory_bytes)) {
    return "memory";
  }
  if (!FitsReported(capacity.network_bytes_per_sec,
                    allocated.network_bytes_per_sec,
                    request.network_bytes_per_sec)) {
    return "network";
  }
  for (const auto& [name, amount] : request.scalars) {
    if (amount > 0 &&
        amount > capacity.scalars.Get(name) - allocated.scalars.Get(name)) {
      return name;
    }
  }
  return {};
}

}  // namespace

Fit FitTask(const Machine& machine, const TaskSpec& task) {
  if (machine.free_slots() == 0) return Fit{.reason = "slots"};
  if (std::string misfit = ResourceMisfit(machine, task.request);
      !misfit.empty()) {
    return Fit{.reason = std::move(misfit)};
  }
  if (task.accelerator.empty()) return Fit{};
  return FitDevices(machine, task.accelerator);
}

Fit FitTaskOnDevices(const Machine& machine, const TaskSpec& task,
                     std::span<const DeviceShare> chosen) {
  if (chosen.empty()) return FitTask(machine, task);
  if (machine.free_slots() == 0) return Fit{.reason = "slots"};
  if (std::string misfit = ResourceMisfit(machine, task.request);
      !misfit.empty()) {
    return Fit{.reason = std::move(misfit)};
  }
  const AcceleratorRequest& ask = task.accelerator;
  const Fit malformed{.reason = "device choice"};
  if (chosen.size() != ask.device_count()) return malformed;
  for (size_t k = 0; k < chosen.size(); ++k) {
    const DeviceShare& share = chosen[k];
    if (share.index >= machine.devices.size() ||
        (k > 0 && share.index <= chosen[k - 1].index)) {
      return malformed;
    }
    const Device& device = machine.devices[share.index];
    if (!ask.AcceptsModel(device.model) ||
        !HasDeviceMemory(device, ask.memory_bytes) ||
        share.milli != (ask.milli > 0 ? ask.milli : device.capacity_milli)) {
      return malformed;
    }
    const bool free = ask.milli > 0
                          ? device.free_milli() >= ask.milli &&
                                HasFreeDeviceMemory(device, ask.memory_bytes)
                          : device.used_milli == 0 && device.tasks.empty();
    if (!free)
      return Fit{.reason = absl::StrCat("no free ", DevicePhrase(ask))};
  }
  return Fit{.devices = {chosen.begin(), chosen.end()}};
}

int64_t ResourceFitCount(const Machine& machine, const Resources& request,
                         int64_t limit) {
  const Resources& capacity = machine.capacity;
  const Resources& allocated = machine.allocated;
  int64_t n = std::max<int64_t>(0, limit);
  n = CountReported(capacity.cpu_millis, allocated.cpu_millis,
                    request.cpu_millis, n);
  n = CountReported(capacity.memory_bytes, allocated.memory_bytes,
                    request.memory_bytes, n);
  n = CountReported(capacity.network_bytes_per_sec,
                    allocated.network_bytes_per_sec,
                    request.network_bytes_per_sec, n);
  for (const auto& [name, amount] : request.scalars) {
    if (amount <= 0) continue;
    const int64_t free =
        capacity.scalars.Get(name) - allocated.scalars.Get(name);
    n = free < amount ? 0 : std::min(n, free / amount);
  }
  return n;
}

bool Machine::Fits(const Resources& request) const {
  return ResourceMisfit(*this, request).empty();
}

void AddResources(Resources& to, const Resources& r, int64_t sign) {
  to.cpu_millis += sign * r.cpu_millis;
  to.memory_bytes += sign * r.memory_bytes;
  to.network_bytes_per_sec += sign * r.network_bytes_per_sec;
  for (const auto& [name, amount] : r.scalars) {
    to.scalars.Add(name, sign * amount);
  }
}

void BookTask(Machine& machine, const TaskSpec& task,
              const std::vector<DeviceShare>& devices) {
  AddResources(machine.allocated, task.request, 1);
  for (const DeviceShare& share : devices) {
    Device& device = machine.devices[share.index];
    device.used_milli += share.milli;
    device.used_memory_bytes += task.accelerator.memory_bytes;
    device.tasks.insert(task.id);
  }
}

void UnbookTask(Machine& machine, const TaskSpec& task,
                const std::vector<DeviceShare>& devices) {
  AddResources(machine.allocated, task.request, -1);
  for (const DeviceShare& share : devices) {
    if (share.index >= machine.devices.size()) continue;
    Device& device = machine.devices[share.index];
    device.used_milli -= share.milli;
    device.used_memory_bytes -= task.accelerator.memory_bytes;
    device.tasks.erase(task.id);
  }
}

bool WithinCapacity(const Machine& machine) {
  const Resources& capacity = machine.capacity;
  const Resources& allocated = machine.allocated;
  const auto within = [](int64_t cap, int64_t alloc) {
    return cap == 0 || alloc <= cap;
  };
  if (machine.running.size() > machine.task_slots ||
      !within(capacity.cpu_millis, allocated.cpu_millis) ||
      !within(capacity.memory_bytes, allocated.memory_bytes) ||
      !within(capacity.network_bytes_per_sec,
              allocated.network_bytes_per_sec)) {
    return false;
  }
  for (const auto& [name, amount] : allocated.scalars) {
    if (amount > capacity.scalars.Get(name)) return false;
  }
  return std::all_of(
      machine.devices.begin(), machine.devices.end(), [](const Device& d) {
        return d.used_milli <= d.capacity_milli &&
               (d.memory_bytes == 0 || d.used_memory_bytes <= d.memory_bytes);
      });
}

}  // namespace flowsched::cluster
