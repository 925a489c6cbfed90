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
                                                uint32_t source,
                                                uint16_t channel) {
  // No name: the sender of the message being handled, by its slot; only
  // while a DiAD message is (another transport's sender is not ours).
  if (peer_name.empty() && !delivering_) return nullptr;
  const PeerTable* peers = shared_.peers->load(std::memory_order_acquire);
  const Peer* peer = peer_name.empty()
                         ? peers->FindBySlot(source)
                         : peers->FindByName(absl::string_view(
                               peer_name.data(), peer_name.size()));
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
  Channel* ch = HandlerChannel(put.peer, put.source, put.channel);
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
  Channel* ch = HandlerChannel(get.peer, get.source, get.channel);
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

}  // namespace spinnic::diad
