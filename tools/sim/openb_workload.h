#pragma once

// The Alibaba GPU trace 2023 (openb_reader.h) as a simulator workload, for
// `flowsched simulate --openb-nodes/--openb-pods`: real CPU and memory
// requests with real arrival times and runtimes. Nodes become machines in
// file order, in racks of `machines_per_rack` ("r0", "r1", ...), alive for
// the whole run; sizes are normalised to the largest node's CPU and memory,
// as the Google trace's are. Each pod is a task of its own job (the trace
// has no jobs): it arrives at creation_time (present at 0 if that is 0)
// and runs deletion_time - scheduled_time seconds, or forever if it was not
// deleted or `pods_stay` (as in the FGD paper's replay, so that the
// cluster fills: the trace's own runtimes keep it nearly empty). A pod that was
// never scheduled is dropped and counted, as the Google reader drops tasks that
// never ran. GPU asks are left out: the simulator's models have no devices
// (`flowsched gpu-replay` replays them). The trace carries no input data;
// callers assign blocks (AssignInputBlocks) as for the Google trace.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/sim/openb_reader.h"
#include "tools/sim/workload.h"

namespace flowsched::sim {

struct OpenbWorkloadStats {
  uint64_t pods = 0;
  uint64_t never_scheduled = 0;  // dropped
  uint64_t gpu_asks_left_out = 0;
};

// The latest time (seconds) a pod may carry: far beyond any trace, and no
// product of it with 10^6 (microseconds) or a --speedup below 1 overflows.
inline constexpr int64_t kMaxOpenbSeconds = int64_t{1} << 32;

// InvalidArgument if there are no nodes, a node reports no CPU or memory,
// `machines_per_rack` is 0, no pod was ever scheduled, a scheduled pod has
// no creation time, or a pod's times run backwards (deleted before it was
// scheduled, or scheduled before it was created) or past kMaxOpenbSeconds.
absl::StatusOr<Workload> BuildOpenbWorkload(const std::vector<OpenbNode>& nodes,
                                            const std::vector<OpenbPod>& pods,
                                            uint64_t machines_per_rack,
                                            bool pods_stay,
                                            OpenbWorkloadStats& stats);

}  // namespace flowsched::sim
