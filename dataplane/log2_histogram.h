// A distribution written by one lcore and read by the control side, in
// fixed log2 buckets: kFirstBound, 2 x kFirstBound, 4 x ... and a last
// bucket for everything above. Prometheus histograms (docs/metrics.md) are
// made from it; the buckets are fixed so that series from every HPU and
// every appliance add up. (bench/linerate/gen/accounting.h has the
// generator's histogram: percentiles within 1 %, not for export.)
//
// Record costs one division, one bit scan and two relaxed counter updates:
// meant for sampled paths (a round-trip sample per ACK, a timed handler
// call), not per byte.
#ifndef SPINNIC_DATAPLANE_LOG2_HISTOGRAM_H_
#define SPINNIC_DATAPLANE_LOG2_HISTOGRAM_H_

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "dataplane/counter.h"

namespace spinnic {

template <uint64_t kFirst, size_t kBucketCount>
class Log2Histogram {
 public:
  // The last bucket has no upper bound (+Inf).
  static constexpr size_t kBuckets = kBucketCount;
  static constexpr uint64_t kFirstBound = kFirst;

  // The inclusive upper bound of bucket `b` < kBuckets - 1.
  static constexpr uint64_t UpperBound(size_t b) { return kFirstBound << b; }
  // The first bucket whose upper bound is at least `value`.
  static constexpr size_t BucketOf(uint64_t value) {
    if (value <= kFirstBound) return 0;
    const uint64_t multiples = (value - 1) / kFirstBound;  // >= 1
    return std::min<size_t>(std::bit_width(multiples), kBuckets - 1);
  }

  // Only the owning lcore may record. `weight` samples of `value` each.
  void Record(uint64_t value, uint64_t weight = 1) {
    counts_[BucketOf(value)].Add(weight);
    sum_.Add(value * weight);
  }

  // Samples in bucket `b` (not cumulative).
  uint64_t count(size_t b) const { return counts_[b].Get(); }
  uint64_t sum() const { return sum_.Get(); }

 private:
  std::array<Counter, kBuckets> counts_;
  Counter sum_;
};

// A histogram as a snapshot carries it: per-bucket counts (not cumulative),
// summed over HPUs.
template <typename Histogram>
struct HistogramStats {
  std::array<uint64_t, Histogram::kBuckets> counts{};
  uint64_t sum = 0;

  void Add(const Histogram& h) {
    for (size_t b = 0; b < Histogram::kBuckets; ++b) counts[b] += h.count(b);
    sum += h.sum();
  }
  uint64_t total() const {
    uint64_t n = 0;
    for (uint64_t c : counts) n += c;
    return n;
  }
};

// Round trips in nanoseconds: 1 us .. 2^22 us (about 4.2 s), +Inf.
using RttHistogram = Log2Histogram<1000, 24>;
using RttHistogramStats = HistogramStats<RttHistogram>;
// A handler call in TSC cycles: 16 .. 16 x 2^20 (about 16.8 M), +Inf.
using CycleHistogram = Log2Histogram<16, 22>;
using CycleHistogramStats = HistogramStats<CycleHistogram>;

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_LOG2_HISTOGRAM_H_
