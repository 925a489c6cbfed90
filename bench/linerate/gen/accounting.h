// Receive-side accounting of spinnic-gen: per-stream sequence tracking
// (loss, reordering, duplicates) and a latency histogram. Pure logic, no
// DPDK; fixed memory, and nothing on the recording paths allocates, locks
// or makes a system call, so both run on the RX lcore's hot path.
#ifndef SPINNIC_BENCH_LINERATE_GEN_ACCOUNTING_H_
#define SPINNIC_BENCH_LINERATE_GEN_ACCOUNTING_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace spinnic::gen {

// Final counts of one stream (or a sum over streams, see operator+=).
// For a finished stream, received + lost == the frames sent.
struct SequenceCounts {
  uint64_t received = 0;    // distinct sequence numbers counted as arrived
  uint64_t lost = 0;        // sent, and never arrived while in the window
  uint64_t reordered = 0;   // first arrivals below the highest seen so far
  uint64_t duplicates = 0;  // arrivals of a number already seen (in window)
  uint64_t late = 0;        // arrivals too far below the highest to tell
                            // (see SequenceTracker); already in `lost`

  SequenceCounts& operator+=(const SequenceCounts& other);
};

// Tracks the sequence numbers of one stream, numbered 0, 1, 2, ... by the
// sender, with bounded memory: a sliding window of the kWindow numbers
// below the highest seen plus one, one bit each ("arrived").
//
// - A number above the highest seen slides the window up to it; numbers
//   between are missing for now (a gap), not yet lost.
// - A number that slides out of the window without having arrived is lost.
//   So is, at Finish(sent), every number below `sent` that has not arrived.
// - A first arrival inside the window below the highest is reordered (it
//   filled a gap: received, not lost).
// - An arrival of a number whose bit is set is a duplicate.
// - An arrival below the window (more than kWindow behind the highest) is
//   late: it was counted lost when it left the window, and a duplicate
//   cannot be told from a very late first arrival there. Counted apart and
//   not added to `received`, so received + lost == sent still holds.
//
// Memory: kWindow / 8 bytes (512 B) per stream; Record is O(1) for in-order
// arrivals and O(gap) up to kWindow / 64 words for a jump.
class SequenceTracker {
 public:
  static constexpr uint64_t kWindow = 4096;
  static_assert(kWindow % 64 == 0 && (kWindow & (kWindow - 1)) == 0,
                "window is a power of two, whole 64-bit words");

  enum class Arrival : uint8_t {
    kInOrder,    // highest + 1 (the first arrival when it is 0)
    kAhead,      // above highest + 1: left a gap
    kReordered,  // below the highest, first arrival
    kDuplicate,  // seen before
    kLate,       // below the window
  };

  SequenceTracker() { Reset(); }

  // Forgets everything: the next number expected is 0.
  void Reset();

  Arrival Record(uint64_t seq);

  // The counts once `sent` numbers (0 .. sent - 1) were sent: everything
  // sent and not received is lost. Does not change the tracker (a run may
  // report partial results and go on). If more arrived than `sent` says
  // were sent, the highest number seen + 1 counts as sent.
  SequenceCounts Finish(uint64_t sent) const;

  // Counts as of now, without the losses still inside the window.
  const SequenceCounts& running() const { return counts_; }
  // The highest number seen + 1 (0 before any arrival).
  uint64_t next_expected() const { return next_; }

 private:
  bool Test(uint64_t seq) const {
    return (bits_[(seq / 64) % kWords] >> (seq % 64)) & 1;
  }
  void Set(uint64_t seq) { bits_[(seq / 64) % kWords] |= 1ull << (seq % 64); }
  void Clear(uint64_t seq) {
    bits_[(seq / 64) % kWords] &= ~(1ull << (seq % 64));
  }
  // Zero bits in the window, i.e. numbers in [next_ - kWindow, next_) that
  // have not arrived. Numbers below 0 count as arrived (bits start set).
  uint64_t MissingInWindow() const;

  static constexpr size_t kWords = kWindow / 64;
  // Bit (seq % kWindow) is whether seq arrived, for seq in the window.
  std::array<uint64_t, kWords> bits_;
  uint64_t next_ = 0;
  SequenceCounts counts_;
};

// Latency histogram with log-linear buckets (the HdrHistogram scheme):
// values below 256 have a bucket each; above, each power-of-two range
// [2^k, 2^(k+1)) is cut into 128 equal buckets, so a bucket's width is at
// most 1/128 (0.78%) of its values. Values up to kMaxValue (2^36 - 1: 68 s
// in nanoseconds) are tracked at that precision; larger ones land in the
// last bucket and are counted in overflows(). Min, max, count and sum are
// exact. 3,840 buckets, 30 KiB, fixed: Record never allocates.
//
// Percentile(p) is the nearest-rank percentile within the bucket precision:
// the upper end of the bucket holding the rank-ceil(p/100 * count) value,
// clamped to [min, max]. It is never below the exact value and at most
// 1/128 of it (plus 0 below 256) above.
class LatencyHistogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr int kValueBits = 36;
  static constexpr uint64_t kMaxValue = (uint64_t{1} << kValueBits) - 1;
  static constexpr size_t kBuckets = size_t{kValueBits - kSubBucketBits + 1}
                                     << kSubBucketBits;
  static_assert(kBuckets == 3840);

  void Record(uint64_t value) {
    const uint64_t clamped = value > kMaxValue ? kMaxValue : value;
    overflows_ += value > kMaxValue ? 1 : 0;
    ++buckets_[BucketIndex(clamped)];
    ++count_;
    sum_ += value;
    min_ = value < min_ ? value : min_;
    max_ = value > max_ ? value : max_;
  }

  // Adds `other`'s samples (per-lcore histograms into one).
  void Merge(const LatencyHistogram& other);
  void Reset();

  uint64_t count() const { return count_; }
  // 0 when empty.
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  double mean() const {
    return count_ == 0
               ? 0.0
               : static_cast<double>(sum_) / static_cast<double>(count_);
  }
  uint64_t overflows() const { return overflows_; }
  // p in [0, 100]; 0 when empty. p <= 0 gives min(), p >= 100 max().
  uint64_t Percentile(double p) const;

  // The bucket of `value` (<= kMaxValue) and the values a bucket holds.
  static size_t BucketIndex(uint64_t value) {
    if (value < (uint64_t{2} << kSubBucketBits)) return value;
    const int msb = 63 - __builtin_clzll(value);
    const int shift = msb - kSubBucketBits;
    return (size_t(shift) << kSubBucketBits) + size_t(value >> shift);
  }
  static uint64_t BucketLow(size_t index);
  static uint64_t BucketHigh(size_t index);

 private:
  std::array<uint64_t, kBuckets> buckets_ = {};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;  // exact; overflows only past 2^64 ns of samples
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
  uint64_t overflows_ = 0;
};

}  // namespace spinnic::gen

#endif  // SPINNIC_BENCH_LINERATE_GEN_ACCOUNTING_H_
