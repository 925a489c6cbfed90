// The transport TX pacer of one port's TX queue on one HPU (issue 17, item
// 4): the frames the transports originate (DiAD, RoCE, neighbour answers)
// wait here and reach the TX queue after the passthrough frames of the same
// loop, within a budget.
//
// Why: a lossy DiAD or RoCE path retransmits in bursts (go-back-N resends a
// whole window on one NACK, from Receive, before the host port's RX burst of
// the same loop). Sent straight into the TX batch, such a burst takes the TX
// queue's free descriptors, and spins on tx_burst for more, ahead of the
// passthrough frames, which the queue then refuses (kTxFull): host traffic
// crossing the appliance lost 20-35% where the link lost 5-6%. The pacer:
//
// 1. Orders. Each loop the HPU sends its passthrough batch first, then asks
//    the pacer to Drain; transport frames never go ahead of passthrough.
// 2. Never spins. Transport frames the queue refuses stay here, in order,
//    for the next loop, instead of the 64 immediate retries passthrough gets:
//    spinning on a full queue is how a burst ends up owning it.
// 3. Keeps passthrough's share. While passthrough is being refused (its
//    first tx_burst in a flush took fewer frames than offered, within the
//    last kCongestedDrains drains), transport frames get a credit of
//    (100 - share) / share frames per passthrough frame the queue accepted,
//    so passthrough keeps at least `share` percent of what the queue takes.
//    When passthrough got all it asked for, transport frames use whatever
//    room the queue has: the pacer is work conserving.
// 4. Optionally caps the rate: a token bucket of rate_bytes_per_s, 100 us
//    deep (at least 16 KiB), leaves the TX ring room for host bursts even
//    when passthrough is idle and a transport would otherwise fill it.
// 5. Is bounded. Enqueue refuses a frame when queue_frames are waiting; the
//    HPU frees and counts it (transport_refused), and the transport's own
//    recovery sends it again (DiAD keeps the original in its retransmission
//    buffer; RoCE's requester times out, its responder answers the retried
//    request). Nothing is lost silently and nothing grows.
//
// One FIFO, no priority of new frames over retransmissions: both transports'
// receivers are sequence ordered (a go-back-N DiAD receiver drops what
// follows a hole, an RC responder NAKs an out-of-sequence PSN), so a new
// frame that overtook a queued retransmission of its own flow would be lost
// again and cost another round.
//
// Owned and called by one HPU lcore only; Configure runs before it starts.
// No allocation, lock or virtual call after Configure; the send is a
// template argument (tx_burst, a ring enqueue, or a test's model queue).
#ifndef SPINNIC_DATAPLANE_TX_PACER_H_
#define SPINNIC_DATAPLANE_TX_PACER_H_

#include <rte_mbuf_core.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <memory>

#include "dataplane/dataplane_config.h"

namespace spinnic {

class TxPacer {
 public:
  // Most frames one Drain hands to the queue (the HPU's largest burst).
  static constexpr uint32_t kMaxBurst = 512;
  // Drains after the last passthrough refusal during which the share still
  // holds. A refusal means the queue was full when passthrough came; the
  // transports' backlog would fill it again at once if released.
  static constexpr uint32_t kCongestedDrains = 64;
  // Largest queue_frames (the config check's bound).
  static constexpr uint32_t kMaxQueueFrames = 16384;
  // Token bucket depth: this much time at the rate, at least kMinDepth.
  static constexpr uint64_t kDepthNs = 100'000;
  static constexpr uint64_t kMinDepthBytes = 16384;

  struct Drained {
    uint32_t frames = 0;
    uint64_t bytes = 0;
  };

  // Off (enabled() false) unless config.enabled. Allocates the FIFO: call
  // on the control thread, before the HPU runs.
  void Configure(const TxPacerConfig& config, uint32_t burst) {
    if (!config.enabled) return;
    limit_ = std::clamp<uint32_t>(config.queue_frames, 1, kMaxQueueFrames);
    const uint32_t capacity = std::bit_ceil(limit_);
    slots_ = std::make_unique<rte_mbuf*[]>(capacity);
    mask_ = capacity - 1;
    burst_ = std::clamp<uint32_t>(burst, 1, kMaxBurst);
    share_ = std::min<uint32_t>(config.passthrough_share_percent, 99);
    credit_cap_ = uint64_t{100 - share_} * burst_;
    rate_ = config.rate_bytes_per_s;
    if (rate_ != 0) {
      depth_ = std::max<uint64_t>(
          kMinDepthBytes,
          static_cast<uint64_t>(static_cast<__uint128_t>(rate_) * kDepthNs /
                                1'000'000'000u));
      tokens_ = depth_;
    }
  }

  bool enabled() const { return slots_ != nullptr; }
  bool rate_limited() const { return rate_ != 0; }
  uint32_t queued() const { return count_; }
  // Frames Enqueue would still take (the transports' back-pressure check);
  // unbounded when the pacer is off.
  uint32_t room() const {
    return enabled() ? limit_ - count_ : std::numeric_limits<uint32_t>::max();
  }
  // Whether the share currently limits transport frames (tests, docs).
  bool congested() const { return congested_drains_ != 0; }

  // False, and the frame stays the caller's, when the queue is full.
  bool Enqueue(rte_mbuf* packet) {
    if (count_ == limit_) [[unlikely]]
      return false;
    slots_[(head_ + count_) & mask_] = packet;
    ++count_;
    return true;
  }

  // What one flush of passthrough frames met: `offered` frames, of which the
  // first tx_burst took `first_accepted` and all attempts `accepted`.
  void OnPassthrough(uint32_t offered, uint32_t first_accepted,
                     uint32_t accepted) {
    if (share_ == 0) return;  // no share to keep: only order and rate
    credit_ =
        std::min(credit_ + uint64_t{accepted} * (100 - share_), credit_cap_);
    if (first_accepted < offered) congested_drains_ = kCongestedDrains;
  }

  // Hands up to one burst of queued frames to `send` (uint16_t(rte_mbuf**,
  // uint16_t): how many of the first frames it took, as tx_burst answers),
  // within the share's credit and the rate's tokens. Frames it does not
  // take stay queued, first in line. `now_ns` matters only when
  // rate_limited().
  template <typename Send>
  Drained Drain(uint64_t now_ns, Send&& send) {
    Drained drained;
    const bool share_holds = congested_drains_ != 0;
    if (share_holds) --congested_drains_;
    if (count_ == 0) return drained;
    uint32_t budget = std::min(count_, burst_);
    if (share_holds) {
      budget =
          static_cast<uint32_t>(std::min<uint64_t>(budget, credit_ / share_));
    }
    if (rate_ != 0) Refill(now_ns);
    // The frames' lengths are read now: once handed over, they are the
    // driver's (it may free them before tx_burst returns).
    rte_mbuf* out[kMaxBurst];
    uint64_t end_bytes[kMaxBurst];
    uint64_t bytes = 0;
    uint32_t n = 0;
    for (; n < budget; ++n) {
      rte_mbuf* packet = slots_[(head_ + n) & mask_];
      if (rate_ != 0 && bytes + packet->pkt_len > tokens_) break;
      bytes += packet->pkt_len;
      out[n] = packet;
      end_bytes[n] = bytes;
    }
    if (n == 0) return drained;
    const uint32_t taken = send(out, static_cast<uint16_t>(n));
    if (taken == 0) return drained;
    head_ = (head_ + taken) & mask_;
    count_ -= taken;
    drained.frames = taken;
    drained.bytes = end_bytes[taken - 1];
    if (share_holds) credit_ -= uint64_t{taken} * share_;
    if (rate_ != 0) tokens_ -= drained.bytes;
    return drained;
  }

  // Takes every waiting frame out, first to last, into `release` (the HPU
  // frees them when it stops).
  template <typename Release>
  void Clear(Release&& release) {
    for (; count_ != 0; --count_) {
      release(slots_[head_]);
      head_ = (head_ + 1) & mask_;
    }
  }

 private:
  void Refill(uint64_t now_ns) {
    if (now_ns > last_ns_) {
      const __uint128_t earned =
          static_cast<__uint128_t>(now_ns - last_ns_) * rate_ / 1'000'000'000u;
      tokens_ = static_cast<uint64_t>(
          std::min<__uint128_t>(tokens_ + earned, depth_));
    }
    last_ns_ = now_ns;
  }

  std::unique_ptr<rte_mbuf*[]> slots_;
  uint32_t mask_ = 0;
  uint32_t limit_ = 0;
  uint32_t head_ = 0;
  uint32_t count_ = 0;
  uint32_t burst_ = 32;
  // Percent of passthrough frames; credit_ counts in frames * 100: each
  // passthrough frame accepted earns (100 - share_), each transport frame
  // sent under the share spends share_. Capped at one burst's worth, so a
  // long quiet spell does not bank a flood.
  uint32_t share_ = 0;
  uint64_t credit_ = 0;
  uint64_t credit_cap_ = 0;
  uint32_t congested_drains_ = 0;
  uint64_t rate_ = 0;  // bytes per second; 0: no bucket
  uint64_t depth_ = 0;
  uint64_t tokens_ = 0;
  uint64_t last_ns_ = 0;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_TX_PACER_H_
