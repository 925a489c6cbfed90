// A latency distribution written by one lcore and read by the control side:
// log2 buckets of nanoseconds, 1 us, 2 us, 4 us ... 2^22 us (about 4.2 s),
// then everything above. Prometheus histograms (docs/metrics.md) are made
// from it; the buckets are fixed so that series from every appliance and
// every HPU add up.
//
// Record costs one division, one bit scan and two relaxed counter updates:
// meant for per-sample paths (a round-trip sample per ACK), not per byte.
#ifndef SPINNIC_DATAPLANE_LATENCY_HISTOGRAM_H_
#define SPINNIC_DATAPLANE_LATENCY_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "dataplane/counter.h"

namespace spinnic {

class LatencyHistogram {
 public:
  // The last bucket has no upper bound (+Inf).
  static constexpr size_t kBuckets = 24;
  static constexpr uint64_t kFirstBoundNs = 1000;

  // The inclusive upper bound of bucket `b` < kBuckets - 1.
  static constexpr uint64_t UpperBoundNs(size_t b) {
    return kFirstBoundNs << b;
  }
  // The first bucket whose upper bound is at least `ns`.
  static constexpr size_t BucketOf(uint64_t ns) {
    if (ns <= kFirstBoundNs) return 0;
    const uint64_t multiples = (ns - 1) / kFirstBoundNs;  // >= 1
    return std::min<size_t>(std::bit_width(multiples), kBuckets - 1);
  }

  // Only the owning lcore may record. `weight` samples of `ns` each.
  void Record(uint64_t ns, uint64_t weight = 1) {
    counts_[BucketOf(ns)].Add(weight);
    sum_ns_.Add(ns * weight);
  }

  // Samples in bucket `b` (not cumulative).
  uint64_t count(size_t b) const { return counts_[b].Get(); }
  uint64_t sum_ns() const { return sum_ns_.Get(); }

 private:
  std::array<Counter, kBuckets> counts_;
  Counter sum_ns_;
};

// A histogram as a snapshot carries it: per-bucket counts (not cumulative)
// in LatencyHistogram's buckets, summed over HPUs.
struct LatencyHistogramStats {
  std::array<uint64_t, LatencyHistogram::kBuckets> counts{};
  uint64_t sum_ns = 0;

  void Add(const LatencyHistogram& h) {
    for (size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
      counts[b] += h.count(b);
    }
    sum_ns += h.sum_ns();
  }
  uint64_t total() const {
    uint64_t n = 0;
    for (uint64_t c : counts) n += c;
    return n;
  }
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_LATENCY_HISTOGRAM_H_
