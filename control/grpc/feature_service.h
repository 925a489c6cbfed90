// A feature's half of spinnicd's gRPC server: its own service
// (proto/spinnic/v1/<feature>.proto, served beside spinnic.v1.Spinnic), its
// part of GetInfo and the events its transport raises. The server and
// SpinnicService know no feature by name; feature_services.cc lists the
// features, one line each. Runs on gRPC's threads, never on an HPU.
#ifndef SPINNIC_CONTROL_GRPC_FEATURE_SERVICE_H_
#define SPINNIC_CONTROL_GRPC_FEATURE_SERVICE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "dataplane/dataplane.h"
#include "grpcpp/impl/service_type.h"
#include "spinnic/v1/config.pb.h"
#include "spinnic/v1/control.pb.h"

namespace spinnic {

class FeatureService {
 public:
  virtual ~FeatureService() = default;

  // The service the server registers; its full name ("spinnic.v1.
  // DiadService") is also a name health checks answer SERVING for.
  virtual grpc::Service* service() = 0;
  virtual absl::string_view service_name() const = 0;

  // Fills the feature's part of GetInfo.
  virtual void FillInfo(v1::GetInfoResponse* response) const = 0;

  // Names and decodes those of `events` the feature's transport raised into
  // `out` (same index): a name that is never empty, and the feature's field
  // of v1::Event. The others are left alone.
  virtual void DecodeEvents(absl::Span<const Event> events,
                            absl::Span<v1::Event> out) const = 0;
};

// Makes a feature's service over the running `dataplane` and the validated
// `config` the daemon runs; both outlive it.
using FeatureServiceFactory = std::unique_ptr<FeatureService> (*)(
    const v1::Config& config, Dataplane* dataplane);

// Every feature, in the order GetInfo and events consult them.
absl::Span<const FeatureServiceFactory> FeatureServices();

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_FEATURE_SERVICE_H_
