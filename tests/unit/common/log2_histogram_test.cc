// RttHistogram: the bucket every latency lands in, weights and sums,
// and the snapshot's sum over several writers.
#include "dataplane/log2_histogram.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace spinnic {
namespace {

TEST(Log2Histogram, BucketBoundsAreInclusivePowersOfTwoMicroseconds) {
  EXPECT_EQ(RttHistogram::BucketOf(0), 0u);
  EXPECT_EQ(RttHistogram::BucketOf(1000), 0u);
  EXPECT_EQ(RttHistogram::BucketOf(1001), 1u);
  EXPECT_EQ(RttHistogram::BucketOf(2000), 1u);
  EXPECT_EQ(RttHistogram::BucketOf(2001), 2u);
  EXPECT_EQ(RttHistogram::BucketOf(4000), 2u);
  EXPECT_EQ(RttHistogram::BucketOf(4001), 3u);
  // Every bound is the largest value of its bucket.
  for (size_t b = 0; b + 1 < RttHistogram::kBuckets; ++b) {
    const uint64_t bound = RttHistogram::UpperBound(b);
    EXPECT_EQ(RttHistogram::BucketOf(bound), b) << bound;
    EXPECT_EQ(RttHistogram::BucketOf(bound + 1), b + 1) << bound;
  }
  // The last finite bound is 2^22 us; above it, the +Inf bucket.
  EXPECT_EQ(RttHistogram::UpperBound(RttHistogram::kBuckets - 2),
            uint64_t{1000} << 22);
  EXPECT_EQ(RttHistogram::BucketOf(UINT64_MAX), RttHistogram::kBuckets - 1);
}

TEST(Log2Histogram, RecordsWeightedSamplesAndSnapshotsSumWriters) {
  RttHistogram a, b;
  a.Record(1'500);         // bucket 1
  a.Record(3'000'000, 3);  // 3 ms: 3000 us <= 4096 us, bucket 12
  b.Record(800);           // bucket 0
  b.Record(1'500);
  EXPECT_EQ(a.count(1), 1u);
  EXPECT_EQ(a.count(12), 3u);
  EXPECT_EQ(a.sum(), 1'500u + 9'000'000u);

  RttHistogramStats total;
  total.Add(a);
  total.Add(b);
  EXPECT_EQ(total.counts[0], 1u);
  EXPECT_EQ(total.counts[1], 2u);
  EXPECT_EQ(total.counts[12], 3u);
  EXPECT_EQ(total.total(), 6u);
  EXPECT_EQ(total.sum, 1'500u + 9'000'000u + 800u + 1'500u);
}

}  // namespace
}  // namespace spinnic
