// RoceEngine's responder side (roce_engine.h): a peer's request checked by
// the QP's Responder, its memory access executed (WRITE, READ, atomics), the
// bound ECTX's handlers run on it (sPIN), and its reply queued.
#include <rte_mbuf.h>

#include <cstring>

#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/region_table.h"
#include "dataplane/roce/rc_packets.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_engine_internal.h"

namespace spinnic::roce {
namespace {

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

}  // namespace

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
  // Each request ends in exactly one counter (RoceCounters::executed).
  if (!plan.needs_commit) {
    switch (plan.verdict) {
      case ResponderVerdict::kDrop:
        counters_.Drop(RoceDrop::kResponder);
        counters_.responder_drops[static_cast<size_t>(plan.drop_reason)].Add();
        break;
      case ResponderVerdict::kDuplicate:
        counters_.duplicates.Add();
        break;
      case ResponderVerdict::kNak:
        counters_.refused_naks[static_cast<size_t>(plan.nak)].Add();
        break;
      case ResponderVerdict::kExecute:
        break;
    }
    if (plan.reply.kind != ResponderReplyKind::kNone) Queue(qp, plan.reply);
    Publish(qp);
    return;
  }
  if (plan.verdict == ResponderVerdict::kDuplicate) counters_.duplicates.Add();
  const uint64_t accepted = qp.responder.counters().accepted;
  Execute(qp, plan, arrival, regions);
  if (qp.responder.counters().accepted != accepted) counters_.executed.Add();
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
      // A duplicate READ refused here was counted as a duplicate.
      if (plan.verdict == ResponderVerdict::kExecute) {
        counters_.refused_naks[static_cast<size_t>(NakCode::kRemoteAccessError)]
            .Add();
      }
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
      } else if (qp.service_writes &&
                 plan.verdict == ResponderVerdict::kExecute) {
        // A service that reacts to WRITEs (perftest's ib_write_lat
        // server writes each message back): once per message.
        if (plan.starts_message) qp.write_start_va = plan.range_va;
        if (plan.ends_message && plan.length != 0 &&
            plan.va + plan.length > qp.write_start_va) {
          ServiceActions actions(this, qp, arrival.table);
          qp.service->OnWrite(qp.write_start_va,
                              plan.va + plan.length - qp.write_start_va,
                              actions);
        }
      }
      return true;
    }
    case ResponderAction::kRead:
    case ResponderAction::kReplayRead: {
      const ResponderReply reply = qp.responder.Accept(plan);
      if (plan.action == ResponderAction::kReplayRead) {
        OnReadReplayed(qp, reply.psn);
      } else if (qp.read_gap_ns != 0) {
        // A new READ, not a duplicate: the gap shrinks.
        qp.read_gap_ns -= qp.read_gap_ns / 4;
        if (qp.read_gap_ns < roce_engine_internal::kReadGapMinNs) {
          qp.read_gap_ns = 0;
        }
      }
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
    if (const Ectx* ectx = table.FindBound(kBindRegionWrites, region->id()))
      return ectx;
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
  // The responder tracks the message: a WRITE's packet targets plan.va in
  // the RETH's [range_va, range_va + range_length) (carried on every
  // packet's plan), a SEND's lands at send_offset and its length is known
  // only once its last packet has come.
  MessageInfo info;
  info.source = qp.spec.remote_qpn;
  if (plan.action == ResponderAction::kWrite) {
    info.transport = MessageTransport::kRoceWrite;
    info.offset = plan.va - plan.range_va;
    info.length = plan.range_length;
    info.address = plan.va;
  } else {
    info.transport = MessageTransport::kRoceSend;
    info.offset = plan.send_offset;
    info.length = plan.ends_message ? plan.send_offset + plan.length : 0;
  }
  PacketView view(rte_pktmbuf_mtod(arrival.mbuf, uint8_t*),
                  arrival.mbuf->data_len, layers, arrival.in_port, info);
  hpu_->SetActionOrigin(arrival.in_port, ectx->id());
  delivering_ = &qp;
  spin_->Deliver(*ectx, qp.spin, view, plan.starts_message, plan.ends_message);
  delivering_ = nullptr;
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

}  // namespace spinnic::roce
