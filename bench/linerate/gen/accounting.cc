#include "bench/linerate/gen/accounting.h"

#include <algorithm>
#include <cmath>

namespace spinnic::gen {

SequenceCounts& SequenceCounts::operator+=(const SequenceCounts& other) {
  received += other.received;
  lost += other.lost;
  reordered += other.reordered;
  duplicates += other.duplicates;
  late += other.late;
  return *this;
}

void SequenceTracker::Reset() {
  // Numbers below 0 count as arrived: sliding them out loses nothing.
  bits_.fill(~uint64_t{0});
  next_ = 0;
  counts_ = SequenceCounts();
}

uint64_t SequenceTracker::MissingInWindow() const {
  uint64_t arrived = 0;
  for (uint64_t word : bits_) {
    arrived += static_cast<uint64_t>(__builtin_popcountll(word));
  }
  return kWindow - arrived;
}

SequenceTracker::Arrival SequenceTracker::Record(uint64_t seq) {
  // No sender gets near 2^63 frames; such a number is garbage, and taking
  // it would end the stream (next_ would wrap).
  if (seq >= (uint64_t{1} << 63)) {
    ++counts_.late;
    return Arrival::kLate;
  }
  if (seq >= next_) {
    const uint64_t jump = seq - next_;
    if (jump < kWindow) {
      // Slide up to seq: each new number takes the slot of the one kWindow
      // below it, which leaves the window lost if it never arrived.
      for (uint64_t q = next_; q <= seq; ++q) {
        if (!Test(q)) ++counts_.lost;
        Clear(q);
      }
    } else {
      // The new window does not overlap the old one: every number missing
      // in the old one is lost, and so is every number between the two.
      counts_.lost += MissingInWindow() + (jump - kWindow + 1);
      bits_.fill(0);
    }
    Set(seq);
    ++counts_.received;
    next_ = seq + 1;
    return jump == 0 ? Arrival::kInOrder : Arrival::kAhead;
  }
  if (next_ - seq <= kWindow) {
    if (Test(seq)) {
      ++counts_.duplicates;
      return Arrival::kDuplicate;
    }
    Set(seq);
    ++counts_.received;
    ++counts_.reordered;
    return Arrival::kReordered;
  }
  ++counts_.late;
  return Arrival::kLate;
}

SequenceCounts SequenceTracker::Finish(uint64_t sent) const {
  SequenceCounts counts = counts_;
  counts.lost += MissingInWindow();
  if (sent > next_) counts.lost += sent - next_;
  return counts;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (size_t i = 0; i < kBuckets; ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  overflows_ += other.overflows_;
}

void LatencyHistogram::Reset() { *this = LatencyHistogram(); }

uint64_t LatencyHistogram::BucketLow(size_t index) {
  if (index < (size_t{2} << kSubBucketBits)) return index;
  const int shift = static_cast<int>(index >> kSubBucketBits) - 1;
  const uint64_t sub = index - (size_t(shift) << kSubBucketBits);
  return sub << shift;
}

uint64_t LatencyHistogram::BucketHigh(size_t index) {
  if (index < (size_t{2} << kSubBucketBits)) return index;
  const int shift = static_cast<int>(index >> kSubBucketBits) - 1;
  const uint64_t sub = index - (size_t(shift) << kSubBucketBits);
  return ((sub + 1) << shift) - 1;
}

uint64_t LatencyHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  if (p <= 0) return min_;
  if (p >= 100) return max_;
  // Nearest rank, ceil(p / 100 * count); the relative nudge keeps 99.9 %
  // of 1000 at rank 999 although 99.9 / 100 * 1000 is 999.0000000000001
  // in binary floating point.
  const double exact = p / 100.0 * static_cast<double>(count_);
  uint64_t rank = static_cast<uint64_t>(std::ceil(exact * (1 - 1e-12)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::clamp(BucketHigh(i), min_, max_);
  }
  return max_;
}

}  // namespace spinnic::gen
