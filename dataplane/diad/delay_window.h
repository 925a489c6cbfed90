// A delay-based congestion window for a DiAD channel, after Swift (Kumar et
// al., "Swift: Delay is Simple and Effective for Congestion Control in the
// Datacenter", SIGCOMM 2020, algorithm 1), with ECN echo as a second
// congestion signal. A pure controller: no clock, no DPDK; the caller feeds
// ACKs with their RTT samples and times in nanoseconds, and reads how many
// packets it may have in flight (and, below one packet, how far apart to
// pace them). docs/congestion.md describes where it sits.
//
// On an ACK of n packets with an RTT sample d at time t:
//   ECN echo (the peer saw CE):  congestion: W = (1 - max_mdf) W
//   d <  target:                 additive increase, ai packets per RTT:
//                                  W >= 1: W += ai n / W;  W < 1: W += ai n
//   d >= target:                 W = max(1 - beta (d - target) / d,
//                                        1 - max_mdf) W
// A decrease happens at most once per RTT (t - last decrease >= d); an ACK
// that would decrease sooner changes nothing. A retransmission timeout is
// congestion too (W = (1 - max_mdf) W, same once-per-RTT rule, with the
// last good RTT). W stays in [min_window, max_window]. With min_window < 1
// the window may be fractional: one packet in flight, one every
// RTT / W (PacingGapNs).
//
// Bad input is counted and ignored: an RTT sample that is 0, negative or
// above max_rtt_ns (a clock that jumped, a stale or reordered echo), and a
// call whose time is before one already seen. An ACK with a bad sample but
// an ECN echo still counts as congestion (gated by the last good RTT).
#ifndef SPINNIC_DATAPLANE_DIAD_DELAY_WINDOW_H_
#define SPINNIC_DATAPLANE_DIAD_DELAY_WINDOW_H_

#include <cstdint>
#include <limits>

#include "absl/status/status.h"

namespace spinnic::diad {

// The defaults are ours, in the ranges Swift's paper discusses; the target
// in particular depends on the fabric (base RTT plus the queueing one
// accepts) and should be configured.
struct DelayWindowParams {
  // The delay the controller steers towards.
  int64_t target_delay_ns = 50'000;
  // Additive increase: packets per RTT while below the target.
  double additive_increase = 1.0;
  // Multiplicative decrease: beta scales (d - target) / d, and one decrease
  // never takes more than max_mdf of the window.
  double beta = 0.8;
  double max_mdf = 0.5;
  // Packets. min_window >= 1, or fractional (> 0) when the sender paces.
  double min_window = 1.0;
  double max_window = 256.0;  // the channel's own window limit
  double initial_window = 16.0;
  // Longer samples are absurd (a clock jump), counted and ignored.
  int64_t max_rtt_ns = 10'000'000'000;  // 10 s
};

// OK, or INVALID_ARGUMENT with one line naming the field and what to write.
absl::Status ValidateDelayWindowParams(const DelayWindowParams& params);

struct DelayWindowCounters {
  uint64_t acks = 0;  // OnAck calls taken (bad ones excluded)
  uint64_t increases = 0;
  uint64_t delay_decreases = 0;
  uint64_t ecn_decreases = 0;
  uint64_t timeout_decreases = 0;
  uint64_t decreases_held = 0;   // congestion within an RTT of a decrease
  uint64_t bad_rtt_samples = 0;  // 0, negative, above max_rtt_ns
  uint64_t clock_backwards = 0;  // calls with a time before the last one
};

class DelayWindow {
 public:
  // `params` must be valid (ValidateDelayWindowParams).
  explicit DelayWindow(const DelayWindowParams& params);

  // An ACK covering `acked` packets, with the RTT sample `rtt_ns` taken at
  // `now_ns`; `ecn_echo` when it reports CE-marked packets.
  void OnAck(int64_t now_ns, int64_t rtt_ns, uint32_t acked, bool ecn_echo);
  // A retransmission timeout fired at `now_ns`.
  void OnRetransmitTimeout(int64_t now_ns);

  // The window in packets (fractional).
  double window() const { return window_; }
  // Packets the sender may have in flight: the whole part of the window,
  // at least 1 (below 1 the pacing gap does the limiting).
  uint32_t PacketsInFlight() const;
  // Below one packet: the gap between sends, last good RTT / window; 0 at a
  // window of 1 or more (or before any RTT sample).
  int64_t PacingGapNs() const;
  int64_t last_rtt_ns() const { return last_rtt_ns_; }
  const DelayWindowCounters& counters() const { return counters_; }
  const DelayWindowParams& params() const { return params_; }

 private:
  // false (counted) when `now_ns` is before a time already seen.
  bool Accept(int64_t now_ns);
  // Multiplies the window by `factor` unless a decrease happened less than
  // `rtt_ns` ago; true when it did.
  bool Decrease(int64_t now_ns, int64_t rtt_ns, double factor);
  void Clamp();

  DelayWindowParams params_;
  double window_;
  int64_t last_ns_ = std::numeric_limits<int64_t>::min();
  int64_t last_decrease_ns_ = std::numeric_limits<int64_t>::min();
  int64_t last_rtt_ns_ = 0;  // 0: no good sample yet
  DelayWindowCounters counters_;
};

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_DELAY_WINDOW_H_
