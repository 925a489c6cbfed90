// The stats RPCs of SpinnicService: GetStats, WatchStats; and the one
// conversion of a StatsSnapshot into v1::Stats.
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"

namespace spinnic {
namespace {

constexpr uint32_t kMinWatchIntervalMs = 100;

}  // namespace

void FillHandlerStats(const EctxStats& e, v1::HandlerStats* out) {
  out->set_id(e.id);
  out->set_name(e.name);
  out->set_kind(e.kind);
  out->set_disabled(e.disabled);
  out->set_messages(e.messages);
  out->set_packets(e.packets);
  out->set_bytes(e.bytes);
  out->set_invocations(e.invocations);
  out->set_cycles(e.cycles);
  out->set_over_budget(e.over_budget);
  out->set_dropped(e.dropped);
  out->set_failed(e.failed);
  out->set_invalid(e.invalid);
  out->set_bypassed(e.bypassed);
}

void FillStats(const StatsSnapshot& snapshot, v1::Stats* out) {
  out->set_timestamp_ns(static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())));
  for (size_t i = 0; i < snapshot.ports.size(); ++i) {
    const PortStats& p = snapshot.ports[i];
    v1::PortCounters* port = out->add_ports();
    port->set_id(static_cast<uint32_t>(i));
    port->set_name(p.name);
    port->set_link_up(p.link_up);
    port->set_rx_packets(p.rx_packets);
    port->set_rx_bytes(p.rx_bytes);
    port->set_tx_packets(p.tx_packets);
    port->set_tx_bytes(p.tx_bytes);
    for (size_t r = 0; r < p.drops.size(); ++r) {
      (*port->mutable_drops())[DropReasonName(static_cast<DropReason>(r))] =
          p.drops[r];
    }
    port->set_hw_ipackets(p.hw_ipackets);
    port->set_hw_opackets(p.hw_opackets);
    port->set_hw_imissed(p.hw_imissed);
    port->set_hw_ierrors(p.hw_ierrors);
    port->set_hw_oerrors(p.hw_oerrors);
    port->set_hw_rx_nombuf(p.hw_rx_nombuf);
  }
  for (const HpuStats& h : snapshot.hpus) {
    v1::HpuCounters* hpu = out->add_hpus();
    hpu->set_index(h.index);
    hpu->set_lcore(h.lcore);
    hpu->set_loops(h.loops);
    hpu->set_busy_loops(h.busy_loops);
    hpu->set_rx_packets(h.rx_packets);
    hpu->set_tx_packets(h.tx_packets);
    hpu->set_events(h.events);
    hpu->set_event_overflow(h.event_overflow);
    hpu->set_emitted(h.emitted);
    hpu->set_emit_failed(h.emit_failed);
  }
  for (const EctxStats& e : snapshot.ectxs) {
    FillHandlerStats(e, out->add_handlers());
  }
  for (const auto& [name, value] : snapshot.diad.counters) {
    v1::Counter* counter = out->add_diad();
    counter->set_name(name);
    counter->set_value(value);
  }
  for (const auto& [name, value] : snapshot.roce.counters) {
    v1::Counter* counter = out->add_roce();
    counter->set_name(name);
    counter->set_value(value);
  }
}

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
