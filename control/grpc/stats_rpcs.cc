// The stats RPCs of SpinnicService: GetStats, WatchStats (the snapshot to
// v1::Stats conversion is FillStats, control/stats_format.h).
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"
#include "control/stats_format.h"

namespace spinnic {
namespace {

constexpr uint32_t kMinWatchIntervalMs = 100;

}  // namespace

grpc::Status SpinnicService::GetStats(grpc::ServerContext*,
                                      const v1::GetStatsRequest*,
                                      v1::Stats* response) {
  FillStats(dataplane_->Snapshot(Dataplane::StateCopy::kOmit), response);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::WatchStats(grpc::ServerContext* context,
                                        const v1::WatchStatsRequest* request,
                                        grpc::ServerWriter<v1::Stats>* writer) {
  if (request->interval_ms() < kMinWatchIntervalMs) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("interval_ms ", request->interval_ms(),
                     " is below the minimum of ", kMinWatchIntervalMs));
  }
  // Ends when the client goes away or the server shuts down (cancelled).
  while (!context->IsCancelled()) {
    v1::Stats stats;
    FillStats(dataplane_->Snapshot(Dataplane::StateCopy::kOmit), &stats);
    if (!writer->Write(stats)) break;
    absl::SleepFor(absl::Milliseconds(request->interval_ms()));
  }
  return grpc::Status::OK;
}

}  // namespace spinnic
