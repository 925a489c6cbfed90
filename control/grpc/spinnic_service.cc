#include "control/grpc/spinnic_service.h"

#include <arpa/inet.h>
#include <rte_version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "control/config_loader.h"
#include "dataplane/diad/diad_engine.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/wire.h"
#include "dataplane/spin_engine.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

constexpr uint32_t kMinWatchIntervalMs = 100;
// Largest ReadRegion answer: well inside the default message limit.
constexpr uint64_t kMaxRegionRead = 1 << 20;
// The same for a RemoteRead's answer.
constexpr uint32_t kMaxRemoteRead = 1 << 20;
// A remote operation's timeout when the request gives none.
constexpr absl::Duration kDefaultDiadTimeout = absl::Seconds(10);

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

std::string NodeText(const diad::NodeAddress& node) {
  char text[INET6_ADDRSTRLEN];
  return inet_ntop(AF_INET6, node.data(), text, sizeof text) ? text : "?";
}

std::string MacText(const diad::MacAddress& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
                         m[3], m[4], m[5]);
}

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

bool IsDiadEvent(uint32_t code) {
  return code == diad::kEventDiadChannelDown ||
         code == diad::kEventDiadPeerReset || code == diad::kEventDiadOpFailed;
}

// Event.data of the diad_* events (diad_engine.cc RaiseChannelEvent): u32
// peer slot, u16 channel, u32 txn, u8 status, in host order.
void DecodeDiadEvent(const Event& event,
                     const absl::flat_hash_map<uint32_t, std::string>& peers,
                     v1::DiadEvent* out) {
  if (event.length < 11) return;
  uint32_t slot = 0;
  uint16_t channel = 0;
  uint32_t txn = 0;
  std::memcpy(&slot, event.data, 4);
  std::memcpy(&channel, event.data + 4, 2);
  std::memcpy(&txn, event.data + 6, 4);
  out->set_peer_slot(slot);
  if (auto it = peers.find(slot); it != peers.end()) {
    out->set_peer(it->second);
  }
  out->set_channel(channel);
  out->set_txn(txn);
  out->set_status(diad::StatusName(static_cast<diad::Status>(event.data[10])));
}

bool IsRoceEvent(uint32_t code) {
  return code == roce::kEventRoceWriteImm || code == roce::kEventRoceQpError ||
         code == roce::kEventRoceSend;
}

// Event.data of the roce_* events (roce_engine.cc): u32 qpn, and for
// roce_write_imm u32 immediate and u32 MSN; for roce_send u32 length,
// immediate and flags, then the message's first bytes; in host order.
// Short data (never raised so) decodes what it holds.
void DecodeRoceEvent(const Event& event, v1::RoceEvent* out) {
  uint32_t words[4] = {};
  const size_t length = std::min<size_t>(event.length, Event::kMaxData);
  std::memcpy(words, event.data, std::min(length, sizeof words));
  out->set_qpn(words[0]);
  if (event.code == roce::kEventRoceWriteImm) {
    out->set_immediate(words[1]);
    out->set_msn(words[2]);
  } else if (event.code == roce::kEventRoceSend) {
    out->set_length(words[1]);
    out->set_has_immediate((words[3] & 1) != 0);
    if (out->has_immediate()) out->set_immediate(words[2]);
    if (length > sizeof words) {
      out->set_head(
          std::string(reinterpret_cast<const char*>(event.data) + sizeof words,
                      length - sizeof words));
    }
  }
}

// "192.0.2.12" for an IPv4-mapped address, else IPv6 text.
std::string GidText(const roce::Gid& ip) {
  char text[INET6_ADDRSTRLEN];
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0,    0,
                                          0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(ip.data(), kMapped, sizeof kMapped) == 0) {
    return inet_ntop(AF_INET, ip.data() + 12, text, sizeof text) ? text : "?";
  }
  return inet_ntop(AF_INET6, ip.data(), text, sizeof text) ? text : "?";
}

// `field`'s text as an address: IPv4 becomes IPv4-mapped.
absl::Status ParseGid(absl::string_view field, const std::string& text,
                      roce::Gid* out) {
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    *out = {};
    (*out)[10] = (*out)[11] = 0xff;
    std::memcpy(out->data() + 12, &v4, 4);
    return absl::OkStatus();
  }
  if (inet_pton(AF_INET6, text.c_str(), out->data()) == 1) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": \"", text,
      "\" is not an IP address; write IPv4 or IPv6 text without a prefix "
      "length, e.g. \"192.0.2.12\" or \"fd00::12\""));
}

// Six hex bytes separated by ':' ("02:00:00:00:00:0c").
absl::Status ParseMac(absl::string_view field, const std::string& text,
                      roce::Mac* out) {
  unsigned b[6];
  char end;
  if (std::sscanf(text.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1],
                  &b[2], &b[3], &b[4], &b[5], &end) != 6 ||
      text.size() != 17) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": \"", text,
        "\" is not a MAC address; write six hex bytes separated by ':', "
        "e.g. \"02:00:00:00:00:0c\""));
  }
  for (int i = 0; i < 6; ++i) (*out)[i] = static_cast<uint8_t>(b[i]);
  return absl::OkStatus();
}

const char* QpStateName(roce::QpState state) {
  switch (state) {
    case roce::QpState::kReset:
      return "reset";
    case roce::QpState::kInit:
      return "init";
    case roce::QpState::kRtr:
      return "rtr";
    case roce::QpState::kRts:
      return "rts";
    case roce::QpState::kError:
      return "error";
  }
  return "unknown";
}

void FillQpStatus(const QpInfo& info, v1::QpStatus* out) {
  out->set_qpn(info.qpn);
  v1::CreateQpRequest* spec = out->mutable_spec();
  spec->set_remote_qpn(info.spec.remote_qpn);
  spec->set_remote_ip(GidText(info.spec.remote_ip));
  spec->set_remote_mac(MacText(info.spec.remote_mac));
  spec->set_local_ip(GidText(info.spec.local_ip));
  spec->set_path_mtu(info.spec.pmtu);
  spec->set_expected_psn(info.spec.expected_psn);
  spec->set_send_psn(info.spec.send_psn);
  spec->set_max_rd_atomic(info.spec.max_rd_atomic);
  out->set_state(QpStateName(info.state));
  out->set_expected_psn(info.expected_psn);
  out->set_msn(info.msn);
  out->set_packets(info.packets);
  out->set_naks(info.naks);
  out->set_origin(info.from_cm ? "cm" : "grpc");
  out->set_cm_port(info.cm_port);
  out->set_service(roce::ServiceKindName(info.service));
}

void FillPeerStatus(const PeerInfo& info, v1::PeerStatus* out) {
  out->set_name(info.name);
  out->set_node(NodeText(info.node));
  out->set_mac(MacText(info.mac));
  out->set_slot(info.slot);
  out->set_up(info.up);
  out->set_channels_down(info.channels_down);
  out->set_in_flight_packets(info.in_flight_packets);
  out->set_tx_packets(info.tx_packets);
  out->set_tx_bytes(info.tx_bytes);
  out->set_rx_packets(info.rx_packets);
  out->set_rx_bytes(info.rx_bytes);
  out->set_retransmits(info.retransmits);
  out->set_down_events(info.down_events);
  out->set_resets(info.resets);
  out->set_ops_completed(info.ops_completed);
  out->set_ops_failed(info.ops_failed);
}

// A remote operation's common fields. A channel beyond what the wire can
// name is clamped to one the dataplane refuses just the same.
DiadRequest RemoteOp(diad::DiadOp::Kind kind, const std::string& peer,
                     uint32_t channel, uint32_t key) {
  DiadRequest op;
  op.kind = kind;
  op.peer = peer;
  op.channel = static_cast<uint16_t>(
      std::min<uint32_t>(channel, std::numeric_limits<uint16_t>::max()));
  op.key = key;
  return op;
}

absl::Duration DiadTimeout(uint32_t timeout_ms) {
  return timeout_ms == 0 ? kDefaultDiadTimeout : absl::Milliseconds(timeout_ms);
}

// A request-level DiadExecute error for a request of several operations
// starts "request N: "; StreamSend's field is messages[N].
absl::Status RenameRequestIndex(const absl::Status& status) {
  absl::string_view message = status.message();
  if (!absl::ConsumePrefix(&message, "request ")) return status;
  size_t colon = message.find(": ");
  if (colon == absl::string_view::npos) return status;
  return absl::Status(status.code(),
                      absl::StrCat("messages[", message.substr(0, colon),
                                   "]: ", message.substr(colon + 2)));
}

// Nearest-rank percentile of sorted `values` (not empty).
uint64_t Percentile(const std::vector<uint64_t>& values, int percent) {
  size_t rank = (values.size() * static_cast<size_t>(percent) + 99) / 100;
  return values[std::max<size_t>(rank, 1) - 1];
}

// Generated message i of `size` bytes (spinctl stream-send's pattern,
// docs/spinctl.md): bytes 0..7 are i, little endian; byte k >= 8 is
// (i + k) mod 256.
std::string PatternMessage(uint64_t i, uint32_t size) {
  std::string message(size, '\0');
  for (uint32_t k = 0; k < size && k < 8; ++k) {
    message[k] = static_cast<char>((i >> (8 * k)) & 0xff);
  }
  for (uint32_t k = 8; k < size; ++k) {
    message[k] = static_cast<char>((i + k) & 0xff);
  }
  return message;
}

// Generation limits: at most this many generated operations per request,
// and their bytes together at most this much (the server holds them all).
constexpr uint32_t kMaxGenerateCount = 1000000;
constexpr uint64_t kMaxGenerateBytes = uint64_t{1} << 30;
// Most repeated reads per RemoteRead.
constexpr uint32_t kMaxReadRepeat = 1000000;

// Checks generate_count/generate_size of a request: `min_size` is the
// smallest size, `max_size` the largest (diad.max_message_bytes), `other`
// names the field that must then be empty and whether it is.
absl::Status CheckGenerate(uint32_t count, uint32_t size, uint32_t min_size,
                           uint32_t max_size, absl::string_view other,
                           bool other_empty) {
  if (count == 0) {
    if (size != 0) {
      return absl::InvalidArgumentError(
          "generate_size: set without generate_count; set both to generate");
    }
    return absl::OkStatus();
  }
  if (!other_empty) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate_count: excludes ", other,
        "; send either the bytes or generate_count/generate_size"));
  }
  if (count > kMaxGenerateCount) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate_count ", count, ": at most ", kMaxGenerateCount));
  }
  if (size < min_size || size > max_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate_size ", size, ": must be ", min_size, "..", max_size,
        " bytes", min_size > 1 ? " (a message starts with its index)" : "",
        " (diad.max_message_bytes)"));
  }
  if (static_cast<uint64_t>(count) * size > kMaxGenerateBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "generate_count ", count, " x generate_size ", size, ": more than ",
        kMaxGenerateBytes, " bytes in one request; send fewer per request"));
  }
  return absl::OkStatus();
}

uint64_t ElapsedNs(absl::Time start) {
  return static_cast<uint64_t>(absl::ToInt64Nanoseconds(absl::Now() - start));
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
  const roce::RoceConfig& r = dataplane_->roce_config();
  v1::RoceInfo* roce = response->mutable_roce();
  roce->set_enabled(r.enabled);
  if (r.enabled) {
    for (const roce::Gid& ip : r.addresses) roce->add_addresses(GidText(ip));
    roce->set_mac(MacText(r.mac));
    if (r.port < config_.ports_size()) {
      roce->set_port(config_.ports(r.port).name());
    }
    roce->set_path_mtu(r.path_mtu);
    roce->set_max_qps(r.max_qps);
    for (uint16_t port : r.listen_ports) roce->add_listen_ports(port);
    roce->set_max_rd_atomic(r.max_rd_atomic);
    roce->set_udp_port(roce::kRoceUdpPort);
  }
  const diad::DiadConfig& d = dataplane_->diad_config();
  v1::DiadInfo* diad = response->mutable_diad();
  diad->set_enabled(d.enabled);
  if (!d.enabled) return grpc::Status::OK;
  diad->set_node(NodeText(d.node));
  diad->set_mac(MacText(d.mac));
  diad->set_udp_port(d.udp_port);
  if (d.port < config_.ports_size()) {
    diad->set_port(config_.ports(d.port).name());
  }
  diad->set_path_mtu(d.path_mtu);
  diad->set_max_payload(d.max_payload());
  diad->set_channels(d.channels);
  diad->set_max_peers(d.max_peers);
  diad->set_max_message_bytes(d.max_message_bytes);
  diad->set_window_packets(d.channel.window_packets);
  diad->set_window_bytes(d.channel.window_bytes);
  diad->set_max_transactions(d.channel.max_transactions);
  diad->set_rto_us(static_cast<uint32_t>(d.channel.rto_ns / 1000));
  diad->set_rto_max_us(static_cast<uint32_t>(d.channel.rto_max_ns / 1000));
  diad->set_max_retries(d.channel.max_retries);
  diad->set_down_after_us(diad::DownAfterNs(d.channel) / 1000);
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
  config.stream_id = request->stream_id();
  absl::MutexLock lock(&mu_);
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
  absl::MutexLock lock(&mu_);
  return ToGrpc(dataplane_->DeregisterRegion(request->id()));
}

grpc::Status SpinnicService::ListRegions(grpc::ServerContext*,
                                         const v1::ListRegionsRequest*,
                                         v1::ListRegionsResponse* response) {
  absl::MutexLock lock(&mu_);
  for (const RegionInfo& region : dataplane_->ListRegions()) {
    v1::RegionInfo* info = response->add_regions();
    FillRegionInfo(region, info);
    info->set_stream_id(region.stream_id);
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
  // DiAD events name their peer by slot; people know names.
  absl::flat_hash_map<uint32_t, std::string> peers;
  if (std::any_of(events.begin(), events.end(),
                  [](const Event& e) { return IsDiadEvent(e.code); })) {
    for (PeerInfo& peer : dataplane_->ListPeers()) {
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

grpc::Status SpinnicService::AddPeer(grpc::ServerContext*,
                                     const v1::AddPeerRequest* request,
                                     v1::AddPeerResponse* response) {
  if (!dataplane_->diad_config().enabled) {
    // The dataplane's own words for it.
    return ToGrpc(dataplane_->AddPeer(diad::PeerConfig()));
  }
  // Checked and converted as a config file's diad.peers entry is.
  v1::Config candidate = config_;
  candidate.clear_handlers();
  candidate.mutable_diad()->clear_peers();
  *candidate.mutable_diad()->add_peers() = request->peer();
  absl::StatusOr<DataplaneConfig> converted = ToDataplaneConfig(candidate);
  if (!converted.ok()) {
    // The checks speak of the candidate config's path; the caller sent
    // AddPeerRequest.peer.
    std::string message(converted.status().message());
    constexpr absl::string_view kPath = "diad.peers[0]";
    if (absl::StartsWith(message, kPath))
      message.replace(0, kPath.size(), "peer");
    return grpc::Status(
        static_cast<grpc::StatusCode>(converted.status().code()), message);
  }
  absl::Status added = dataplane_->AddPeer(converted->diad.peers[0]);
  if (!added.ok()) return ToGrpc(added);
  for (const PeerInfo& peer : dataplane_->ListPeers()) {
    if (peer.name == request->peer().name()) response->set_slot(peer.slot);
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::RemovePeer(grpc::ServerContext*,
                                        const v1::RemovePeerRequest* request,
                                        v1::RemovePeerResponse*) {
  if (request->name().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "name: missing; give the peer's name");
  }
  return ToGrpc(dataplane_->RemovePeer(request->name()));
}

grpc::Status SpinnicService::ListPeers(grpc::ServerContext*,
                                       const v1::ListPeersRequest*,
                                       v1::ListPeersResponse* response) {
  for (const PeerInfo& peer : dataplane_->ListPeers()) {
    FillPeerStatus(peer, response->add_peers());
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::RemoteWrite(grpc::ServerContext*,
                                         const v1::RemoteWriteRequest* request,
                                         v1::RemoteWriteResponse* response) {
  const uint32_t count = request->generate_count();
  const uint32_t size = request->generate_size();
  if (absl::Status s = CheckGenerate(
          count, size, 1, dataplane_->diad_config().max_message_bytes, "data",
          request->data().empty());
      !s.ok()) {
    return ToGrpc(s);
  }
  if (count == 0 && request->data().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "data: empty; a write carries at least one byte");
  }
  std::vector<DiadRequest> ops;
  if (count == 0) {
    DiadRequest op = RemoteOp(diad::DiadOp::Kind::kWrite, request->peer(),
                              request->channel(), request->rkey());
    op.address = request->address();
    op.data = request->data();
    ops.push_back(std::move(op));
  } else {
    if (request->generate_region() != 0 && request->generate_region() < size) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("generate_region ", request->generate_region(),
                       ": smaller than generate_size ", size,
                       "; 0 writes every message at `address`"));
    }
    const uint64_t slots =
        std::max<uint64_t>(request->generate_region() / size, 1);
    ops.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      DiadRequest op = RemoteOp(diad::DiadOp::Kind::kWrite, request->peer(),
                                request->channel(), request->rkey());
      op.address = request->address() + (i % slots) * size;
      op.data = PatternMessage(i, size);
      ops.push_back(std::move(op));
    }
  }
  const size_t n = ops.size();
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<DiadResult>> results = dataplane_->DiadExecute(
      std::move(ops), DiadTimeout(request->timeout_ms()));
  const uint64_t elapsed = ElapsedNs(start);
  if (!results.ok()) return ToGrpc(RenameRequestIndex(results.status()));
  std::vector<uint64_t> latencies;
  latencies.reserve(n);
  for (size_t i = 0; i < results->size(); ++i) {
    const DiadResult& result = (*results)[i];
    if (!result.status.ok()) {
      if (count == 0) return ToGrpc(result.status);
      return grpc::Status(
          static_cast<grpc::StatusCode>(result.status.code()),
          absl::StrCat("write ", i, ": ", result.status.message(), " (",
                       latencies.size(), " of ", n, " writes done)"));
    }
    latencies.push_back(result.latency_ns);
  }
  std::sort(latencies.begin(), latencies.end());
  response->set_latency_ns(Percentile(latencies, 50));
  response->set_elapsed_ns(elapsed);
  response->set_bytes(count == 0 ? request->data().size()
                                 : static_cast<uint64_t>(count) * size);
  response->set_writes(static_cast<uint32_t>(latencies.size()));
  response->set_latency_p50_ns(Percentile(latencies, 50));
  response->set_latency_p99_ns(Percentile(latencies, 99));
  response->set_latency_max_ns(latencies.back());
  return grpc::Status::OK;
}

grpc::Status SpinnicService::RemoteRead(grpc::ServerContext* context,
                                        const v1::RemoteReadRequest* request,
                                        v1::RemoteReadResponse* response) {
  if (request->length() == 0 || request->length() > kMaxRemoteRead) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("length ", request->length(), ": must be 1..",
                     kMaxRemoteRead,
                     " bytes (1 MiB per read: the answer must fit in a "
                     "message); read more in several calls"));
  }
  if (request->repeat() > kMaxReadRepeat) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("repeat ", request->repeat(), ": at most ",
                                     kMaxReadRepeat, " reads"));
  }
  const uint32_t repeat = std::max<uint32_t>(request->repeat(), 1);
  std::vector<uint64_t> latencies;
  latencies.reserve(repeat);
  uint64_t elapsed = 0;
  for (uint32_t i = 0; i < repeat; ++i) {
    if (i > 0 && context != nullptr && context->IsCancelled()) {
      return grpc::Status(
          grpc::StatusCode::CANCELLED,
          absl::StrCat("cancelled after ", i, " of ", repeat, " reads"));
    }
    DiadRequest op = RemoteOp(diad::DiadOp::Kind::kRead, request->peer(),
                              request->channel(), request->rkey());
    op.address = request->address();
    op.read_length = request->length();
    std::vector<DiadRequest> ops;
    ops.push_back(std::move(op));
    const absl::Time start = absl::Now();
    absl::StatusOr<std::vector<DiadResult>> results = dataplane_->DiadExecute(
        std::move(ops), DiadTimeout(request->timeout_ms()));
    elapsed += ElapsedNs(start);
    if (!results.ok()) return ToGrpc(results.status());
    DiadResult& result = results->front();
    if (!result.status.ok()) {
      if (repeat == 1) return ToGrpc(result.status);
      return grpc::Status(
          static_cast<grpc::StatusCode>(result.status.code()),
          absl::StrCat("read ", i, ": ", result.status.message(), " (", i,
                       " of ", repeat, " reads done)"));
    }
    latencies.push_back(result.latency_ns);
    if (i + 1 == repeat) {
      response->set_data(std::move(result.data));
      response->set_latency_ns(result.latency_ns);
    }
  }
  std::sort(latencies.begin(), latencies.end());
  response->set_reads(repeat);
  response->set_latency_p50_ns(Percentile(latencies, 50));
  response->set_latency_p99_ns(Percentile(latencies, 99));
  response->set_latency_max_ns(latencies.back());
  response->set_elapsed_ns(elapsed);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::StreamSend(grpc::ServerContext*,
                                        const v1::StreamSendRequest* request,
                                        v1::StreamSendResponse* response) {
  if (request->stream_id() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "stream_id: missing; streams are numbered from 1");
  }
  const uint32_t count = request->generate_count();
  const uint32_t size = request->generate_size();
  if (absl::Status s = CheckGenerate(
          count, size, 8, dataplane_->diad_config().max_message_bytes,
          "messages", request->messages().empty());
      !s.ok()) {
    return ToGrpc(s);
  }
  if (count == 0 && request->messages().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "messages: none given; send at least one");
  }
  std::vector<DiadRequest> ops;
  uint64_t bytes = 0;
  if (count == 0) {
    ops.reserve(static_cast<size_t>(request->messages_size()));
    for (const std::string& message : request->messages()) {
      ops.push_back(RemoteOp(diad::DiadOp::Kind::kStream, request->peer(),
                             request->channel(), request->stream_id()));
      ops.back().data = message;
      bytes += message.size();
    }
  } else {
    ops.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      ops.push_back(RemoteOp(diad::DiadOp::Kind::kStream, request->peer(),
                             request->channel(), request->stream_id()));
      ops.back().data = PatternMessage(i, size);
    }
    bytes = static_cast<uint64_t>(count) * size;
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<DiadResult>> results = dataplane_->DiadExecute(
      std::move(ops), DiadTimeout(request->timeout_ms()));
  const uint64_t elapsed = ElapsedNs(start);
  if (!results.ok()) return ToGrpc(RenameRequestIndex(results.status()));
  std::vector<uint64_t> latencies;
  const DiadResult* failed = nullptr;
  size_t failed_index = 0;
  for (size_t i = 0; i < results->size(); ++i) {
    const DiadResult& result = (*results)[i];
    if (result.status.ok()) {
      latencies.push_back(result.latency_ns);
    } else if (failed == nullptr) {
      failed = &result;
      failed_index = i;
    }
  }
  if (failed != nullptr) {
    return grpc::Status(
        static_cast<grpc::StatusCode>(failed->status.code()),
        absl::StrCat("messages[", failed_index, "]: ", failed->status.message(),
                     " (", latencies.size(), " of ", results->size(),
                     " messages delivered)"));
  }
  std::sort(latencies.begin(), latencies.end());
  response->set_delivered(static_cast<uint32_t>(latencies.size()));
  response->set_latency_p50_ns(Percentile(latencies, 50));
  response->set_latency_p99_ns(Percentile(latencies, 99));
  response->set_latency_max_ns(latencies.back());
  response->set_elapsed_ns(elapsed);
  response->set_bytes(bytes);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::CreateQp(grpc::ServerContext*,
                                      const v1::CreateQpRequest* request,
                                      v1::CreateQpResponse* response) {
  const roce::RoceConfig& config = dataplane_->roce_config();
  if (!config.enabled) {
    // The dataplane's own words for it.
    return ToGrpc(dataplane_->CreateQp(roce::QpSpec()).status());
  }
  roce::QpSpec spec;
  spec.remote_qpn = request->remote_qpn();
  if (request->remote_ip().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "remote_ip: missing; give the client's address, e.g. "
                        "\"192.0.2.12\" or \"fd00::12\"");
  }
  if (absl::Status s =
          ParseGid("remote_ip", request->remote_ip(), &spec.remote_ip);
      !s.ok()) {
    return ToGrpc(s);
  }
  if (request->remote_mac().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "remote_mac: missing; give the MAC frames to the "
                        "client go to (its own, or the next hop's)");
  }
  if (absl::Status s =
          ParseMac("remote_mac", request->remote_mac(), &spec.remote_mac);
      !s.ok()) {
    return ToGrpc(s);
  }
  if (!request->local_ip().empty()) {
    if (absl::Status s =
            ParseGid("local_ip", request->local_ip(), &spec.local_ip);
        !s.ok()) {
      return ToGrpc(s);
    }
    if (std::find(config.addresses.begin(), config.addresses.end(),
                  spec.local_ip) == config.addresses.end()) {
      std::vector<std::string> ours;
      for (const roce::Gid& ip : config.addresses) ours.push_back(GidText(ip));
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("local_ip: ", request->local_ip(),
                       " is not one of the appliance's RoCE addresses (",
                       absl::StrJoin(ours, ", "),
                       "); use one of them or leave local_ip empty"));
    }
  }
  spec.pmtu = request->path_mtu() != 0 ? request->path_mtu() : config.path_mtu;
  spec.expected_psn = request->expected_psn();
  spec.send_psn = request->send_psn();
  if (request->max_rd_atomic() > 16) {
    // Not narrowed to the spec's byte: the value as sent is refused.
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("max_rd_atomic ", request->max_rd_atomic(),
                     " is not allowed; use 1..16, or 0 for ",
                     config.max_rd_atomic, " (roce.max_rd_atomic)"));
  }
  spec.max_rd_atomic = request->max_rd_atomic() != 0
                           ? static_cast<uint8_t>(request->max_rd_atomic())
                           : config.max_rd_atomic;
  absl::StatusOr<uint32_t> qpn = dataplane_->CreateQp(spec);
  if (!qpn.ok()) return ToGrpc(qpn.status());
  response->set_qpn(*qpn);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::DestroyQp(grpc::ServerContext*,
                                       const v1::DestroyQpRequest* request,
                                       v1::DestroyQpResponse*) {
  if (!dataplane_->roce_config().enabled) {
    return ToGrpc(dataplane_->CreateQp(roce::QpSpec()).status());
  }
  return ToGrpc(dataplane_->DestroyQp(request->qpn()));
}

grpc::Status SpinnicService::ListQps(grpc::ServerContext*,
                                     const v1::ListQpsRequest*,
                                     v1::ListQpsResponse* response) {
  // Like ListPeers without DiAD: nothing to list is not an error.
  for (const QpInfo& qp : dataplane_->ListQps()) {
    FillQpStatus(qp, response->add_qps());
  }
  return grpc::Status::OK;
}

namespace {

// QpExecute's kinds by name.
absl::StatusOr<roce::WorkRequest::Kind> RoceKind(absl::string_view name) {
  using Kind = roce::WorkRequest::Kind;
  static constexpr std::pair<absl::string_view, Kind> kKinds[] = {
      {"write", Kind::kWrite},        {"write_imm", Kind::kWriteImm},
      {"read", Kind::kRead},          {"send", Kind::kSend},
      {"fetch_add", Kind::kFetchAdd}, {"cmp_swap", Kind::kCompareSwap},
  };
  for (const auto& [text, kind] : kKinds) {
    if (name == text) return kind;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("kind '", name,
                   "': use write, write_imm, read, send, fetch_add or "
                   "cmp_swap"));
}

}  // namespace

grpc::Status SpinnicService::QpExecute(grpc::ServerContext*,
                                       const v1::QpExecuteRequest* request,
                                       v1::QpExecuteResponse* response) {
  using Kind = roce::WorkRequest::Kind;
  absl::StatusOr<Kind> kind = RoceKind(request->kind());
  if (!kind.ok()) return ToGrpc(kind.status());
  const bool atomic = *kind == Kind::kFetchAdd || *kind == Kind::kCompareSwap;
  const uint32_t count = request->generate_count();
  const uint32_t size = request->generate_size();
  if (count == 0 && size != 0) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "generate_size: set without generate_count; set both to generate");
  }
  if (count > kMaxGenerateCount) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("generate_count ", count, ": at most ",
                                     kMaxGenerateCount));
  }
  if (count > 0 && request->length() != 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "length: excludes generate_count; give generate_size "
                        "instead");
  }
  const uint32_t length = count > 0 ? size : request->length();
  if (atomic ? (length != 8 && length != 0)
             : (length == 0 || length > (uint32_t{1} << 31))) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        atomic ? absl::StrCat(count > 0 ? "generate_size " : "length ", length,
                              ": atomics work on 8 bytes")
               : absl::StrCat(count > 0 ? "generate_size " : "length ", length,
                              ": must be 1..2^31 bytes"));
  }
  if (count > 0 && request->generate_region() != 0 &&
      request->generate_region() < length) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("generate_region ", request->generate_region(),
                     ": smaller than generate_size ", length,
                     "; 0 puts every op at the same address"));
  }
  RoceOp base;
  base.qpn = request->qpn();
  base.kind = *kind;
  base.region_id = request->region_id();
  base.offset = request->offset();
  base.length = atomic ? 8 : length;
  base.remote_va = request->remote_address();
  base.rkey = request->rkey();
  base.imm = request->imm();
  base.compare = request->compare();
  base.swap_add = request->swap_add();
  std::vector<RoceOp> ops;
  if (count == 0) {
    ops.push_back(base);
  } else {
    const uint64_t remote_slots =
        std::max<uint64_t>(request->generate_region() / base.length, 1);
    // The local span also stays inside the region (from `offset`).
    uint64_t local_slots = remote_slots;
    for (const RegionInfo& region : dataplane_->ListRegions()) {
      if (region.id == base.region_id && region.length > base.offset) {
        local_slots = std::clamp<uint64_t>(
            (region.length - base.offset) / base.length, 1, remote_slots);
      }
    }
    ops.reserve(count);
    for (uint32_t i = 0; i < count; ++i) {
      RoceOp op = base;
      op.offset = base.offset + (i % local_slots) * base.length;
      op.remote_va = base.remote_va + (i % remote_slots) * base.length;
      ops.push_back(op);
    }
  }
  const absl::Duration timeout = DiadTimeout(request->timeout_ms());
  std::vector<absl::StatusOr<RoceOpResult>> results;
  uint64_t elapsed = 0;
  if (request->one_at_a_time() && ops.size() > 1) {
    const absl::Time start = absl::Now();
    const absl::Time deadline = start + timeout;
    for (const RoceOp& op : ops) {
      absl::StatusOr<RoceBatchResult> one = dataplane_->RoceExecuteMany(
          {op}, std::max(deadline - absl::Now(), absl::ZeroDuration()));
      if (!one.ok()) return ToGrpc(one.status());
      results.push_back(std::move(one->results.front()));
      if (!results.back().ok()) break;
    }
    elapsed = ElapsedNs(start);
  } else {
    absl::StatusOr<RoceBatchResult> batch =
        dataplane_->RoceExecuteMany(std::move(ops), timeout);
    if (!batch.ok()) return ToGrpc(batch.status());
    results = std::move(batch->results);
    elapsed = static_cast<uint64_t>(absl::ToInt64Nanoseconds(batch->elapsed));
  }
  std::vector<uint64_t> latencies;
  latencies.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      if (count == 0) return ToGrpc(results[i].status());
      return grpc::Status(
          static_cast<grpc::StatusCode>(results[i].status().code()),
          absl::StrCat("op ", i, ": ", results[i].status().message(), " (",
                       latencies.size(), " of ", count, " ops done)"));
    }
    latencies.push_back(
        static_cast<uint64_t>(absl::ToInt64Nanoseconds(results[i]->latency)));
    response->set_atomic_original(results[i]->atomic_original);
  }
  std::sort(latencies.begin(), latencies.end());
  response->set_ops(static_cast<uint32_t>(latencies.size()));
  response->set_elapsed_ns(elapsed);
  response->set_bytes(latencies.size() * uint64_t{base.length});
  response->set_latency_p50_ns(Percentile(latencies, 50));
  response->set_latency_p99_ns(Percentile(latencies, 99));
  response->set_latency_max_ns(latencies.back());
  return grpc::Status::OK;
}

}  // namespace spinnic
