// The retransmission-timeout estimator of RFC 6298 (smoothed round-trip time
// and its variance), shared by the DiAD sender (dataplane/diad/channel.h) and
// the RoCE requester (dataplane/roce/requester.h). Pure integer arithmetic in
// nanoseconds: no clock, no allocation, no locks, usable on the hot path.
//
//   first sample R:  SRTT = R, RTTVAR = R / 2
//   later samples:   RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|
//                    SRTT   = 7/8 SRTT   + 1/8 R
//   RTO = SRTT + max(G, 4 RTTVAR), clamped to [min_ns, max_ns]
//
// Before the first sample the RTO is the configured initial value, as given
// (the callers' configured first timeout keeps its meaning). Which samples to
// feed (Karn's algorithm: never one from a retransmitted packet) and the
// exponential backoff on expiry are the caller's: they depend on what the wire
// can tell apart.
#ifndef SPINNIC_DATAPLANE_COMMON_RTT_ESTIMATOR_H_
#define SPINNIC_DATAPLANE_COMMON_RTT_ESTIMATOR_H_

#include <algorithm>
#include <cstdint>

namespace spinnic {

class RttEstimator {
 public:
  // Samples are clamped to this (about 18 minutes) so that the weighted sums
  // below cannot overflow, whatever a broken clock or peer makes of them.
  static constexpr uint64_t kMaxSampleNs = uint64_t{1} << 40;

  RttEstimator() = default;
  // `initial_ns`: the RTO before any sample. `min_ns`..`max_ns`: the clamp
  // (max_ns >= min_ns; a min above max is treated as max). `granularity_ns`:
  // RFC 6298's G, the least margin above SRTT (what the peer may add on
  // purpose, e.g. its ACK coalescing delay).
  RttEstimator(uint64_t initial_ns, uint64_t min_ns, uint64_t max_ns,
               uint64_t granularity_ns)
      : initial_ns_(initial_ns),
        min_ns_(std::min(min_ns, max_ns)),
        max_ns_(max_ns),
        granularity_ns_(granularity_ns) {}

  // A round-trip sample (the caller made sure it is unambiguous).
  void OnSample(uint64_t rtt_ns) {
    const uint64_t r = std::min(rtt_ns, kMaxSampleNs);
    if (samples_ == 0) {
      srtt_ns_ = r;
      rttvar_ns_ = r / 2;
    } else {
      const uint64_t err = srtt_ns_ > r ? srtt_ns_ - r : r - srtt_ns_;
      rttvar_ns_ = (3 * rttvar_ns_ + err) / 4;
      srtt_ns_ = (7 * srtt_ns_ + r) / 8;
    }
    last_sample_ns_ = r;
    ++samples_;
  }

  // The timeout to arm after progress: the estimate, or the initial value
  // before any sample.
  uint64_t rto_ns() const {
    if (samples_ == 0) return initial_ns_;
    return std::clamp(srtt_ns_ + std::max(granularity_ns_, 4 * rttvar_ns_),
                      min_ns_, max_ns_);
  }

  uint64_t srtt_ns() const { return srtt_ns_; }
  uint64_t rttvar_ns() const { return rttvar_ns_; }
  uint64_t samples() const { return samples_; }
  // The newest sample as taken (clamped), 0 before any.
  uint64_t last_sample_ns() const { return last_sample_ns_; }
  // Forgets every sample (a new session, possibly over another path).
  void Reset() {
    srtt_ns_ = 0;
    rttvar_ns_ = 0;
    samples_ = 0;
    last_sample_ns_ = 0;
  }

 private:
  uint64_t initial_ns_ = 0;
  uint64_t min_ns_ = 0;
  uint64_t max_ns_ = UINT64_MAX;
  uint64_t granularity_ns_ = 0;
  uint64_t srtt_ns_ = 0;
  uint64_t rttvar_ns_ = 0;
  uint64_t last_sample_ns_ = 0;
  uint64_t samples_ = 0;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_COMMON_RTT_ESTIMATOR_H_
