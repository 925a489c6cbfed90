// The spinnic.v1.Spinnic gRPC service (proto/spinnic/v1/control.proto) over
// a running Dataplane. Handler calls are validated exactly like the config
// file's `handlers` entries and answered with canonical status codes; a
// failed call changes nothing. Runs on gRPC's threads, never on an HPU.
// Implemented one concern per file: spinnic_service.cc (GetInfo, events),
// handler_rpcs.cc, region_rpcs.cc, stats_rpcs.cc. It makes the features'
// services (feature_service.h: DiadService, RoceService) and consults them
// for their parts of GetInfo and of the event stream.
#ifndef SPINNIC_CONTROL_GRPC_SPINNIC_SERVICE_H_
#define SPINNIC_CONTROL_GRPC_SPINNIC_SERVICE_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "control/config_loader.h"
#include "control/grpc/event_hub.h"
#include "control/grpc/feature_service.h"
#include "dataplane/dataplane.h"
#include "spinnic/v1/control.grpc.pb.h"

namespace spinnic {

class SpinnicService final : public v1::Spinnic::Service {
 public:
  // `config` is the validated config the daemon runs; `dataplane` outlives
  // the service.
  SpinnicService(const v1::Config& config, Dataplane* dataplane);

  grpc::Status GetInfo(grpc::ServerContext*, const v1::GetInfoRequest*,
                       v1::GetInfoResponse* response) override;
  grpc::Status ListHandlerKinds(
      grpc::ServerContext*, const v1::ListHandlerKindsRequest*,
      v1::ListHandlerKindsResponse* response) override;
  grpc::Status InstallHandler(grpc::ServerContext*,
                              const v1::InstallHandlerRequest* request,
                              v1::InstallHandlerResponse* response) override;
  grpc::Status RemoveHandler(grpc::ServerContext*,
                             const v1::RemoveHandlerRequest* request,
                             v1::RemoveHandlerResponse*) override;
  grpc::Status ListHandlers(grpc::ServerContext*,
                            const v1::ListHandlersRequest*,
                            v1::ListHandlersResponse* response) override;
  grpc::Status ReadHandlerState(
      grpc::ServerContext*, const v1::ReadHandlerStateRequest* request,
      v1::ReadHandlerStateResponse* response) override;
  grpc::Status RegisterRegion(grpc::ServerContext*,
                              const v1::RegisterRegionRequest* request,
                              v1::RegisterRegionResponse* response) override;
  grpc::Status DeregisterRegion(grpc::ServerContext*,
                                const v1::DeregisterRegionRequest* request,
                                v1::DeregisterRegionResponse*) override;
  grpc::Status ListRegions(grpc::ServerContext*, const v1::ListRegionsRequest*,
                           v1::ListRegionsResponse* response) override;
  grpc::Status ReadRegion(grpc::ServerContext*,
                          const v1::ReadRegionRequest* request,
                          v1::ReadRegionResponse* response) override;
  grpc::Status WriteRegion(grpc::ServerContext*,
                           const v1::WriteRegionRequest* request,
                           v1::WriteRegionResponse*) override;
  grpc::Status GetStats(grpc::ServerContext*, const v1::GetStatsRequest*,
                        v1::Stats* response) override;
  grpc::Status WatchStats(grpc::ServerContext* context,
                          const v1::WatchStatsRequest* request,
                          grpc::ServerWriter<v1::Stats>* writer) override;
  grpc::Status WatchEvents(grpc::ServerContext* context,
                           const v1::WatchEventsRequest* request,
                           grpc::ServerWriter<v1::Event>* writer) override;
  // apply_rpcs.cc: hitless reload (docs/reload.md).
  grpc::Status ApplyConfig(grpc::ServerContext*,
                           const v1::ApplyConfigRequest* request,
                           v1::ApplyConfigResponse* response) override;
  grpc::Status GetRunningConfig(
      grpc::ServerContext*, const v1::GetRunningConfigRequest*,
      v1::GetRunningConfigResponse* response) override;
  // ApplyConfig's work, for the RPC and for spinnicd's SIGHUP: parses and
  // validates `text` (the daemon's overrides applied), plans against the
  // running state (control/config_diff.h) and, unless `dry_run`, applies
  // every change or none.
  absl::StatusOr<v1::ApplyConfigResponse> ApplyConfigText(
      absl::string_view text, absl::string_view source_name, bool dry_run);
  // The start config with the handlers and DiAD peers in effect now.
  v1::Config RunningConfig();
  // The daemon's flags that override config fields (spinnicd's --workers,
  // ...): applied to every config ApplyConfig receives, as to the start
  // config. None by default.
  void set_config_overrides(ConfigOverrides overrides) {
    absl::MutexLock lock(&mu_);
    overrides_ = std::move(overrides);
  }

  // log_rpcs.cc
  grpc::Status SetLogLevel(grpc::ServerContext*,
                           const v1::SetLogLevelRequest* request,
                           v1::SetLogLevelResponse* response) override;
  grpc::Status ListLogLevels(grpc::ServerContext*,
                             const v1::ListLogLevelsRequest* request,
                             v1::ListLogLevelsResponse* response) override;

  // capture_rpcs.cc (docs/capture.md).
  grpc::Status Capture(grpc::ServerContext* context,
                       const v1::CaptureRequest* request,
                       grpc::ServerWriter<v1::CaptureReply>* writer) override;
  // The features' services (feature_services.cc), for the server to
  // register beside this one.
  const std::vector<std::unique_ptr<FeatureService>>& features() const {
    return features_;
  }

  // Hands events drained from the dataplane to the WatchEvents subscribers.
  // Called by the daemon's main loop.
  void PublishEvents(const std::vector<Event>& events);
  size_t event_subscribers() const { return events_.subscribers(); }

 private:
  v1::Config RunningConfigLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Config config_;
  Dataplane* dataplane_;
  // Serialises handler changes so that `installed_` and the dataplane agree.
  absl::Mutex mu_;
  // What each installed handler was installed with (read back = written).
  std::map<std::string, v1::HandlerInstall> installed_ ABSL_GUARDED_BY(mu_);
  // The regions each was installed with (InstallHandlerRequest.bound_regions,
  // in order), for those installed with some: ListHandlers returns them, and
  // a reload that replaces or restores the handler binds them again.
  std::map<std::string, std::vector<uint64_t>> bound_regions_
      ABSL_GUARDED_BY(mu_);
  ConfigOverrides overrides_ ABSL_GUARDED_BY(mu_);
  EventHub events_;
  std::vector<std::unique_ptr<FeatureService>> features_;
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_SPINNIC_SERVICE_H_
