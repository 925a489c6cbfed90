// Template definitions of channel.h (SendWindow, TransactionTable); included
// at its end, not on its own.
#ifndef SPINNIC_DATAPLANE_DIAD_CHANNEL_IMPL_H_
#define SPINNIC_DATAPLANE_DIAD_CHANNEL_IMPL_H_

#include <algorithm>
#include <bit>
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
      // Twice the window: SELECTIVE counts SACKed packets (the receiver
      // holds them) out of the window until the cumulative ack passes them.
      slots_(size_t{config.window_packets} * 2),
      mask_(config.window_packets * 2 - 1),
      rto_ns_(config.rto_ns),
      // G = the receiver's ACK coalescing delay: an ACK may be held that
      // long on purpose, so the timeout never undercuts it.
      rtt_(config.rto_ns, config.rto_min_ns, config.rto_max_ns,
           config.ack_delay_ns),
      down_after_ns_(DownAfterNs(config)),
      cwnd_packets_(config.window_packets) {}

template <typename Handle>
void SendWindow<Handle>::Sample(uint64_t sent_ns, uint64_t now_ns) {
  // A clock that went backwards gives no sample rather than a huge one.
  if (now_ns < sent_ns) return;
  rtt_.OnSample(now_ns - sent_ns);
}

template <typename Handle>
bool SendWindow<Handle>::CanSend(uint32_t payload_bytes) const {
  const uint32_t in_flight = in_flight_packets();
  // SACKed packets left the network: SELECTIVE keeps sending past them (up
  // to twice the window from base), go-back-N has none.
  if (in_flight - sacked_packets_ >= cwnd_packets_ ||
      in_flight >= 2 * config_.window_packets) {
    return false;
  }
  // An empty window takes any packet, however large: otherwise a packet
  // above window_bytes could never be sent.
  return in_flight == 0 || in_flight_bytes_ - sacked_bytes_ + payload_bytes <=
                               config_.window_bytes;
}

template <typename Handle>
void SendWindow<Handle>::Push(Handle handle, uint32_t payload_bytes,
                              uint32_t txn, bool completes_txn,
                              uint64_t now_ns) {
  if (in_flight_packets() == 0) {
    deadline_ns_ = internal::SaturatingAdd(now_ns, rto_ns_);
    stall_start_ns_ = now_ns;
  }
  Slot& slot = slots_[next_seq_ & mask_];
  slot.handle = std::move(handle);
  slot.sent_ns = now_ns;
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
  // The newest packet released is the one whose arrival made the receiver
  // send this ack (a cumulative ack moves when `ack` - 1 arrives), so its
  // send time is the sample, unless some released packet went twice (or
  // was held by the receiver: the ack then waited for a resent hole).
  const uint64_t newest_sent_ns = slots_[(ack - 1) & mask_].sent_ns;
  if (ReleaseUpTo(ack, release)) {
    Sample(newest_sent_ns, now_ns);
  } else {
    ++karn_skips_;
  }
  retries_ = 0;
  stall_start_ns_ = now_ns;
  rto_ns_ = base_rto_ns();
  deadline_ns_ = in_flight_packets() == 0
                     ? UINT64_MAX
                     : internal::SaturatingAdd(now_ns, rto_ns_);
  return AckVerdict::kProgress;
}

template <typename Handle>
template <typename Retransmit>
uint32_t SendWindow<Handle>::GoBackN(uint32_t ack, uint64_t now_ns,
                                     Retransmit&& retransmit) {
  return GoBackNBefore(ack, next_seq_, now_ns, retransmit);
}

template <typename Handle>
template <typename Retransmit>
uint32_t SendWindow<Handle>::GoBackNOnProbeReply(uint32_t ack, uint64_t now_ns,
                                                 Retransmit&& retransmit) {
  if (!probe_outstanding_) return 0;
  probe_outstanding_ = false;
  return GoBackNBefore(ack, probe_end_, now_ns, retransmit);
}

template <typename Handle>
template <typename Retransmit>
uint32_t SendWindow<Handle>::GoBackNBefore(uint32_t ack, uint32_t end,
                                           uint64_t now_ns,
                                           Retransmit& retransmit) {
  // Only a start inside [base, end) has anything to resend; an older
  // report (reordered) or one at or past the end has not.
  const int32_t from_base = SeqDiff(ack, base_);
  const int32_t end_from_base = SeqDiff(end, base_);
  if (from_base < 0 ||
      static_cast<uint32_t>(from_base) >= in_flight_packets() ||
      end_from_base <= from_base) {
    return 0;
  }
  // The end is taken once: a packet pushed by the callback (it should not)
  // went out once already and is not resent.
  if (static_cast<uint32_t>(end_from_base) > in_flight_packets()) {
    end = next_seq_;
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
  for (uint32_t seq = ack; seq != end; ++seq) {
    Slot& slot = slots_[seq & mask_];
    // The receiver holds a SACKed packet (SELECTIVE only; it never
    // reneges): resending it would only make a duplicate.
    if (slot.sacked) continue;
    slot.resent = true;
    slot.resent_ns = now_ns;
    slot.resent_next = next_seq_;
    retransmit(slot.handle);
    ++count;
  }
  return count;
}

template <typename Handle>
SackVerdict SendWindow<Handle>::CheckSack(
    uint32_t ack, std::span<const uint8_t> bitmap) const {
  if (!bitmap.empty() && (bitmap[0] & 0x80) != 0) {
    return SackVerdict::kOverlapsAck;
  }
  // The last set bit decides: everything must be before next_seq. The scan
  // goes from the end, so a valid SACK costs one look at its last bytes.
  for (size_t i = bitmap.size(); i-- > 0;) {
    if (bitmap[i] == 0) continue;
    const uint32_t low_bit = static_cast<uint32_t>(
        std::countr_zero(static_cast<unsigned>(bitmap[i])));
    const uint64_t j = uint64_t{i} * 8 + (7 - low_bit);
    // ack + j must lie before next_seq: ack is within a window of base
    // (OnAck checked it), so the 64-bit distance is exact.
    const int64_t ack_to_next = SeqDiff(next_seq_, ack);
    return static_cast<int64_t>(j) < ack_to_next ? SackVerdict::kOk
                                                 : SackVerdict::kNeverSent;
  }
  return SackVerdict::kOk;
}

template <typename Handle>
template <typename Retransmit>
uint32_t SendWindow<Handle>::OnSack(uint32_t ack,
                                    std::span<const uint8_t> bitmap,
                                    bool probe_reply, uint32_t probe_end,
                                    uint64_t now_ns, Retransmit&& retransmit) {
  // Mark: only numbers still held (an old SACK may describe released ones).
  bool news = false;
  // The newest packet this SACK reports first and that went out once: the
  // receiver SACKs an out-of-order packet at once, so its send time is a
  // round-trip sample (Karn: never a resent one).
  bool sample = false;
  uint64_t sample_sent_ns = 0;
  const uint32_t bits = static_cast<uint32_t>(bitmap.size()) * 8;
  for (uint32_t j = 1; j < bits; ++j) {
    if ((bitmap[j / 8] & (0x80u >> (j % 8))) == 0) continue;
    const uint32_t seq = ack + j;
    const int32_t from_base = SeqDiff(seq, base_);
    if (from_base < 0 ||
        static_cast<uint32_t>(from_base) >= in_flight_packets()) {
      continue;
    }
    Slot& slot = slots_[seq & mask_];
    if (!slot.sacked) {
      slot.sacked = true;
      ++sacked_packets_;
      sacked_bytes_ += slot.payload_bytes;
      news = true;
      if (!slot.resent) {
        sample = true;
        sample_sent_ns = slot.sent_ns;  // ascending j: the newest wins
      }
    }
    if (!has_high_sacked_ || SeqDiff(seq, high_sacked_) > 0) {
      high_sacked_ = seq;
      has_high_sacked_ = true;
    }
  }
  if (news) {
    retries_ = 0;
    stall_start_ns_ = now_ns;
  }
  if (sample) Sample(sample_sent_ns, now_ns);
  if (has_high_sacked_ && SeqDiff(high_sacked_, base_) < 0) {
    has_high_sacked_ = false;  // everything SACKed was released since
  }
  // The holes to resend: the unSACKed packets in [base, end).
  uint32_t end = base_;
  if (probe_reply) {
    // The reply answers our UNACK that carried `probe_end` (our next_seq
    // then, echoed in its txn): it went out behind every packet before it,
    // so those the reply does not cover are lost. Later ones may still be
    // on their way, and a reply to an older UNACK says nothing of them.
    const int32_t probed = SeqDiff(probe_end, base_);
    if (probed > 0 && static_cast<uint32_t>(probed) <= in_flight_packets()) {
      end = probe_end;
    }
  }
  // kSackHoleThreshold later packets SACKed: lost, not just reordered.
  if (has_high_sacked_ &&
      SeqDiff(high_sacked_, end) >= static_cast<int32_t>(kSackHoleThreshold)) {
    end = high_sacked_ - (kSackHoleThreshold - 1);
  }
  uint32_t count = 0;
  for (uint32_t seq = base_; seq != end; ++seq) {
    Slot& slot = slots_[seq & mask_];
    if (slot.sacked) continue;
    if (slot.resent) {
      // Resent already: again only when that copy is known lost. Frames
      // stay in order on the path, so it is when kSackHoleThreshold packets
      // sent after it were SACKed, or when a probe reply to an UNACK sent
      // after it does not cover it (then at most once per nack_interval_ns,
      // so that a flood of probe replies costs at most one window per
      // interval). Never on time alone: a copy may wait behind a window of
      // packets in our own transmit queue.
      const bool overtaken =
          has_high_sacked_ && SeqDiff(high_sacked_, slot.resent_next) >=
                                  static_cast<int32_t>(kSackHoleThreshold) - 1;
      const bool probed =
          probe_reply && SeqDiff(probe_end, slot.resent_next) >= 0 &&
          now_ns >=
              internal::SaturatingAdd(slot.resent_ns, config_.nack_interval_ns);
      if (!overtaken && !probed) continue;
    }
    slot.resent = true;
    slot.resent_ns = now_ns;
    slot.resent_next = next_seq_;
    retransmit(slot.handle);
    ++count;
  }
  if (count > 0) deadline_ns_ = internal::SaturatingAdd(now_ns, rto_ns_);
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
  if (retries_ <= config_.max_retries) ++retries_;
  // Down after max_retries + 1 expiries without progress, and never before
  // DownAfterNs of silence: an adaptive timeout far below rto_ns expires
  // sooner, but the peer keeps the time the configuration gives it. With the
  // fixed timer the first condition implies the second. Stays down (the
  // deadline is not moved) until the caller calls Reset.
  const uint64_t down_at =
      internal::SaturatingAdd(stall_start_ns_, down_after_ns_);
  if (retries_ > config_.max_retries && now_ns >= down_at) {
    return TimerVerdict::kDown;
  }
  rto_ns_ = internal::NextRtoNs(rto_ns_, config_);
  deadline_ns_ = internal::SaturatingAdd(now_ns, rto_ns_);
  // The expiry that may bring the channel down comes exactly at down_at.
  if (config_.adaptive_rto && retries_ >= config_.max_retries &&
      down_at > now_ns) {
    deadline_ns_ = std::min(deadline_ns_, down_at);
  }
  // The timer's UNACK starts a new probe: what was sent before it and is
  // still unacknowledged after a whole timeout is what its reply speaks for.
  probe_end_ = next_seq_;
  probe_outstanding_ = true;
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
  if (!probe_outstanding_) {
    probe_end_ = next_seq_;
    probe_outstanding_ = true;
  }
  return true;
}

template <typename Handle>
uint64_t SendWindow<Handle>::timer_deadline() const {
  return in_flight_packets() == 0 ? UINT64_MAX : deadline_ns_;
}

template <typename Handle>
template <typename Release>
bool SendWindow<Handle>::ReleaseUpTo(uint32_t end, Release& release) {
  bool clean = true;
  while (base_ != end) {
    Slot& slot = slots_[base_ & mask_];
    clean = clean && !slot.resent && !slot.sacked;
    Handle handle = std::move(slot.handle);
    const uint32_t txn = slot.txn;
    const bool completes_txn = slot.completes_txn;
    in_flight_bytes_ -= slot.payload_bytes;
    if (slot.sacked) {
      --sacked_packets_;
      sacked_bytes_ -= slot.payload_bytes;
    }
    slot = Slot{};
    ++base_;
    release(handle, txn, completes_txn);
  }
  return clean;
}

template <typename Handle>
template <typename Release>
void SendWindow<Handle>::Reset(Release&& release) {
  ReleaseUpTo(next_seq_, release);
  base_ = 0;
  next_seq_ = 0;
  in_flight_bytes_ = 0;
  // A new session may take another path: measure afresh.
  rtt_.Reset();
  rto_ns_ = config_.rto_ns;
  deadline_ns_ = UINT64_MAX;
  retries_ = 0;
  stall_start_ns_ = 0;
  last_gbn_from_ = 0;
  last_gbn_ns_ = 0;
  gbn_done_ = false;
  last_unack_ns_ = 0;
  unack_sent_ = false;
  probe_outstanding_ = false;
  sacked_packets_ = 0;
  sacked_bytes_ = 0;
  high_sacked_ = 0;
  has_high_sacked_ = false;
}

// ---------------------------------------------------------------- selective

template <typename Handle>
ReorderBuffer<Handle>::ReorderBuffer(uint32_t span, uint32_t capacity)
    : slots_(span), mask_(span - 1), capacity_(std::min(capacity, span)) {}

template <typename Handle>
typename ReorderBuffer<Handle>::HoldVerdict ReorderBuffer<Handle>::Hold(
    uint32_t seq, uint32_t expected, Handle handle) {
  const int32_t distance = SeqDiff(seq, expected);
  // Only numbers a sender within its window can have sent; `expected`
  // itself is delivered, never held.
  if (distance <= 0 || static_cast<uint32_t>(distance) > mask_) {
    return HoldVerdict::kOutside;
  }
  Slot& slot = slots_[seq & mask_];
  if (slot.used) {
    // Within the span from expected, a used slot holds this very number:
    // the caller takes every number out as expected reaches it.
    return slot.seq == seq ? HoldVerdict::kDuplicate : HoldVerdict::kOutside;
  }
  if (count_ >= capacity_) return HoldVerdict::kFull;
  slot.handle = std::move(handle);
  slot.seq = seq;
  slot.used = true;
  if (count_ == 0 || SeqDiff(seq, top_) > 0) top_ = seq;
  ++count_;
  return HoldVerdict::kHeld;
}

template <typename Handle>
bool ReorderBuffer<Handle>::Take(uint32_t seq, Handle* out) {
  Slot& slot = slots_[seq & mask_];
  if (!slot.used || slot.seq != seq) return false;
  *out = std::move(slot.handle);
  slot = Slot{};
  --count_;
  return true;
}

template <typename Handle>
uint32_t ReorderBuffer<Handle>::WriteSack(uint32_t expected, uint8_t* out,
                                          uint32_t max_bytes) const {
  if (count_ == 0) return 0;
  const int32_t top = SeqDiff(top_, expected);
  if (top <= 0) return 0;
  const uint32_t limit = std::min(max_bytes, kMaxSackBytes);
  const uint32_t bytes = std::min(static_cast<uint32_t>(top) / 8 + 1, limit);
  std::fill(out, out + bytes, uint8_t{0});
  const uint32_t bits = bytes * 8;
  for (uint32_t j = 1; j < bits && j <= static_cast<uint32_t>(top); ++j) {
    const uint32_t seq = expected + j;
    const Slot& slot = slots_[seq & mask_];
    if (slot.used && slot.seq == seq) {
      out[j / 8] = static_cast<uint8_t>(out[j / 8] | (0x80u >> (j % 8)));
    }
  }
  return bytes;
}

template <typename Handle>
template <typename Release>
void ReorderBuffer<Handle>::Reset(Release&& release) {
  for (Slot& slot : slots_) {
    if (!slot.used) continue;
    Handle handle = std::move(slot.handle);
    slot = Slot{};
    release(handle);
  }
  count_ = 0;
  top_ = 0;
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

template <typename Cookie>
template <typename Fn>
void TransactionTable<Cookie>::ForEach(Fn&& fn) {
  for (Slot& slot : slots_) {
    if (slot.used) fn(slot.txn, slot.cookie);
  }
}

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_CHANNEL_IMPL_H_
