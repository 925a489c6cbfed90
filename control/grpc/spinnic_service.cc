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
#include "dataplane/common/checksum.h"
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
  }
  return "";
}

}  // namespace

SpinnicService::SpinnicService(const v1::Config& config, Dataplane* dataplane)
    : config_(config), dataplane_(dataplane) {
  for (FeatureServiceFactory make : FeatureServices()) {
    features_.push_back(make(config_, dataplane_));
  }
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
  response->set_checksum_algorithm(checksum::KernelName());
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
  for (const auto& feature : features_) feature->FillInfo(response);
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
  std::vector<v1::Event> out(events.size());
  const int64_t now_ns = absl::ToUnixNanos(absl::Now());
  for (size_t i = 0; i < events.size(); ++i) {
    out[i].set_timestamp_ns(static_cast<uint64_t>(now_ns));
    out[i].set_code(events[i].code);
    out[i].set_hpu(events[i].hpu);
    out[i].set_data(events[i].data, events[i].length);
  }
  // A transport's events are named by its feature and raised by the
  // transport, not by an ECTX; the rest are the engine's or a handler's.
  for (const auto& feature : features_) {
    feature->DecodeEvents(events, absl::MakeSpan(out));
  }
  for (size_t i = 0; i < events.size(); ++i) {
    if (out[i].name().empty()) {
      out[i].set_name(EngineEventName(events[i].code));
      if (auto it = names.find(events[i].ectx_id); it != names.end()) {
        out[i].set_handler(it->second);
      }
    }
    events_.Publish(out[i]);
  }
}

}  // namespace spinnic
