#include "dataplane/diad/diad_engine.h"

#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>

#include "dataplane/common/clock.h"
#include "dataplane/diad/stream_ring.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"
#include "dataplane/neighbor.h"
#include "dataplane/region_table.h"

namespace spinnic::diad {
namespace {

constexpr uint32_t kCommandBurst = 32;
constexpr uint32_t kNoEctx = UINT32_MAX;

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

const char* DiadDropName(DiadDrop drop) {
  switch (drop) {
    case DiadDrop::kTruncated:
      return "truncated";
    case DiadDrop::kBadVersion:
      return "bad_version";
    case DiadDrop::kBadType:
      return "bad_type";
    case DiadDrop::kBadFlags:
      return "bad_flags";
    case DiadDrop::kBadReserved:
      return "bad_reserved";
    case DiadDrop::kBadLength:
      return "bad_length";
    case DiadDrop::kBadChecksum:
      return "bad_checksum";
    case DiadDrop::kChannelMismatch:
      return "channel_mismatch";
    case DiadDrop::kUnknownPeer:
      return "unknown_peer";
    case DiadDrop::kBadChannel:
      return "bad_channel";
    case DiadDrop::kStaleEpoch:
      return "stale_epoch";
    case DiadDrop::kDuplicate:
      return "duplicate";
    case DiadDrop::kOutOfOrder:
      return "out_of_order";
    case DiadDrop::kOutsideWindow:
      return "outside_window";
    case DiadDrop::kBusy:
      return "busy";
    case DiadDrop::kUnknownTxn:
      return "unknown_txn";
    case DiadDrop::kInvalidAck:
      return "invalid_ack";
    case DiadDrop::kNoFirst:
      return "no_first";
    case DiadDrop::kNoBuffer:
      return "no_buffer";
    case DiadDrop::kHandoffFull:
      return "handoff_full";
    case DiadDrop::kCount:
      break;
  }
  return "unknown";
}

DiadEngine::Channel::Channel(const ChannelConfig& config)
    : rx(config), tx(config), txns(config.max_transactions) {}

DiadEngine::DiadEngine(uint32_t hpu_index, const DiadShared& shared, Hpu* hpu,
                       SpinEngine* spin, uint64_t epoch_seed)
    : hpu_index_(hpu_index),
      shared_(shared),
      config_(*shared.config),
      hpu_(hpu),
      spin_(spin),
      rng_state_(epoch_seed ^ (uint64_t{hpu_index} << 48)),
      peer_counters_(shared.config->max_peers) {
  const uint32_t hpus = std::max<uint32_t>(shared_.hpu_count, 1);
  // Channels c with c % hpus == hpu_index.
  for (uint32_t c = hpu_index_; c < config_.channels; c += hpus) {
    ++local_channels_;
  }
  channels_.reserve(size_t{config_.max_peers} * local_channels_);
  for (size_t i = 0; i < size_t{config_.max_peers} * local_channels_; ++i) {
    channels_.push_back(std::make_unique<Channel>(config_.channel));
  }
  self_.mac = config_.mac;
  self_.ip = config_.node;
  solicited_node_ = {0xff,
                     0x02,
                     0,
                     0,
                     0,
                     0,
                     0,
                     0,
                     0,
                     0,
                     0,
                     0x01,
                     0xff,
                     config_.node[13],
                     config_.node[14],
                     config_.node[15]};
  down_after_ns_ = DownAfterNs(config_.channel);
}

DiadEngine::~DiadEngine() { Shutdown(); }

uint32_t DiadEngine::NextEpoch() {
  uint32_t epoch = 0;
  while (epoch == 0) epoch = static_cast<uint32_t>(SplitMix(rng_state_));
  return epoch;
}

DiadEngine::Channel* DiadEngine::ChannelFor(const Peer& peer,
                                            uint16_t channel) {
  const uint32_t hpus = std::max<uint32_t>(shared_.hpu_count, 1);
  size_t index = size_t{peer.slot} * local_channels_ + channel / hpus;
  if (peer.slot >= config_.max_peers || index >= channels_.size()) {
    return nullptr;
  }
  Channel& ch = *channels_[index];
  if (ch.generation != peer.generation) {
    // First use of this channel for the peer (or the peer was re-added).
    if (ch.generation != 0) ResetChannel(ch, Status::kAborted, nullptr);
    ch.generation = peer.generation;
    ch.slot = peer.slot;
    ch.channel = channel;
    ch.session = Session(NextEpoch());
  }
  return &ch;
}

// ---------------------------------------------------------------- receive

void DiadEngine::Receive(rte_mbuf* packet, const ParsedFrame& frame,
                         uint16_t in_port, const EctxTable& table) {
  const uint8_t* data = rte_pktmbuf_mtod(packet, const uint8_t*);
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
  if (packet->nb_segs != 1 && rte_pktmbuf_linearize(packet) != 0) {
    Drop(packet, DiadDrop::kNoBuffer);
    return;
  }
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
  const uint64_t now = clock::NowNanos();

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
  }
  ch->last_heard_ns = now;
  if (ch->down) {
    ch->down = false;
    pc.channels_down.fetch_sub(1, std::memory_order_relaxed);
  }

  switch (h.type) {
    case PacketType::kAck:
      counters_.acks_received.Add();
      ApplyAck(*ch, h.ack, (h.flags & kFlagProbeReply) != 0, now);
      rte_pktmbuf_free(packet);
      return;
    case PacketType::kNack:
      counters_.nacks_received.Add();
      ApplyAck(*ch, h.ack, /*go_back=*/true, now);
      rte_pktmbuf_free(packet);
      return;
    case PacketType::kUnack:
      counters_.unacks_received.Add();
      ch->rx.OnUnack();
      rte_pktmbuf_free(packet);
      return;
    default:
      break;
  }
  // A sequenced packet: its piggybacked ack first (valid or not, the
  // packet's own sequence number is judged on its own).
  ApplyAck(*ch, h.ack, /*go_back=*/false, now);

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
      return;
    case ReceiveWindow::Verdict::kDuplicate:
      Drop(packet, DiadDrop::kDuplicate);
      return;
    case ReceiveWindow::Verdict::kGap:
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

void DiadEngine::ApplyAck(Channel& ch, uint32_t ack, bool go_back,
                          uint64_t now) {
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  auto release = [&](rte_mbuf* held, uint32_t txn, bool completes_txn) {
    rte_pktmbuf_free(held);
    if (completes_txn && ch.txns.Find(txn, PacketType::kStream) != nullptr) {
      Finish(ch, txn, ch.txns.End(txn), Status::kOk);
    }
  };
  SendWindow<rte_mbuf*>::AckVerdict verdict = ch.tx.OnAck(ack, now, release);
  if (verdict == SendWindow<rte_mbuf*>::AckVerdict::kInvalid) {
    counters_.drops[static_cast<size_t>(DiadDrop::kInvalidAck)].Add();
    return;
  }
  // The ack is applied (and its packets released) above, so GoBackN's own
  // application of it changes nothing; it retransmits the rest.
  if (go_back) {
    ch.tx.GoBackN(ack, now, [&](rte_mbuf* held) { Retransmit(ch, held); });
  }
  pc.in_flight_packets.store(ch.tx.in_flight_packets(),
                             std::memory_order_relaxed);
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

bool DiadEngine::RunHandlers(RxMessage& message, const Ectx& ectx,
                             rte_mbuf* packet, const ParsedFrame& frame,
                             uint32_t payload_offset, uint16_t in_port,
                             bool first, bool last) {
  PacketLayers layers = frame.layers;
  layers.payload_offset = static_cast<uint16_t>(payload_offset);
  PacketView view(rte_pktmbuf_mtod(packet, uint8_t*), packet->data_len, layers,
                  in_port);
  hpu_->SetActionOrigin(in_port, ectx.id());
  spin_->Deliver(ectx, message.spin, view, first, last);
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
  if (deposit && m.ectx_id != kNoEctx) {
    const Ectx* ectx =
        region != nullptr ? table.FindBound(kBindRegionWrites, region->id()) : nullptr;
    if (ectx != nullptr && ectx->id() == m.ectx_id) {
      deposit = RunHandlers(m, *ectx, packet, frame, payload_offset, in_port,
                            h.first(), h.last());
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
    if (const Ectx* ectx = table.FindBound(kBindStream, h.key)) m.ectx_id = ectx->id();
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
      deposit = RunHandlers(m, *ectx, packet, frame, payload_offset, in_port,
                            h.first(), h.last());
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
  rte_mbuf* reply = rte_pktmbuf_alloc(shared_.pool);
  uint8_t* out = reply == nullptr
                     ? nullptr
                     : reinterpret_cast<uint8_t*>(
                           rte_pktmbuf_append(reply, kMaxNeighborReplyBytes));
  if (out == nullptr) {
    if (reply != nullptr) rte_pktmbuf_free(reply);
    Drop(packet, DiadDrop::kNoBuffer);
    return;
  }
  LocalAddresses local;
  local.mac = config_.mac;
  local.ipv6 = {&config_.node, 1};
  NeighborResult result = HandleNeighborFrame(
      {rte_pktmbuf_mtod(packet, const uint8_t*), packet->data_len}, frame,
      local, {out, kMaxNeighborReplyBytes});
  rte_pktmbuf_free(packet);
  if (result.verdict != NeighborVerdict::kAnswer) {
    // Other ICMPv6 to our node address (echo, a peer's advertisement): not
    // served; counted with the neighbour answers' misses.
    counters_.neighbor_ignored.Add();
    rte_pktmbuf_free(reply);
    return;
  }
  rte_pktmbuf_trim(reply, static_cast<uint16_t>(kMaxNeighborReplyBytes -
                                                result.reply_length));
  counters_.neighbor_answers.Add();
  hpu_->Transmit(in_port, reply);
}

// ---------------------------------------------------------------- send

void DiadEngine::Poll(const EctxTable& table) {
  SyncPeers(table);
  TakeCommands();
  const uint64_t now = clock::NowNanos();
  for (const std::unique_ptr<Channel>& ch : channels_) {
    if (ch->generation != 0) PumpChannel(*ch, now, table);
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
  // Responses first: they are what the peer's window waits on.
  if (PumpResponses(ch, now)) PumpOps(ch, now);
  if (ch.rx.AckDue(now)) {
    SendControl(ch, PacketType::kAck,
                ch.rx.probe_reply_due() ? kFlagProbeReply : 0,
                ch.rx.expected());
  }
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
      if (!ch.tx.CanSend(0)) return false;
      h.flags = kFlagFirst | kFlagLast | kFlagAckNow;
      h.address = job.address;
      if (!SendSequenced(ch, h, {}, 0, false, now)) return false;
    } else {
      const uint8_t* base =
          job.region->Translate(job.address, job.length, kRemoteRead).data();
      while (job.sent < job.length) {
        uint32_t segment = std::min(max_payload, job.length - job.sent);
        if (!ch.tx.CanSend(segment)) {
          if (ch.tx.UnackDueOnFullWindow(now)) {
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
        if (!SendSequenced(ch, h, {base + job.sent, segment}, 0, false, now)) {
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
      if (!ch.tx.CanSend(0)) return false;
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
        if (!ch.tx.CanSend(segment)) {
          if (ch.tx.UnackDueOnFullWindow(now)) {
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
    ch.queue_head = op->next;
    if (ch.queue_head == nullptr) ch.queue_tail = nullptr;
    op->next = nullptr;
  }
  return true;
}

rte_mbuf* DiadEngine::BuildPacket(const Channel& ch, Header& header,
                                  std::span<const uint8_t> payload) {
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  const Peer* peer = peers->FindBySlot(ch.slot);
  if (peer == nullptr) return nullptr;
  rte_mbuf* packet = rte_pktmbuf_alloc(shared_.pool);
  if (packet == nullptr) return nullptr;
  const uint32_t length =
      static_cast<uint32_t>(kFrameOverhead + payload.size());
  uint8_t* out = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(packet, length));
  if (out == nullptr) {
    rte_pktmbuf_free(packet);
    return nullptr;
  }
  header.channel = ch.channel;
  header.src_epoch = ch.session.my_epoch();
  header.dst_epoch = ch.session.peer_epoch();
  Endpoint dst;
  dst.mac = peer->mac;
  dst.ip = peer->node;
  BuildFrame(self_, dst, config_.udp_port, header, payload, out);
  return packet;
}

bool DiadEngine::SendSequenced(Channel& ch, Header& header,
                               std::span<const uint8_t> payload, uint32_t txn,
                               bool completes_txn, uint64_t now) {
  header.seq = ch.tx.next_seq();
  header.ack = ch.rx.expected();
  rte_mbuf* held = BuildPacket(ch, header, payload);
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
  // The packet carries our cumulative ack: that is an ACK sent, unless the
  // peer asked for an explicit probe reply.
  if (!ch.rx.probe_reply_due()) ch.rx.OnAckSent();
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
                             uint32_t ack) {
  Header h;
  h.type = type;
  h.flags = flags;
  h.seq = ch.tx.next_seq();
  h.ack = ack;
  rte_mbuf* packet = BuildPacket(ch, h, {});
  if (packet == nullptr) {
    counters_.drops[static_cast<size_t>(DiadDrop::kNoBuffer)].Add();
    return;
  }
  if (type == PacketType::kAck) {
    ch.rx.OnAckSent();
    counters_.acks_sent.Add();
  }
  hpu_->Transmit(config_.port, packet);
}

// ---------------------------------------------------------------- operations

void DiadEngine::TakeCommands() {
  DiadOp* ops[kCommandBurst];
  unsigned count = rte_ring_sc_dequeue_burst(shared_.commands[hpu_index_],
                                             reinterpret_cast<void**>(ops),
                                             kCommandBurst, nullptr);
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  for (unsigned i = 0; i < count; ++i) {
    DiadOp* op = ops[i];
    op->start_tsc = clock::Ticks();
    const Peer* peer = peers->FindBySlot(op->peer_slot);
    Channel* ch = peer != nullptr && peer->generation == op->peer_generation &&
                          op->channel < config_.channels
                      ? ChannelFor(*peer, op->channel)
                      : nullptr;
    if (ch == nullptr) {
      op->status = Status::kAborted;
      op->done.store(true, std::memory_order_release);
      shared_.pending_ops->fetch_sub(1, std::memory_order_relaxed);
      counters_.ops_failed.Add();
      op->Unref();
      continue;
    }
    Enqueue(*ch, op);
  }
}

void DiadEngine::Enqueue(Channel& ch, DiadOp* op) {
  op->next = nullptr;
  if (ch.queue_tail == nullptr) {
    ch.queue_head = op;
  } else {
    ch.queue_tail->next = op;
  }
  ch.queue_tail = op;
}

void DiadEngine::Finish(Channel& ch, uint32_t txn, const Txn& t,
                        Status status) {
  if (t.op != nullptr) {
    Complete(ch, t.op, status);
    return;
  }
  // A handler's transfer: counted; a failure raised as an event of its
  // ECTX.
  if (t.dest != nullptr) t.dest->Unpin();
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  if (status == Status::kOk) {
    counters_.ops_completed.Add();
    pc.ops_completed.Add();
    return;
  }
  counters_.ops_failed.Add();
  pc.ops_failed.Add();
  RaiseChannelEvent(kEventDiadOpFailed, ch, txn, status, t.ectx_id);
}

void DiadEngine::Complete(Channel& ch, DiadOp* op, Status status) {
  op->status = status;
  op->latency_ns = clock::TicksToNanos(clock::Ticks() - op->start_tsc);
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  if (status == Status::kOk) {
    counters_.ops_completed.Add();
    pc.ops_completed.Add();
  } else {
    counters_.ops_failed.Add();
    pc.ops_failed.Add();
    RaiseChannelEvent(kEventDiadOpFailed, ch, op->txn, status);
  }
  shared_.pending_ops->fetch_sub(1, std::memory_order_relaxed);
  op->done.store(true, std::memory_order_release);
  op->Unref();
}

// ---------------------------------------------------------------- handlers

DiadEngine::Channel* DiadEngine::HandlerChannel(std::string_view peer_name,
                                                uint16_t channel) {
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  const Peer* peer =
      peers->FindByName(absl::string_view(peer_name.data(), peer_name.size()));
  if (peer == nullptr) return nullptr;
  const uint32_t hpus = std::max<uint32_t>(shared_.hpu_count, 1);
  // Only channels this HPU serves: another HPU's state is not ours to
  // touch.
  if (channel >= config_.channels || channel % hpus != hpu_index_) {
    channel = static_cast<uint16_t>(hpu_index_);
  }
  if (channel >= config_.channels) return nullptr;
  return ChannelFor(*peer, channel);
}

bool DiadEngine::HandlerCanStart(const Channel& ch, uint32_t packets,
                                 uint64_t bytes) const {
  const ChannelConfig& c = config_.channel;
  return ch.queue_head == nullptr && !ch.txns.Full() &&
         ch.tx.in_flight_packets() + packets <= c.window_packets &&
         (ch.tx.in_flight_bytes() == 0 ||
          ch.tx.in_flight_bytes() + bytes <= c.window_bytes);
}

bool DiadEngine::HandlerPut(const PeerPut& put, uint32_t ectx_id) {
  Channel* ch = HandlerChannel(put.peer, put.channel);
  const uint32_t max_payload = config_.max_payload();
  const uint32_t length = static_cast<uint32_t>(
      std::min<size_t>(put.data.size(), config_.max_message_bytes + 1ull));
  const uint32_t packets = (length + max_payload - 1) / max_payload;
  if (ch == nullptr || length == 0 || length > config_.max_message_bytes ||
      !HandlerCanStart(*ch, packets, length)) {
    counters_.handler_refused.Add();
    return false;
  }
  const PacketType type = put.kind == PeerPut::Kind::kStream
                              ? PacketType::kStream
                              : PacketType::kWriteRequest;
  Txn t;
  t.ectx_id = ectx_id;
  const uint32_t txn = ch->txns.Begin(type, t);
  const uint64_t now = clock::NowNanos();
  Header h;
  h.type = type;
  h.txn = txn;
  h.key = put.key;
  h.msg_length = length;
  for (uint32_t sent = 0; sent < length;) {
    const uint32_t segment = std::min(max_payload, length - sent);
    const bool last = sent + segment == length;
    h.flags = static_cast<uint8_t>((sent == 0 ? kFlagFirst : 0) |
                                   (last ? kFlagLast | kFlagAckNow : 0));
    h.address = put.address + sent;
    h.msg_offset = sent;
    if (!SendSequenced(*ch, h, put.data.subspan(sent, segment), txn,
                       last && type == PacketType::kStream, now)) {
      // Out of buffers half way: the message cannot be completed, and a
      // receiver holding its first part must not take the next message as
      // its continuation. Start the channel afresh, failing what it held.
      ChannelDown(*ch, nullptr);
      counters_.handler_refused.Add();
      return false;
    }
    sent += segment;
  }
  counters_.handler_puts.Add();
  return true;
}

bool DiadEngine::HandlerGet(const PeerGet& get, uint32_t ectx_id) {
  Channel* ch = HandlerChannel(get.peer, get.channel);
  if (ch == nullptr || get.length == 0 ||
      get.length > config_.max_message_bytes || !HandlerCanStart(*ch, 1, 0)) {
    counters_.handler_refused.Add();
    return false;
  }
  // The destination: the calling ECTX's bound region, writable, in bounds.
  const MemoryRegion* dest = hpu_->BoundMemoryRegion(ectx_id, get.region);
  if (dest == nullptr || (dest->access() & kLocalWrite) == 0 ||
      get.offset > dest->length() || get.length > dest->length() - get.offset ||
      !dest->Pin()) {
    counters_.handler_refused.Add();
    return false;
  }
  Txn t;
  t.dest = dest;
  t.dest_offset = get.offset;
  t.length = get.length;
  t.ectx_id = ectx_id;
  const uint32_t txn = ch->txns.Begin(PacketType::kReadRequest, t);
  Header h;
  h.type = PacketType::kReadRequest;
  h.flags = kFlagFirst | kFlagLast | kFlagAckNow;
  h.txn = txn;
  h.key = get.rkey;
  h.address = get.address;
  h.msg_length = get.length;
  if (!SendSequenced(*ch, h, {}, txn, false, clock::NowNanos())) {
    Finish(*ch, txn, ch->txns.End(txn), Status::kAborted);
    counters_.handler_refused.Add();
    return false;
  }
  counters_.handler_gets.Add();
  return true;
}

// ---------------------------------------------------------------- failures

void DiadEngine::ResetChannel(Channel& ch, Status why, const EctxTable* table) {
  ch.tx.Reset([](rte_mbuf* held, uint32_t, bool) { rte_pktmbuf_free(held); });
  ch.txns.EndAll([&](uint32_t txn, const Txn& t) {
    if (t.op != nullptr && t.op == ch.queue_head) {
      // Started but not fully sent: it is also at the head of the queue.
      ch.queue_head = t.op->next;
      if (ch.queue_head == nullptr) ch.queue_tail = nullptr;
    }
    Finish(ch, txn, t, why);
  });
  while (DiadOp* op = ch.queue_head) {
    ch.queue_head = op->next;
    Complete(ch, op, why);
  }
  ch.queue_tail = nullptr;
  for (uint32_t i = 0; i < ch.response_count; ++i) {
    ResponseJob& job = ch.responses[(ch.response_head + i) % kMaxResponses];
    if (job.region != nullptr) job.region->Unpin();
  }
  ch.response_head = 0;
  ch.response_count = 0;
  RxMessage& m = ch.rx_message;
  if (m.active && m.ectx_id != kNoEctx && table != nullptr) {
    const Ectx* ectx =
        m.type == PacketType::kStream ? table->FindBound(kBindStream, m.key) : nullptr;
    if (ectx != nullptr && ectx->id() == m.ectx_id) {
      spin_->Abort(*ectx, m.spin, /*flow_control_triggered=*/false);
    }
  }
  m = RxMessage();
  ch.rx.Reset();
  peer_counters_[ch.slot].in_flight_packets.store(0, std::memory_order_relaxed);
}

void DiadEngine::ChannelDown(Channel& ch, const EctxTable* table) {
  counters_.channel_down.Add();
  DiadPeerCounters& pc = peer_counters_[ch.slot];
  pc.down_events.Add();
  if (!ch.down) {
    ch.down = true;
    pc.channels_down.fetch_add(1, std::memory_order_relaxed);
  }
  RaiseChannelEvent(kEventDiadChannelDown, ch, 0, Status::kPeerDown);
  ResetChannel(ch, Status::kPeerDown, table);
  // A new session: whatever the peer still has of the old one is stale.
  ch.session.Restart(NextEpoch());
}

void DiadEngine::SyncPeers(const EctxTable& table) {
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  if (peers == seen_peers_) return;
  seen_peers_ = peers;
  for (const std::unique_ptr<Channel>& ch : channels_) {
    if (ch->generation == 0) continue;
    const Peer* peer = peers->FindBySlot(ch->slot);
    if (peer == nullptr || peer->generation != ch->generation) {
      ResetChannel(*ch, Status::kAborted, &table);
      if (ch->down) {
        peer_counters_[ch->slot].channels_down.fetch_sub(
            1, std::memory_order_relaxed);
        ch->down = false;
      }
      ch->generation = 0;
    }
  }
}

void DiadEngine::Shutdown() {
  for (const std::unique_ptr<Channel>& ch : channels_) {
    if (ch->generation != 0) {
      ResetChannel(*ch, Status::kAborted, nullptr);
      ch->generation = 0;
    }
  }
  if (shared_.commands == nullptr) return;
  DiadOp* op = nullptr;
  while (rte_ring_sc_dequeue(shared_.commands[hpu_index_],
                             reinterpret_cast<void**>(&op)) == 0) {
    op->status = Status::kAborted;
    shared_.pending_ops->fetch_sub(1, std::memory_order_relaxed);
    op->done.store(true, std::memory_order_release);
    op->Unref();
  }
}

void DiadEngine::Drop(rte_mbuf* packet, DiadDrop reason) {
  counters_.Drop(reason);
  rte_pktmbuf_free(packet);
}

void DiadEngine::RaiseChannelEvent(uint32_t code, const Channel& ch,
                                   uint32_t txn, Status status,
                                   uint32_t ectx_id) {
  uint8_t data[11];
  std::memcpy(data, &ch.slot, 4);
  std::memcpy(data + 4, &ch.channel, 2);
  std::memcpy(data + 6, &txn, 4);
  data[10] = static_cast<uint8_t>(status);
  hpu_->RaiseTransportEvent(code, data, ectx_id);
}

}  // namespace spinnic::diad
