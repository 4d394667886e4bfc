#pragma once

// Quincy's policies (Isard et al., SOSP 2009, section 4.3) as built-in
// profiles: Quincy's network (quincy_network.h) with its terms at the
// paper's settings, the variants differing in fairness and preemption only.
// `quincy-qfp` is
// `profile:quincy=1,spread=0,preferred_labels=0,preemptive=1` at its
// defaults, and each variant's own parameters are the profile's of the
// same name.

#include <cstdint>
#include <map>
#include <string>

#include "services/flow/profile_policy.h"
#include "services/flow/quincy_network.h"

namespace flowsched::flow {

enum class QuincyVariant {
  kQfp,   // fair, preemption: E_j = F_j = A_j
  kQf,    // fair, no preemption: running tasks stay; shares raised to the
          // running count, others' cut proportionally
  kQp,    // unfair, preemption: E_j = 1, F_j = N_j (E = F = N if N <= M)
  kQ,     // unfair, no preemption: allocations of QP, capacities of QF
  kQfpx,  // QFP with xi = 20
};

struct QuincyParams {
  QuincyVariant variant = QuincyVariant::kQfp;
  // The costs (defaults: the paper's experiments, section 6).
  QuincyNetworkParams network;
  // Admission control K: 0 means every job is admitted and K = J. With a
  // limit, the first K jobs by id (submission order) share the cluster and
  // the rest wait with E = F = 0.
  uint32_t admission_limit = 0;

  // The paper's settings for a variant (QFPX sets xi = 20).
  static QuincyParams ForVariant(QuincyVariant variant);
};

// The policy's name: quincy-qfp, quincy-qf, quincy-qp, quincy-q or
// quincy-qfpx.
std::string QuincyVariantName(QuincyVariant variant);

ProfileParams QuincyProfile(const QuincyParams& params);

class QuincyPolicy final : public ProfilePolicy {
 public:
  explicit QuincyPolicy(QuincyParams params = {})
      : ProfilePolicy(QuincyProfile(params),
                      QuincyVariantName(params.variant)) {}
  // The fairness bounds the network encodes, computed from `state`.
  [[nodiscard]] std::map<JobId, QuincyJobBounds> ComputeBounds(
      const cluster::ClusterState& state) const {
    return quincy_network()->ComputeBounds(state);
  }
};

}  // namespace flowsched::flow
