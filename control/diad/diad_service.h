// spinnic.v1.DiadService (proto/spinnic/v1/diad.proto): peers and remote
// operations (docs/diad.md), with Diad's parts of GetInfo and of the event
// stream. Implemented in diad_rpcs.cc; registered in
// control/grpc/feature_services.cc.
#ifndef SPINNIC_CONTROL_DIAD_DIAD_SERVICE_H_
#define SPINNIC_CONTROL_DIAD_DIAD_SERVICE_H_

#include <memory>

#include "control/grpc/feature_service.h"

namespace spinnic::diad {

std::unique_ptr<FeatureService> MakeDiadService(const v1::Config& config,
                                                Dataplane* dataplane);

}  // namespace spinnic::diad

#endif  // SPINNIC_CONTROL_DIAD_DIAD_SERVICE_H_
