// RoceEngine's receive path and its QPs (roce_engine.h): what is ours,
// neighbor answers, the hand-off to a QP's owner, RoCEv2 dispatch by QP and
// opcode,
// the poll loop, commands from the control plane, QP creation and
// destruction. Responder side: roce_engine_responder.cc; reply frames:
// roce_engine_replies.cc; our requests: roce_engine_requester.cc; services:
// roce_engine_services.cc; the CM: roce_engine_cm.cc.
#include "dataplane/roce/roce_engine.h"

#include <rte_mbuf.h>
#include <rte_random.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "dataplane/common/clock.h"
#include "dataplane/contiguous.h"
#include "dataplane/neighbor.h"
#include "dataplane/neighbor_service.h"
#include "dataplane/region_table.h"
#include "dataplane/roce/cnp.h"
#include "dataplane/roce/rc_packets.h"
#include "dataplane/roce/roce_engine_internal.h"

namespace spinnic::roce {
namespace {

constexpr uint16_t kEthertypeArp = 0x0806;
constexpr uint8_t kIpProtoIcmpv6 = 58;

Gid SolicitedNode(const Gid& ip) {
  Gid group = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
  std::copy(ip.begin() + 13, ip.end(), group.begin() + 13);
  return group;
}

uint64_t Load64(const uint8_t* bytes) {
  uint64_t v = 0;
  std::memcpy(&v, bytes, 8);
  return v;
}

}  // namespace

using roce_engine_internal::IsMapped;
using roce_engine_internal::kReplyBudget;

void QpStatus::StoreSpec(const QpSpec& spec) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  remote_qpn.store(spec.remote_qpn, kRelaxed);
  remote_ip_high.store(Load64(spec.remote_ip.data()), kRelaxed);
  remote_ip_low.store(Load64(spec.remote_ip.data() + 8), kRelaxed);
  local_ip_high.store(Load64(spec.local_ip.data()), kRelaxed);
  local_ip_low.store(Load64(spec.local_ip.data() + 8), kRelaxed);
  uint64_t mac = 0;
  std::memcpy(&mac, spec.remote_mac.data(), 6);
  remote_mac.store(mac, kRelaxed);
  pmtu.store(spec.pmtu, kRelaxed);
  first_expected_psn.store(spec.expected_psn, kRelaxed);
  send_psn.store(spec.send_psn, kRelaxed);
  max_rd_atomic.store(spec.max_rd_atomic, kRelaxed);
}

QpSpec QpStatus::LoadSpec() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  QpSpec spec;
  spec.remote_qpn = remote_qpn.load(kRelaxed);
  const uint64_t words[4] = {
      remote_ip_high.load(kRelaxed), remote_ip_low.load(kRelaxed),
      local_ip_high.load(kRelaxed), local_ip_low.load(kRelaxed)};
  std::memcpy(spec.remote_ip.data(), &words[0], 16);
  std::memcpy(spec.local_ip.data(), &words[2], 16);
  const uint64_t mac = remote_mac.load(kRelaxed);
  std::memcpy(spec.remote_mac.data(), &mac, 6);
  spec.pmtu = pmtu.load(kRelaxed);
  spec.expected_psn = first_expected_psn.load(kRelaxed);
  spec.send_psn = send_psn.load(kRelaxed);
  spec.max_rd_atomic = max_rd_atomic.load(kRelaxed);
  return spec;
}

uint32_t NextQpHpu(const RoceShared& shared) {
  if (shared.qp_hpus <= 1 || shared.next_qp_hpu == nullptr) return 0;
  return shared.next_qp_hpu->fetch_add(1, std::memory_order_relaxed) %
         shared.qp_hpus;
}

const char* RoceDropName(RoceDrop drop) {
  switch (drop) {
    case RoceDrop::kNotRoce:
      return "not_roce";
    case RoceDrop::kNeighbor:
      return "bad_neighbor";
    case RoceDrop::kUnknownQp:
      return "unknown_qp";
    case RoceDrop::kWrongPeer:
      return "wrong_peer";
    case RoceDrop::kNotRequest:
      return "not_request";
    case RoceDrop::kUnsupported:
      return "unsupported";
    case RoceDrop::kBadGsi:
      return "bad_gsi";
    case RoceDrop::kBadMad:
      return "bad_mad";
    case RoceDrop::kResponder:
      return "responder";
    case RoceDrop::kCnpUnknownQp:
      return "cnp_unknown_qp";
    case RoceDrop::kReplyQueueFull:
      return "reply_queue_full";
    case RoceDrop::kNoBuffer:
      return "no_buffer";
    case RoceDrop::kHandoffFull:
      return "handoff_full";
    case RoceDrop::kCount:
      break;
  }
  return "unknown";
}

RoceEngine::RoceEngine(uint32_t hpu_index, const RoceShared& shared, Hpu* hpu,
                       SpinEngine* spin)
    : hpu_index_(hpu_index),
      shared_(shared),
      config_(*shared.config),
      services_(ServicePorts::Of(*shared.config)),
      hpu_(hpu),
      spin_(spin) {
  for (const Gid& ip : config_.addresses) {
    if (IsMapped(ip)) {
      std::array<uint8_t, 4>& v4 = ipv4_.emplace_back();
      std::copy(ip.begin() + 12, ip.end(), v4.begin());
    } else {
      ipv6_.push_back(ip);
      solicited_.push_back(SolicitedNode(ip));
    }
  }
  qps_.resize(config_.max_qps);
  touched_.reserve(config_.max_qps);
  busy_.reserve(config_.max_qps);
  requesting_.reserve(config_.max_qps);
  cc_timers_.reserve(config_.max_qps);
  handler_reply_bytes_.resize(size_t{kHandlerReplies} * kHandlerReplyBytes);
  for (uint32_t i = kHandlerReplies; i-- > 0;) {
    free_handler_replies_.push_back(static_cast<uint16_t>(i));
  }
  if (RunsCm()) {
    accepted_services_.resize(config_.max_qps);
    cm_placements_.resize(config_.max_qps);
    CmServiceConfig cm;
    // EUI-64 from our MAC, as a NIC derives its node GUID.
    const Mac& mac = config_.mac;
    cm.local_ca_guid = (uint64_t{mac[0] ^ 0x02u} << 56) |
                       (uint64_t{mac[1]} << 48) | (uint64_t{mac[2]} << 40) |
                       (uint64_t{0xfffe} << 24) | (uint64_t{mac[3]} << 16) |
                       (uint64_t{mac[4]} << 8) | mac[5];
    cm.max_responder_resources = config_.max_rd_atomic;
    cm.max_initiator_depth = config_.max_rd_atomic;
    cm.max_path_mtu = PathMtuCode(config_.path_mtu);
    cm.rnr_retry_count = config_.rnr_retry;
    cm.id_seed = static_cast<uint32_t>(rte_rand());
    cm_ = std::make_unique<CmService>(cm, this);
    SetServices(services_);
    gsi_psn_ = static_cast<uint32_t>(rte_rand()) & kPsnMask;
  }
}

RoceEngine::~RoceEngine() { Shutdown(); }

bool RoceEngine::ForUs(const ParsedFrame& frame) const {
  const PacketLayers& l = frame.layers;
  if (l.is_ipv4 || l.is_ipv6) {
    for (const Gid& ip : config_.addresses) {
      if (frame.dst_addr == ip) return true;
    }
    if (l.is_ipv6 && l.ip_proto == kIpProtoIcmpv6) {
      for (const Gid& group : solicited_) {
        if (frame.dst_addr == group) return true;
      }
    }
    return false;
  }
  return l.ethertype == kEthertypeArp && !ipv4_.empty();
}

void RoceEngine::Receive(rte_mbuf* packet, const ParsedFrame& frame,
                         uint16_t in_port, const EctxTable& table) {
  const PacketLayers& l = frame.layers;
  if (l.ethertype == kEthertypeArp ||
      (l.is_ipv6 && l.ip_proto == kIpProtoIcmpv6)) {
    AnswerNeighbor(packet, frame, in_port);
    return;
  }
  if (l.ip_proto != kIpProtoUdp || !frame.has_l4_ports ||
      frame.dst_port != kRoceUdpPort) {
    counters_.Drop(RoceDrop::kNotRoce);
    rte_pktmbuf_free(packet);
    return;
  }
  if (!MakeContiguous(&packet, shared_.pool)) {
    counters_.Drop(RoceDrop::kNoBuffer);
    rte_pktmbuf_free(packet);
    return;
  }
  const uint32_t owner =
      shared_.qp_hpus > 1 ? OwnerOf(packet, frame) : RoceEngine::kCmHpu;
  if (owner != hpu_index_) {
    HandOff(packet, in_port, owner);
    return;
  }
  ReceiveRoce(packet, frame, in_port, table);
}

uint32_t RoceEngine::OwnerOf(const rte_mbuf* packet,
                             const ParsedFrame& frame) const {
  // The BTH follows the UDP header; its bytes 5..7 are the destination QP.
  const uint32_t bth = frame.layers.l4_offset + 8u;
  if (packet->data_len < bth + 8u) return hpu_index_;
  const uint8_t* q = rte_pktmbuf_mtod(packet, const uint8_t*) + bth + 5;
  const uint32_t qpn = (uint32_t{q[0]} << 16) | (uint32_t{q[1]} << 8) | q[2];
  if (qpn == kGsiQp) return kCmHpu;
  if (qpn < kFirstQpn || qpn - kFirstQpn >= config_.max_qps) return hpu_index_;
  const uint32_t owner =
      shared_.qp_status[qpn - kFirstQpn].hpu.load(std::memory_order_relaxed);
  return owner < shared_.hpu_count ? owner : hpu_index_;
}

void RoceEngine::HandOff(rte_mbuf* packet, uint16_t in_port, uint32_t owner) {
  packet->port = in_port;
  if (shared_.inbound == nullptr ||
      rte_ring_mp_enqueue(shared_.inbound[owner], packet) != 0) {
    counters_.Drop(RoceDrop::kHandoffFull);
    rte_pktmbuf_free(packet);
    return;
  }
  counters_.handoffs.Add();
}

void RoceEngine::AnswerNeighbor(rte_mbuf* packet, const ParsedFrame& frame,
                                uint16_t in_port) {
  LocalAddresses local;
  local.mac = config_.mac;
  local.ipv6 = ipv6_;
  local.ipv4 = ipv4_;
  switch (spinnic::AnswerNeighbor(packet, frame, local, shared_.pool, *hpu_,
                                  in_port)) {
    case NeighborOutcome::kAnswered:
      counters_.neighbor_answers.Add();
      break;
    case NeighborOutcome::kNoBuffer:
      counters_.Drop(RoceDrop::kNoBuffer);
      break;
    case NeighborOutcome::kMalformed:
      counters_.Drop(RoceDrop::kNeighbor);
      break;
    case NeighborOutcome::kIgnored:
      // An ARP for someone else, a reply, other ICMPv6: nothing to answer.
      break;
  }
}

RoceEngine::Qp* RoceEngine::FindQp(uint32_t qpn) {
  if (qpn < kFirstQpn || qpn - kFirstQpn >= qps_.size()) return nullptr;
  Qp* qp = qps_[qpn - kFirstQpn].get();
  return qp != nullptr && qp->in_use ? qp : nullptr;
}

const Responder* RoceEngine::responder(uint32_t qpn) const {
  if (qpn < kFirstQpn || qpn - kFirstQpn >= qps_.size()) return nullptr;
  const Qp* qp = qps_[qpn - kFirstQpn].get();
  return qp != nullptr && qp->in_use ? &qp->responder : nullptr;
}

void RoceEngine::ReceiveRoce(rte_mbuf* packet, const ParsedFrame& frame,
                             uint16_t in_port, const EctxTable& table) {
  counters_.rx_packets.Add();
  counters_.rx_bytes.Add(packet->pkt_len);
  uint8_t* data = rte_pktmbuf_mtod(packet, uint8_t*);
  if (LooksLikeCnp(data, packet->data_len, frame.layers.l4_offset))
      [[unlikely]] {
    ReceiveCnp(packet, frame);
    rte_pktmbuf_free(packet);
    return;
  }
  Packet p;
  const ParseError error =
      ParseFrame(data, packet->data_len, frame.layers.l3_offset,
                 frame.layers.l4_offset, &p);
  if (error != ParseError::kNone) {
    counters_.parse_errors[static_cast<size_t>(error)].Add();
    rte_pktmbuf_free(packet);
    return;
  }
  if (p.udp_checksum == 0) counters_.udp_checksum_zero.Add();
  if (p.bth.dest_qp == kGsiQp) {
    // OwnerOf sent QP1 here; a frame too short to be steered may not be.
    if (RunsCm()) {
      ReceiveGsi(p, data);
    } else {
      counters_.Drop(RoceDrop::kBadGsi);
    }
    rte_pktmbuf_free(packet);
    return;
  }
  Qp* qp = FindQp(p.bth.dest_qp);
  if (qp == nullptr) {
    counters_.Drop(RoceDrop::kUnknownQp);
    rte_pktmbuf_free(packet);
    return;
  }
  if (p.src_ip != qp->spec.remote_ip) {
    counters_.Drop(RoceDrop::kWrongPeer);
    rte_pktmbuf_free(packet);
    return;
  }
  if (qp->awaiting_rtu) [[unlikely]] {
    // The connection's first packet establishes it, RTU or not (IBA
    // 12.9.7); the CM, on HPU 0, hears of it once.
    if (RunsCm()) {
      if (cm_->NotifyRcPacket(qp->qpn, clock::NowMicros(), &cm_actions_)) {
        qp->awaiting_rtu = false;
        RunCmActions();
      }
    } else if (rte_ring_mp_enqueue_elem(shared_.cm_notices, &qp->qpn,
                                        sizeof(uint32_t)) == 0) {
      qp->awaiting_rtu = false;
    }
  }
  if (p.ecn() == kEcnCe) [[unlikely]]
    OnCeMarked(*qp);
  switch (p.info->kind) {
    case OpKind::kSend:
    case OpKind::kWrite:
    case OpKind::kReadRequest:
    case OpKind::kAtomic: {
      const RegionTable* regions =
          shared_.regions->load(std::memory_order_acquire);
      const Arrival arrival{packet, &frame, &p, in_port, &table};
      Request(*qp, arrival, *regions);
      break;
    }
    case OpKind::kReadResponse:
    case OpKind::kAck:
    case OpKind::kAtomicAck:
      Response(*qp, p, data);
      break;
    default:
      counters_.Drop(RoceDrop::kUnsupported);
      break;
  }
  rte_pktmbuf_free(packet);
}

void RoceEngine::Poll(const EctxTable& /*table*/) {
  ApplyCommands();
  if (!cc_timers_.empty()) RunCongestionTimers();
  if (RunsCm() && shared_.cm_notices != nullptr) ApplyCmNotices();
  if (RunsCm() && cm_deadline_us_ != UINT64_MAX) {
    const uint64_t now = clock::NowMicros();
    if (now >= cm_deadline_us_) {
      while (cm_->OnTimer(now, &cm_actions_)) RunCmActions();
      RunCmActions();
    }
  }
  // Coalesced ACKs: what arrived in this poll is acknowledged once, after
  // the burst (the responder also ACKs every ack_every packets itself).
  for (uint32_t slot : touched_) {
    Qp& qp = *qps_[slot];
    qp.touched = false;
    if (qp.in_use && qp.responder.unacknowledged() != 0 &&
        qp.reply_count < kReplyQueue) {
      Queue(qp, qp.responder.FlushAck());
    }
  }
  touched_.clear();
  size_t keep = 0;
  for (size_t i = 0; i < busy_.size(); ++i) {
    Qp& qp = *qps_[busy_[i]];
    if (qp.in_use) SendReplies(qp, kReplyBudget);
    if (qp.in_use && qp.reply_count != 0) busy_[keep++] = busy_[i];
  }
  busy_.resize(keep);
  // Our requests after the replies: an ACK queued in this poll leaves
  // before a result write that follows it.
  if (!requesting_.empty()) {
    const uint64_t now = RequesterNow();
    size_t kept = 0;
    for (size_t i = 0; i < requesting_.size(); ++i) {
      Qp& qp = *qps_[requesting_[i]];
      if (qp.in_use && qp.requester != nullptr) DriveRequester(qp, now);
      const bool active = qp.in_use && qp.requester != nullptr &&
                          qp.requester->outstanding() != 0;
      qp.requesting = active;
      if (active) requesting_[kept++] = requesting_[i];
    }
    requesting_.resize(kept);
  }
}

void RoceEngine::ApplyCommands() {
  void* entries[16];
  const unsigned n = rte_ring_sc_dequeue_burst(
      shared_.commands[hpu_index_], entries, std::size(entries), nullptr);
  for (unsigned i = 0; i < n; ++i) {
    RoceCommand* command = static_cast<RoceCommand*>(entries[i]);
    if (command->from_engine) {
      // The CM's decision for a QP of ours (RunCmActions on HPU 0).
      std::unique_ptr<RoceCommand> owned(command);
      if (command->kind == RoceCommand::Kind::kCreateQp) {
        CreateQp(command->qpn, command->spec, command->from_cm,
                 command->cm_port, std::move(command->service));
      } else if (Qp* qp = FindQp(command->qpn)) {
        DestroyQp(*qp);
      } else if (command->qpn >= kFirstQpn &&
                 command->qpn - kFirstQpn < qps_.size()) {
        // Its creation never arrived (our ring was full): free the number.
        shared_.qp_status[command->qpn - kFirstQpn].claimed.store(
            0, std::memory_order_release);
      }
      continue;
    }
    if (command->kind == RoceCommand::Kind::kSetServices) {
      if (RunsCm()) SetServices(command->services);
      command->done.store(true, std::memory_order_release);
      continue;
    }
    const uint32_t slot = command->qpn - kFirstQpn;
    if (command->qpn >= kFirstQpn && slot < qps_.size()) {
      if (command->kind == RoceCommand::Kind::kCreateQp) {
        CreateQp(command->qpn, command->spec);
      } else if (command->kind == RoceCommand::Kind::kPost) {
        Qp* qp = FindQp(command->qpn);
        if (qp != nullptr &&
            PostWork(*qp, command->wr, command->region, command)) {
          continue;  // done when it completes
        }
        if (command->region != nullptr) command->region->Unpin();
        command->posted = false;
        if (qp == nullptr) command->post_result = PostResult::kQpError;
      } else if (RunsCm() && cm_->Disconnect(command->qpn, clock::NowMicros(),
                                             &cm_actions_)) {
        // A connection the CM made is closed with a DREQ; the CM then
        // destroys the QP, through its owner.
        RunCmActions();
      } else if (Qp* qp = FindQp(command->qpn)) {
        DestroyQp(*qp);  // made over gRPC: goes at once
      } else {
        const uint32_t owner =
            shared_.qp_status[slot].hpu.load(std::memory_order_relaxed);
        if (owner != hpu_index_ && owner < shared_.hpu_count &&
            rte_ring_mp_enqueue(shared_.commands[owner], command) == 0) {
          continue;  // its owner destroys it and says done
        }
      }
    }
    command->done.store(true, std::memory_order_release);
  }
}

void RoceEngine::SetServices(const ServicePorts& services) {
  // Connections made before keep the service they were accepted with; new
  // REQs to a port no longer listened on are rejected (invalid service ID).
  std::array<uint16_t, kCmMaxListeners> listening{};
  const std::span<const uint16_t> now = cm_->listeners();
  std::copy(now.begin(), now.end(), listening.begin());
  for (size_t i = 0; i < now.size(); ++i) {
    if (!services.Listens(listening[i])) cm_->StopListening(listening[i]);
  }
  services_ = services;
  for (size_t i = 1; i < kServiceSlots; ++i) {
    if (uint16_t port = services_.port(static_cast<ServiceSlot>(i))) {
      cm_->Listen(port);
    }
  }
  for (uint16_t port : services_.plain_ports()) cm_->Listen(port);
}

bool RoceEngine::SendToOwner(uint32_t owner,
                             std::unique_ptr<RoceCommand> command) {
  command->from_engine = true;
  if (rte_ring_mp_enqueue(shared_.commands[owner], command.get()) != 0) {
    counters_.Drop(RoceDrop::kHandoffFull);
    return false;
  }
  command.release();  // the owner deletes it once applied
  return true;
}

void RoceEngine::ApplyCmNotices() {
  uint32_t qpns[16];
  const unsigned n = rte_ring_sc_dequeue_burst_elem(
      shared_.cm_notices, qpns, sizeof(uint32_t), std::size(qpns), nullptr);
  if (n == 0) return;
  const uint64_t now = clock::NowMicros();
  for (unsigned i = 0; i < n; ++i) {
    cm_->NotifyRcPacket(qpns[i], now, &cm_actions_);
    RunCmActions();
  }
}

void RoceEngine::CreateQp(uint32_t qpn, const QpSpec& spec, bool from_cm,
                          uint16_t cm_port,
                          std::unique_ptr<QpService> service) {
  std::unique_ptr<Qp>& slot = qps_[qpn - kFirstQpn];
  // The first QP of this number on this HPU: control-path pace.
  if (slot == nullptr) slot = std::make_unique<Qp>();
  Qp& qp = *slot;
  if (qp.in_use) DestroyQp(qp);
  QpStatus& status = shared_.qp_status[qpn - kFirstQpn];
  status.StoreSpec(spec);
  status.from_cm.store(from_cm, std::memory_order_relaxed);
  status.cm_port.store(cm_port, std::memory_order_relaxed);
  status.destroying.store(false, std::memory_order_relaxed);
  status.in_use.store(true, std::memory_order_relaxed);
  qp.awaiting_rtu = from_cm;
  qp.in_use = true;
  qp.qpn = qpn;
  qp.spec = spec;
  FrameParams& params = qp.params;
  params = FrameParams();
  params.dst_mac = spec.remote_mac;
  params.src_mac = config_.mac;
  params.ip_version = IsMapped(spec.remote_ip) ? 4 : 6;
  params.src_ip = spec.local_ip;
  params.dst_ip = spec.remote_ip;
  params.udp_src_port =
      UdpSourcePortWithFlowLabel(spec.flow_label, qpn, spec.remote_qpn);
  params.ipv6_udp_checksum = config_.ipv6_udp_checksum;
  params.traffic_class = config_.congestion.ecn;  // DSCP 0
  qp.dcqcn.reset();
  qp.next_send_ns = 0;
  qp.last_cnp_ns = 0;
  qp.cnp_sent_once = false;
  if (config_.congestion.enabled) {
    // Valid: RoceModule::Open checked it and set the line rate.
    qp.dcqcn.emplace(config_.congestion.dcqcn,
                     static_cast<int64_t>(CongestionNow()));
  }
  status.cnps_received.store(0, std::memory_order_relaxed);
  status.cnps_sent.store(0, std::memory_order_relaxed);
  status.ce_marks.store(0, std::memory_order_relaxed);
  PublishRate(qp);
  ResponderConfig rc;
  rc.pmtu = spec.pmtu;
  rc.initial_epsn = spec.expected_psn;
  rc.max_dest_rd_atomic =
      std::clamp<uint32_t>(spec.max_rd_atomic, 1, kMaxDestRdAtomic);
  rc.min_rnr_timer = config_.min_rnr_timer;
  rc.ack_every = config_.ack_every;
  rc.qp_access = spec.access;
  qp.responder.Reset(rc);
  qp.responder.SetState(QpState::kRts);
  RequesterConfig req;
  req.pmtu = spec.pmtu;
  req.sq_depth = kSqDepth;
  req.initial_psn = spec.send_psn;
  req.max_rd_atomic = std::clamp<uint8_t>(spec.initiator_depth, 1, 16);
  req.retry_count = std::min<uint8_t>(spec.retry_count, 7);
  req.rnr_retry = std::min<uint8_t>(spec.rnr_retry, 7);
  req.ack_timeout_ns = LocalAckTimeoutNs(config_.local_ack_timeout);
  req.adaptive_timeout = config_.adaptive_ack_timeout;
  req.min_ack_timeout_ns = config_.min_ack_timeout_ns;
  // Created with the QP, on the control path (a QP is created far less
  // often than a packet arrives); its tables are fixed from here on.
  qp.requester = std::make_unique<Requester>(req);
  qp.wrs = {};
  qp.next_wr_id = 0;
  qp.requester_error_raised = false;
  qp.service = from_cm && service != nullptr
                   ? std::move(service)
                   : NewService(qpn, from_cm ? cm_port : 0, spec.local_ip);
  counters_.service_connections[static_cast<size_t>(qp.service->kind())].Add();
  SetReceiveArea(qp);
  qp.receive_length = 0;
  qp.service_writes = qp.service->wants_writes();
  qp.write_start_va = 0;
  qp.cm_port = from_cm ? cm_port : 0;
  qp.generation = next_generation_++;
  status.service.store(static_cast<uint8_t>(qp.service->kind()),
                       std::memory_order_relaxed);
  qp.reply_head = 0;
  qp.reply_count = 0;
  qp.read_gap_ns = 0;  // the QP object outlives its connection
  qp.next_read_ns = 0;
  qp.touched = false;
  Publish(qp);
}

void RoceEngine::SetReceiveArea(Qp& qp) {
  qp.receive_area = qp.service->ReceiveArea();
  if (qp.receive_area.empty()) {
    qp.receive.assign(qp.service->max_message_bytes(), 0);
    qp.receive_area = qp.receive;
  } else {
    qp.receive.clear();
  }
}

void RoceEngine::DestroyQp(Qp& qp) {
  FailWork(qp);
  // Replies (READ responses from its regions) are flushed below, before
  // the connection's regions are freed.
  while (qp.reply_count != 0) {
    ReplyJob& job = qp.replies[qp.reply_head];
    if (job.region != nullptr) job.region->Unpin();
    job = ReplyJob();
    qp.reply_head = (qp.reply_head + 1) % kReplyQueue;
    --qp.reply_count;
  }
  qp.receive_area = {};
  qp.service_writes = false;
  qp.service.reset();
  qp.dcqcn.reset();
  qp.in_use = false;
  qp.awaiting_rtu = false;
  qp.responder.SetState(QpState::kReset);
  Publish(qp);
  QpStatus& status = shared_.qp_status[qp.qpn - kFirstQpn];
  status.in_use.store(false, std::memory_order_relaxed);
  status.claimed.store(0, std::memory_order_release);
}

void RoceEngine::Publish(const Qp& qp) {
  QpStatus& s = shared_.qp_status[qp.qpn - kFirstQpn];
  s.state.store(static_cast<uint8_t>(qp.responder.state()),
                std::memory_order_relaxed);
  s.expected_psn.store(qp.responder.expected_psn(), std::memory_order_relaxed);
  s.msn.store(qp.responder.msn(), std::memory_order_relaxed);
  const ResponderCounters& c = qp.responder.counters();
  s.packets.store(c.accepted, std::memory_order_relaxed);
}

void RoceEngine::Learn(const Gid& ip, const uint8_t* mac) {
  for (Neighbor& n : neighbors_) {
    if (n.ip == ip) {
      std::memcpy(n.mac.data(), mac, 6);
      return;
    }
  }
  Neighbor& n = neighbors_[next_neighbor_++ % kNeighbors];
  n.ip = ip;
  std::memcpy(n.mac.data(), mac, 6);
}

const Mac* RoceEngine::Lookup(const Gid& ip) const {
  for (const Neighbor& n : neighbors_) {
    if (n.ip == ip) return &n.mac;
  }
  return nullptr;
}

const Gid* RoceEngine::LocalFor(const Gid& remote) const {
  for (const Gid& ip : config_.addresses) {
    if (IsMapped(ip) == IsMapped(remote)) return &ip;
  }
  return nullptr;
}

void RoceEngine::Shutdown() {
  for (std::unique_ptr<Qp>& qp : qps_) {
    if (qp != nullptr && qp->in_use) DestroyQp(*qp);
  }
  for (std::unique_ptr<QpService>& service : accepted_services_) {
    service.reset();
  }
  busy_.clear();
  touched_.clear();
}

}  // namespace spinnic::roce
