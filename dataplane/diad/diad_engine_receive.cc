// DiadEngine's receive path (diad_engine.h): a DiAD packet checked and
// acknowledged, sequenced packets delivered in order (writes and stream
// records deposited, the bound ECTX's handlers run on them), read requests
// answered, responses completing our transactions, and neighbor
// solicitations for our node address answered.
#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "dataplane/contiguous.h"
#include "dataplane/diad/diad_engine.h"
#include "dataplane/diad/stream_ring.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/neighbor.h"
#include "dataplane/neighbor_service.h"
#include "dataplane/region_table.h"

namespace spinnic::diad {

void DiadEngine::Receive(rte_mbuf* packet, const ParsedFrame& frame,
                         uint16_t in_port, const EctxTable& table) {
  if (frame.layers.ip_proto == kIcmpv6) {
    AnswerNeighbor(packet, frame, in_port);
    return;
  }
  if (frame.layers.ip_proto != 17 || !frame.has_l4_ports ||
      frame.dst_port != config_.udp_port) {
    // Our node address, but nothing DiAD: not a service we offer.
    Drop(packet, DiadDrop::kBadType);
    return;
  }
  if (!MakeContiguous(&packet, shared_.pool)) {
    Drop(packet, DiadDrop::kNoBuffer);
    return;
  }
  const uint8_t* data = rte_pktmbuf_mtod(packet, const uint8_t*);
  // The channel's owner first: a frame RSS gave to the wrong HPU is handed
  // over before anything reads its state.
  if (frame.src_port >= kChannelPortBase && shared_.hpu_count > 1) {
    uint32_t owner = static_cast<uint32_t>(frame.src_port - kChannelPortBase) %
                     shared_.hpu_count;
    if (owner != hpu_index_) {
      packet->port = in_port;
      if (rte_ring_mp_enqueue(shared_.inbound[owner], packet) != 0) {
        Drop(packet, DiadDrop::kHandoffFull);
      } else {
        counters_.handoffs.Add();
      }
      return;
    }
  }
  counters_.rx_packets.Add();
  counters_.rx_bytes.Add(packet->pkt_len);

  Header h;
  uint32_t payload_offset = 0;
  ParseError error = ParseFrame(data, packet->data_len, frame.layers.l3_offset,
                                frame.layers.l4_offset, &h, &payload_offset);
  if (error != ParseError::kNone) {
    Drop(packet, static_cast<DiadDrop>(error));
    return;
  }
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  const Peer* peer = peers->FindByNode(frame.src_addr.data());
  if (peer == nullptr) {
    Drop(packet, DiadDrop::kUnknownPeer);
    return;
  }
  if (h.channel >= config_.channels) {
    Drop(packet, DiadDrop::kBadChannel);
    return;
  }
  Channel* ch = ChannelFor(*peer, h.channel);
  if (ch == nullptr) {
    Drop(packet, DiadDrop::kBadChannel);
    return;
  }
  DiadPeerCounters& pc = peer_counters_[ch->slot];
  pc.rx_packets.Add();
  pc.rx_bytes.Add(packet->pkt_len);
  const uint64_t now = Now();

  switch (ch->session.Check(h.src_epoch, h.dst_epoch)) {
    case Session::Verdict::kOk:
      break;
    case Session::Verdict::kPeerReset:
      counters_.peer_reset.Add();
      pc.resets.Add();
      RaiseChannelEvent(kEventDiadPeerReset, *ch, 0, Status::kPeerReset);
      ResetChannel(*ch, Status::kPeerReset, &table);
      break;
    case Session::Verdict::kStale:
      // Tell the old session who we are now (at most once per interval),
      // so that it resets instead of retrying into the void.
      if (now - ch->last_stale_reply_ns >= config_.channel.nack_interval_ns) {
        ch->last_stale_reply_ns = now;
        SendControl(*ch, PacketType::kAck, 0, ch->rx.expected());
      }
      Drop(packet, DiadDrop::kStaleEpoch);
      return;
    case Session::Verdict::kChallenge:
      // As rate-limited as the stale reply: a flood of forged restarts
      // gets one challenge per interval, and no reset.
      if (now - ch->last_stale_reply_ns >= config_.channel.nack_interval_ns) {
        ch->last_stale_reply_ns = now;
        SendControl(*ch, PacketType::kAck, 0, 0, h.src_epoch);
        counters_.reset_challenges.Add();
      }
      Drop(packet, DiadDrop::kUnverifiedReset);
      return;
  }
  ch->last_heard_ns = now;
  if (ch->down) {
    ch->down = false;
    pc.channels_down.fetch_sub(1, std::memory_order_relaxed);
  }

  // The IPv6 traffic class's ECN bits (ParseFrame proved the IPv6 header
  // is there): a CE mark means a queue on the path is building.
  if (((data[frame.layers.l3_offset + 1] >> 4) & 3) == kEcnCe) [[unlikely]] {
    counters_.ce_marks_received.Add();
    pc.ce_marks_received.Add();
    // Echoed on our next ACK (a sequenced packet's only: ACKs are not
    // congestion-controlled).
    if (ch->ecn_peer && IsSequenced(h.type)) ch->ce_pending = true;
  }
  if (OnControl(*ch, h, packet, payload_offset, now)) return;
  // A sequenced packet: its piggybacked ack first (valid or not, the
  // packet's own sequence number is judged on its own).
  ApplyAck(*ch, h.ack, GoBack::kNo, now);

  // A request that will need a response slot waits (unaccepted: the sender
  // retransmits) while the response queue is full.
  const bool needs_response = h.type == PacketType::kReadRequest ||
                              (h.type == PacketType::kWriteRequest && h.last());
  if (needs_response && h.seq == ch->rx.expected() &&
      ch->response_count == kMaxResponses) {
    Drop(packet, DiadDrop::kBusy);
    return;
  }
  ReceiveWindow::Result result =
      ch->rx.OnPacket(h.seq, (h.flags & kFlagAckNow) != 0, now);
  switch (result.verdict) {
    case ReceiveWindow::Verdict::kAccept:
      OnSequenced(*ch, h, packet, frame, payload_offset, in_port, table);
      if (ch->reorder.count() > 0) DrainReorder(*ch, table, now);
      return;
    case ReceiveWindow::Verdict::kDuplicate:
      Drop(packet, DiadDrop::kDuplicate);
      return;
    case ReceiveWindow::Verdict::kGap:
      if (ch->rx.selective()) {
        HoldOutOfOrder(*ch, h, packet, in_port);
        return;
      }
      if (result.send_nack) {
        SendControl(*ch, PacketType::kNack, 0, ch->rx.expected());
        counters_.nacks_sent.Add();
      }
      Drop(packet, DiadDrop::kOutOfOrder);
      return;
    case ReceiveWindow::Verdict::kOutside:
      Drop(packet, DiadDrop::kOutsideWindow);
      return;
  }
}

void DiadEngine::LearnRecovery(Channel& ch, const Header& h) {
  // Congestion control on both ends: our ACKs may echo CE marks. The first
  // time, an ACK (advertising back) goes out now, so that a peer that only
  // sends data learns it without waiting.
  if (ch.cc && !ch.ecn_peer && h.address == kEcnEchoCapable) {
    ch.ecn_peer = true;
    ch.rx.RequestSack();
  }
  const uint32_t key = h.key;
  if (ch.sack.OnControl(key == kSackCapable)) {
    ch.rx.set_selective(true);
    // Our next ACK advertises SELECTIVE back: a peer that only sends data
    // (and so hears only our control packets) learns it now.
    ch.rx.RequestSack();
  }
}

bool DiadEngine::OnControl(Channel& ch, const Header& h, rte_mbuf* packet,
                           uint32_t payload_offset, uint64_t now) {
  switch (h.type) {
    case PacketType::kAck:
      counters_.acks_received.Add();
      LearnRecovery(ch, h);
      if ((h.flags & kFlagEcnEcho) != 0) {
        counters_.ecn_echoes_received.Add();
        peer_counters_[ch.slot].ecn_echoes_received.Add();
      }
      if ((h.flags & kFlagSack) != 0 ||
          ((h.flags & kFlagProbeReply) != 0 && ch.sack.active())) {
        OnSelectiveAck(ch, h, packet, payload_offset, now);
        return true;
      }
      ApplyAck(
          ch, h.ack,
          (h.flags & kFlagProbeReply) != 0 ? GoBack::kProbeReply : GoBack::kNo,
          now, (h.flags & kFlagEcnEcho) != 0);
      rte_pktmbuf_free(packet);
      return true;
    case PacketType::kNack:
      counters_.nacks_received.Add();
      LearnRecovery(ch, h);
      ApplyAck(ch, h.ack, GoBack::kNack, now);
      rte_pktmbuf_free(packet);
      return true;
    case PacketType::kUnack:
      counters_.unacks_received.Add();
      LearnRecovery(ch, h);
      ch.rx.OnUnack(h.seq);
      rte_pktmbuf_free(packet);
      return true;
    default:
      return false;
  }
}

void DiadEngine::OnSelectiveAck(Channel& ch, const Header& h, rte_mbuf* packet,
                                uint32_t payload_offset, uint64_t now) {
  const bool sack = (h.flags & kFlagSack) != 0;
  if (!ch.sack.active()) {
    // Only a SELECTIVE peer that saw our advert sends SACKs.
    Drop(packet, DiadDrop::kSackUnexpected);
    return;
  }
  std::span<const uint8_t> bitmap;
  if (sack) {
    bitmap = {rte_pktmbuf_mtod(packet, const uint8_t*) + payload_offset,
              h.payload_length};
  }
  // Checked whole before anything is applied: a bad SACK changes nothing.
  switch (ch.tx.CheckSack(h.ack, bitmap)) {
    case SackVerdict::kOk:
      break;
    case SackVerdict::kOverlapsAck:
      Drop(packet, DiadDrop::kSackOverlapsAck);
      return;
    case SackVerdict::kNeverSent:
      Drop(packet, DiadDrop::kSackNeverSent);
      return;
  }
  if (ApplyAck(ch, h.ack, GoBack::kNo, now, (h.flags & kFlagEcnEcho) != 0)) {
    if (sack) counters_.sacks_received.Add();
    const uint64_t samples = ch.tx.rtt().samples();
    ch.tx.OnSack(h.ack, bitmap, (h.flags & kFlagProbeReply) != 0, h.txn, now,
                 [&](rte_mbuf* held) { Retransmit(ch, held); });
    if (ch.tx.rtt().samples() != samples) {
      NoteRtt(ch, samples, ch.tx.karn_skips());
    }
  }
  rte_pktmbuf_free(packet);
}

void DiadEngine::HoldOutOfOrder(Channel& ch, const Header& h, rte_mbuf* packet,
                                uint16_t in_port) {
  packet->port = in_port;  // for its delivery later
  switch (ch.reorder.Hold(h.seq, ch.rx.expected(), packet)) {
    case ReorderBuffer<rte_mbuf*>::HoldVerdict::kHeld:
      counters_.reorder_held.Add();
      ch.rx.RequestSack();
      return;
    case ReorderBuffer<rte_mbuf*>::HoldVerdict::kDuplicate:
      // Held already: the sender missed our SACK; repeat it.
      ch.rx.RequestSack();
      Drop(packet, DiadDrop::kDuplicate);
      return;
    case ReorderBuffer<rte_mbuf*>::HoldVerdict::kFull:
      // Bounded memory: drop it, unSACKed, so the sender resends it.
      Drop(packet, DiadDrop::kReorderFull);
      return;
    case ReorderBuffer<rte_mbuf*>::HoldVerdict::kOutside:
      Drop(packet, DiadDrop::kOutOfOrder);
      return;
  }
}

void DiadEngine::DrainReorder(Channel& ch, const EctxTable& table,
                              uint64_t now) {
  bool drained = false;
  for (;;) {
    rte_mbuf* const* peek = ch.reorder.Find(ch.rx.expected());
    if (peek == nullptr) break;
    rte_mbuf* packet = *peek;
    // Parsed again (it was valid when held; its bytes did not change):
    // holding the parse results would cost a window of them per channel.
    ParsedFrame frame;
    spinnic::ParseFrame(rte_pktmbuf_mtod(packet, const uint8_t*),
                        packet->data_len, &frame);
    Header h;
    uint32_t payload_offset = 0;
    if (ParseFrame(rte_pktmbuf_mtod(packet, const uint8_t*), packet->data_len,
                   frame.layers.l3_offset, frame.layers.l4_offset, &h,
                   &payload_offset) != ParseError::kNone ||
        h.seq != ch.rx.expected()) {
      rte_mbuf* gone = nullptr;
      ch.reorder.Take(ch.rx.expected(), &gone);
      Drop(gone, DiadDrop::kOutOfOrder);
      break;
    }
    const bool needs_response =
        h.type == PacketType::kReadRequest ||
        (h.type == PacketType::kWriteRequest && h.last());
    // No response slot: it stays held (SACKed, so it must not be dropped);
    // PumpChannel tries again.
    if (needs_response && ch.response_count == kMaxResponses) break;
    rte_mbuf* taken = nullptr;
    ch.reorder.Take(h.seq, &taken);
    ch.rx.OnPacket(h.seq, (h.flags & kFlagAckNow) != 0, now);
    OnSequenced(ch, h, taken, frame, payload_offset, taken->port, table);
    drained = true;
  }
  // The cumulative ack jumped: tell the sender now (it releases a run of
  // packets), with what is still held.
  if (drained) ch.rx.RequestSack();
}

bool DiadEngine::ApplyAck(Channel& ch, uint32_t ack, GoBack go_back,
                          uint64_t now, bool ecn_echo) {
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  auto release = [&](rte_mbuf* held, uint32_t txn, bool completes_txn) {
    rte_pktmbuf_free(held);
    if (completes_txn && ch.txns.Find(txn, PacketType::kStream) != nullptr) {
      Finish(ch, txn, ch.txns.End(txn), Status::kOk);
    }
  };
  const uint64_t samples = ch.tx.rtt().samples();
  const uint64_t skips = ch.tx.karn_skips();
  const uint32_t base = ch.tx.base();
  SendWindow<rte_mbuf*>::AckVerdict verdict = ch.tx.OnAck(ack, now, release);
  if (verdict == SendWindow<rte_mbuf*>::AckVerdict::kInvalid) {
    counters_.drops[static_cast<size_t>(DiadDrop::kInvalidAck)].Add();
    return false;
  }
  const bool progress = verdict == SendWindow<rte_mbuf*>::AckVerdict::kProgress;
  if (progress) NoteRtt(ch, samples, skips);
  if (ch.cc && (progress || ecn_echo)) {
    // Karn: the sample counts only when this ack took one (never from a
    // retransmission); an ack without one still carries its echo.
    OnCongestionAck(ch, now, ch.tx.base() - base,
                    ch.tx.rtt().samples() != samples, ecn_echo);
  }
  // The ack is applied (and its packets released) above, so GoBackN's own
  // application of it changes nothing; it retransmits the rest.
  auto retransmit = [&](rte_mbuf* held) { Retransmit(ch, held); };
  if (go_back == GoBack::kNack) {
    ch.tx.GoBackN(ack, now, retransmit);
  } else if (go_back == GoBack::kProbeReply) {
    ch.tx.GoBackNOnProbeReply(ack, now, retransmit);
  }
  pc.in_flight_packets.store(ch.tx.in_flight_packets(),
                             std::memory_order_relaxed);
  return true;
}

void DiadEngine::OnCongestionAck(Channel& ch, uint64_t now, uint32_t acked,
                                 bool sampled, bool ecn_echo) {
  if (!ch.cc || (!sampled && !ecn_echo)) return;
  const DelayWindowCounters before = ch.cc->counters();
  // Without a sample of its own, an echo is gated by the last good RTT.
  const int64_t rtt = sampled
                          ? static_cast<int64_t>(ch.tx.rtt().last_sample_ns())
                          : ch.cc->last_rtt_ns();
  ch.cc->OnAck(static_cast<int64_t>(now), rtt, acked, ecn_echo);
  ApplyCongestionWindow(ch, before);
}

void DiadEngine::OnCongestionTimeout(Channel& ch, uint64_t now) {
  if (!ch.cc) return;
  const DelayWindowCounters before = ch.cc->counters();
  ch.cc->OnRetransmitTimeout(static_cast<int64_t>(now));
  ApplyCongestionWindow(ch, before);
}

void DiadEngine::ApplyCongestionWindow(Channel& ch,
                                       const DelayWindowCounters& before) {
  const DelayWindow& cc = *ch.cc;
  ch.tx.set_congestion_window(cc.PacketsInFlight());
  const DelayWindowCounters& after = cc.counters();
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  if (after.delay_decreases != before.delay_decreases) {
    counters_.cc_delay_decreases.Add();
    pc.cc_delay_decreases.Add();
  }
  if (after.ecn_decreases != before.ecn_decreases) {
    counters_.cc_ecn_decreases.Add();
    pc.cc_ecn_decreases.Add();
  }
  if (after.timeout_decreases != before.timeout_decreases) {
    counters_.cc_timeout_decreases.Add();
    pc.cc_timeout_decreases.Add();
  }
  pc.cc_window.store(cc.window(), std::memory_order_relaxed);
  pc.cc_rtt_ns.store(static_cast<uint64_t>(cc.last_rtt_ns()),
                     std::memory_order_relaxed);
}

void DiadEngine::NoteRtt(Channel& ch, uint64_t samples_before,
                         uint64_t skips_before) {
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  const uint64_t samples = ch.tx.rtt().samples() - samples_before;
  if (samples != 0) {
    counters_.rtt_samples.Add(samples);
    // An ACK gives at most one sample (the newest packet it releases); were
    // there more since samples_before, they would count at the newest value.
    counters_.rtt.Record(ch.tx.rtt().last_sample_ns(), samples);
    pc.rtt_samples.Add(samples);
    pc.srtt_ns.store(ch.tx.rtt().srtt_ns(), std::memory_order_relaxed);
    pc.rto_ns.store(ch.tx.base_rto_ns(), std::memory_order_relaxed);
  }
  const uint64_t skips = ch.tx.karn_skips() - skips_before;
  if (skips != 0) counters_.rtt_karn_skips.Add(skips);
}

void DiadEngine::OnSequenced(Channel& ch, const Header& h, rte_mbuf* packet,
                             const ParsedFrame& frame, uint32_t payload_offset,
                             uint16_t in_port, const EctxTable& table) {
  const uint8_t* payload =
      rte_pktmbuf_mtod(packet, const uint8_t*) + payload_offset;
  switch (h.type) {
    case PacketType::kWriteRequest:
      OnWrite(ch, h, packet, frame, payload_offset, in_port, table);
      return;
    case PacketType::kStream:
      OnStream(ch, h, packet, frame, payload_offset, in_port, table);
      return;
    case PacketType::kReadRequest:
      OnReadRequest(ch, h);
      break;
    case PacketType::kReadResponse:
      OnReadResponse(ch, h, payload);
      break;
    case PacketType::kWriteResponse:
      OnWriteResponse(ch, h);
      break;
    default:
      break;
  }
  rte_pktmbuf_free(packet);
}

bool DiadEngine::RunHandlers(const Channel& ch, const Header& h,
                             RxMessage& message, const Ectx& ectx,
                             rte_mbuf* packet, const ParsedFrame& frame,
                             uint32_t payload_offset, uint16_t in_port) {
  PacketLayers layers = frame.layers;
  layers.payload_offset = static_cast<uint16_t>(payload_offset);
  // Every DiAD header carries the message's length and this packet's offset
  // (ParseFrame checked msg_offset + payload_length <= msg_length).
  MessageInfo info;
  info.transport = h.type == PacketType::kWriteRequest
                       ? MessageTransport::kDiadWrite
                       : MessageTransport::kDiadStream;
  info.source = ch.slot;
  info.offset = h.msg_offset;
  info.length = h.msg_length;
  info.address = h.type == PacketType::kWriteRequest ? h.address : 0;
  info.key = h.key;  // the stream id, or the write's rkey
  PacketView view(rte_pktmbuf_mtod(packet, uint8_t*), packet->data_len, layers,
                  in_port, info);
  hpu_->SetActionOrigin(in_port, ectx.id());
  delivering_ = true;
  spin_->Deliver(ectx, message.spin, view, h.first(), h.last());
  delivering_ = false;
  hpu_->SetActionOrigin(kNoPort, 0);
  return view.GetDisposition() == Disposition::kForward;
}

void DiadEngine::OnWrite(Channel& ch, const Header& h, rte_mbuf* packet,
                         const ParsedFrame& frame, uint32_t payload_offset,
                         uint16_t in_port, const EctxTable& table) {
  RxMessage& m = ch.rx_message;
  const RegionTable* regions = shared_.regions->load(std::memory_order_acquire);
  const MemoryRegion* region = regions->FindByRkey(h.key);
  if (h.first()) {
    m = RxMessage();
    m.active = true;
    m.type = h.type;
    m.key = h.key;
    m.length = h.msg_length;
    // The whole message's range is checked up front: a bad access writes
    // nothing at all.
    const uint64_t start = h.address - h.msg_offset;
    if (region == nullptr) {
      m.status = Status::kBadKey;
    } else if ((region->access() & kRemoteWrite) == 0) {
      m.status = Status::kNoAccess;
    } else if (h.msg_length == 0 ||
               region->Translate(start, h.msg_length, kRemoteWrite).empty()) {
      m.status = Status::kOutOfBounds;
    }
    if (region != nullptr) {
      if (const Ectx* ectx = table.FindBound(kBindRegionWrites, region->id())) {
        m.ectx_id = ectx->id();
      }
    }
  } else if (!m.active || m.type != h.type) {
    // In order, yet no FIRST: the peer broke the protocol. Nothing written.
    Drop(packet, DiadDrop::kNoFirst);
    return;
  }
  bool deposit = m.status == Status::kOk;
  // A message its handlers rejected still goes through them (the engine
  // drops each packet), so that its completion handler runs after the last
  // packet with the dropped bytes, as for every other message.
  if ((deposit || m.status == Status::kRejected) && m.ectx_id != kNoEctx) {
    const Ectx* ectx = region != nullptr
                           ? table.FindBound(kBindRegionWrites, region->id())
                           : nullptr;
    if (ectx != nullptr && ectx->id() == m.ectx_id) {
      deposit =
          RunHandlers(ch, h, m, *ectx, packet, frame, payload_offset, in_port);
      if (m.spin.mode == MessageState::Mode::kDropAll ||
          m.spin.mode == MessageState::Mode::kFailed) {
        m.status = Status::kRejected;
      }
    }
  }
  if (deposit && m.status == Status::kOk) {
    std::span<uint8_t> dst =
        region == nullptr
            ? std::span<uint8_t>()
            : region->Translate(h.address, h.payload_length, kRemoteWrite);
    if (dst.size() != h.payload_length) {
      m.status = region == nullptr ? Status::kBadKey : Status::kOutOfBounds;
    } else {
      std::memcpy(dst.data(),
                  rte_pktmbuf_mtod(packet, const uint8_t*) + payload_offset,
                  h.payload_length);
    }
  }
  if (h.last()) {
    m.active = false;
    if (m.status == Status::kOk) {
      counters_.messages_delivered.Add();
      counters_.bytes_delivered.Add(m.length);
    }
    counters_.Refused(m.status);
    ResponseJob& job = NewResponse(ch, PacketType::kWriteResponse, h);
    job.status = m.status;
    job.address = h.address - h.msg_offset;
    job.length = m.length;
  }
  rte_pktmbuf_free(packet);
}

void DiadEngine::OnStream(Channel& ch, const Header& h, rte_mbuf* packet,
                          const ParsedFrame& frame, uint32_t payload_offset,
                          uint16_t in_port, const EctxTable& table) {
  RxMessage& m = ch.rx_message;
  const RegionTable* regions = shared_.regions->load(std::memory_order_acquire);
  if (h.first()) {
    m = RxMessage();
    m.active = true;
    m.type = h.type;
    m.key = h.key;
    m.length = h.msg_length;
    if (const Ectx* ectx = table.FindBound(kBindStream, h.key))
      m.ectx_id = ectx->id();
    m.ring = regions->FindByStream(h.key);
    if (m.ring != nullptr) {
      m.deposit = StreamRing(m.ring->bytes())
                      .Reserve(h.msg_length, h.key, &m.ring_offset);
    }
    if (m.ectx_id == kNoEctx && m.ring == nullptr) {
      counters_.stream_no_target.Add();
    }
  } else if (!m.active || m.type != h.type) {
    Drop(packet, DiadDrop::kNoFirst);
    return;
  }
  bool deposit = true;
  if (m.ectx_id != kNoEctx) {
    const Ectx* ectx = table.FindBound(kBindStream, h.key);
    if (ectx != nullptr && ectx->id() == m.ectx_id) {
      deposit =
          RunHandlers(ch, h, m, *ectx, packet, frame, payload_offset, in_port);
    }
  }
  // The ring region may have been replaced mid-message; deposit only into
  // the one the record was reserved in, while it is still registered.
  if (deposit && m.deposit && regions->FindByStream(h.key) == m.ring) {
    StreamRing(m.ring->bytes())
        .Write(m.ring_offset, h.msg_offset,
               {rte_pktmbuf_mtod(packet, const uint8_t*) + payload_offset,
                h.payload_length});
  }
  if (h.last()) {
    m.active = false;
    if (m.deposit && regions->FindByStream(h.key) == m.ring) {
      StreamRing(m.ring->bytes()).Commit(h.msg_length);
    }
    counters_.messages_delivered.Add();
    counters_.bytes_delivered.Add(m.length);
  }
  rte_pktmbuf_free(packet);
}

DiadEngine::ResponseJob& DiadEngine::NewResponse(Channel& ch, PacketType type,
                                                 const Header& request) {
  // Callers checked for room before accepting the request.
  ResponseJob& job =
      ch.responses[(ch.response_head + ch.response_count) % kMaxResponses];
  ++ch.response_count;
  job = ResponseJob();
  job.type = type;
  job.txn = request.txn;
  job.key = request.key;
  job.address = request.address;
  job.length = request.msg_length;
  return job;
}

void DiadEngine::OnReadRequest(Channel& ch, const Header& h) {
  ResponseJob& job = NewResponse(ch, PacketType::kReadResponse, h);
  const RegionTable* regions = shared_.regions->load(std::memory_order_acquire);
  const MemoryRegion* region = regions->FindByRkey(h.key);
  if (region == nullptr) {
    job.status = Status::kBadKey;
  } else if ((region->access() & kRemoteRead) == 0) {
    job.status = Status::kNoAccess;
  } else if (h.msg_length == 0 || h.msg_length > config_.max_message_bytes) {
    job.status = Status::kBadLength;
  } else if (region->Translate(h.address, h.msg_length, kRemoteRead).empty()) {
    job.status = Status::kOutOfBounds;
  } else if (!region->Pin()) {
    job.status = Status::kBadKey;  // being deregistered
  } else {
    job.region = region;
  }
  counters_.Refused(job.status);
}

void DiadEngine::OnReadResponse(Channel& ch, const Header& h,
                                const uint8_t* payload) {
  Txn* t = ch.txns.Find(h.txn, PacketType::kReadRequest);
  if (t == nullptr) {
    counters_.drops[static_cast<size_t>(DiadDrop::kUnknownTxn)].Add();
    return;
  }
  if (h.status != Status::kOk) {
    Finish(ch, h.txn, ch.txns.End(h.txn), h.status);
    return;
  }
  // Where the bytes go: the operation's buffer or the handler's region.
  std::span<uint8_t> dest =
      t->op != nullptr
          ? std::span<uint8_t>(reinterpret_cast<uint8_t*>(t->op->data.data()),
                               t->op->data.size())
          : t->dest->bytes().subspan(t->dest_offset, t->length);
  uint32_t& received = t->op != nullptr ? t->op->received : t->received;
  if (h.msg_length != dest.size() ||
      uint64_t{h.msg_offset} + h.payload_length > dest.size() ||
      h.msg_offset != received) {
    // Not what we asked for: the transaction fails rather than guess.
    Finish(ch, h.txn, ch.txns.End(h.txn), Status::kBadLength);
    return;
  }
  std::memcpy(dest.data() + h.msg_offset, payload, h.payload_length);
  received += h.payload_length;
  // The answer is coming: a long read is not cut off while it flows.
  // (Deadlines only move later, so the channel's lower bound stays valid.)
  if (!h.last()) {
    const uint64_t now = Now();
    t->deadline_ns = now > UINT64_MAX - txn_deadline_ns_
                         ? UINT64_MAX
                         : now + txn_deadline_ns_;
  }
  if (h.last()) {
    const bool whole = received == dest.size();
    Finish(ch, h.txn, ch.txns.End(h.txn),
           whole ? Status::kOk : Status::kBadLength);
  }
}

void DiadEngine::OnWriteResponse(Channel& ch, const Header& h) {
  if (ch.txns.Find(h.txn, PacketType::kWriteRequest) == nullptr) {
    counters_.drops[static_cast<size_t>(DiadDrop::kUnknownTxn)].Add();
    return;
  }
  Finish(ch, h.txn, ch.txns.End(h.txn), h.status);
}

void DiadEngine::AnswerNeighbor(rte_mbuf* packet, const ParsedFrame& frame,
                                uint16_t in_port) {
  LocalAddresses local;
  local.mac = config_.mac;
  local.ipv6 = {&config_.node, 1};
  switch (spinnic::AnswerNeighbor(packet, frame, local, shared_.pool, *hpu_,
                                  in_port)) {
    case NeighborOutcome::kAnswered:
      counters_.neighbor_answers.Add();
      break;
    case NeighborOutcome::kNoBuffer:
      counters_.Drop(DiadDrop::kNoBuffer);
      break;
    case NeighborOutcome::kIgnored:
    case NeighborOutcome::kMalformed:
      // Other ICMPv6 to our node address (echo, a peer's advertisement):
      // not served; counted with the neighbour answers' misses.
      counters_.neighbor_ignored.Add();
      break;
  }
}

}  // namespace spinnic::diad
