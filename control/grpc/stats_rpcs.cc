// The stats RPCs of SpinnicService: GetStats, WatchStats (the snapshot to
// v1::Stats conversion is FillStats, control/stats_format.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"
#include "control/stats_format.h"

namespace spinnic {
namespace {

constexpr uint32_t kMinWatchIntervalMs = 100;
// A stream sleeping between snapshots looks at its client at least this
// often: a client that cancels or vanishes frees the handler's thread soon,
// whatever interval it asked for (up to 2^32 ms, 49 days).
constexpr absl::Duration kCancelPoll = absl::Milliseconds(100);

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
    const absl::Time next =
        absl::Now() + absl::Milliseconds(request->interval_ms());
    for (absl::Time now = absl::Now(); now < next && !context->IsCancelled();
         now = absl::Now()) {
      absl::SleepFor(std::min(next - now, kCancelPoll));
    }
  }
  return grpc::Status::OK;
}

}  // namespace spinnic
