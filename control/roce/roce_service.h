// spinnic.v1.RoceService (proto/spinnic/v1/roce.proto): queue pairs set up by
// hand and RDMA operations of ours (docs/roce.md), with Roce's parts of GetInfo
// and of the event stream. Implemented in roce_rpcs.cc; registered in
// control/grpc/feature_services.cc.
#ifndef SPINNIC_CONTROL_ROCE_ROCE_SERVICE_H_
#define SPINNIC_CONTROL_ROCE_ROCE_SERVICE_H_

#include <memory>

#include "control/grpc/feature_service.h"

namespace spinnic::roce {

std::unique_ptr<FeatureService> MakeRoceService(const v1::Config& config,
                                                Dataplane* dataplane);

}  // namespace spinnic::roce

#endif  // SPINNIC_CONTROL_ROCE_ROCE_SERVICE_H_
