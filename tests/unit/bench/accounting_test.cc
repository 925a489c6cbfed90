// spinnic-gen's accounting: the sequence tracker (gaps, reordering,
// duplicates, the sliding window) against hand-worked cases and an
// unbounded reference model, and the latency histogram's percentiles
// against exact values from the recorded samples.
#include "bench/linerate/gen/accounting.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace spinnic::gen {
namespace {

using Arrival = SequenceTracker::Arrival;
constexpr uint64_t kW = SequenceTracker::kWindow;

std::vector<Arrival> Feed(SequenceTracker& t, std::vector<uint64_t> seqs) {
  std::vector<Arrival> out;
  for (uint64_t s : seqs) out.push_back(t.Record(s));
  return out;
}

TEST(SequenceTrackerTest, InOrderLosesNothing) {
  SequenceTracker t;
  for (uint64_t s = 0; s < 10000; ++s)
    ASSERT_EQ(t.Record(s), Arrival::kInOrder);
  const SequenceCounts c = t.Finish(10000);
  EXPECT_EQ(c.received, 10000u);
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(c.reordered, 0u);
  EXPECT_EQ(c.duplicates, 0u);
  EXPECT_EQ(c.late, 0u);
}

TEST(SequenceTrackerTest, GapNeverFilledIsLost) {
  SequenceTracker t;
  EXPECT_EQ(Feed(t, {0, 1, 2, 5, 6}),
            (std::vector<Arrival>{Arrival::kInOrder, Arrival::kInOrder,
                                  Arrival::kInOrder, Arrival::kAhead,
                                  Arrival::kInOrder}));
  EXPECT_EQ(t.running().lost, 0u);  // still in the window: a gap, not lost
  const SequenceCounts c = t.Finish(7);
  EXPECT_EQ(c.received, 5u);
  EXPECT_EQ(c.lost, 2u);
  EXPECT_EQ(c.reordered, 0u);
}

TEST(SequenceTrackerTest, FilledGapIsReorderedNotLost) {
  SequenceTracker t;
  EXPECT_EQ(Feed(t, {0, 1, 3, 2, 4}),
            (std::vector<Arrival>{Arrival::kInOrder, Arrival::kInOrder,
                                  Arrival::kAhead, Arrival::kReordered,
                                  Arrival::kInOrder}));
  const SequenceCounts c = t.Finish(5);
  EXPECT_EQ(c.received, 5u);
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(c.reordered, 1u);
}

TEST(SequenceTrackerTest, DuplicatesAreCountedOnce) {
  SequenceTracker t;
  EXPECT_EQ(Feed(t, {0, 1, 1, 0, 2, 1}),
            (std::vector<Arrival>{Arrival::kInOrder, Arrival::kInOrder,
                                  Arrival::kDuplicate, Arrival::kDuplicate,
                                  Arrival::kInOrder, Arrival::kDuplicate}));
  const SequenceCounts c = t.Finish(3);
  EXPECT_EQ(c.received, 3u);
  EXPECT_EQ(c.duplicates, 3u);
  EXPECT_EQ(c.lost, 0u);
  EXPECT_EQ(c.reordered, 0u);
}

TEST(SequenceTrackerTest, HeadAndTailLossesCountAtFinish) {
  SequenceTracker t;
  for (uint64_t s = 5; s < 10; ++s) t.Record(s);
  const SequenceCounts c = t.Finish(15);  // 0..4 and 10..14 never came
  EXPECT_EQ(c.received, 5u);
  EXPECT_EQ(c.lost, 10u);
  // Nothing at all received: everything sent is lost.
  SequenceTracker empty;
  EXPECT_EQ(empty.Finish(42).lost, 42u);
  EXPECT_EQ(empty.Finish(0).lost, 0u);
}

TEST(SequenceTrackerTest, FinishDoesNotChangeTheTracker) {
  SequenceTracker t;
  Feed(t, {0, 2});
  EXPECT_EQ(t.Finish(3).lost, 1u);
  t.Record(1);
  EXPECT_EQ(t.Finish(3).lost, 0u);
  EXPECT_EQ(t.Finish(3).reordered, 1u);
}

TEST(SequenceTrackerTest, MissingNumberSlidingOutOfTheWindowIsLostThenLate) {
  SequenceTracker t;
  for (uint64_t s = 0; s <= kW + 6; ++s) {
    if (s != 7) t.Record(s);
  }
  // The window is [7, kW + 7): 7 is still a gap, not lost.
  EXPECT_EQ(t.running().lost, 0u);
  t.Record(kW + 7);  // 7 slides out
  EXPECT_EQ(t.running().lost, 1u);
  EXPECT_EQ(t.Record(7), Arrival::kLate);
  EXPECT_EQ(t.Record(6), Arrival::kLate);  // a duplicate, but out of window
  EXPECT_EQ(t.Record(8), Arrival::kDuplicate);  // the window's lowest
  const SequenceCounts c = t.Finish(kW + 8);
  EXPECT_EQ(c.late, 2u);
  EXPECT_EQ(c.duplicates, 1u);
  EXPECT_EQ(c.lost, 1u);
  EXPECT_EQ(c.received, kW + 7);
  EXPECT_EQ(c.received + c.lost, kW + 8);
}

TEST(SequenceTrackerTest, BottomOfTheWindowStillCountsAsReordered) {
  SequenceTracker t;
  t.Record(0);
  t.Record(kW);  // window [1, kW + 1): 1 is its lowest number
  EXPECT_EQ(t.Record(1), Arrival::kReordered);
  EXPECT_EQ(t.Record(0), Arrival::kLate);  // below the window
}

TEST(SequenceTrackerTest, JumpBeyondTheWindow) {
  SequenceTracker t;
  t.Record(0);
  t.Record(kW + 10);  // 1..10 never entered any window: lost at once
  EXPECT_EQ(t.running().lost, 10u);
  EXPECT_EQ(t.Record(11), Arrival::kReordered);
  EXPECT_EQ(t.Record(5), Arrival::kLate);
  const SequenceCounts c = t.Finish(kW + 11);
  EXPECT_EQ(c.received, 3u);
  EXPECT_EQ(c.received + c.lost, kW + 11);
  // A second jump loses the first window's missing numbers too.
  SequenceTracker u;
  u.Record(3);  // 0..2 missing in the window
  u.Record(10 * kW);
  EXPECT_EQ(u.running().lost, 3 + (10 * kW - 4 - kW + 1));
  EXPECT_EQ(u.Finish(10 * kW + 1).received + u.Finish(10 * kW + 1).lost,
            10 * kW + 1);
}

TEST(SequenceTrackerTest, GarbageSequenceNumbersDoNotEndTheStream) {
  SequenceTracker t;
  t.Record(0);
  EXPECT_EQ(t.Record(UINT64_MAX), Arrival::kLate);
  EXPECT_EQ(t.Record(uint64_t{1} << 63), Arrival::kLate);
  EXPECT_EQ(t.Record(1), Arrival::kInOrder);
  EXPECT_EQ(t.Finish(2).lost, 0u);
}

TEST(SequenceTrackerTest, ResetForgets) {
  SequenceTracker t;
  Feed(t, {0, 5, 5});
  t.Reset();
  EXPECT_EQ(t.next_expected(), 0u);
  EXPECT_EQ(t.Record(0), Arrival::kInOrder);
  EXPECT_EQ(t.Finish(1).duplicates, 0u);
}

TEST(SequenceTrackerTest, CountsAdd) {
  SequenceCounts a{1, 2, 3, 4, 5};
  a += SequenceCounts{10, 20, 30, 40, 50};
  EXPECT_EQ(a.received, 11u);
  EXPECT_EQ(a.lost, 22u);
  EXPECT_EQ(a.reordered, 33u);
  EXPECT_EQ(a.duplicates, 44u);
  EXPECT_EQ(a.late, 55u);
}

// An unbounded reference: a set of everything seen. Agrees with the
// tracker whenever no arrival is more than the window behind the highest.
struct Reference {
  std::set<uint64_t> seen;
  uint64_t next = 0;
  SequenceCounts c;
  void Record(uint64_t s) {
    if (seen.count(s)) {
      ++c.duplicates;
      return;
    }
    seen.insert(s);
    ++c.received;
    if (s < next) ++c.reordered;
    next = std::max(next, s + 1);
  }
  uint64_t Lost(uint64_t sent) const {
    return std::max(sent, next) - seen.size();
  }
};

TEST(SequenceTrackerTest, AgreesWithAnUnboundedModelOnLossyReorderingChannels) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    const uint64_t sent = 20000;
    const double loss = (seed % 5) * 0.02;
    // Losses and duplicates, then each frame delayed by up to kW / 2
    // places (so that nothing falls behind the window).
    std::vector<std::pair<uint64_t, uint64_t>> keyed;  // (place, seq)
    for (uint64_t s = 0; s < sent; ++s) {
      if (std::uniform_real_distribution<>(0, 1)(rng) < loss) continue;
      const int copies = rng() % 50 == 0 ? 2 : 1;
      for (int k = 0; k < copies; ++k) {
        const uint64_t delay = rng() % 8 == 0 ? rng() % (kW / 2) : 0;
        keyed.emplace_back(keyed.size() + delay, s);
      }
    }
    std::stable_sort(
        keyed.begin(), keyed.end(),
        [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<uint64_t> wire;
    for (const auto& [place, s] : keyed) wire.push_back(s);
    SequenceTracker t;
    Reference ref;
    for (uint64_t s : wire) {
      t.Record(s);
      ref.Record(s);
    }
    const SequenceCounts c = t.Finish(sent);
    EXPECT_EQ(c.received, ref.c.received) << "seed " << seed;
    EXPECT_EQ(c.duplicates, ref.c.duplicates) << "seed " << seed;
    EXPECT_EQ(c.reordered, ref.c.reordered) << "seed " << seed;
    EXPECT_EQ(c.lost, ref.Lost(sent)) << "seed " << seed;
    EXPECT_EQ(c.late, 0u) << "seed " << seed;
    EXPECT_EQ(c.received + c.lost, sent) << "seed " << seed;
  }
}

TEST(SequenceTrackerTest, ReceivedPlusLostIsSentEvenWithLateArrivals) {
  std::mt19937_64 rng(7);
  SequenceTracker t;
  const uint64_t sent = 50000;
  for (int i = 0; i < 60000; ++i) t.Record(rng() % sent);  // chaos
  const SequenceCounts c = t.Finish(sent);
  EXPECT_EQ(c.received + c.lost, sent);
  EXPECT_GT(c.late, 0u);
  EXPECT_GT(c.duplicates, 0u);
}

// ---- LatencyHistogram ----

TEST(LatencyHistogramTest, BucketsTileTheRangeWithinOnePercent) {
  using H = LatencyHistogram;
  EXPECT_EQ(H::BucketLow(0), 0u);
  for (size_t i = 0; i + 1 < H::kBuckets; ++i) {
    ASSERT_EQ(H::BucketHigh(i) + 1, H::BucketLow(i + 1)) << "bucket " << i;
    const uint64_t low = H::BucketLow(i);
    const uint64_t width = H::BucketHigh(i) - low + 1;
    if (low >= 256) {
      ASSERT_LE(width * 128, low) << "bucket " << i;
    } else {
      ASSERT_EQ(width, 1u) << "bucket " << i;
    }
  }
  EXPECT_EQ(H::BucketHigh(H::kBuckets - 1), H::kMaxValue);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t v = rng() >> (64 - 1 - rng() % H::kValueBits);
    const size_t b = H::BucketIndex(v);
    ASSERT_LT(b, H::kBuckets);
    ASSERT_LE(H::BucketLow(b), v);
    ASSERT_GE(H::BucketHigh(b), v);
  }
}

// Nearest rank: the ceil(permille * n / 1000)-th smallest sample.
uint64_t ExactPercentile(std::vector<uint64_t> v, uint64_t permille) {
  std::sort(v.begin(), v.end());
  const uint64_t rank = (permille * v.size() + 999) / 1000;
  return v[std::max<uint64_t>(rank, 1) - 1];
}

void ExpectPercentilesMatch(const LatencyHistogram& h,
                            const std::vector<uint64_t>& samples,
                            const char* what) {
  for (uint64_t permille : {1, 100, 500, 900, 990, 999, 1000}) {
    const uint64_t exact = ExactPercentile(samples, permille);
    const uint64_t got = h.Percentile(static_cast<double>(permille) / 10);
    EXPECT_GE(got, exact) << what << " p" << permille / 10.0;
    EXPECT_LE(got, exact + exact / 128) << what << " p" << permille / 10.0;
  }
  EXPECT_EQ(h.min(), *std::min_element(samples.begin(), samples.end()));
  EXPECT_EQ(h.max(), *std::max_element(samples.begin(), samples.end()));
  EXPECT_EQ(h.count(), samples.size());
  double sum = 0;
  for (uint64_t s : samples) sum += static_cast<double>(s);
  EXPECT_NEAR(h.mean(), sum / static_cast<double>(samples.size()), 1e-6 * sum);
}

TEST(LatencyHistogramTest, PercentilesMatchExactValuesWithinBucketPrecision) {
  std::mt19937_64 rng(11);
  struct Dist {
    const char* what;
    std::vector<uint64_t> samples;
  };
  std::vector<Dist> dists(5);
  dists[0].what = "uniform 10 ns .. 1 ms";
  dists[1].what = "lognormal around 20 us";
  dists[2].what = "bimodal 3 us / 2 ms";
  dists[3].what = "constant 777";
  dists[4].what = "small values 0 .. 300";
  std::lognormal_distribution<> lognormal(std::log(20000.0), 0.8);
  for (int i = 0; i < 100000; ++i) {
    dists[0].samples.push_back(10 + rng() % 1000000);
    dists[1].samples.push_back(static_cast<uint64_t>(lognormal(rng)));
    dists[2].samples.push_back(rng() % 10 == 0 ? 2000000 + rng() % 1000
                                               : 3000 + rng() % 100);
    dists[3].samples.push_back(777);
    dists[4].samples.push_back(rng() % 301);
  }
  for (const Dist& d : dists) {
    LatencyHistogram h;
    for (uint64_t s : d.samples) h.Record(s);
    ExpectPercentilesMatch(h, d.samples, d.what);
  }
}

TEST(LatencyHistogramTest, HandWorkedPercentiles) {
  LatencyHistogram h;
  for (uint64_t v = 1; v <= 1000; ++v) h.Record(v);
  // 500 is in the 2-wide bucket [500, 501]; the upper end is reported.
  EXPECT_EQ(h.Percentile(50), 501u);
  EXPECT_EQ(h.Percentile(99.9), 999u);
  EXPECT_EQ(h.Percentile(100), 1000u);
  EXPECT_EQ(h.Percentile(0), 1u);
  EXPECT_DOUBLE_EQ(h.mean(), 500.5);
  LatencyHistogram small;
  for (uint64_t v : {5, 1, 3, 2, 4}) small.Record(v);
  EXPECT_EQ(small.Percentile(50), 3u);  // exact: 1-wide buckets
  EXPECT_EQ(small.Percentile(90), 5u);
  EXPECT_EQ(small.Percentile(20), 1u);
  EXPECT_EQ(small.Percentile(21), 2u);
}

TEST(LatencyHistogramTest, EmptyIsZero) {
  LatencyHistogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  EXPECT_EQ(h.Percentile(99), 0u);
}

TEST(LatencyHistogramTest, MergeEqualsRecordingEverythingInOne) {
  std::mt19937_64 rng(5);
  LatencyHistogram a, b, all;
  std::vector<uint64_t> samples;
  for (int i = 0; i < 50000; ++i) {
    const uint64_t v = 100 + rng() % 5000000;
    samples.push_back(v);
    all.Record(v);
    (i % 3 == 0 ? a : b).Record(v);
  }
  LatencyHistogram empty;
  a.Merge(b);
  a.Merge(empty);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9}) {
    EXPECT_EQ(a.Percentile(p), all.Percentile(p)) << p;
  }
  ExpectPercentilesMatch(a, samples, "merged");
  // Into an empty one.
  LatencyHistogram c;
  c.Merge(all);
  EXPECT_EQ(c.min(), all.min());
  EXPECT_EQ(c.Percentile(50), all.Percentile(50));
}

TEST(LatencyHistogramTest, ValuesAboveTheRangeAreClampedButMaxIsExact) {
  LatencyHistogram h;
  h.Record(10);
  h.Record(LatencyHistogram::kMaxValue + 12345);
  EXPECT_EQ(h.overflows(), 1u);
  EXPECT_EQ(h.max(), LatencyHistogram::kMaxValue + 12345);
  EXPECT_EQ(h.Percentile(100), h.max());
  EXPECT_EQ(h.Percentile(99), LatencyHistogram::kMaxValue);
  EXPECT_EQ(h.Percentile(50), 10u);
  h.Reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.overflows(), 0u);
}

}  // namespace
}  // namespace spinnic::gen
