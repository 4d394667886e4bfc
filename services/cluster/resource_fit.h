#pragma once

// The one fit rule: whether a task fits on a machine beside the tasks placed
// there, and which accelerator devices it gets. ClusterState (Place,
// Migrate), the baselines, the simulator and `flowsched explain` all call
// it, so no scheduler proposes what the graph manager would refuse for
// resources, and all of them read "fits" the same way.
//
// Dimensions, in the order checked: a free slot; CPU, memory and network
// (a machine capacity of 0 means "not reported": bounded by slots only);
// every named scalar the task asks for (a name the machine lacks has
// capacity 0); accelerator devices (model list, device memory, milli).
//
// Device choice is deterministic. Whole devices: the lowest-index devices
// of an acceptable model that nobody uses (and that have the device memory
// asked for, where they report it). A fraction: best fit, the acceptable
// device with the least free milli that still holds it (and its device
// memory), ties to the lowest index. With preferred models, devices of
// those models come first by the same rule, the others after them.
//
// Thread-safety: pure functions over the arguments.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "services/cluster/cluster_types.h"

namespace flowsched::cluster {

struct Fit {
  // Empty when the task fits. Otherwise the first dimension that does not
  // fit, as a short phrase that depends only on the task's ask (not on the
  // machine), so callers can count machines per reason: "slots", "cpu",
  // "memory", "network", a scalar's name ("ephemeral-storage"), or for
  // devices "no nvidia-a10 device" (the machine has too few of the models),
  // "nvidia-a10 device memory" (too few with enough memory),
  // "no free nvidia-a10 device" (they are in use); "device" without models.
  std::string reason;
  // When it fits: the devices the task would get, index ascending, with
  // the milli-units taken on each (a whole device: its capacity).
  std::vector<DeviceShare> devices;
  [[nodiscard]] bool fits() const { return reason.empty(); }
};

// Whether `task` fits on `machine` now (its running set, allocation and
// device use as they stand), and on which devices.
[[nodiscard]] Fit FitTask(const Machine& machine, const TaskSpec& task);

// FitTask on the devices a scheduler chose instead of the ones FitTask
// would pick (FGD chooses the device; issue #32). Empty `chosen`: exactly
// FitTask. Otherwise the same checks (slot, resources, then the devices)
// with the chosen shares: as many as the ask's device count, indices
// ascending and on the machine, of an acceptable model with the device
// memory asked, each a whole unused device (milli = its capacity) or the
// fraction asked (milli = the ask's) on a device with that much free milli
// and device memory. A chosen share that breaks the ask's shape is
// "device choice"; a device in use, "no free <models> device".
[[nodiscard]] Fit FitTaskOnDevices(const Machine& machine, const TaskSpec& task,
                                   std::span<const DeviceShare> chosen);

// How many copies of `request` (at most `limit`) fit `machine`'s free CPU,
// memory, network and scalars by the rule FitTask applies: the count of
// tasks with this request that FitTask would accept one after another,
// slots and devices aside.
[[nodiscard]] int64_t ResourceFitCount(const Machine& machine,
                                       const Resources& request, int64_t limit);

// Adds `sign` times `r` to `to` (every dimension; scalars that reach 0 are
// dropped, so equal allocations compare equal).
void AddResources(Resources& to, const Resources& r, int64_t sign);

// Books a task on `machine`: its request into `allocated`, its device
// shares (as FitTask returned them) into the devices' use. Leaves
// `machine.running` to the caller. REQUIRES: every share's index is a
// device of the machine.
void BookTask(Machine& machine, const TaskSpec& task,
              const std::vector<DeviceShare>& devices);
// The inverse of BookTask with the same arguments.
void UnbookTask(Machine& machine, const TaskSpec& task,
                const std::vector<DeviceShare>& devices);

// Whether nothing on `machine` is over-committed: slots; CPU, memory and
// network where reported; every scalar; every device's milli and, where
// reported, its memory. Placing only what FitTask accepts keeps it; a
// TaskUpdated may break it (the machine reports what is).
[[nodiscard]] bool WithinCapacity(const Machine& machine);

}  // namespace flowsched::cluster
