#include "control/grpc/spinnic_service.h"

#include <rte_version.h>

#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "control/config_loader.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

constexpr uint32_t kMinWatchIntervalMs = 100;
// Largest ReadRegion answer: well inside the default message limit.
constexpr uint64_t kMaxRegionRead = 1 << 20;

// absl and gRPC share the canonical code numbering.
grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

v1::ParamSchema::Type SchemaType(ParamType type) {
  switch (type) {
    case ParamType::kUint:
      return v1::ParamSchema::TYPE_UINT;
    case ParamType::kBool:
      return v1::ParamSchema::TYPE_BOOL;
    case ParamType::kString:
      return v1::ParamSchema::TYPE_STRING;
    case ParamType::kBytes:
      return v1::ParamSchema::TYPE_BYTES;
  }
  return v1::ParamSchema::TYPE_UNSPECIFIED;
}

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
}

uint32_t AccessBits(const v1::RegionAccess& access) {
  return (access.local_read() ? kLocalRead : 0) |
         (access.local_write() ? kLocalWrite : 0) |
         (access.remote_read() ? kRemoteRead : 0) |
         (access.remote_write() ? kRemoteWrite : 0);
}

void FillRegionInfo(const RegionInfo& info, v1::RegionInfo* out) {
  out->set_id(info.id);
  out->set_name(info.name);
  out->set_rkey(info.rkey);
  out->set_base_address(info.base_address);
  out->set_length(info.length);
  v1::RegionAccess* access = out->mutable_access();
  access->set_local_read(info.access & kLocalRead);
  access->set_local_write(info.access & kLocalWrite);
  access->set_remote_read(info.access & kRemoteRead);
  access->set_remote_write(info.access & kRemoteWrite);
  for (const std::string& name : info.bound_to) out->add_bound_to(name);
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
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ListHandlerKinds(
    grpc::ServerContext*, const v1::ListHandlerKindsRequest*,
    v1::ListHandlerKindsResponse* response) {
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    v1::HandlerKindInfo* info = response->add_kinds();
    info->set_name(std::string(kind.name));
    info->set_description(std::string(kind.description));
    info->set_min_state_size(kind.min_state_size);
    info->set_min_regions(kind.min_regions);
    info->set_has_header(kind.has_header);
    info->set_has_payload(kind.has_payload);
    info->set_has_completion(kind.has_completion);
    for (const ParamSpec& spec : kind.params) {
      v1::ParamSchema* param = info->add_params();
      param->set_name(std::string(spec.name));
      param->set_type(SchemaType(spec.type));
      param->set_required(spec.required);
      param->set_default_value(std::string(spec.default_value));
      param->set_help(std::string(spec.help));
      param->set_min(spec.min);
      param->set_max(spec.max);
    }
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::InstallHandler(
    grpc::ServerContext*, const v1::InstallHandlerRequest* request,
    v1::InstallHandlerResponse* response) {
  // Validated as the config file's handlers are, against the running ports.
  v1::Config candidate = config_;
  candidate.clear_handlers();
  *candidate.add_handlers() = request->handler();
  absl::StatusOr<DataplaneConfig> converted = ToDataplaneConfig(candidate);
  if (!converted.ok()) {
    // The checks speak of the candidate config's path; the caller sent
    // InstallHandlerRequest.handler.
    std::string message(converted.status().message());
    if (absl::StartsWith(message, "handlers[0]")) {
      message.replace(0, std::string_view("handlers[0]").size(), "handler");
    }
    return grpc::Status(
        static_cast<grpc::StatusCode>(converted.status().code()), message);
  }
  converted->handlers[0].bound_regions.assign(request->bound_regions().begin(),
                                              request->bound_regions().end());

  absl::MutexLock lock(&mu_);
  absl::StatusOr<uint32_t> id =
      dataplane_->InstallEctx(converted->handlers[0], request->replace());
  if (!id.ok()) return ToGrpc(id.status());
  installed_[request->handler().name()] = request->handler();
  response->set_id(*id);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::RemoveHandler(
    grpc::ServerContext*, const v1::RemoveHandlerRequest* request,
    v1::RemoveHandlerResponse*) {
  absl::MutexLock lock(&mu_);
  absl::Status removed = dataplane_->RemoveEctx(request->name());
  if (!removed.ok()) return ToGrpc(removed);
  installed_.erase(request->name());
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ListHandlers(grpc::ServerContext*,
                                          const v1::ListHandlersRequest*,
                                          v1::ListHandlersResponse* response) {
  absl::MutexLock lock(&mu_);
  StatsSnapshot snapshot = dataplane_->Snapshot(Dataplane::StateCopy::kOmit);
  for (const EctxStats& e : snapshot.ectxs) {
    auto it = installed_.find(e.name);
    if (it != installed_.end()) *response->add_handlers() = it->second;
    FillHandlerStats(e, response->add_stats());
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ReadHandlerState(
    grpc::ServerContext*, const v1::ReadHandlerStateRequest* request,
    v1::ReadHandlerStateResponse* response) {
  absl::StatusOr<std::string> data = dataplane_->ReadEctxState(
      request->name(), request->offset(), request->length());
  if (!data.ok()) return ToGrpc(data.status());
  response->set_data(*std::move(data));
  return grpc::Status::OK;
}

grpc::Status SpinnicService::RegisterRegion(
    grpc::ServerContext*, const v1::RegisterRegionRequest* request,
    v1::RegisterRegionResponse* response) {
  RegionConfig config;
  config.name = request->name();
  config.length = request->length();
  config.access = AccessBits(request->access());
  absl::StatusOr<RegionInfo> region = dataplane_->RegisterRegion(config);
  if (!region.ok()) return ToGrpc(region.status());
  response->set_id(region->id);
  response->set_rkey(region->rkey);
  response->set_base_address(region->base_address);
  response->set_length(region->length);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::DeregisterRegion(
    grpc::ServerContext*, const v1::DeregisterRegionRequest* request,
    v1::DeregisterRegionResponse*) {
  // The dataplane checks bindings and deregisters under one lock.
  return ToGrpc(dataplane_->DeregisterRegion(request->id()));
}

grpc::Status SpinnicService::ListRegions(grpc::ServerContext*,
                                         const v1::ListRegionsRequest*,
                                         v1::ListRegionsResponse* response) {
  for (const RegionInfo& region : dataplane_->ListRegions()) {
    FillRegionInfo(region, response->add_regions());
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ReadRegion(grpc::ServerContext*,
                                        const v1::ReadRegionRequest* request,
                                        v1::ReadRegionResponse* response) {
  absl::StatusOr<std::string> data = dataplane_->ReadRegion(
      request->id(), request->offset(), request->length(), kMaxRegionRead);
  if (!data.ok()) return ToGrpc(data.status());
  response->set_data(*std::move(data));
  return grpc::Status::OK;
}

grpc::Status SpinnicService::WriteRegion(grpc::ServerContext*,
                                         const v1::WriteRegionRequest* request,
                                         v1::WriteRegionResponse*) {
  const std::string& data = request->data();
  return ToGrpc(dataplane_->WriteRegion(
      request->id(), request->offset(),
      {reinterpret_cast<const uint8_t*>(data.data()), data.size()}));
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
  for (const Event& event : events) {
    v1::Event out;
    out.set_timestamp_ns(static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())));
    out.set_code(event.code);
    out.set_hpu(event.hpu);
    out.set_data(event.data, event.length);
    if (auto it = names.find(event.ectx_id); it != names.end()) {
      out.set_handler(it->second);
    }
    events_.Publish(out);
  }
}

}  // namespace spinnic
