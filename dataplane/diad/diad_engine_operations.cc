// DiadEngine's operations (diad_engine.h): control-plane commands taken
// from the ring and queued on their channel, transactions finished and
// operations completed, and a handler's puts and gets to a peer.
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstring>

#include "dataplane/common/clock.h"
#include "dataplane/diad/diad_engine.h"
#include "dataplane/ectx_table.h"
#include "dataplane/hpu.h"
#include "dataplane/memory_region.h"

namespace spinnic::diad {
namespace {

constexpr uint32_t kCommandBurst = 32;

}  // namespace

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

void DiadEngine::ArmDeadline(Channel& ch, uint32_t txn, PacketType type,
                             uint64_t now) {
  Txn* t = ch.txns.Find(txn, type);
  if (t == nullptr) return;
  t->deadline_ns =
      now > UINT64_MAX - txn_deadline_ns_ ? UINT64_MAX : now + txn_deadline_ns_;
  ch.next_txn_deadline_ns = std::min(ch.next_txn_deadline_ns, t->deadline_ns);
}

void DiadEngine::ExpireTransactions(Channel& ch, uint64_t now) {
  // Rare (a deadline passed, or a stale lower bound did): one walk over the
  // table, which also finds the next deadline.
  uint64_t next = UINT64_MAX;
  ch.txns.ForEach([&](uint32_t txn, Txn& t) {
    if (t.deadline_ns > now) {
      next = std::min(next, t.deadline_ns);
      return;
    }
    // The peer acknowledged the whole request long ago and keeps the
    // channel alive, yet never answered: give the slot back, say why. A
    // response arriving later finds no transaction (drop_unknown_txn).
    counters_.txn_deadline_exceeded.Add();
    peer_counters_[ch.slot].txn_deadline_exceeded.Add();
    Finish(ch, txn, ch.txns.End(txn), Status::kDeadlineExceeded);
  });
  ch.next_txn_deadline_ns = next;
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

const Peer* DiadEngine::HandlerPeer(std::string_view peer_name,
                                    uint32_t source) const {
  // No name: the sender of the message being handled, by its slot; only
  // while a DiAD message is (another transport's sender is not ours).
  if (peer_name.empty() && !delivering_) return nullptr;
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  return peer_name.empty() ? peers->FindBySlot(source)
                           : peers->FindByName(absl::string_view(
                                 peer_name.data(), peer_name.size()));
}

bool DiadEngine::HandlerCanStart(const Channel& ch, uint32_t packets,
                                 uint64_t bytes) const {
  const ChannelConfig& c = config_.channel;
  return ch.queue_head == nullptr && !ch.txns.Full() &&
         ch.tx.in_flight_packets() + packets <= c.window_packets &&
         (ch.tx.in_flight_bytes() == 0 ||
          ch.tx.in_flight_bytes() + bytes <= c.window_bytes);
}

template <typename SegmentFn>
bool DiadEngine::StartPut(Channel& ch, PeerPut::Kind kind, uint32_t key,
                          uint64_t address, uint32_t length, uint32_t ectx_id,
                          SegmentFn segment) {
  const PacketType type = kind == PeerPut::Kind::kStream
                              ? PacketType::kStream
                              : PacketType::kWriteRequest;
  const uint32_t max_payload = config_.max_payload();
  Txn t;
  t.ectx_id = ectx_id;
  const uint32_t txn = ch.txns.Begin(type, t);
  const uint64_t now = Now();
  Header h;
  h.type = type;
  h.txn = txn;
  h.key = key;
  h.msg_length = length;
  for (uint32_t sent = 0; sent < length;) {
    const uint32_t size = std::min(max_payload, length - sent);
    const bool last = sent + size == length;
    h.flags = static_cast<uint8_t>((sent == 0 ? kFlagFirst : 0) |
                                   (last ? kFlagLast | kFlagAckNow : 0));
    h.address = address + sent;
    h.msg_offset = sent;
    if (!SendSequenced(ch, h, segment(sent, size), txn,
                       last && type == PacketType::kStream, now)) {
      // Out of buffers half way: the message cannot be completed, and a
      // receiver holding its first part must not take the next message as
      // its continuation. Start the channel afresh, failing what it held.
      ChannelDown(ch, nullptr);
      counters_.handler_refused.Add();
      return false;
    }
    sent += size;
  }
  if (type == PacketType::kWriteRequest) ArmDeadline(ch, txn, type, now);
  counters_.handler_puts.Add();
  return true;
}

bool DiadEngine::StartGet(Channel& ch, const HandedAction& get) {
  Txn t;
  t.dest = get.dest;
  t.dest_offset = get.dest_offset;
  t.length = get.length;
  t.ectx_id = get.ectx_id;
  const uint32_t txn = ch.txns.Begin(PacketType::kReadRequest, t);
  Header h;
  h.type = PacketType::kReadRequest;
  h.flags = kFlagFirst | kFlagLast | kFlagAckNow;
  h.txn = txn;
  h.key = get.key;
  h.address = get.address;
  h.msg_length = get.length;
  const uint64_t now = Now();
  if (!SendSequenced(ch, h, {}, txn, false, now)) {
    Finish(ch, txn, ch.txns.End(txn), Status::kAborted);  // unpins dest
    counters_.handler_refused.Add();
    return false;
  }
  ArmDeadline(ch, txn, PacketType::kReadRequest, now);
  counters_.handler_gets.Add();
  return true;
}

uint16_t DiadEngine::HandlerChannel(uint16_t requested) const {
  return requested == PeerPut::kThisHpusChannel
             ? static_cast<uint16_t>(hpu_index_)
             : requested;
}

bool DiadEngine::HandlerPut(const PeerPut& put, uint32_t ectx_id) {
  const Peer* peer = HandlerPeer(put.peer, put.source);
  const uint16_t channel = HandlerChannel(put.channel);
  const uint32_t max_payload = config_.max_payload();
  const uint32_t length = static_cast<uint32_t>(
      std::min<size_t>(put.data.size(), config_.max_message_bytes + 1ull));
  if (peer == nullptr || channel >= config_.channels || length == 0 ||
      length > config_.max_message_bytes) {
    counters_.handler_refused.Add();
    return false;
  }
  const uint32_t hpus = std::max<uint32_t>(shared_.hpu_count, 1);
  if (channel % hpus != hpu_index_) {
    HandedAction action;
    action.kind = put.kind;
    action.channel = channel;
    action.peer_slot = peer->slot;
    action.peer_generation = peer->generation;
    action.key = put.key;
    action.address = put.address;
    action.length = length;
    action.ectx_id = ectx_id;
    return HandOff(action, put.data.first(length));
  }
  Channel* ch = ChannelFor(*peer, channel);
  const uint32_t packets = (length + max_payload - 1) / max_payload;
  if (ch == nullptr || !HandlerCanStart(*ch, packets, length)) {
    counters_.handler_refused.Add();
    return false;
  }
  return StartPut(*ch, put.kind, put.key, put.address, length, ectx_id,
                  [&put](uint32_t offset, uint32_t size) {
                    return put.data.subspan(offset, size);
                  });
}

bool DiadEngine::HandlerGet(const PeerGet& get, uint32_t ectx_id) {
  const Peer* peer = HandlerPeer(get.peer, get.source);
  const uint16_t channel = HandlerChannel(get.channel);
  if (peer == nullptr || channel >= config_.channels || get.length == 0 ||
      get.length > config_.max_message_bytes) {
    counters_.handler_refused.Add();
    return false;
  }
  const uint32_t hpus = std::max<uint32_t>(shared_.hpu_count, 1);
  const bool ours = channel % hpus == hpu_index_;
  Channel* ch = ours ? ChannelFor(*peer, channel) : nullptr;
  if (ours && (ch == nullptr || !HandlerCanStart(*ch, 1, 0))) {
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
  HandedAction action;
  action.get = true;
  action.channel = channel;
  action.peer_slot = peer->slot;
  action.peer_generation = peer->generation;
  action.key = get.rkey;
  action.address = get.address;
  action.length = get.length;
  action.ectx_id = ectx_id;
  action.dest = dest;
  action.dest_offset = get.offset;
  if (!ours) {
    if (HandOff(action, {})) return true;
    dest->Unpin();
    return false;
  }
  return StartGet(*ch, action);
}

bool DiadEngine::HandOff(const HandedAction& action,
                         std::span<const uint8_t> data) {
  // One pool buffer for the request and one per DiAD payload: a handler's
  // put is at most max_message_bytes, and only puts to another HPU's
  // channel pay the copy.
  const uint32_t owner = action.channel % shared_.hpu_count;
  rte_mbuf* head = rte_pktmbuf_alloc(shared_.pool);
  if (head == nullptr || shared_.handler_actions == nullptr) {
    rte_pktmbuf_free(head);
    counters_.handler_refused.Add();
    return false;
  }
  std::memcpy(rte_pktmbuf_append(head, sizeof(HandedAction)), &action,
              sizeof(HandedAction));
  const uint32_t max_payload = config_.max_payload();
  for (size_t offset = 0; offset < data.size(); offset += max_payload) {
    const uint16_t size = static_cast<uint16_t>(
        std::min<size_t>(max_payload, data.size() - offset));
    rte_mbuf* m = rte_pktmbuf_alloc(shared_.pool);
    char* bytes = m != nullptr ? rte_pktmbuf_append(m, size) : nullptr;
    if (bytes == nullptr) {
      rte_pktmbuf_free(m);
      rte_pktmbuf_free(head);
      counters_.handler_refused.Add();
      return false;
    }
    std::memcpy(bytes, data.data() + offset, size);
    if (rte_pktmbuf_chain(head, m) != 0) {
      rte_pktmbuf_free(m);
      rte_pktmbuf_free(head);
      counters_.handler_refused.Add();
      return false;
    }
  }
  if (rte_ring_mp_enqueue(shared_.handler_actions[owner], head) != 0) {
    rte_pktmbuf_free(head);
    counters_.handler_refused.Add();
    return false;
  }
  counters_.handler_handoffs.Add();
  return true;
}

void DiadEngine::TakeHandedActions() {
  if (held_action_ != nullptr) {
    if (!StartHandedAction(held_action_)) return;
    held_action_ = nullptr;
  }
  for (unsigned i = 0; i < kCommandBurst; ++i) {
    void* entry = nullptr;
    if (rte_ring_sc_dequeue(shared_.handler_actions[hpu_index_], &entry) != 0) {
      return;
    }
    rte_mbuf* chain = static_cast<rte_mbuf*>(entry);
    if (!StartHandedAction(chain)) {
      held_action_ = chain;
      return;
    }
  }
}

bool DiadEngine::StartHandedAction(rte_mbuf* chain) {
  HandedAction action;
  std::memcpy(&action, rte_pktmbuf_mtod(chain, const void*), sizeof action);
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  const Peer* peer = peers->FindBySlot(action.peer_slot);
  Channel* ch = peer != nullptr && peer->generation == action.peer_generation
                    ? ChannelFor(*peer, action.channel)
                    : nullptr;
  if (ch != nullptr) {
    const uint32_t max_payload = config_.max_payload();
    const uint32_t packets =
        action.get ? 1 : (action.length + max_payload - 1) / max_payload;
    if (!HandlerCanStart(*ch, packets, action.get ? 0 : action.length)) {
      return false;  // in order: wait for the window
    }
    if (action.get) {
      StartGet(*ch, action);
    } else {
      rte_mbuf* next = chain->next;
      StartPut(*ch, action.kind, action.key, action.address, action.length,
               action.ectx_id, [&next](uint32_t, uint32_t size) {
                 std::span<const uint8_t> bytes(
                     rte_pktmbuf_mtod(next, const uint8_t*), size);
                 next = next->next;
                 return bytes;
               });
    }
  } else {
    // The peer went (or was replaced) on the way.
    if (action.get) action.dest->Unpin();
    counters_.handler_refused.Add();
  }
  rte_pktmbuf_free(chain);
  return true;
}

}  // namespace spinnic::diad
