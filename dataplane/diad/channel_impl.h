// Template definitions of channel.h (SendWindow, TransactionTable); included
// at its end, not on its own.
#ifndef SPINNIC_DATAPLANE_DIAD_CHANNEL_IMPL_H_
#define SPINNIC_DATAPLANE_DIAD_CHANNEL_IMPL_H_

#include <algorithm>
#include <cstdint>
#include <utility>

#include "dataplane/diad/channel.h"

namespace spinnic::diad {

namespace internal {

inline uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

// The timeout after an expiry that did not bring the channel down: doubled,
// capped at rto_max_ns. SendWindow::OnTimer and DownAfterNs both use it.
inline uint64_t NextRtoNs(uint64_t rto_ns, const ChannelConfig& config) {
  const uint64_t doubled = rto_ns > UINT64_MAX / 2 ? UINT64_MAX : 2 * rto_ns;
  return std::min(doubled, config.rto_max_ns);
}

}  // namespace internal

// ---------------------------------------------------------------- sender

template <typename Handle>
SendWindow<Handle>::SendWindow(const ChannelConfig& config)
    : config_(config),
      slots_(config.window_packets),
      mask_(config.window_packets - 1),
      rto_ns_(config.rto_ns) {}

template <typename Handle>
bool SendWindow<Handle>::CanSend(uint32_t payload_bytes) const {
  const uint32_t in_flight = in_flight_packets();
  if (in_flight >= config_.window_packets) return false;
  // An empty window takes any packet, however large: otherwise a packet
  // above window_bytes could never be sent.
  return in_flight == 0 ||
         in_flight_bytes_ + payload_bytes <= config_.window_bytes;
}

template <typename Handle>
void SendWindow<Handle>::Push(Handle handle, uint32_t payload_bytes,
                              uint32_t txn, bool completes_txn,
                              uint64_t now_ns) {
  if (in_flight_packets() == 0) {
    deadline_ns_ = internal::SaturatingAdd(now_ns, rto_ns_);
  }
  Slot& slot = slots_[next_seq_ & mask_];
  slot.handle = std::move(handle);
  slot.payload_bytes = payload_bytes;
  slot.txn = txn;
  slot.completes_txn = completes_txn;
  ++next_seq_;
  in_flight_bytes_ += payload_bytes;
}

template <typename Handle>
template <typename Release>
typename SendWindow<Handle>::AckVerdict SendWindow<Handle>::OnAck(
    uint32_t ack, uint64_t now_ns, Release&& release) {
  const int32_t diff = SeqDiff(ack, base_);
  if (diff == 0) return AckVerdict::kNoChange;
  if (diff < 0) {
    // An older cumulative ack (reordered, or from a retransmission): fine
    // unless it is older than anything the window could have held.
    return -int64_t{diff} <= int64_t{config_.window_packets}
               ? AckVerdict::kNoChange
               : AckVerdict::kInvalid;
  }
  if (static_cast<uint32_t>(diff) > in_flight_packets()) {
    return AckVerdict::kInvalid;  // beyond next_seq: never sent
  }
  ReleaseUpTo(ack, release);
  retries_ = 0;
  rto_ns_ = config_.rto_ns;
  deadline_ns_ = in_flight_packets() == 0
                     ? UINT64_MAX
                     : internal::SaturatingAdd(now_ns, rto_ns_);
  return AckVerdict::kProgress;
}

template <typename Handle>
template <typename Retransmit>
uint32_t SendWindow<Handle>::GoBackN(uint32_t ack, uint64_t now_ns,
                                     Retransmit&& retransmit) {
  // Only a start inside [base, next_seq) has anything to resend; an older
  // report (reordered) or one at or past next_seq has not.
  const int32_t from_base = SeqDiff(ack, base_);
  if (from_base < 0 ||
      static_cast<uint32_t>(from_base) >= in_flight_packets()) {
    return 0;
  }
  if (gbn_done_ && last_gbn_from_ == ack &&
      now_ns <
          internal::SaturatingAdd(last_gbn_ns_, config_.nack_interval_ns)) {
    return 0;
  }
  gbn_done_ = true;
  last_gbn_from_ = ack;
  last_gbn_ns_ = now_ns;
  deadline_ns_ = internal::SaturatingAdd(now_ns, rto_ns_);
  uint32_t count = 0;
  // The end is taken once: a packet pushed by the callback (it should not)
  // went out once already and is not resent.
  const uint32_t end = next_seq_;
  for (uint32_t seq = ack; seq != end; ++seq) {
    retransmit(slots_[seq & mask_].handle);
    ++count;
  }
  return count;
}

template <typename Handle>
template <typename Release, typename Retransmit>
uint32_t SendWindow<Handle>::GoBackN(uint32_t ack, uint64_t now_ns,
                                     Release&& release,
                                     Retransmit&& retransmit) {
  OnAck(ack, now_ns, std::forward<Release>(release));
  return GoBackN(ack, now_ns, std::forward<Retransmit>(retransmit));
}

template <typename Handle>
typename SendWindow<Handle>::TimerVerdict SendWindow<Handle>::OnTimer(
    uint64_t now_ns) {
  if (in_flight_packets() == 0 || now_ns < deadline_ns_) {
    return TimerVerdict::kIdle;
  }
  ++retries_;
  // Stays down (the deadline is not moved) until the caller calls Reset.
  if (retries_ > config_.max_retries) return TimerVerdict::kDown;
  rto_ns_ = internal::NextRtoNs(rto_ns_, config_);
  deadline_ns_ = internal::SaturatingAdd(now_ns, rto_ns_);
  return TimerVerdict::kSendUnack;
}

template <typename Handle>
bool SendWindow<Handle>::UnackDueOnFullWindow(uint64_t now_ns) {
  if (unack_sent_ && now_ns < internal::SaturatingAdd(
                                  last_unack_ns_, config_.nack_interval_ns)) {
    return false;
  }
  unack_sent_ = true;
  last_unack_ns_ = now_ns;
  return true;
}

template <typename Handle>
uint64_t SendWindow<Handle>::timer_deadline() const {
  return in_flight_packets() == 0 ? UINT64_MAX : deadline_ns_;
}

template <typename Handle>
template <typename Release>
void SendWindow<Handle>::ReleaseUpTo(uint32_t end, Release& release) {
  while (base_ != end) {
    Slot& slot = slots_[base_ & mask_];
    Handle handle = std::move(slot.handle);
    const uint32_t txn = slot.txn;
    const bool completes_txn = slot.completes_txn;
    in_flight_bytes_ -= slot.payload_bytes;
    slot = Slot{};
    ++base_;
    release(handle, txn, completes_txn);
  }
}

template <typename Handle>
template <typename Release>
void SendWindow<Handle>::Reset(Release&& release) {
  ReleaseUpTo(next_seq_, release);
  base_ = 0;
  next_seq_ = 0;
  in_flight_bytes_ = 0;
  rto_ns_ = config_.rto_ns;
  deadline_ns_ = UINT64_MAX;
  retries_ = 0;
  last_gbn_from_ = 0;
  last_gbn_ns_ = 0;
  gbn_done_ = false;
  last_unack_ns_ = 0;
  unack_sent_ = false;
}

// ---------------------------------------------------------------- transactions

template <typename Cookie>
TransactionTable<Cookie>::TransactionTable(uint32_t capacity)
    : slots_(capacity), order_(capacity) {}

template <typename Cookie>
uint32_t TransactionTable<Cookie>::Begin(PacketType type, Cookie cookie) {
  const uint32_t mask = static_cast<uint32_t>(slots_.size()) - 1;
  // Ids increase (mod 2^32); 0 is never used, nor an id whose slot is taken
  // by an older transaction still pending, so that Find is one probe. Not
  // full, so a free slot is at most `capacity` ids away.
  for (;;) {
    const uint32_t txn = next_txn_++;
    if (txn == 0) continue;
    Slot& slot = slots_[txn & mask];
    if (slot.used) continue;
    slot.used = true;
    slot.type = type;
    slot.txn = txn;
    slot.cookie = std::move(cookie);
    ++count_;
    return txn;
  }
}

template <typename Cookie>
Cookie* TransactionTable<Cookie>::Find(uint32_t txn, PacketType type) {
  Slot& slot = slots_[txn & (slots_.size() - 1)];
  if (!slot.used || slot.txn != txn || slot.type != type) return nullptr;
  return &slot.cookie;
}

template <typename Cookie>
Cookie TransactionTable<Cookie>::End(uint32_t txn) {
  Slot& slot = slots_[txn & (slots_.size() - 1)];
  if (!slot.used || slot.txn != txn) return Cookie{};
  slot.used = false;
  --count_;
  return std::move(slot.cookie);
}

template <typename Cookie>
template <typename Fn>
void TransactionTable<Cookie>::EndAll(Fn&& fn) {
  // The pending slots, oldest first: ids are handed out in increasing
  // order, so the oldest is the one farthest behind next_txn_ (serial
  // arithmetic: wraps with the ids). Sorted in place, no allocation.
  uint32_t n = 0;
  for (uint32_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].used) order_[n++] = i;
  }
  const uint32_t next = next_txn_;
  std::sort(order_.begin(), order_.begin() + n,
            [this, next](uint32_t a, uint32_t b) {
              return next - slots_[a].txn > next - slots_[b].txn;
            });
  for (uint32_t k = 0; k < n; ++k) {
    Slot& slot = slots_[order_[k]];
    // fn may End or Begin transactions itself: a slot it ended is skipped,
    // and one it began can only reuse a slot already handed to fn.
    if (!slot.used) continue;
    const uint32_t txn = slot.txn;
    slot.used = false;
    --count_;
    Cookie cookie = std::move(slot.cookie);
    fn(txn, cookie);
  }
}

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_CHANNEL_IMPL_H_
