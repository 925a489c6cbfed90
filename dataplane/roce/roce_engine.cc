#include "dataplane/roce/roce_engine.h"

#include <rte_mbuf.h>
#include <rte_random.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "dataplane/common/clock.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/neighbor.h"
#include "dataplane/region_table.h"
#include "dataplane/roce/naaice_service.h"
#include "dataplane/roce/perftest_service.h"
#include "dataplane/roce/rc_packets.h"
#include "dataplane/roce/rping_service.h"
#include "dataplane/roce/verbs_service.h"

namespace spinnic::roce {
namespace {

constexpr uint16_t kEthertypeArp = 0x0806;
constexpr uint8_t kIpProtoIcmpv6 = 58;
// Replies sent per QP per poll: a long READ is paced so that one QP cannot
// hold the HPU (or the TX batch) for a whole message.
constexpr uint32_t kReplyBudget = 32;

bool IsMapped(const Gid& ip) {
  static constexpr std::array<uint8_t, 12> kPrefix = {0, 0, 0, 0, 0,    0,
                                                      0, 0, 0, 0, 0xff, 0xff};
  return std::equal(kPrefix.begin(), kPrefix.end(), ip.begin());
}

Gid SolicitedNode(const Gid& ip) {
  Gid group = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff};
  std::copy(ip.begin() + 13, ip.end(), group.begin() + 13);
  return group;
}

uint32_t MemoryAccess(ResponderAction action) {
  switch (action) {
    case ResponderAction::kWrite:
      return kRemoteWrite;
    case ResponderAction::kRead:
    case ResponderAction::kReplayRead:
      return kRemoteRead;
    case ResponderAction::kCompareSwap:
    case ResponderAction::kFetchAdd:
      return kRemoteRead | kRemoteWrite;
    default:
      return 0;
  }
}

uint64_t Load64(const uint8_t* bytes) {
  uint64_t v = 0;
  std::memcpy(&v, bytes, 8);
  return v;
}

}  // namespace

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

// A service's handle on its QP for one call (qp_service.h).
class RoceEngine::ServiceActions final : public QpActions {
 public:
  // `table`: the ECTX table of this poll, or nullptr outside a packet's
  // handling (then the built-in functions).
  ServiceActions(RoceEngine* engine, Qp& qp, const EctxTable* table = nullptr)
      : engine_(engine), qp_(qp), table_(table) {}

  bool PostSend(std::span<const uint8_t> bytes, uint32_t tag) override {
    WorkRequest wr;
    wr.kind = WorkRequest::Kind::kSend;
    wr.local_offset = reinterpret_cast<uint64_t>(bytes.data());
    wr.length = static_cast<uint32_t>(bytes.size());
    return Post(wr, tag);
  }
  bool PostRead(std::span<uint8_t> local, uint64_t remote_va, uint32_t rkey,
                uint32_t tag) override {
    WorkRequest wr;
    wr.kind = WorkRequest::Kind::kRead;
    wr.local_offset = reinterpret_cast<uint64_t>(local.data());
    wr.length = static_cast<uint32_t>(local.size());
    wr.remote_va = remote_va;
    wr.rkey = rkey;
    return Post(wr, tag);
  }
  bool PostWrite(std::span<const uint8_t> local, uint64_t remote_va,
                 uint32_t rkey, const uint32_t* immediate,
                 uint32_t tag) override {
    WorkRequest wr;
    wr.kind = immediate != nullptr ? WorkRequest::Kind::kWriteImm
                                   : WorkRequest::Kind::kWrite;
    wr.local_offset = reinterpret_cast<uint64_t>(local.data());
    wr.length = static_cast<uint32_t>(local.size());
    wr.remote_va = remote_va;
    wr.rkey = rkey;
    if (immediate != nullptr) wr.imm = *immediate;
    return Post(wr, tag);
  }
  void ReportSend(const ReceivedSend& send) override {
    uint8_t data[Event::kMaxData] = {};
    const uint32_t head[4] = {qp_.qpn, static_cast<uint32_t>(send.bytes.size()),
                              send.immediate, send.has_immediate ? 1u : 0u};
    std::memcpy(data, head, sizeof head);
    const size_t shown = std::min(send.bytes.size(), sizeof data - sizeof head);
    if (shown != 0) std::memcpy(data + sizeof head, send.bytes.data(), shown);
    engine_->hpu_->RaiseTransportEvent(kEventRoceSend,
                                       {data, sizeof head + shown});
  }
  QpService* Sibling() override { return engine_->Sibling(qp_); }
  void Fail() override { engine_->FailQp(qp_); }
  uint32_t qpn() const override { return qp_.qpn; }
  RoceCounters& counters() override { return engine_->counters_; }
  const ::spinnic::naaice::FunctionTable& naaice_functions() override {
    return table_ != nullptr ? engine_->FunctionsFor(*table_)
                             : engine_->functions_;
  }

 private:
  bool Post(const WorkRequest& wr, uint32_t tag) {
    const uint64_t wr_id = qp_.next_wr_id;
    if (!engine_->PostWork(qp_, wr, nullptr, nullptr)) return false;
    Qp::LocalWr& local = qp_.wrs[wr_id % kSqDepth];
    local.from_service = true;
    local.service_tag = tag;
    return true;
  }

  RoceEngine* const engine_;
  Qp& qp_;
  const EctxTable* const table_;
};

RoceEngine::RoceEngine(uint32_t hpu_index, const RoceShared& shared, Hpu* hpu,
                       SpinEngine* spin)
    : hpu_index_(hpu_index),
      shared_(shared),
      config_(*shared.config),
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
  if (Owner()) {
    qps_.resize(config_.max_qps);
    accepted_services_.resize(config_.max_qps);
    touched_.reserve(config_.max_qps);
    busy_.reserve(config_.max_qps);
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
    for (uint16_t port : config_.listen_ports) cm_->Listen(port);
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
  if (!Owner()) {
    HandOff(packet, in_port);
    return;
  }
  ReceiveRoce(packet, frame, in_port, table);
}

void RoceEngine::HandOff(rte_mbuf* packet, uint16_t in_port) {
  packet->port = in_port;
  if (shared_.inbound == nullptr ||
      rte_ring_mp_enqueue(shared_.inbound[0], packet) != 0) {
    counters_.Drop(RoceDrop::kHandoffFull);
    rte_pktmbuf_free(packet);
    return;
  }
  counters_.handoffs.Add();
}

void RoceEngine::AnswerNeighbor(rte_mbuf* packet, const ParsedFrame& frame,
                                uint16_t in_port) {
  rte_mbuf* reply = rte_pktmbuf_alloc(shared_.pool);
  uint8_t* out = reply == nullptr
                     ? nullptr
                     : reinterpret_cast<uint8_t*>(
                           rte_pktmbuf_append(reply, kMaxNeighborReplyBytes));
  if (out == nullptr) {
    if (reply != nullptr) rte_pktmbuf_free(reply);
    counters_.Drop(RoceDrop::kNoBuffer);
    rte_pktmbuf_free(packet);
    return;
  }
  LocalAddresses local;
  local.mac = config_.mac;
  local.ipv6 = ipv6_;
  local.ipv4 = ipv4_;
  NeighborResult result = HandleNeighborFrame(
      {rte_pktmbuf_mtod(packet, const uint8_t*), packet->data_len}, frame,
      local, {out, kMaxNeighborReplyBytes});
  rte_pktmbuf_free(packet);
  if (result.verdict != NeighborVerdict::kAnswer) {
    // An ARP for someone else, a reply, other ICMPv6: nothing to answer.
    if (result.verdict == NeighborVerdict::kMalformed) {
      counters_.Drop(RoceDrop::kNeighbor);
    }
    rte_pktmbuf_free(reply);
    return;
  }
  rte_pktmbuf_trim(reply, static_cast<uint16_t>(kMaxNeighborReplyBytes -
                                                result.reply_length));
  counters_.neighbor_answers.Add();
  hpu_->Transmit(in_port, reply);
}

RoceEngine::Qp* RoceEngine::FindQp(uint32_t qpn) {
  if (qpn < kFirstQpn || qpn - kFirstQpn >= qps_.size()) return nullptr;
  Qp& qp = qps_[qpn - kFirstQpn];
  return qp.in_use ? &qp : nullptr;
}

const Responder* RoceEngine::responder(uint32_t qpn) const {
  if (qpn < kFirstQpn || qpn - kFirstQpn >= qps_.size()) return nullptr;
  const Qp& qp = qps_[qpn - kFirstQpn];
  return qp.in_use ? &qp.responder : nullptr;
}

void RoceEngine::ReceiveRoce(rte_mbuf* packet, const ParsedFrame& frame,
                             uint16_t in_port, const EctxTable& table) {
  counters_.rx_packets.Add();
  counters_.rx_bytes.Add(packet->pkt_len);
  if (packet->nb_segs != 1 && rte_pktmbuf_linearize(packet) != 0) {
    counters_.Drop(RoceDrop::kNoBuffer);
    rte_pktmbuf_free(packet);
    return;
  }
  uint8_t* data = rte_pktmbuf_mtod(packet, uint8_t*);
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
    ReceiveGsi(p, data);
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
  if (qp->awaiting_rtu &&
      cm_->NotifyRcPacket(qp->qpn, clock::NowMicros(), &cm_actions_)) {
    qp->awaiting_rtu = false;
    RunCmActions();
  }
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

void RoceEngine::Request(Qp& qp, const Arrival& arrival,
                         const RegionTable& regions) {
  const RcRequest request = RcRequestOf(*arrival.packet);
  if (qp.reply_count == kReplyQueue) {
    // Nothing is committed: the requester's retry finds room later.
    counters_.Drop(RoceDrop::kReplyQueueFull);
    return;
  }
  const bool was_error = qp.responder.state() == QpState::kError;
  ResponderPlan plan = qp.responder.Check(request);
  if (!was_error && qp.responder.state() == QpState::kError) {
    RaiseQpError(qp);  // an invalid request: NAKed, then the error state
  }
  if (!qp.touched) {
    qp.touched = true;
    touched_.push_back(qp.qpn - kFirstQpn);
  }
  if (!plan.needs_commit) {
    if (plan.verdict == ResponderVerdict::kDrop) {
      counters_.Drop(RoceDrop::kResponder);
    } else if (plan.verdict == ResponderVerdict::kDuplicate) {
      counters_.duplicates.Add();
    }
    if (plan.reply.kind != ResponderReplyKind::kNone) Queue(qp, plan.reply);
    Publish(qp);
    return;
  }
  if (plan.verdict == ResponderVerdict::kDuplicate) counters_.duplicates.Add();
  Execute(qp, plan, arrival, regions);
  Publish(qp);
}

uint8_t* RoceEngine::Resolve(const Qp& qp, const RegionTable& regions,
                             uint32_t rkey, uint64_t va, uint32_t length,
                             uint32_t access, const MemoryRegion** region) {
  // The connection's own regions first (their rkeys are only valid on
  // that QP), then the registered ones. A null pointer on any failure
  // (unknown rkey, out of bounds, missing right): nothing is touched.
  if (qp.service != nullptr) {
    if (uint8_t* bytes = qp.service->regions().Resolve(rkey, va, length)) {
      return bytes;
    }
  }
  const MemoryRegion* found = regions.FindByRkey(rkey);
  if (found == nullptr) return nullptr;
  *region = found;
  return found->Translate(va, length, access).data();
}

bool RoceEngine::Execute(Qp& qp, const ResponderPlan& plan,
                         const Arrival& arrival, const RegionTable& regions) {
  const uint8_t* payload = rte_pktmbuf_mtod(arrival.mbuf, const uint8_t*) +
                           arrival.packet->payload_offset;
  const uint32_t access = MemoryAccess(plan.action);
  const MemoryRegion* region = nullptr;
  uint8_t* target = nullptr;
  if (access != 0 && (plan.validate_range || plan.length != 0)) {
    bool ok = true;
    if (plan.validate_range) {
      ok = Resolve(qp, regions, plan.rkey, plan.range_va, plan.range_length,
                   access, &region) != nullptr;
    }
    if (ok && plan.length != 0) {
      target = Resolve(qp, regions, plan.rkey, plan.va, plan.length, access,
                       &region);
      ok = target != nullptr;
    }
    if (!ok) {
      Queue(qp, qp.responder.Fail(plan, NakCode::kRemoteAccessError));
      RaiseQpError(qp);
      return false;
    }
  }
  switch (plan.action) {
    case ResponderAction::kSend:
      return ReceiveSend(qp, plan, arrival, payload);
    case ResponderAction::kWrite: {
      // sPIN: the transport accepted the packet and its access is checked;
      // the bound ECTX's handlers see it (in place) before it is stored.
      const bool deposit = RunHandlers(qp, plan, arrival, region);
      if (deposit && plan.length != 0) {
        std::memcpy(target, payload, plan.length);
      }
      counters_.writes.Add();
      counters_.write_bytes.Add(plan.length);
      const ResponderReply reply = qp.responder.Accept(plan);
      if (plan.ends_message && plan.has_immediate) {
        // The immediate is the consumer's: the control plane sees it as an
        // event, and the QP's service gets it (a NAAICE function call).
        counters_.write_immediates.Add();
        uint32_t data[3] = {qp.qpn, plan.immediate, qp.responder.msn()};
        hpu_->RaiseTransportEvent(
            kEventRoceWriteImm,
            {reinterpret_cast<const uint8_t*>(data), sizeof data});
      }
      // The ACK goes out before any result write of ours (Poll sends
      // replies first): the NAAICE host counts its writes complete first.
      Queue(qp, reply);
      if (plan.ends_message && plan.has_immediate && qp.service != nullptr) {
        ServiceActions actions(this, qp, arrival.table);
        qp.service->OnWriteImm(plan.immediate, qp.responder.msn(), actions);
      }
      return true;
    }
    case ResponderAction::kRead:
    case ResponderAction::kReplayRead: {
      const ResponderReply reply = qp.responder.Accept(plan);
      const uint8_t* data = plan.length != 0 ? target : nullptr;
      if (data == nullptr) {
        region = nullptr;
      } else if (region != nullptr && !region->Pin()) {
        // Being deregistered right now: as if it were gone.
        Queue(qp, ResponderReply{});
        return false;
      }
      counters_.reads.Add();
      Queue(qp, reply, region, data);
      return true;
    }
    case ResponderAction::kCompareSwap:
    case ResponderAction::kFetchAdd: {
      // The responder owns its memory's byte order: the 64-bit value is in
      // host order, as on every RoCE NIC (IBA 9.4.5 leaves it to the CA).
      uint64_t* word = reinterpret_cast<uint64_t*>(target);
      uint64_t original = __atomic_load_n(word, __ATOMIC_RELAXED);
      if (plan.action == ResponderAction::kFetchAdd) {
        __atomic_store_n(word, original + plan.swap_add, __ATOMIC_RELAXED);
      } else if (original == plan.compare) {
        __atomic_store_n(word, plan.swap_add, __ATOMIC_RELAXED);
      }
      counters_.atomics.Add();
      Queue(qp, qp.responder.Accept(plan, original));
      return true;
    }
    default:
      break;
  }
  const ResponderReply reply = qp.responder.Accept(plan);
  if (reply.kind != ResponderReplyKind::kNone) Queue(qp, reply);
  return true;
}

void RoceEngine::RaiseQpError(const Qp& qp) {
  counters_.qp_errors.Add();
  const uint32_t qpn = qp.qpn;
  hpu_->RaiseTransportEvent(kEventRoceQpError,
                            {reinterpret_cast<const uint8_t*>(&qpn), 4});
}

const Ectx* RoceEngine::BoundEctx(const Qp& qp, const EctxTable& table,
                                  const MemoryRegion* region) {
  // The region a WRITE goes into first (a handler installed with diad {
  // write_region: ID } takes RDMA WRITEs into that region too), then the
  // QP's own handler (roce { qpn }), which also takes its SENDs.
  if (region != nullptr) {
    if (const Ectx* ectx = table.FindBound(kBindRegionWrites, region->id())) return ectx;
  }
  return table.FindBound(kBindQp, qp.qpn);
}

bool RoceEngine::RunHandlers(Qp& qp, const ResponderPlan& plan,
                             const Arrival& arrival,
                             const MemoryRegion* region) {
  // RC messages of SEND and WRITE do not interleave on a QP: one message's
  // handler state at a time.
  if (plan.starts_message) {
    qp.message_ectx = kNoEctx;
    qp.spin = MessageState();
    if (const Ectx* ectx = BoundEctx(qp, *arrival.table, region)) {
      qp.message_ectx = ectx->id();
      counters_.handler_messages.Add();
    }
  }
  if (qp.message_ectx == kNoEctx) return true;
  const Ectx* ectx = BoundEctx(qp, *arrival.table, region);
  if (ectx == nullptr || ectx->id() != qp.message_ectx) {
    // Removed (or replaced) mid-message: the rest goes on untouched.
    qp.message_ectx = kNoEctx;
    return true;
  }
  const Packet& p = *arrival.packet;
  PacketLayers layers = arrival.frame->layers;
  layers.payload_offset = static_cast<uint16_t>(p.payload_offset);
  // Handlers see the RDMA payload: not the pad and ICRC after it.
  layers.l3_end = static_cast<uint16_t>(p.payload_offset + p.payload_length);
  PacketView view(rte_pktmbuf_mtod(arrival.mbuf, uint8_t*),
                  arrival.mbuf->data_len, layers, arrival.in_port);
  hpu_->SetActionOrigin(arrival.in_port, ectx->id());
  spin_->Deliver(*ectx, qp.spin, view, plan.starts_message, plan.ends_message);
  hpu_->SetActionOrigin(kNoPort, 0);
  if (plan.ends_message) qp.message_ectx = kNoEctx;
  const bool deposit = view.GetDisposition() == Disposition::kForward;
  if (!deposit) counters_.handler_drops.Add();
  return deposit;
}

void RoceEngine::Queue(Qp& qp, const ResponderReply& reply,
                       const MemoryRegion* region, const uint8_t* data) {
  if (reply.kind == ResponderReplyKind::kNone) return;
  // A later ACK supersedes a queued one (ACKs are cumulative).
  if (reply.kind == ResponderReplyKind::kAck && qp.reply_count != 0) {
    ReplyJob& last =
        qp.replies[(qp.reply_head + qp.reply_count - 1) % kReplyQueue];
    if (last.reply.kind == ResponderReplyKind::kAck) {
      last.reply = reply;
      return;
    }
  }
  if (qp.reply_count == kReplyQueue) {
    // Checked before Check: only a READ's ACK can reach here; the
    // requester's timeout recovers it.
    if (region != nullptr) region->Unpin();
    counters_.Drop(RoceDrop::kReplyQueueFull);
    return;
  }
  ReplyJob& job = qp.replies[(qp.reply_head + qp.reply_count) % kReplyQueue];
  job.reply = reply;
  job.sent = 0;
  job.region = region;
  job.data = data;
  if (qp.reply_count++ == 0) busy_.push_back(qp.qpn - kFirstQpn);
}

void RoceEngine::Poll(const EctxTable& /*table*/) {
  if (!Owner()) return;
  ApplyCommands();
  if (cm_deadline_us_ != UINT64_MAX) {
    const uint64_t now = clock::NowMicros();
    if (now >= cm_deadline_us_) {
      while (cm_->OnTimer(now, &cm_actions_)) RunCmActions();
      RunCmActions();
    }
  }
  // Coalesced ACKs: what arrived in this poll is acknowledged once, after
  // the burst (the responder also ACKs every ack_every packets itself).
  for (uint32_t slot : touched_) {
    Qp& qp = qps_[slot];
    qp.touched = false;
    if (qp.in_use && qp.responder.unacknowledged() != 0 &&
        qp.reply_count < kReplyQueue) {
      Queue(qp, qp.responder.FlushAck());
    }
  }
  touched_.clear();
  size_t keep = 0;
  for (size_t i = 0; i < busy_.size(); ++i) {
    Qp& qp = qps_[busy_[i]];
    if (qp.in_use) SendReplies(qp, kReplyBudget);
    if (qp.in_use && qp.reply_count != 0) busy_[keep++] = busy_[i];
  }
  busy_.resize(keep);
  // Our requests after the replies: an ACK queued in this poll leaves
  // before a result write that follows it.
  if (!requesting_.empty()) {
    const uint64_t now = clock::NowNanos();
    size_t kept = 0;
    for (size_t i = 0; i < requesting_.size(); ++i) {
      Qp& qp = qps_[requesting_[i]];
      if (qp.in_use && qp.requester != nullptr) DriveRequester(qp, now);
      const bool active = qp.in_use && qp.requester != nullptr &&
                          qp.requester->outstanding() != 0;
      qp.requesting = active;
      if (active) requesting_[kept++] = requesting_[i];
    }
    requesting_.resize(kept);
  }
}

void RoceEngine::SendReplies(Qp& qp, uint32_t budget) {
  while (qp.reply_count != 0 && budget != 0) {
    ReplyJob& job = qp.replies[qp.reply_head];
    if (job.reply.kind == ResponderReplyKind::kReadResponse) {
      while (job.sent < job.reply.packets && budget != 0) {
        if (!SendReadResponse(qp, job)) return;  // no mbuf: next poll
        ++job.sent;
        --budget;
      }
      if (job.sent < job.reply.packets) return;
      if (job.region != nullptr) job.region->Unpin();
    } else {
      if (!SendAck(qp, job.reply)) return;
      --budget;
    }
    job = ReplyJob();
    qp.reply_head = (qp.reply_head + 1) % kReplyQueue;
    --qp.reply_count;
  }
}

rte_mbuf* RoceEngine::NewFrame(const FrameParams& params, const Bth& bth,
                               const ExtHeaders& ext, uint32_t payload_length,
                               uint8_t** payload) {
  const uint32_t length =
      FrameBytes(params.ip_version, bth.opcode, payload_length);
  rte_mbuf* m = rte_pktmbuf_alloc(shared_.pool);
  if (m == nullptr) return nullptr;
  uint8_t* frame = reinterpret_cast<uint8_t*>(
      length == 0 ? nullptr : rte_pktmbuf_append(m, length));
  const uint32_t header_bytes =
      frame == nullptr
          ? 0
          : WriteHeaders(params, bth, ext, payload_length, frame, length);
  if (header_bytes == 0) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  *payload = frame + header_bytes;
  return m;
}

void RoceEngine::FinishAndSend(const FrameParams& params, rte_mbuf* m) {
  FinishFrame(params, rte_pktmbuf_mtod(m, uint8_t*), m->data_len);
  counters_.tx_packets.Add();
  counters_.tx_bytes.Add(m->pkt_len);
  hpu_->Transmit(config_.port, m);
}

bool RoceEngine::SendAck(Qp& qp, const ResponderReply& reply) {
  Bth bth;
  bth.opcode = static_cast<uint8_t>(reply.kind == ResponderReplyKind::kAtomicAck
                                        ? Opcode::kRcAtomicAck
                                        : Opcode::kRcAck);
  bth.dest_qp = qp.spec.remote_qpn;
  bth.psn = reply.psn;
  ExtHeaders ext;
  ext.aeth.syndrome = reply.syndrome;
  ext.aeth.msn = reply.msn;
  ext.atomic_ack_eth.original = reply.original_value;
  uint8_t* payload = nullptr;
  rte_mbuf* m = NewFrame(qp.params, bth, ext, 0, &payload);
  if (m == nullptr) {
    counters_.Drop(RoceDrop::kNoBuffer);
    return false;
  }
  if (reply.kind == ResponderReplyKind::kAck) {
    counters_.acks_sent.Add();
  } else if (reply.kind != ResponderReplyKind::kAtomicAck) {
    counters_.naks_sent.Add();
    shared_.qp_status[qp.qpn - kFirstQpn].naks.fetch_add(
        1, std::memory_order_relaxed);
  }
  FinishAndSend(qp.params, m);
  return true;
}

bool RoceEngine::SendReadResponse(Qp& qp, ReplyJob& job) {
  const ResponderReply& r = job.reply;
  const uint32_t pmtu = qp.spec.pmtu;
  const uint32_t offset = job.sent * pmtu;
  const uint32_t length = std::min(pmtu, r.length - offset);
  Bth bth;
  if (r.packets == 1) {
    bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseOnly);
  } else if (job.sent == 0) {
    bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseFirst);
  } else if (job.sent + 1 == r.packets) {
    bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseLast);
  } else {
    bth.opcode = static_cast<uint8_t>(Opcode::kRcReadResponseMiddle);
  }
  bth.dest_qp = qp.spec.remote_qpn;
  bth.psn = PsnAdd(r.psn, job.sent);
  ExtHeaders ext;
  ext.aeth.syndrome = r.syndrome;
  ext.aeth.msn = r.msn;
  uint8_t* payload = nullptr;
  rte_mbuf* m = NewFrame(qp.params, bth, ext, length, &payload);
  if (m == nullptr) {
    counters_.Drop(RoceDrop::kNoBuffer);
    return false;
  }
  if (length != 0) std::memcpy(payload, job.data + offset, length);
  counters_.read_bytes.Add(length);
  FinishAndSend(qp.params, m);
  return true;
}

void RoceEngine::ApplyCommands() {
  void* entries[16];
  const unsigned n = rte_ring_sc_dequeue_burst(shared_.commands, entries,
                                               std::size(entries), nullptr);
  for (unsigned i = 0; i < n; ++i) {
    RoceCommand* command = static_cast<RoceCommand*>(entries[i]);
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
      } else if (qps_[slot].in_use) {
        // A connection the CM made is closed with a DREQ (the CM then
        // destroys the QP); one made over gRPC goes at once.
        if (!cm_->Disconnect(command->qpn, clock::NowMicros(), &cm_actions_)) {
          DestroyQp(qps_[slot]);
        }
        RunCmActions();
      }
    }
    command->done.store(true, std::memory_order_release);
  }
}

void RoceEngine::CreateQp(uint32_t qpn, const QpSpec& spec, bool from_cm,
                          uint16_t cm_port) {
  Qp& qp = qps_[qpn - kFirstQpn];
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
  // Created with the QP, on the control path (a QP is created far less
  // often than a packet arrives); its tables are fixed from here on.
  qp.requester = std::make_unique<Requester>(req);
  qp.wrs = {};
  qp.next_wr_id = 0;
  qp.requester_error_raised = false;
  std::unique_ptr<QpService>& accepted = accepted_services_[qpn - kFirstQpn];
  qp.service = from_cm && accepted != nullptr
                   ? std::move(accepted)
                   : NewService(qpn, from_cm ? cm_port : 0, spec.local_ip);
  accepted.reset();
  qp.receive.assign(qp.service->max_message_bytes(), 0);
  qp.receive_length = 0;
  qp.cm_port = from_cm ? cm_port : 0;
  qp.generation = next_generation_++;
  status.service.store(static_cast<uint8_t>(qp.service->kind()),
                       std::memory_order_relaxed);
  qp.reply_head = 0;
  qp.reply_count = 0;
  qp.touched = false;
  Publish(qp);
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
  qp.service.reset();
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

// ---------------------------------------------------------------- requests

bool RoceEngine::PostWork(Qp& qp, WorkRequest wr, const MemoryRegion* region,
                          RoceCommand* command) {
  wr.wr_id = qp.next_wr_id;
  wr.signaled = true;  // every operation of ours reports back
  const PostResult result = qp.requester->Post(wr);
  if (command != nullptr) command->post_result = result;
  if (result != PostResult::kOk) {
    counters_.ops_failed.Add();
    return false;
  }
  ++qp.next_wr_id;
  qp.wrs[wr.wr_id % kSqDepth] = {region, command};
  counters_.ops_posted.Add();
  if (!qp.requesting) {
    qp.requesting = true;
    requesting_.push_back(qp.qpn - kFirstQpn);
  }
  return true;
}

void RoceEngine::DriveRequester(Qp& qp, uint64_t now_ns) {
  Requester& r = *qp.requester;
  if (now_ns >= r.NextDeadline()) r.OnTimer(now_ns);
  PacketPlan plan;
  for (uint32_t budget = kReplyBudget;
       budget != 0 && r.NextPacket(now_ns, &plan); --budget) {
    if (plan.retransmission) counters_.retransmits.Add();
    if (!SendRequestPacket(qp, plan)) break;  // no mbuf: the timer resends
  }
  DrainCompletions(qp);
}

bool RoceEngine::SendRequestPacket(Qp& qp, const PacketPlan& plan) {
  Bth bth;
  bth.opcode = static_cast<uint8_t>(plan.opcode);
  bth.dest_qp = qp.spec.remote_qpn;
  bth.psn = plan.psn;
  bth.ack_req = plan.ack_req;
  const OpcodeInfo& info = GetOpcodeInfo(bth.opcode);
  // The NAAICE host waits on the solicited event of our MRSP answer and of
  // our result write.
  bth.solicited = info.ends_message() &&
                  (info.has(kHasImmDt) || info.kind == OpKind::kSend);
  ExtHeaders ext;
  ext.reth = {plan.reth_va, plan.reth_rkey, plan.reth_length};
  ext.atomic_eth = {plan.atomic_va, plan.atomic_rkey, plan.atomic_swap_add,
                    plan.atomic_compare};
  ext.imm_data = plan.imm;
  uint8_t* payload = nullptr;
  rte_mbuf* m = NewFrame(qp.params, bth, ext, plan.payload_length, &payload);
  if (m == nullptr) {
    counters_.Drop(RoceDrop::kNoBuffer);
    return false;
  }
  if (plan.payload_length != 0) {
    std::memcpy(payload, reinterpret_cast<const uint8_t*>(plan.payload_offset),
                plan.payload_length);
  }
  FinishAndSend(qp.params, m);
  return true;
}

void RoceEngine::Response(Qp& qp, const Packet& p, const uint8_t* frame) {
  if (qp.requester == nullptr || qp.requester->outstanding() == 0) {
    counters_.Drop(RoceDrop::kNotRequest);
    return;
  }
  Placement placement;
  const ResponseVerdict verdict = qp.requester->OnResponse(
      ResponsePacketOf(p), clock::NowNanos(), &placement);
  if (verdict == ResponseVerdict::kReadData && placement.length != 0) {
    // The local bytes of a READ: inside the pinned region it was posted
    // with (the requester checked the length against the WR).
    std::memcpy(reinterpret_cast<uint8_t*>(placement.local_offset),
                frame + p.payload_offset, placement.length);
  }
  DrainCompletions(qp);
  if (qp.requester->outstanding() != 0 && !qp.requesting) {
    qp.requesting = true;
    requesting_.push_back(qp.qpn - kFirstQpn);
  }
}

void RoceEngine::DrainCompletions(Qp& qp) {
  Completion c;
  while (qp.requester->PollCompletion(&c)) {
    // A copy: the service may post again into the slot it frees.
    const Qp::LocalWr wr = std::exchange(qp.wrs[c.wr_id % kSqDepth], {});
    if (wr.region != nullptr) wr.region->Unpin();
    if (c.status == CompletionStatus::kSuccess) {
      counters_.ops_completed.Add();
    } else {
      counters_.ops_failed.Add();
    }
    if (wr.from_service && qp.service != nullptr) {
      ServiceActions actions(this, qp);
      qp.service->OnCompletion(wr.service_tag, c.status, actions);
    }
    if (RoceCommand* command = wr.command) {
      const bool atomic = c.kind == WorkRequest::Kind::kFetchAdd ||
                          c.kind == WorkRequest::Kind::kCompareSwap;
      if (atomic && c.status == CompletionStatus::kSuccess) {
        // The original value lands in the local bytes (host order, as a
        // NIC's completion writes it), inside the region pinned with it.
        std::memcpy(reinterpret_cast<void*>(command->wr.local_offset),
                    &c.atomic_original, sizeof c.atomic_original);
      }
      command->posted = true;
      command->status = c.status;
      command->atomic_original = c.atomic_original;
      command->done.store(true, std::memory_order_release);
    }
  }
  if (qp.requester->state() == QpState::kError && !qp.requester_error_raised) {
    qp.requester_error_raised = true;
    RaiseQpError(qp);
  }
}

// ---------------------------------------------------------------- services

const ::spinnic::naaice::FunctionTable& RoceEngine::FunctionsFor(const EctxTable& table) {
  if (table.version() != functions_version_) {
    installed_functions_ = functions_;
    for (const auto& ectx : table.ectxs()) {
      if (ectx->binding().kind != kBindNaaiceFunction) continue;
      // Install checked the kind (naaice_function) and its `function`.
      installed_functions_.Register(
          static_cast<uint8_t>(ectx->binding().key),
          ::spinnic::naaice::FindFunction(ectx->params().GetString("function")));
    }
    functions_version_ = table.version();
  }
  return installed_functions_;
}

std::unique_ptr<QpService> RoceEngine::NewService(uint32_t qpn,
                                                  uint16_t cm_port,
                                                  const Gid& local_ip) const {
  // Made when a connection is accepted or a QP created: the control path's
  // pace, not the packets'.
  if (cm_port == 0) return std::make_unique<VerbsService>(qpn, 0);
  if (cm_port == config_.naaice_port) {
    return std::make_unique<NaaiceService>(qpn, config_.naaice_max_bytes,
                                           &functions_);
  }
  if (cm_port == config_.rping_port) {
    return std::make_unique<RpingService>(qpn);
  }
  if (cm_port == config_.perftest_port) {
    return std::make_unique<PerftestService>(
        qpn, config_.connection_region_bytes, local_ip, config_.max_rd_atomic);
  }
  return std::make_unique<VerbsService>(qpn, config_.connection_region_bytes);
}

bool RoceEngine::ReceiveSend(Qp& qp, const ResponderPlan& plan,
                             const Arrival& arrival, const uint8_t* payload) {
  if (plan.starts_message) {
    qp.send_to_handler = arrival.table->FindBound(kBindQp, qp.qpn) != nullptr;
  }
  if (qp.send_to_handler) {
    // sPIN: the QP's handler takes the SEND in place, packet by packet,
    // after the transport accepted it; the service does not see it.
    RunHandlers(qp, plan, arrival, nullptr);
    counters_.sends.Add(plan.ends_message ? 1 : 0);
    counters_.send_bytes.Add(plan.length);
    Queue(qp, qp.responder.Accept(plan));
    return true;
  }
  QpService* service = qp.service.get();
  if (service == nullptr || (plan.starts_message && !service->CanReceive())) {
    // No receive for it: the requester waits and retries (RNR), as with a
    // QP whose receive queue is empty.
    Queue(qp, qp.responder.Rnr(plan));
    return false;
  }
  if (plan.send_offset > qp.receive.size() ||
      plan.length > qp.receive.size() - plan.send_offset) {
    // Larger than the service takes: the receive buffer is too small.
    Queue(qp, qp.responder.Fail(plan, NakCode::kInvalidRequest));
    RaiseQpError(qp);
    return false;
  }
  if (plan.length != 0) {
    std::memcpy(qp.receive.data() + plan.send_offset, payload, plan.length);
  }
  qp.receive_length = static_cast<uint32_t>(plan.send_offset + plan.length);
  Queue(qp, qp.responder.Accept(plan));
  if (plan.ends_message) {
    counters_.sends.Add();
    counters_.send_bytes.Add(qp.receive_length);
    ReceivedSend send;
    send.bytes = {qp.receive.data(), qp.receive_length};
    send.has_immediate = plan.has_immediate;
    send.immediate = plan.immediate;
    send.msn = qp.responder.msn();
    qp.receive_length = 0;
    ServiceActions actions(this, qp, arrival.table);
    service->OnSend(send, actions);
  }
  return true;
}

QpService* RoceEngine::Sibling(const Qp& qp) {
  // A scan of the QPs: perftest asks once per exchange, not per packet.
  Qp* newest = nullptr;
  for (Qp& other : qps_) {
    if (!other.in_use || &other == &qp || other.service == nullptr ||
        other.cm_port != qp.cm_port ||
        other.spec.remote_ip != qp.spec.remote_ip) {
      continue;
    }
    if (newest == nullptr || other.generation > newest->generation) {
      newest = &other;
    }
  }
  return newest != nullptr ? newest->service.get() : nullptr;
}

void RoceEngine::FailQp(Qp& qp) {
  // Both halves stop; the requester's flushed work completes (and the
  // error event is raised) in the next poll.
  qp.responder.SetState(QpState::kError);
  if (qp.requester == nullptr) return;
  qp.requester->SetError();
  if (!qp.requesting) {
    qp.requesting = true;
    requesting_.push_back(qp.qpn - kFirstQpn);
  }
}

void RoceEngine::FailWork(Qp& qp) {
  if (qp.requester == nullptr) return;
  // A QP being destroyed is not a QP that failed: no error event.
  qp.requester_error_raised = true;
  qp.requester->SetError();  // flushes every WR not completed
  DrainCompletions(qp);
  qp.requester.reset();
}

// ---------------------------------------------------------------- CM

void RoceEngine::ReceiveGsi(const Packet& p, const uint8_t* frame) {
  // MADs travel as UD SEND ONLY to QP1 with the GSI Q_Key (IBA 13.4; rxe
  // and every RoCE NIC): anything else on QP1 is not ours to interpret.
  if (p.bth.opcode != static_cast<uint8_t>(Opcode::kUdSendOnly) ||
      p.ext.deth.qkey != kGsiQkey || p.payload_length < kMadBytes) {
    counters_.Drop(RoceDrop::kBadGsi);
    return;
  }
  counters_.cm_received.Add();
  Learn(p.src_ip, frame + 6);
  CmPeer peer;
  peer.gid = p.src_ip;
  peer.qpn = p.ext.deth.src_qp;
  const CmResult result =
      cm_->HandleMad(peer, {frame + p.payload_offset, kMadBytes},
                     clock::NowMicros(), &cm_actions_);
  if (result == CmResult::kParseError) counters_.Drop(RoceDrop::kBadMad);
  if (result == CmResult::kRejected) counters_.cm_rejects.Add();
  RunCmActions();
}

void RoceEngine::RunCmActions() {
  for (const CmAction& action : cm_actions_) {
    switch (action.type) {
      case CmActionType::kCreateQp: {
        const CmQpParams& c = action.qp;
        QpSpec spec;
        spec.remote_qpn = c.remote_qpn;
        spec.remote_ip = c.remote_gid;
        spec.local_ip = c.local_gid;
        if (const Mac* mac = Lookup(c.remote_gid)) spec.remote_mac = *mac;
        spec.pmtu = PathMtuBytes(c.path_mtu);
        spec.expected_psn = c.expected_psn;
        spec.send_psn = c.send_psn;
        spec.max_rd_atomic = c.max_dest_rd_atomic;
        spec.initiator_depth = c.max_rd_atomic;
        spec.retry_count = c.retry_count;
        spec.rnr_retry = c.rnr_retry_count;
        spec.flow_label = c.flow_label;
        CreateQp(c.local_qpn, spec, /*from_cm=*/true, c.port);
        counters_.cm_connections.Add();
        break;
      }
      case CmActionType::kSendMad:
        SendMad(action.peer, action.mad);
        break;
      case CmActionType::kEstablished:
        if (Qp* qp = FindQp(action.local_qpn)) qp->awaiting_rtu = false;
        break;
      case CmActionType::kDestroyQp: {
        const uint32_t slot = action.local_qpn - kFirstQpn;
        if (action.local_qpn < kFirstQpn || slot >= qps_.size()) break;
        if (qps_[slot].in_use) {
          DestroyQp(qps_[slot]);
        } else {
          // Accepted but never created (the REP could not be sent).
          accepted_services_[slot].reset();
          shared_.qp_status[slot].claimed.store(0, std::memory_order_release);
        }
        break;
      }
    }
  }
  cm_actions_.clear();
  cm_deadline_us_ = cm_->NextDeadline();
}

void RoceEngine::OnConnectRequest(const CmConnectRequest& request,
                                  CmAcceptDecision* decision) {
  if (LocalFor(request.peer->gid) == nullptr) {
    decision->accept = false;
    decision->reject_reason = CmRejReason::kConsumerReject;
    return;
  }
  // Next fit: a QP number is not reused at once, so that a late packet of
  // a closed connection finds no QP rather than a new one.
  for (uint32_t i = 0; i < qps_.size(); ++i) {
    const uint32_t slot = (next_cm_slot_ + i) % qps_.size();
    if (shared_.qp_status[slot].Claim()) {
      next_cm_slot_ = (slot + 1) % qps_.size();
      decision->accept = true;
      decision->local_qpn = kFirstQpn + slot;
      decision->starting_psn = static_cast<uint32_t>(rte_rand()) & kPsnMask;
      // The service exists from here: its REP private data (a region to
      // advertise) goes out with the REP, before the QP is created.
      accepted_services_[slot] = NewService(decision->local_qpn, request.port,
                                            *LocalFor(request.peer->gid));
      accepted_services_[slot]->RepPrivateData(decision->rep_private_data);
      return;
    }
  }
  decision->accept = false;
  decision->reject_reason = CmRejReason::kNoQp;
}

void RoceEngine::SendMad(const CmPeer& peer,
                         std::span<const uint8_t, kMadBytes> mad) {
  const Mac* mac = Lookup(peer.gid);
  const Gid* local = LocalFor(peer.gid);
  if (mac == nullptr || local == nullptr) {
    counters_.Drop(RoceDrop::kNoBuffer);  // no way to reach it
    return;
  }
  FrameParams params;
  params.dst_mac = *mac;
  params.src_mac = config_.mac;
  params.ip_version = IsMapped(peer.gid) ? 4 : 6;
  params.src_ip = *local;
  params.dst_ip = peer.gid;
  params.udp_src_port = UdpSourcePort(kGsiQp, peer.qpn);
  params.ipv6_udp_checksum = config_.ipv6_udp_checksum;
  Bth bth;
  bth.opcode = static_cast<uint8_t>(Opcode::kUdSendOnly);
  bth.dest_qp = peer.qpn;
  bth.psn = gsi_psn_;
  gsi_psn_ = PsnAdd(gsi_psn_, 1);
  ExtHeaders ext;
  ext.deth.qkey = kGsiQkey;
  ext.deth.src_qp = kGsiQp;
  uint8_t* payload = nullptr;
  rte_mbuf* m = NewFrame(params, bth, ext, kMadBytes, &payload);
  if (m == nullptr) {
    counters_.Drop(RoceDrop::kNoBuffer);
    return;
  }
  std::memcpy(payload, mad.data(), kMadBytes);
  counters_.cm_sent.Add();
  FinishAndSend(params, m);
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
  for (Qp& qp : qps_) {
    if (qp.in_use) DestroyQp(qp);
  }
  for (std::unique_ptr<QpService>& service : accepted_services_) {
    service.reset();
  }
  busy_.clear();
  touched_.clear();
}

}  // namespace spinnic::roce
