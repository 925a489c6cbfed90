// The registry of features' gRPC services: one line per feature.
#include "control/diad/diad_service.h"
#include "control/grpc/feature_service.h"
#include "control/roce/roce_service.h"

namespace spinnic {

absl::Span<const FeatureServiceFactory> FeatureServices() {
  static constexpr FeatureServiceFactory kFactories[] = {
      &diad::MakeDiadService,
      &roce::MakeRoceService,
  };
  return kFactories;
}

}  // namespace spinnic
