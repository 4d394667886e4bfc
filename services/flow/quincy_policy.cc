#include "services/flow/quincy_policy.h"

namespace flowsched::flow {

QuincyParams QuincyParams::ForVariant(QuincyVariant variant) {
  QuincyParams params;
  params.variant = variant;
  if (variant == QuincyVariant::kQfpx) params.network.xi = 20.0;
  return params;
}

std::string QuincyVariantName(QuincyVariant variant) {
  switch (variant) {
    case QuincyVariant::kQfp:
      return "quincy-qfp";
    case QuincyVariant::kQf:
      return "quincy-qf";
    case QuincyVariant::kQp:
      return "quincy-qp";
    case QuincyVariant::kQ:
      return "quincy-q";
    case QuincyVariant::kQfpx:
      return "quincy-qfpx";
  }
  return "quincy";
}

ProfileParams QuincyProfile(const QuincyParams& params) {
  ProfileParams profile;
  profile.spread = 0;
  profile.preferred_labels = 0;
  profile.quincy = true;
  profile.quincy_network = params.network;
  profile.fair = params.variant != QuincyVariant::kQp &&
                 params.variant != QuincyVariant::kQ;
  profile.preemptive = params.variant != QuincyVariant::kQf &&
                       params.variant != QuincyVariant::kQ;
  profile.admission_limit = params.admission_limit;
  return profile;
}

}  // namespace flowsched::flow
