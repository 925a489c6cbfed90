// RoceEngine's connection manager side (roce_engine.h, cm.h), on HPU 0: MADs
// received on QP1, the CmService's actions executed (QPs created and
// destroyed, here or through their owner's command ring; MADs sent), the
// accept decision and the new QP's owner, and the peers' MACs learned from
// their MADs.
#include <rte_random.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "dataplane/common/clock.h"
#include "dataplane/roce/perftest_service.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_engine_internal.h"

namespace spinnic::roce {

using roce_engine_internal::IsMapped;

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
  const uint64_t table_full = cm_->stats().table_full;
  const CmResult result =
      cm_->HandleMad(peer, {frame + p.payload_offset, kMadBytes},
                     clock::NowMicros(), &cm_actions_);
  if (cm_->stats().table_full != table_full) {
    counters_.cm_rejects_no_resources.Add();
  }
  if (result == CmResult::kParseError) counters_.Drop(RoceDrop::kBadMad);
  if (result == CmResult::kRejected) counters_.cm_rejects.Add();
  if (result == CmResult::kSidrRefused) counters_.cm_sidr_refused.Add();
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
        const uint32_t slot = c.local_qpn - kFirstQpn;
        std::unique_ptr<QpService> service =
            std::move(accepted_services_[slot]);
        const uint32_t owner =
            shared_.qp_status[slot].hpu.load(std::memory_order_relaxed);
        if (owner == hpu_index_) {
          CreateQp(c.local_qpn, spec, /*from_cm=*/true, c.port,
                   std::move(service));
        } else {
          // Connection set-up pace: one allocation per connection.
          auto command = std::make_unique<RoceCommand>();
          command->kind = RoceCommand::Kind::kCreateQp;
          command->qpn = c.local_qpn;
          command->spec = spec;
          command->from_cm = true;
          command->cm_port = c.port;
          command->service = std::move(service);
          // A full ring leaves the QP uncreated: the peer's packets find
          // no QP, and the CM closes the connection when its REP times out.
          SendToOwner(owner, std::move(command));
        }
        cm_placements_[slot] = {true, c.port, owner, next_cm_order_++,
                                c.remote_gid};
        counters_.cm_connections.Add();
        break;
      }
      case CmActionType::kSendMad:
        SendMad(action.peer, action.mad);
        break;
      case CmActionType::kEstablished:
        // A QP of another HPU tells the CM of its first packet itself and
        // stops waiting on its own.
        if (Qp* qp = FindQp(action.local_qpn)) qp->awaiting_rtu = false;
        break;
      case CmActionType::kDestroyQp: {
        const uint32_t slot = action.local_qpn - kFirstQpn;
        if (action.local_qpn < kFirstQpn || slot >= qps_.size()) break;
        cm_placements_[slot].live = false;
        const uint32_t owner =
            shared_.qp_status[slot].hpu.load(std::memory_order_relaxed);
        if (accepted_services_[slot] != nullptr) {
          // Accepted but never created (the REP could not be sent).
          accepted_services_[slot].reset();
          shared_.qp_status[slot].claimed.store(0, std::memory_order_release);
        } else if (owner != hpu_index_) {
          auto command = std::make_unique<RoceCommand>();
          command->kind = RoceCommand::Kind::kDestroyQp;
          command->qpn = action.local_qpn;
          SendToOwner(owner, std::move(command));
        } else if (Qp* qp = FindQp(action.local_qpn)) {
          DestroyQp(*qp);
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
      shared_.qp_status[slot].hpu.store(
          static_cast<uint16_t>(PlaceCmQp(request.peer->gid, request.port)),
          std::memory_order_relaxed);
      decision->accept = true;
      decision->local_qpn = kFirstQpn + slot;
      decision->starting_psn = static_cast<uint32_t>(rte_rand()) & kPsnMask;
      // The service exists from here: its REP private data (a region to
      // advertise) goes out with the REP, before the QP is created.
      // perftest: the peer's first connection on the port is a control
      // connection; a later one is its data connection or the control
      // connection of another perftest from the same address, which only
      // what the connection does tells apart (PerftestService::Role).
      const bool perftest_later =
          IsPerftestPort(request.port) &&
          HasCmConnection(request.peer->gid, request.port);
      accepted_services_[slot] =
          NewService(decision->local_qpn, request.port,
                     *LocalFor(request.peer->gid), perftest_later);
      if (perftest_later) {
        // Likely perftest's data connection: its region now, so that a
        // client the memory cannot serve is told at once (a REJ with a
        // reason, not a remote access error mid-test). A control
        // connection gives it back with its first message.
        auto* perftest =
            static_cast<PerftestService*>(accepted_services_[slot].get());
        if (perftest->Prepare() != ConnectionRegions::Status::kOk) {
          accepted_services_[slot].reset();
          shared_.qp_status[slot].claimed.store(0, std::memory_order_release);
          counters_.perftest_region_rejects.Add();
          decision->accept = false;
          decision->reject_reason = CmRejReason::kNoResources;
          // The REJ's private data says why (rdma_cm hands it to the
          // client's RDMA_CM_EVENT_REJECTED).
          decision->rej_private_data.fill(0);
          std::snprintf(
              reinterpret_cast<char*>(decision->rej_private_data.data()),
              decision->rej_private_data.size(),
              "spinnic: no %llu-byte perftest data region "
              "(roce.perftest_region_bytes; connection memory in use)",
              static_cast<unsigned long long>(config_.perftest_region_bytes));
          return;
        }
      }
      accepted_services_[slot]->RepPrivateData(decision->rep_private_data);
      return;
    }
  }
  counters_.cm_rejects_no_qp.Add();
  decision->accept = false;
  decision->reject_reason = CmRejReason::kNoQp;
}

bool RoceEngine::HasCmConnection(const Gid& peer, uint16_t cm_port) const {
  // A scan per connection accepted on the perftest port, not per packet.
  for (const CmPlacement& p : cm_placements_) {
    if (p.live && p.cm_port == cm_port && p.peer == peer) return true;
  }
  return false;
}

uint32_t RoceEngine::PlaceCmQp(const Gid& peer, uint16_t cm_port) const {
  if (!IsPerftestPort(cm_port)) return NextQpHpu(shared_);
  // A scan per connection accepted, not per packet.
  const CmPlacement* newest = nullptr;
  for (const CmPlacement& p : cm_placements_) {
    if (p.live && p.cm_port == cm_port && p.peer == peer &&
        (newest == nullptr || p.order > newest->order)) {
      newest = &p;
    }
  }
  return newest != nullptr ? newest->hpu : NextQpHpu(shared_);
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

}  // namespace spinnic::roce
