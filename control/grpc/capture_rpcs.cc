// The Capture RPC of SpinnicService (docs/capture.md): compiles the filter,
// publishes a capture session to the HPUs (Dataplane::StartCapture), drains
// its ring into the stream on this gRPC thread, and unpublishes it however
// the call ends: count, duration, the client going away, server shutdown.
#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"
#include "dataplane/capture.h"
#include "dataplane/common/clock.h"
#include "dataplane/pcap_filter.h"

namespace spinnic {
namespace {

constexpr uint32_t kDefaultBufferFrames = 1024;
// Two VLAN tags beyond the port's largest frame: what the HPU forwards.
constexpr uint32_t kVlanTagBytes = 8;
// A reply's frames stay well under gRPC's 4 MiB message limit.
constexpr size_t kReplyBytes = 1 << 20;
constexpr size_t kMaxFramesPerReply = 256;
// How long the stream waits for frames before it looks again (and at the
// client, the count and the clock).
constexpr absl::Duration kIdlePoll = absl::Milliseconds(2);

absl::StatusOr<CaptureStage> ToStage(v1::CaptureStage stage) {
  switch (stage) {
    case v1::CAPTURE_STAGE_RX:
      return CaptureStage::kRx;
    case v1::CAPTURE_STAGE_TX:
      return CaptureStage::kTx;
    case v1::CAPTURE_STAGE_DROP:
      return CaptureStage::kDrop;
    default:
      return absl::InvalidArgumentError(
          "stage must be CAPTURE_STAGE_RX, CAPTURE_STAGE_TX or "
          "CAPTURE_STAGE_DROP");
  }
}

// The config's field is pcap_filter; here the operator wrote --filter.
absl::Status RenameFilterError(const absl::Status& status) {
  std::string message(status.message());
  if (absl::StartsWith(message, "pcap_filter ")) {
    message = absl::StrCat("capture filter ",
                           message.substr(sizeof("pcap_filter ") - 1));
  }
  return absl::Status(status.code(), message);
}

}  // namespace

grpc::Status SpinnicService::Capture(
    grpc::ServerContext* context, const v1::CaptureRequest* request,
    grpc::ServerWriter<v1::CaptureReply>* writer) {
  absl::StatusOr<CaptureStage> stage = ToStage(request->stage());
  if (!stage.ok()) return ToGrpc(stage.status());
  CaptureSessionConfig config;
  config.stage = *stage;
  std::vector<std::string> names;
  bool found = false;
  for (size_t p = 0; p < dataplane_->port_count(); ++p) {
    names.push_back(dataplane_->port(p).name());
    if (names.back() == request->port()) {
      config.port = static_cast<uint16_t>(p);
      found = true;
    }
  }
  if (!found) {
    return ToGrpc(absl::NotFoundError(
        absl::StrCat("no port named \"", request->port(), "\"; the ports are ",
                     absl::StrJoin(names, ", "))));
  }
  config.port_name = request->port();
  config.snaplen =
      request->snaplen() != 0
          ? request->snaplen()
          : std::min<uint32_t>(
                dataplane_->port(config.port).max_frame() + kVlanTagBytes,
                CaptureSession::kMaxSnaplen);
  config.buffer_frames = request->buffer_frames() != 0
                             ? request->buffer_frames()
                             : kDefaultBufferFrames;
  std::unique_ptr<PcapFilter> filter;
  if (!request->filter().empty()) {
    absl::StatusOr<std::unique_ptr<PcapFilter>> compiled =
        PcapFilter::Compile(request->filter());
    if (!compiled.ok()) return ToGrpc(RenameFilterError(compiled.status()));
    filter = *std::move(compiled);
  }
  absl::StatusOr<std::unique_ptr<CaptureSession>> created =
      CaptureSession::Create(config, std::move(filter));
  if (!created.ok()) return ToGrpc(created.status());
  std::shared_ptr<CaptureSession> session = *std::move(created);
  if (absl::Status s = dataplane_->StartCapture(session); !s.ok()) {
    return ToGrpc(s);
  }

  // The HPUs stamp the monotonic clock; the stream speaks CLOCK_REALTIME.
  const uint64_t realtime_offset =
      static_cast<uint64_t>(absl::GetCurrentTimeNanos()) - clock::NowNanos();
  const uint64_t limit = request->count() != 0 ? request->count() : UINT64_MAX;
  const absl::Time deadline =
      request->duration_ms() != 0
          ? absl::Now() + absl::Milliseconds(request->duration_ms())
          : absl::InfiniteFuture();
  const size_t per_reply =
      std::clamp<size_t>(kReplyBytes / config.snaplen, 1, kMaxFramesPerReply);
  uint64_t captured = 0;
  // Drains what the ring holds (up to the count) into one reply.
  auto fill = [&](v1::CaptureReply* reply) {
    const size_t max =
        static_cast<size_t>(std::min<uint64_t>(per_reply, limit - captured));
    const size_t n = session->Drain(max, [&](const CapturedFrame& frame) {
      v1::CapturedFrame* out = reply->add_frames();
      out->set_timestamp_ns(frame.timestamp_ns + realtime_offset);
      out->set_original_length(frame.original_length);
      out->set_data(frame.data.data(), frame.data.size());
      if (frame.drop_reason != DropReason::kCount) {
        out->set_drop_reason(DropReasonName(frame.drop_reason));
      }
    });
    captured += n;
    return n;
  };

  v1::CaptureReply first;
  v1::CaptureStarted* started = first.mutable_started();
  started->set_port(config.port_name);
  started->set_port_id(config.port);
  started->set_stage(request->stage());
  started->set_filter(request->filter());
  started->set_snaplen(config.snaplen);
  started->set_buffer_frames(config.buffer_frames);
  bool client_gone = !writer->Write(first);
  std::string ended_by;
  while (!client_gone) {
    if (context->IsCancelled()) {
      client_gone = true;
      break;
    }
    if (captured >= limit) {
      ended_by = "count";
      break;
    }
    if (absl::Now() >= deadline) {
      ended_by = "duration";
      break;
    }
    v1::CaptureReply reply;
    if (fill(&reply) == 0) {
      absl::SleepFor(kIdlePoll);
      continue;
    }
    client_gone = !writer->Write(reply);
  }
  dataplane_->StopCapture(session.get());
  if (client_gone) return grpc::Status::CANCELLED;
  // What the HPUs enqueued before the stop, within the count.
  while (captured < limit) {
    v1::CaptureReply rest;
    if (fill(&rest) == 0) break;
    if (!writer->Write(rest)) return grpc::Status::CANCELLED;
  }
  v1::CaptureReply last;
  v1::CaptureSummary* summary = last.mutable_summary();
  summary->set_captured(captured);
  summary->set_not_captured(session->missed());
  summary->set_ended_by(ended_by);
  writer->Write(last);
  return grpc::Status::OK;
}

}  // namespace spinnic
