// DiadEngine's core (diad_engine.h): construction, its clock and epochs,
// channels per peer, and failures (a channel reset or down, peers removed,
// shutdown) with their events. The receive path is in
// diad_engine_receive.cc, the send and retransmit path in
// diad_engine_send.cc, operations and handlers' puts and gets in
// diad_engine_operations.cc.
#include "dataplane/diad/diad_engine.h"

#include <rte_mbuf.h>

#include <algorithm>
#include <cstring>

#include "dataplane/common/clock.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"

namespace spinnic::diad {
namespace {

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
    case DiadDrop::kSackUnexpected:
      return "sack_unexpected";
    case DiadDrop::kSackOverlapsAck:
      return "sack_overlaps_ack";
    case DiadDrop::kSackNeverSent:
      return "sack_never_sent";
    case DiadDrop::kReorderFull:
      return "reorder_full";
    case DiadDrop::kUnverifiedReset:
      return "unverified_reset";
    case DiadDrop::kCount:
      break;
  }
  return "unknown";
}

DiadEngine::Channel::Channel(const ChannelConfig& config,
                             const DiadCongestionConfig& congestion)
    : reorder(2 * config.window_packets, config.reorder_packets != 0
                                             ? config.reorder_packets
                                             : 2 * config.window_packets),
      rx(config),
      tx(config),
      txns(config.max_transactions) {
  if (congestion.enabled) {
    cc.emplace(congestion.window);
    tx.set_congestion_window(cc->PacketsInFlight());
  }
}

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
    channels_.push_back(
        std::make_unique<Channel>(config_.channel, config_.congestion));
  }
  active_.reserve(channels_.size());
  self_.mac = config_.mac;
  self_.ip = config_.node;
  // Congestion control: every DiAD packet ECT(0), so that a congested
  // switch marks it rather than drops it; Not-ECT (the paper's) otherwise.
  self_.ecn = config_.congestion.enabled ? kEcnEct0 : kEcnNotEct;
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
  txn_deadline_ns_ = TxnDeadlineNs(config_.channel);
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
    ch.slot = peer.slot;
    Activate(ch, peer.generation);
    ch.channel = channel;
    ch.session = Session(NextEpoch());
    ch.sack = SackNegotiation(peer.recovery);
  }
  return &ch;
}

void DiadEngine::Activate(Channel& ch, uint32_t generation) {
  if (ch.generation == 0) {
    ch.active_index = static_cast<uint32_t>(active_.size());
    active_.push_back(&ch);
  }
  ch.generation = generation;
  if (ch.cc) {
    peer_counters_[ch.slot].cc_window.store(ch.cc->window(),
                                            std::memory_order_relaxed);
  }
}

void DiadEngine::Deactivate(Channel& ch) {
  if (ch.generation == 0) return;
  Channel* last = active_.back();
  active_[ch.active_index] = last;
  last->active_index = ch.active_index;
  active_.pop_back();
  ch.generation = 0;
}

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
  ch.next_txn_deadline_ns = UINT64_MAX;
  RxMessage& m = ch.rx_message;
  if (m.active && m.ectx_id != kNoEctx && table != nullptr) {
    const Ectx* ectx = m.type == PacketType::kStream
                           ? table->FindBound(kBindStream, m.key)
                           : nullptr;
    if (ectx != nullptr && ectx->id() == m.ectx_id) {
      spin_->Abort(*ectx, m.spin, /*flow_control_triggered=*/false);
    }
  }
  m = RxMessage();
  ch.reorder.Reset([](rte_mbuf* held) { rte_pktmbuf_free(held); });
  ch.sack.Reset();
  ch.rx.Reset();
  // A new session may take another path: the window starts afresh, and the
  // peer must advertise the ECN echo again.
  if (ch.cc) {
    ch.cc.emplace(config_.congestion.window);
    ch.tx.set_congestion_window(ch.cc->PacketsInFlight());
  }
  ch.ecn_peer = false;
  ch.ce_pending = false;
  ch.next_send_ns = 0;
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
  // Backwards: Deactivate moves the last active channel into the slot it
  // frees, which this walk has already seen.
  for (size_t i = active_.size(); i-- > 0;) {
    Channel* ch = active_[i];
    const Peer* peer = peers->FindBySlot(ch->slot);
    if (peer == nullptr || peer->generation != ch->generation) {
      ResetChannel(*ch, Status::kAborted, &table);
      if (ch->down) {
        peer_counters_[ch->slot].channels_down.fetch_sub(
            1, std::memory_order_relaxed);
        ch->down = false;
      }
      Deactivate(*ch);
    }
  }
}

void DiadEngine::Shutdown() {
  while (!active_.empty()) {
    Channel* ch = active_.back();
    ResetChannel(*ch, Status::kAborted, nullptr);
    Deactivate(*ch);
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
  if (held_action_ != nullptr) {
    DiscardHandedAction(held_action_);
    held_action_ = nullptr;
  }
  if (shared_.handler_actions != nullptr) {
    DiscardHandedActions(shared_.handler_actions[hpu_index_]);
  }
}

void DiadEngine::DiscardHandedAction(rte_mbuf* chain) {
  HandedAction action;
  std::memcpy(&action, rte_pktmbuf_mtod(chain, const void*), sizeof action);
  if (action.get) action.dest->Unpin();
  rte_pktmbuf_free(chain);
}

void DiadEngine::DiscardHandedActions(rte_ring* ring) {
  void* entry = nullptr;
  while (rte_ring_sc_dequeue(ring, &entry) == 0) {
    DiscardHandedAction(static_cast<rte_mbuf*>(entry));
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
