// DiadEngine's send path (diad_engine.h): each channel pumped every poll
// (responses first, then queued operations, within the send window),
// sequenced packets built and held for retransmission, retransmissions and
// liveness probes, and control packets (ACK, NACK, UNACK).
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "dataplane/diad/diad_engine.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/region_tx.h"

namespace spinnic::diad {

void DiadEngine::Poll(const EctxTable& table) {
  SyncPeers(table);
  TakeCommands();
  if (shared_.hpu_count > 1) TakeHandedActions();
  const uint64_t now = Now();
  // By index: a channel that goes down in PumpChannel stays active (only
  // SyncPeers and Shutdown deactivate), so the list does not change here.
  for (size_t i = 0; i < active_.size(); ++i) {
    PumpChannel(*active_[i], now, table);
  }
}

void DiadEngine::PumpChannel(Channel& ch, uint64_t now,
                             const EctxTable& table) {
  switch (ch.tx.OnTimer(now)) {
    case SendWindow<rte_mbuf*>::TimerVerdict::kIdle:
      break;
    case SendWindow<rte_mbuf*>::TimerVerdict::kSendUnack:
      SendControl(ch, PacketType::kUnack, 0, ch.rx.expected());
      counters_.unacks_sent.Add();
      OnCongestionTimeout(ch, now);
      break;
    case SendWindow<rte_mbuf*>::TimerVerdict::kDown:
      ChannelDown(ch, &table);
      return;
  }
  // Transactions waiting for responses with nothing held: the timer above
  // is idle, so probe the peer with UNACKs (its ACK proves it alive) and
  // declare it down after as long as unanswered retries would take.
  if (ch.txns.count() > 0 && ch.tx.in_flight_packets() == 0) {
    const uint64_t since = std::max(ch.last_heard_ns, ch.last_sent_ns);
    if (now - since >= down_after_ns_) {
      ChannelDown(ch, &table);
      return;
    }
    if (now - std::max(since, ch.last_probe_ns) >= config_.channel.rto_ns) {
      ch.last_probe_ns = now;
      SendControl(ch, PacketType::kUnack, 0, ch.rx.expected());
      counters_.unacks_sent.Add();
    }
  }
  if (now >= ch.next_txn_deadline_ns) ExpireTransactions(ch, now);
  // Held packets a full response queue kept back.
  if (ch.reorder.count() > 0) DrainReorder(ch, table, now);
  // Responses first: they are what the peer's window waits on.
  if (PumpResponses(ch, now)) PumpOps(ch, now);
  if (ch.rx.AckDue(now)) {
    SendControl(ch, PacketType::kAck,
                ch.rx.probe_reply_due() ? kFlagProbeReply : 0,
                ch.rx.expected());
  }
}

// Whether the HPU takes another frame for our port now: a full transport
// pacer (dataplane/tx_pacer.h) would refuse a new packet after the window
// counted it in flight, and only a retransmission timeout would send it
// again. The pumps stop instead and go on at the next poll.
bool DiadEngine::TxRoom() const {
  return hpu_->TransmitRoom(config_.port) != 0;
}

// The congestion window, not window_packets, is what stops the sender: it
// is full by design, and an UNACK's probe reply would resend (go-back-N)
// what still waits in the bottleneck's queue. The ACKs come anyway.
bool DiadEngine::CongestionLimited(const Channel& ch) const {
  return ch.cc && ch.tx.congestion_window() < config_.channel.window_packets;
}

bool DiadEngine::PumpResponses(Channel& ch, uint64_t now) {
  const uint32_t max_payload = config_.max_payload();
  while (ch.response_count > 0) {
    ResponseJob& job = ch.responses[ch.response_head];
    Header h;
    h.type = job.type;
    h.txn = job.txn;
    h.key = job.key;
    h.status = job.status;
    h.msg_length = job.length;
    if (job.type == PacketType::kWriteResponse || job.status != Status::kOk) {
      if (!ch.tx.CanSend(0) || !TxRoom()) return false;
      h.flags = kFlagFirst | kFlagLast | kFlagAckNow;
      h.address = job.address;
      if (!SendSequenced(ch, h, {}, 0, false, now)) return false;
    } else {
      const uint8_t* base =
          job.region->Translate(job.address, job.length, kRemoteRead).data();
      while (job.sent < job.length) {
        uint32_t segment = std::min(max_payload, job.length - job.sent);
        if (!TxRoom()) return false;  // the pacer's queue: next poll
        if (!ch.tx.CanSend(segment)) {
          if (!CongestionLimited(ch) && ch.tx.UnackDueOnFullWindow(now)) {
            SendControl(ch, PacketType::kUnack, 0, ch.rx.expected());
            counters_.unacks_sent.Add();
          }
          return false;
        }
        const bool last = job.sent + segment == job.length;
        h.flags = static_cast<uint8_t>((job.sent == 0 ? kFlagFirst : 0) |
                                       (last ? kFlagLast | kFlagAckNow : 0));
        h.address = job.address + job.sent;
        h.msg_offset = job.sent;
        const MemoryRegion* zero_copy =
            segment >= config_.zero_copy_min_bytes ? job.region : nullptr;
        if (!SendSequenced(ch, h, {base + job.sent, segment}, 0, false, now,
                           zero_copy)) {
          return false;
        }
        job.sent += segment;
      }
      job.region->Unpin();
      counters_.reads_served.Add();
    }
    ch.response_head = (ch.response_head + 1) % kMaxResponses;
    --ch.response_count;
  }
  return true;
}

bool DiadEngine::PumpOps(Channel& ch, uint64_t now) {
  const uint32_t max_payload = config_.max_payload();
  while (DiadOp* op = ch.queue_head) {
    if (!op->started) {
      if (ch.txns.Full()) return false;
      PacketType type =
          op->kind == DiadOp::Kind::kRead    ? PacketType::kReadRequest
          : op->kind == DiadOp::Kind::kWrite ? PacketType::kWriteRequest
                                             : PacketType::kStream;
      Txn t;
      t.op = op;
      op->txn = ch.txns.Begin(type, t);
      op->started = true;
    }
    Header h;
    h.txn = op->txn;
    h.key = op->key;
    if (op->kind == DiadOp::Kind::kRead) {
      if (!ch.tx.CanSend(0) || !TxRoom()) return false;
      h.type = PacketType::kReadRequest;
      h.flags = kFlagFirst | kFlagLast | kFlagAckNow;
      h.address = op->address;
      h.msg_length = static_cast<uint32_t>(op->data.size());
      if (!SendSequenced(ch, h, {}, op->txn, false, now)) return false;
    } else {
      const uint32_t length = static_cast<uint32_t>(op->data.size());
      h.type = op->kind == DiadOp::Kind::kWrite ? PacketType::kWriteRequest
                                                : PacketType::kStream;
      h.msg_length = length;
      while (op->sent < length) {
        uint32_t segment = std::min(max_payload, length - op->sent);
        if (!TxRoom()) return false;  // the pacer's queue: next poll
        if (!ch.tx.CanSend(segment)) {
          if (!CongestionLimited(ch) && ch.tx.UnackDueOnFullWindow(now)) {
            SendControl(ch, PacketType::kUnack, 0, ch.rx.expected());
            counters_.unacks_sent.Add();
          }
          return false;
        }
        const bool last = op->sent + segment == length;
        h.flags = static_cast<uint8_t>((op->sent == 0 ? kFlagFirst : 0) |
                                       (last ? kFlagLast | kFlagAckNow : 0));
        h.address = op->address + op->sent;
        h.msg_offset = op->sent;
        const uint8_t* src =
            reinterpret_cast<const uint8_t*>(op->data.data()) + op->sent;
        // A stream message is complete when its last packet is acked; a
        // write when its response arrives.
        if (!SendSequenced(ch, h, {src, segment}, op->txn,
                           last && op->kind == DiadOp::Kind::kStream, now)) {
          return false;
        }
        op->sent += segment;
      }
    }
    // The request is out whole: from now on only the peer's answer is
    // missing, and the deadline bounds the wait for it.
    if (op->kind != DiadOp::Kind::kStream) {
      ArmDeadline(ch, op->txn,
                  op->kind == DiadOp::Kind::kRead ? PacketType::kReadRequest
                                                  : PacketType::kWriteRequest,
                  now);
    }
    ch.queue_head = op->next;
    if (ch.queue_head == nullptr) ch.queue_tail = nullptr;
    op->next = nullptr;
  }
  return true;
}

rte_mbuf* DiadEngine::BuildPacket(const Channel& ch, Header& header,
                                  std::span<const uint8_t> payload,
                                  const MemoryRegion* zero_copy) {
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  const Peer* peer = peers->FindBySlot(ch.slot);
  if (peer == nullptr) return nullptr;
  rte_mbuf* packet = rte_pktmbuf_alloc(shared_.pool);
  if (packet == nullptr) return nullptr;
  rte_mbuf* body = nullptr;
  if (zero_copy != nullptr && shared_.region_tx != nullptr) {
    body = shared_.region_tx->Attach(shared_.pool, *zero_copy, payload.data(),
                                     static_cast<uint16_t>(payload.size()));
    if (body == nullptr) counters_.zero_copy_fallbacks.Add();
  }
  const uint32_t length = static_cast<uint32_t>(
      kFrameOverhead + (body != nullptr ? 0 : payload.size()));
  uint8_t* out = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(packet, length));
  if (out == nullptr) {
    rte_pktmbuf_free(packet);
    if (body != nullptr) rte_pktmbuf_free(body);
    return nullptr;
  }
  header.channel = ch.channel;
  header.src_epoch = ch.session.my_epoch();
  // A challenge ACK goes to the epoch it challenges (SendControl).
  if (header.dst_epoch == 0) header.dst_epoch = ch.session.peer_epoch();
  Endpoint dst;
  dst.mac = peer->mac;
  dst.ip = peer->node;
  if (body == nullptr) {
    BuildFrame(self_, dst, config_.udp_port, header, payload, out);
    return packet;
  }
  BuildFrameHeaders(self_, dst, config_.udp_port, header, payload, out);
  rte_pktmbuf_chain(packet, body);  // two segments: cannot exceed the limit
  counters_.zero_copy_packets.Add();
  return packet;
}

bool DiadEngine::SendSequenced(Channel& ch, Header& header,
                               std::span<const uint8_t> payload, uint32_t txn,
                               bool completes_txn, uint64_t now,
                               const MemoryRegion* zero_copy) {
  // A congestion window below one packet: one every RTT / W (the callers
  // stop and go on at a later poll, as when no mbuf could be had).
  if (ch.cc && now < ch.next_send_ns) [[unlikely]] {
    counters_.cc_paced.Add();
    return false;
  }
  header.seq = ch.tx.next_seq();
  header.ack = ch.rx.expected();
  rte_mbuf* held = BuildPacket(ch, header, payload, zero_copy);
  if (held == nullptr) {
    counters_.drops[static_cast<size_t>(DiadDrop::kNoBuffer)].Add();
    return false;
  }
  rte_mbuf* copy = rte_pktmbuf_clone(held, shared_.clone_pool);
  if (copy == nullptr) {
    rte_pktmbuf_free(held);
    counters_.drops[static_cast<size_t>(DiadDrop::kNoBuffer)].Add();
    return false;
  }
  ch.tx.Push(held, static_cast<uint32_t>(payload.size()), txn, completes_txn,
             now);
  ch.last_sent_ns = now;
  if (ch.cc) {
    const int64_t gap = ch.cc->PacingGapNs();
    if (gap > 0) ch.next_send_ns = now + static_cast<uint64_t>(gap);
  }
  // The packet carries our cumulative ack: that is an ACK sent, unless the
  // peer asked for an explicit probe reply, a SACK is due, or a CE mark
  // waits for its echo (only an ACK carries it).
  if (!ch.rx.explicit_ack_due() && !ch.ce_pending) ch.rx.OnAckSent();
  counters_.tx_data.Add();
  counters_.tx_bytes.Add(held->pkt_len);
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  pc.tx_packets.Add();
  pc.tx_bytes.Add(held->pkt_len);
  pc.in_flight_packets.store(ch.tx.in_flight_packets(),
                             std::memory_order_relaxed);
  hpu_->Transmit(config_.port, copy);
  return true;
}

void DiadEngine::Retransmit(Channel& ch, rte_mbuf* held) {
  rte_mbuf* copy = rte_pktmbuf_clone(held, shared_.clone_pool);
  if (copy == nullptr) {
    counters_.drops[static_cast<size_t>(DiadDrop::kNoBuffer)].Add();
    return;  // the timer retries
  }
  counters_.retransmits.Add();
  peer_counters_[ch.slot].retransmits.Add();
  hpu_->Transmit(config_.port, copy);
}

void DiadEngine::SendControl(Channel& ch, PacketType type, uint8_t flags,
                             uint32_t ack, uint32_t challenge_epoch) {
  Header h;
  h.type = type;
  h.flags = flags;
  h.seq = ch.tx.next_seq();
  h.ack = ack;
  h.dst_epoch = challenge_epoch;
  // SELECTIVE: every control packet advertises it (the paper's wire
  // ignores `key` here); an ACK on a negotiated channel carries what the
  // receiver holds beyond `ack`.
  h.key = ch.sack.advert();
  // Congestion control: every control packet advertises the ECN echo (the
  // paper's wire ignores `address` here), and an ACK echoes CE marks to a
  // peer that advertised it too.
  if (ch.cc) {
    h.address = kEcnEchoCapable;
    if (type == PacketType::kAck && ch.ce_pending && ch.ecn_peer &&
        ack == ch.rx.expected()) {
      h.flags = static_cast<uint8_t>(h.flags | kFlagEcnEcho);
    }
  }
  std::span<const uint8_t> payload;
  if (type == PacketType::kAck && ch.sack.active() && ack == ch.rx.expected()) {
    // A probe reply names the UNACK it answers (its seq): the sender then
    // knows which of its packets the reply can speak for.
    if ((flags & kFlagProbeReply) != 0) h.txn = ch.rx.probe_echo();
    const uint32_t bytes =
        ch.reorder.WriteSack(ack, sack_scratch_.data(), config_.max_payload());
    if (bytes > 0) {
      h.flags = static_cast<uint8_t>(h.flags | kFlagSack);
      h.msg_length = bytes;
      payload = {sack_scratch_.data(), bytes};
    }
  }
  rte_mbuf* packet = BuildPacket(ch, h, payload);
  if (packet == nullptr) {
    counters_.drops[static_cast<size_t>(DiadDrop::kNoBuffer)].Add();
    return;
  }
  if (type == PacketType::kAck) {
    ch.rx.OnAckSent();
    counters_.acks_sent.Add();
    if ((h.flags & kFlagEcnEcho) != 0) {
      ch.ce_pending = false;
      counters_.ecn_echoes_sent.Add();
    }
    if (!payload.empty()) counters_.sacks_sent.Add();
  }
  hpu_->Transmit(config_.port, packet);
}

}  // namespace spinnic::diad
