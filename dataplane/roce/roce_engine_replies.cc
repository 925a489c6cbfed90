// RoceEngine's reply frames (roce_engine.h): the queued ACKs, NAKs and READ
// responses sent, paced per QP, and the frame building every frame we send
// shares.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/region_tx.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_engine_internal.h"

namespace spinnic::roce {

void RoceEngine::SendReplies(Qp& qp, uint32_t budget) {
  while (qp.reply_count != 0 && budget != 0) {
    ReplyJob& job = qp.replies[qp.reply_head];
    if (job.reply.kind == ResponderReplyKind::kReadResponse) {
      if (qp.read_gap_ns != 0 && job.sent < job.reply.packets) {
        // Paced: one packet per gap, the QP stays busy until its turn.
        const uint64_t now = RequesterNow();
        if (now < qp.next_read_ns) return;
        budget = 1;
        qp.next_read_ns = now + qp.read_gap_ns;
      }
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

void RoceEngine::OnReadReplayed(Qp& qp, uint32_t psn) {
  // The responses from `psn` on that are still queued would repeat what
  // the duplicate's own responses carry: the requester asked again because
  // it lost one of them, and would drop the rest as out of sequence.
  for (uint32_t i = 0; i < qp.reply_count; ++i) {
    ReplyJob& job = qp.replies[(qp.reply_head + i) % kReplyQueue];
    if (job.reply.kind != ResponderReplyKind::kReadResponse) continue;
    const int32_t from_first = PsnDiff(psn, job.reply.psn);
    if (from_first < 0 ||
        from_first >= static_cast<int32_t>(job.reply.packets)) {
      continue;
    }
    const uint32_t keep = std::max(job.sent, static_cast<uint32_t>(from_first));
    counters_.read_responses_superseded.Add(job.reply.packets - keep);
    job.reply.packets = keep;  // SendReplies unpins it when it comes up
  }
  qp.read_gap_ns =
      qp.read_gap_ns == 0
          ? roce_engine_internal::kReadGapMinNs
          : std::min(2 * qp.read_gap_ns, roce_engine_internal::kReadGapMaxNs);
  qp.next_read_ns = 0;
  counters_.read_slowdowns.Add();
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
  if (job.region != nullptr && SendZeroCopy(qp.params, *job.region, bth, ext,
                                            job.data + offset, length) != 0) {
    counters_.read_bytes.Add(length);
    return true;
  }
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

uint32_t RoceEngine::SendZeroCopy(const FrameParams& params,
                                  const MemoryRegion& region, const Bth& bth,
                                  const ExtHeaders& ext, const uint8_t* bytes,
                                  uint32_t length) {
  if (shared_.region_tx == nullptr || length < config_.zero_copy_min_bytes) {
    return 0;
  }
  rte_mbuf* m = ZeroCopyFrame(params, region, bth, ext, bytes, length);
  if (m == nullptr) {
    counters_.zero_copy_fallbacks.Add();
    return 0;
  }
  const uint32_t frame_bytes = m->pkt_len;
  counters_.zero_copy_packets.Add();
  counters_.tx_packets.Add();
  counters_.tx_bytes.Add(frame_bytes);
  hpu_->Transmit(config_.port, m);
  return frame_bytes;
}

rte_mbuf* RoceEngine::ZeroCopyFrame(const FrameParams& params,
                                    const MemoryRegion& region, const Bth& bth,
                                    const ExtHeaders& ext, const uint8_t* bytes,
                                    uint32_t length) {
  const uint32_t header_bytes =
      HeaderBytes(params.ip_version, bth.opcode, params.vlan);
  const uint32_t frame_bytes =
      FrameBytes(params.ip_version, bth.opcode, length, params.vlan);
  rte_mbuf* head = rte_pktmbuf_alloc(shared_.pool);
  rte_mbuf* tail = rte_pktmbuf_alloc(shared_.pool);
  rte_mbuf* body =
      head == nullptr || tail == nullptr
          ? nullptr
          : shared_.region_tx->Attach(shared_.pool, region, bytes,
                                      static_cast<uint16_t>(length));
  auto* headers = reinterpret_cast<uint8_t*>(
      body == nullptr
          ? nullptr
          : rte_pktmbuf_append(head, static_cast<uint16_t>(header_bytes)));
  auto* trailer = reinterpret_cast<uint8_t*>(
      headers == nullptr ? nullptr
                         : rte_pktmbuf_append(tail, static_cast<uint16_t>(
                                                        TrailerBytes(length))));
  if (trailer == nullptr ||
      WriteHeaders(params, bth, ext, length, headers, frame_bytes) !=
          header_bytes ||
      FinishChainedFrame(params, headers, header_bytes, {bytes, length},
                         trailer) != frame_bytes) {
    rte_pktmbuf_free(head);  // each nullptr-safe
    rte_pktmbuf_free(body);
    rte_pktmbuf_free(tail);
    return nullptr;
  }
  rte_pktmbuf_chain(head, body);  // three segments: within every limit
  rte_pktmbuf_chain(head, tail);
  return head;
}

}  // namespace spinnic::roce
