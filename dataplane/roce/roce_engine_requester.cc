// RoceEngine's requester side (roce_engine.h): our own operations (the
// control plane's and the services'), posted to the QP's Requester, their
// packets sent and retransmitted, the responses placed, the completions
// reported.
#include <cstring>
#include <utility>

#include "dataplane/common/clock.h"
#include "dataplane/memory_region.h"
#include "dataplane/roce/rc_packets.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_engine_internal.h"

namespace spinnic::roce {

using roce_engine_internal::kReplyBudget;

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

bool RoceEngine::HandlerPut(const PeerPut& put, uint32_t /*ectx_id*/) {
  // Only an answer to the message being handled: a named peer is DiAD's.
  if (!put.peer.empty() || delivering_ == nullptr) return false;
  Qp& qp = *delivering_;
  if (put.kind != PeerPut::Kind::kStream || put.data.empty() ||
      put.data.size() > kHandlerReplyBytes || free_handler_replies_.empty() ||
      qp.requester == nullptr) {
    counters_.handler_replies_refused.Add();
    return false;
  }
  const uint16_t slot = free_handler_replies_.back();
  uint8_t* bytes =
      handler_reply_bytes_.data() + size_t{slot} * kHandlerReplyBytes;
  std::memcpy(bytes, put.data.data(), put.data.size());
  WorkRequest wr;
  wr.kind = WorkRequest::Kind::kSend;
  wr.local_offset = reinterpret_cast<uint64_t>(bytes);
  wr.length = static_cast<uint32_t>(put.data.size());
  const uint64_t wr_id = qp.next_wr_id;
  if (!PostWork(qp, wr, nullptr, nullptr)) {
    counters_.handler_replies_refused.Add();
    return false;
  }
  free_handler_replies_.pop_back();
  qp.wrs[wr_id % kSqDepth].handler_reply = slot;
  counters_.handler_replies.Add();
  return true;
}

void RoceEngine::DriveRequester(Qp& qp, uint64_t now_ns) {
  Requester& r = *qp.requester;
  if (now_ns >= r.NextDeadline()) r.OnTimer(now_ns);
  PacketPlan plan;
  // Congestion control: while DCQCN has cut the rate, no packet before
  // next_send_ns, each one moving it on by its time on the wire at the
  // rate (the controller's min rate bounds the wait).
  const bool paced = qp.dcqcn.has_value() && qp.dcqcn->throttled();
  const uint64_t cc_now = paced ? CongestionNow() : 0;
  // A full transport pacer (dataplane/tx_pacer.h) would refuse the packet
  // after the requester counted it sent: leave it for the next poll instead.
  for (uint32_t budget = kReplyBudget;
       budget != 0 && hpu_->TransmitRoom(config_.port) != 0 &&
       (!paced || cc_now >= qp.next_send_ns) && r.NextPacket(now_ns, &plan);
       --budget) {
    if (plan.retransmission) counters_.retransmits.Add();
    const uint32_t bytes = SendRequestPacket(qp, plan);
    if (bytes == 0) break;  // no mbuf: the timer resends
    if (qp.dcqcn.has_value()) OnRequestSent(qp, bytes, paced, cc_now);
  }
  DrainCompletions(qp);
}

uint32_t RoceEngine::SendRequestPacket(Qp& qp, const PacketPlan& plan) {
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
  // A WRITE or SEND out of a registered region leaves zero-copy, as a
  // hardware requester DMAs it (the region stays pinned until the NIC is
  // done; retransmissions are built anew from the plan).
  const uint8_t* source = reinterpret_cast<const uint8_t*>(plan.payload_offset);
  const MemoryRegion* region = qp.wrs[plan.wr_id % kSqDepth].region;
  if (region != nullptr && plan.payload_length != 0) {
    const uint32_t bytes =
        SendZeroCopy(qp.params, *region, bth, ext, source, plan.payload_length);
    if (bytes != 0) return bytes;
  }
  uint8_t* payload = nullptr;
  rte_mbuf* m = NewFrame(qp.params, bth, ext, plan.payload_length, &payload);
  if (m == nullptr) {
    counters_.Drop(RoceDrop::kNoBuffer);
    return 0;
  }
  if (plan.payload_length != 0) {
    std::memcpy(payload, source, plan.payload_length);
  }
  const uint32_t bytes = m->pkt_len;
  FinishAndSend(qp.params, m);
  return bytes;
}

void RoceEngine::Response(Qp& qp, const Packet& p, const uint8_t* frame) {
  if (qp.requester == nullptr || qp.requester->outstanding() == 0) {
    counters_.Drop(RoceDrop::kNotRequest);
    return;
  }
  Placement placement;
  const uint64_t samples_before = qp.requester->counters().rtt_samples;
  const ResponseVerdict verdict =
      qp.requester->OnResponse(ResponsePacketOf(p), RequesterNow(), &placement);
  // A response gives at most one sample (the timed PSN acknowledged).
  if (const uint64_t samples =
          qp.requester->counters().rtt_samples - samples_before;
      samples != 0) [[unlikely]] {
    counters_.rtt.Record(qp.requester->rtt().last_sample_ns(), samples);
  }
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
    if (wr.handler_reply >= 0) {
      free_handler_replies_.push_back(static_cast<uint16_t>(wr.handler_reply));
    }
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
    // A QP has one state (IBA 10.3.1): a requester that failed (retries
    // exhausted, a fatal NAK) puts the whole QP in Error, the responder too,
    // and ListQps / spinctl qps say so.
    qp.responder.SetState(QpState::kError);
    Publish(qp);
    RaiseQpError(qp);
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

}  // namespace spinnic::roce
