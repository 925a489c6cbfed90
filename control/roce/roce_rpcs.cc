// spinnic.v1.RoceService (docs/roce.md): CreateQp, DestroyQp, ListQps,
// QpExecute; and RoCE's parts of GetInfo and of the event stream
// (feature_service.h).
#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "control/grpc/feature_service.h"
#include "control/grpc/service_internal.h"
#include "control/roce/roce_service.h"
#include "dataplane/roce/icrc.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/roce/service_ports.h"
#include "dataplane/roce/wire.h"
#include "spinnic/v1/roce.grpc.pb.h"

namespace spinnic {
namespace {

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
  spec->set_remote_ip(AddressText(info.spec.remote_ip));
  spec->set_remote_mac(MacText(info.spec.remote_mac));
  spec->set_local_ip(AddressText(info.spec.local_ip));
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
  out->set_hpu(info.hpu);
  out->set_rate_bps(info.rate_bps);
  out->set_alpha(info.alpha);
  out->set_cnps_received(info.cnps_received);
  out->set_cnps_sent(info.cnps_sent);
  out->set_ce_marks(info.ce_marks);
}

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

class RoceRpcs final : public v1::RoceService::Service, public FeatureService {
 public:
  RoceRpcs(const v1::Config& config, Dataplane* dataplane)
      : config_(config), dataplane_(dataplane) {}

  grpc::Service* service() override { return this; }
  absl::string_view service_name() const override {
    return v1::RoceService::service_full_name();
  }
  void FillInfo(v1::GetInfoResponse* response) const override;
  void DecodeEvents(absl::Span<const Event> events,
                    absl::Span<v1::Event> out) const override;

  grpc::Status CreateQp(grpc::ServerContext*,
                        const v1::CreateQpRequest* request,
                        v1::CreateQpResponse* response) override;
  grpc::Status DestroyQp(grpc::ServerContext*,
                         const v1::DestroyQpRequest* request,
                         v1::DestroyQpResponse* response) override;
  grpc::Status ListQps(grpc::ServerContext*, const v1::ListQpsRequest* request,
                       v1::ListQpsResponse* response) override;
  grpc::Status QpExecute(grpc::ServerContext*,
                         const v1::QpExecuteRequest* request,
                         v1::QpExecuteResponse* response) override;
  grpc::Status SetService(grpc::ServerContext*,
                          const v1::SetServiceRequest* request,
                          v1::SetServiceResponse* response) override;

 private:
  roce::RoceModule& module() const {
    return *dataplane_->transport<roce::RoceModule>();
  }

  const v1::Config config_;
  Dataplane* const dataplane_;
};

// Single-port services in ServiceSlot order, then the plain (verbs) ports.
template <typename Repeated>
void FillServices(const roce::ServicePorts& services, Repeated* out) {
  for (size_t i = 1; i < roce::kServiceSlots; ++i) {
    const auto slot = static_cast<roce::ServiceSlot>(i);
    if (services.port(slot) == 0) continue;
    v1::RoceServiceInfo* info = out->Add();
    info->set_name(roce::ServiceSlotName(slot));
    info->set_port(services.port(slot));
  }
  for (uint16_t port : services.plain_ports()) {
    v1::RoceServiceInfo* info = out->Add();
    info->set_name(roce::ServiceSlotName(roce::ServiceSlot::kVerbs));
    info->set_port(port);
  }
}

void FillRoceInfo(const roce::RoceConfig& r, const v1::Config& config,
                  v1::RoceInfo* roce) {
  roce->set_enabled(r.enabled);
  if (r.enabled) {
    for (const roce::Gid& ip : r.addresses)
      roce->add_addresses(AddressText(ip));
    roce->set_mac(MacText(r.mac));
    if (r.port < config.ports_size()) {
      roce->set_port(config.ports(r.port).name());
    }
    roce->set_path_mtu(r.path_mtu);
    roce->set_max_qps(r.max_qps);
    for (uint16_t port : r.listen_ports) roce->add_listen_ports(port);
    roce->set_max_rd_atomic(r.max_rd_atomic);
    roce->set_udp_port(roce::kRoceUdpPort);
    roce->set_icrc_algorithm(roce::IcrcAlgorithm());
  }
}

// The name of one of Roce's event codes (v1::Event.name).
const char* RoceEventName(uint32_t code) {
  switch (code) {
    case roce::kEventRoceWriteImm:
      return "roce_write_imm";
    case roce::kEventRoceQpError:
      return "roce_qp_error";
    case roce::kEventRoceSend:
      return "roce_send";
  }
  return "";
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

grpc::Status RoceRpcs::CreateQp(grpc::ServerContext*,
                                const v1::CreateQpRequest* request,
                                v1::CreateQpResponse* response) {
  const roce::RoceConfig& config = module().config();
  if (!config.enabled) {
    // The dataplane's own words for it.
    return ToGrpc(module().CreateQp(roce::QpSpec()).status());
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
      for (const roce::Gid& ip : config.addresses)
        ours.push_back(AddressText(ip));
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
  absl::StatusOr<uint32_t> qpn = module().CreateQp(spec);
  if (!qpn.ok()) return ToGrpc(qpn.status());
  response->set_qpn(*qpn);
  return grpc::Status::OK;
}

grpc::Status RoceRpcs::DestroyQp(grpc::ServerContext*,
                                 const v1::DestroyQpRequest* request,
                                 v1::DestroyQpResponse*) {
  if (!module().config().enabled) {
    return ToGrpc(module().CreateQp(roce::QpSpec()).status());
  }
  return ToGrpc(module().DestroyQp(request->qpn()));
}

grpc::Status RoceRpcs::ListQps(grpc::ServerContext*, const v1::ListQpsRequest*,
                               v1::ListQpsResponse* response) {
  // Like ListPeers without DiAD: nothing to list is not an error.
  for (const QpInfo& qp : module().ListQps()) {
    FillQpStatus(qp, response->add_qps());
  }
  return grpc::Status::OK;
}

grpc::Status RoceRpcs::SetService(grpc::ServerContext*,
                                  const v1::SetServiceRequest* request,
                                  v1::SetServiceResponse* response) {
  // The CM's HPU adopts the change on its next poll: microseconds.
  absl::StatusOr<roce::ServicePorts> services =
      module().SetService(request->service(), request->port(),
                          !request->disable(), absl::Seconds(2));
  if (!services.ok()) return ToGrpc(services.status());
  FillServices(*services, response->mutable_services());
  return grpc::Status::OK;
}

grpc::Status RoceRpcs::QpExecute(grpc::ServerContext*,
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
  const absl::Duration timeout = RemoteTimeout(request->timeout_ms());
  std::vector<absl::StatusOr<RoceOpResult>> results;
  uint64_t elapsed = 0;
  if (request->one_at_a_time() && ops.size() > 1) {
    const absl::Time start = absl::Now();
    const absl::Time deadline = start + timeout;
    for (const RoceOp& op : ops) {
      absl::StatusOr<RoceBatchResult> one = module().ExecuteMany(
          {op}, std::max(deadline - absl::Now(), absl::ZeroDuration()));
      if (!one.ok()) return ToGrpc(one.status());
      results.push_back(std::move(one->results.front()));
      if (!results.back().ok()) break;
    }
    elapsed = ElapsedNs(start);
  } else {
    absl::StatusOr<RoceBatchResult> batch =
        module().ExecuteMany(std::move(ops), timeout);
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

void RoceRpcs::FillInfo(v1::GetInfoResponse* response) const {
  FillRoceInfo(module().config(), config_, response->mutable_roce());
  if (module().config().enabled) {
    response->mutable_roce()->set_qp_hpus(module().qp_hpus());
    v1::RoceInfo* roce = response->mutable_roce();
    FillServices(module().services(), roce->mutable_services());
    // The ports the CM listens on now, SetService's changes included.
    roce->clear_listen_ports();
    for (const v1::RoceServiceInfo& service : roce->services()) {
      roce->add_listen_ports(service.port());
    }
  }
}

void RoceRpcs::DecodeEvents(absl::Span<const Event> events,
                            absl::Span<v1::Event> out) const {
  for (size_t i = 0; i < events.size(); ++i) {
    if (!IsRoceEvent(events[i].code)) continue;
    out[i].set_name(RoceEventName(events[i].code));
    DecodeRoceEvent(events[i], out[i].mutable_roce());
  }
}

}  // namespace

namespace roce {

std::unique_ptr<FeatureService> MakeRoceService(const v1::Config& config,
                                                Dataplane* dataplane) {
  return std::make_unique<RoceRpcs>(config, dataplane);
}

}  // namespace roce
}  // namespace spinnic
