// SpinnicService's core: construction, GetInfo and the event stream. The
// RPCs of each feature are in their own files: handler_rpcs.cc,
// region_rpcs.cc, stats_rpcs.cc, control/diad/diad_rpcs.cc,
// control/roce/roce_rpcs.cc; shared helpers in service_internal.h.
#include "control/grpc/spinnic_service.h"

#include <rte_version.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/clock.h"
#include "control/grpc/service_internal.h"
#include "dataplane/diad/diad_engine.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/spin_engine.h"

namespace spinnic {
namespace {

// The name of an engine event code, or "" for a handler's own code.
const char* EngineEventName(uint32_t code) {
  switch (code) {
    case kEventHandlerFailed:
      return "handler_failed";
    case kEventHandlerInvalid:
      return "handler_invalid";
    case kEventEctxDisabled:
      return "ectx_disabled";
    case diad::kEventDiadChannelDown:
      return "diad_channel_down";
    case diad::kEventDiadPeerReset:
      return "diad_peer_reset";
    case diad::kEventDiadOpFailed:
      return "diad_op_failed";
    case roce::kEventRoceWriteImm:
      return "roce_write_imm";
    case roce::kEventRoceQpError:
      return "roce_qp_error";
    case roce::kEventRoceSend:
      return "roce_send";
  }
  return "";
}

}  // namespace

SpinnicService::SpinnicService(const v1::Config& config, Dataplane* dataplane)
    : config_(config), dataplane_(dataplane) {
  absl::MutexLock lock(&mu_);
  for (const v1::HandlerInstall& handler : config.handlers()) {
    installed_[handler.name()] = handler;
  }
}

grpc::Status SpinnicService::GetInfo(grpc::ServerContext*,
                                     const v1::GetInfoRequest*,
                                     v1::GetInfoResponse* response) {
  response->set_version(SPINNIC_VERSION);
  response->set_dpdk_version(rte_version());
  StatsSnapshot snapshot = dataplane_->Snapshot(Dataplane::StateCopy::kOmit);
  for (int i = 0; i < config_.ports_size(); ++i) {
    const v1::Port& configured = config_.ports(i);
    v1::PortInfo* port = response->add_ports();
    port->set_id(static_cast<uint32_t>(i));
    port->set_name(configured.name());
    port->set_role(configured.role());
    port->set_device(configured.has_pci() ? configured.pci()
                                          : configured.vdev());
    port->set_mtu(configured.mtu() != 0 ? configured.mtu() : 1500);
    if (static_cast<size_t>(i) < snapshot.ports.size()) {
      port->set_queues(snapshot.ports[i].queues);
      port->set_link_up(snapshot.ports[i].link_up);
      port->set_link_speed_mbps(snapshot.ports[i].link_speed_mbps);
    }
    for (const v1::PortPair& pair : config_.port_pairs()) {
      if (pair.a() == configured.name()) port->set_paired_with(pair.b());
      if (pair.b() == configured.name()) port->set_paired_with(pair.a());
    }
  }
  for (const HpuStats& h : snapshot.hpus) {
    v1::HpuInfo* hpu = response->add_hpus();
    hpu->set_index(h.index);
    hpu->set_lcore(h.lcore);
    if (static_cast<int>(h.index) < config_.workers_size()) {
      hpu->set_cpu(config_.workers(static_cast<int>(h.index)));
    }
  }
  *response->mutable_addresses() = config_.addresses();
  response->set_max_handlers(Ectx::kMaxEctxs);
  response->set_max_state_size(Ectx::kMaxStateSize);
  response->set_max_region_bytes(dataplane_->region_bytes_limit());
  FillRoceInfo(dataplane_->transport<roce::RoceModule>()->config(), config_,
               response->mutable_roce());
  FillDiadInfo(dataplane_->transport<diad::DiadModule>()->config(), config_,
               response->mutable_diad());
  return grpc::Status::OK;
}

grpc::Status SpinnicService::WatchEvents(
    grpc::ServerContext* context, const v1::WatchEventsRequest*,
    grpc::ServerWriter<v1::Event>* writer) {
  std::shared_ptr<EventHub::Subscription> subscription = events_.Subscribe();
  std::vector<v1::Event> batch;
  // The wait is short so that a cancelled or departed client is noticed
  // soon and its subscription freed.
  while (!context->IsCancelled()) {
    batch.clear();
    subscription->Wait(absl::Milliseconds(200), &batch);
    bool open = true;
    for (const v1::Event& event : batch) {
      if (!(open = writer->Write(event))) break;
    }
    if (!open) break;
  }
  events_.Unsubscribe(subscription);
  return grpc::Status::OK;
}

void SpinnicService::PublishEvents(const std::vector<Event>& events) {
  if (events.empty() || events_.subscribers() == 0) return;
  // Events name their ECTX by id; names are what clients know.
  absl::flat_hash_map<uint32_t, std::string> names = dataplane_->EctxNames();
  // DiAD events name their peer by slot; people know names.
  absl::flat_hash_map<uint32_t, std::string> peers;
  if (std::any_of(events.begin(), events.end(),
                  [](const Event& e) { return IsDiadEvent(e.code); })) {
    for (PeerInfo& peer :
         dataplane_->transport<diad::DiadModule>()->ListPeers()) {
      peers[peer.slot] = std::move(peer.name);
    }
  }
  for (const Event& event : events) {
    v1::Event out;
    out.set_timestamp_ns(static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())));
    out.set_code(event.code);
    out.set_hpu(event.hpu);
    out.set_data(event.data, event.length);
    out.set_name(EngineEventName(event.code));
    if (IsDiadEvent(event.code)) {
      // Raised by the transport, not by an ECTX.
      DecodeDiadEvent(event, peers, out.mutable_diad());
    } else if (IsRoceEvent(event.code)) {
      DecodeRoceEvent(event, out.mutable_roce());
    } else if (auto it = names.find(event.ectx_id); it != names.end()) {
      out.set_handler(it->second);
    }
    events_.Publish(out);
  }
}

}  // namespace spinnic
