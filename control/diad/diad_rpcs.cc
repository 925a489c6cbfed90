// spinnic.v1.DiadService (docs/diad.md): AddPeer, RemovePeer, ListPeers,
// RemoteWrite, RemoteRead, StreamSend; and DiAD's parts of GetInfo and of
// the event stream (feature_service.h).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "control/diad/diad_config.h"
#include "control/diad/diad_service.h"
#include "control/grpc/feature_service.h"
#include "control/grpc/service_internal.h"
#include "dataplane/diad/diad_engine.h"
#include "dataplane/diad/diad_module.h"
#include "spinnic/v1/diad.grpc.pb.h"

namespace spinnic {
namespace {

// The same for a RemoteRead's answer.
constexpr uint32_t kMaxRemoteRead = 1 << 20;

void FillPeerStatus(const PeerInfo& info, v1::PeerStatus* out) {
  out->set_name(info.name);
  out->set_node(AddressText(info.node));
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
  out->set_recovery(info.recovery == diad::Recovery::kSelective
                        ? v1::DiadPeer::SELECTIVE
                        : v1::DiadPeer::GO_BACK_N);
  out->set_rtt_samples(info.rtt_samples);
  out->set_srtt_ns(info.srtt_ns);
  out->set_rto_ns(info.rto_ns);
  out->set_txn_deadline_exceeded(info.txn_deadline_exceeded);
  out->set_cc_window(info.cc_window);
  out->set_cc_rtt_ns(info.cc_rtt_ns);
  out->set_cc_delay_decreases(info.cc_delay_decreases);
  out->set_cc_ecn_decreases(info.cc_ecn_decreases);
  out->set_cc_timeout_decreases(info.cc_timeout_decreases);
  out->set_ce_marks_received(info.ce_marks_received);
  out->set_ecn_echoes_received(info.ecn_echoes_received);
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

// Most repeated reads per RemoteRead.
constexpr uint32_t kMaxReadRepeat = 1000000;

// Checks generate_count/generate_size of a request: `min_size` is the
// smallest size, `max_size` the largest (diad.max_message_bytes), `other`
// names the field that must then be empty and whether it is. Without
// generation `other` must be given; `none_given` says what to send.
absl::Status CheckGenerate(uint32_t count, uint32_t size, uint32_t min_size,
                           uint32_t max_size, absl::string_view other,
                           bool other_empty, absl::string_view none_given) {
  if (count == 0) {
    if (size != 0) {
      return absl::InvalidArgumentError(
          "generate_size: set without generate_count; set both to generate");
    }
    if (other_empty) {
      return absl::InvalidArgumentError(absl::StrCat(other, ": ", none_given));
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

class DiadRpcs final : public v1::DiadService::Service, public FeatureService {
 public:
  DiadRpcs(const v1::Config& config, Dataplane* dataplane)
      : config_(config), dataplane_(dataplane) {}

  grpc::Service* service() override { return this; }
  absl::string_view service_name() const override {
    return v1::DiadService::service_full_name();
  }
  void FillInfo(v1::GetInfoResponse* response) const override;
  void DecodeEvents(absl::Span<const Event> events,
                    absl::Span<v1::Event> out) const override;

  grpc::Status AddPeer(grpc::ServerContext*, const v1::AddPeerRequest* request,
                       v1::AddPeerResponse* response) override;
  grpc::Status RemovePeer(grpc::ServerContext*,
                          const v1::RemovePeerRequest* request,
                          v1::RemovePeerResponse* response) override;
  grpc::Status ListPeers(grpc::ServerContext*,
                         const v1::ListPeersRequest* request,
                         v1::ListPeersResponse* response) override;
  grpc::Status RemoteWrite(grpc::ServerContext*,
                           const v1::RemoteWriteRequest* request,
                           v1::RemoteWriteResponse* response) override;
  grpc::Status RemoteRead(grpc::ServerContext* context,
                          const v1::RemoteReadRequest* request,
                          v1::RemoteReadResponse* response) override;
  grpc::Status StreamSend(grpc::ServerContext*,
                          const v1::StreamSendRequest* request,
                          v1::StreamSendResponse* response) override;

 private:
  diad::DiadModule& module() const {
    return *dataplane_->transport<diad::DiadModule>();
  }

  const v1::Config config_;
  Dataplane* const dataplane_;
};

void FillDiadInfo(const diad::DiadConfig& d, const v1::Config& config,
                  v1::DiadInfo* diad) {
  diad->set_enabled(d.enabled);
  if (!d.enabled) return;
  diad->set_node(AddressText(d.node));
  diad->set_mac(MacText(d.mac));
  diad->set_udp_port(d.udp_port);
  if (d.port < config.ports_size()) {
    diad->set_port(config.ports(d.port).name());
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
  diad->set_adaptive_rto(d.channel.adaptive_rto);
  diad->set_rto_min_us(static_cast<uint32_t>(d.channel.rto_min_ns / 1000));
  diad->set_txn_deadline_ms(diad::TxnDeadlineNs(d.channel) / 1'000'000);
}

// The name of one of Diad's event codes (v1::Event.name).
const char* DiadEventName(uint32_t code) {
  switch (code) {
    case diad::kEventDiadChannelDown:
      return "diad_channel_down";
    case diad::kEventDiadPeerReset:
      return "diad_peer_reset";
    case diad::kEventDiadOpFailed:
      return "diad_op_failed";
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

grpc::Status DiadRpcs::AddPeer(grpc::ServerContext*,
                               const v1::AddPeerRequest* request,
                               v1::AddPeerResponse* response) {
  if (!module().config().enabled) {
    // The dataplane's own words for it.
    return ToGrpc(module().AddPeer(diad::PeerConfig()));
  }
  // Checked and converted as a config file's diad.peers entry is.
  absl::StatusOr<diad::PeerConfig> converted =
      ToPeerConfig(request->peer(), config_);
  if (!converted.ok()) {
    // The checks speak of a config's path; the caller sent
    // AddPeerRequest.peer.
    std::string message(converted.status().message());
    constexpr absl::string_view kPath = "diad.peers[0]";
    if (absl::StartsWith(message, kPath))
      message.replace(0, kPath.size(), "peer");
    return grpc::Status(
        static_cast<grpc::StatusCode>(converted.status().code()), message);
  }
  absl::Status added = module().AddPeer(*converted);
  if (!added.ok()) return ToGrpc(added);
  for (const PeerInfo& peer : module().ListPeers()) {
    if (peer.name == request->peer().name()) response->set_slot(peer.slot);
  }
  return grpc::Status::OK;
}

grpc::Status DiadRpcs::RemovePeer(grpc::ServerContext*,
                                  const v1::RemovePeerRequest* request,
                                  v1::RemovePeerResponse*) {
  if (request->name().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "name: missing; give the peer's name");
  }
  return ToGrpc(module().RemovePeer(request->name()));
}

grpc::Status DiadRpcs::ListPeers(grpc::ServerContext*,
                                 const v1::ListPeersRequest*,
                                 v1::ListPeersResponse* response) {
  for (const PeerInfo& peer : module().ListPeers()) {
    FillPeerStatus(peer, response->add_peers());
  }
  return grpc::Status::OK;
}

grpc::Status DiadRpcs::RemoteWrite(grpc::ServerContext*,
                                   const v1::RemoteWriteRequest* request,
                                   v1::RemoteWriteResponse* response) {
  const uint32_t count = request->generate_count();
  const uint32_t size = request->generate_size();
  if (absl::Status s = CheckGenerate(
          count, size, 1, module().config().max_message_bytes, "data",
          request->data().empty(), "empty; a write carries at least one byte");
      !s.ok()) {
    return ToGrpc(s);
  }
  // Declared before the operations: they are freed first.
  absl::StatusOr<GenerateReservation> reservation =
      GenerateReservation::Acquire(static_cast<uint64_t>(count) * size);
  if (!reservation.ok()) return ToGrpc(reservation.status());
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
  absl::StatusOr<std::vector<DiadResult>> results =
      module().Execute(std::move(ops), RemoteTimeout(request->timeout_ms()));
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

grpc::Status DiadRpcs::RemoteRead(grpc::ServerContext* context,
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
    absl::StatusOr<std::vector<DiadResult>> results =
        module().Execute(std::move(ops), RemoteTimeout(request->timeout_ms()));
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

grpc::Status DiadRpcs::StreamSend(grpc::ServerContext*,
                                  const v1::StreamSendRequest* request,
                                  v1::StreamSendResponse* response) {
  if (request->stream_id() == 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "stream_id: missing; streams are numbered from 1");
  }
  const uint32_t count = request->generate_count();
  const uint32_t size = request->generate_size();
  if (absl::Status s = CheckGenerate(
          count, size, 8, module().config().max_message_bytes, "messages",
          request->messages().empty(), "none given; send at least one");
      !s.ok()) {
    return ToGrpc(s);
  }
  // Declared before the operations: they are freed first.
  absl::StatusOr<GenerateReservation> reservation =
      GenerateReservation::Acquire(static_cast<uint64_t>(count) * size);
  if (!reservation.ok()) return ToGrpc(reservation.status());
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
  absl::StatusOr<std::vector<DiadResult>> results =
      module().Execute(std::move(ops), RemoteTimeout(request->timeout_ms()));
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

void DiadRpcs::FillInfo(v1::GetInfoResponse* response) const {
  FillDiadInfo(module().config(), config_, response->mutable_diad());
  if (!module().config().enabled) return;
  for (uint32_t c = 0; c < module().config().channels; ++c) {
    response->mutable_diad()->add_channel_hpus(module().ChannelHpu(c));
  }
}

void DiadRpcs::DecodeEvents(absl::Span<const Event> events,
                            absl::Span<v1::Event> out) const {
  // DiAD events name their peer by slot; people know names.
  absl::flat_hash_map<uint32_t, std::string> peers;
  bool peers_listed = false;
  for (size_t i = 0; i < events.size(); ++i) {
    if (!IsDiadEvent(events[i].code)) continue;
    if (!peers_listed) {
      peers_listed = true;
      for (PeerInfo& peer : module().ListPeers()) {
        peers[peer.slot] = std::move(peer.name);
      }
    }
    out[i].set_name(DiadEventName(events[i].code));
    DecodeDiadEvent(events[i], peers, out[i].mutable_diad());
  }
}

}  // namespace

namespace diad {

std::unique_ptr<FeatureService> MakeDiadService(const v1::Config& config,
                                                Dataplane* dataplane) {
  return std::make_unique<DiadRpcs>(config, dataplane);
}

}  // namespace diad
}  // namespace spinnic
