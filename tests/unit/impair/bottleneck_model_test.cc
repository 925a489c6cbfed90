// The bottleneck's pure parts (impairment_model.h): the link clock against
// hand-computed serialization times, RED-like marking decisions, the ECN
// rewrite of IPv4/IPv6 frames (with the IPv4 checksum checked against a
// hand-computed value), the depth histogram's percentiles and the
// validation of the bottleneck fields.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/common/checksum.h"
#include "dataplane/impair/impairment_model.h"

namespace spinnic::impair {
namespace {

constexpr uint64_t kHz = 1'000'000'000;  // 1 cycle = 1 ns

TEST(LinkClockTest, BackToBackFramesLeaveOneSerializationTimeApart) {
  // 1 Gb/s: a 1000-byte frame takes 8000 bits / 1e9 b/s = 8 us.
  LinkClock link(1'000'000'000, kHz);
  EXPECT_EQ(link.Depart(1000, 1000), 1000u + 8000u);
  EXPECT_EQ(link.Depart(1000, 1000), 1000u + 16000u);  // waits for the first
  EXPECT_EQ(link.Depart(2000, 500), 1000u + 20000u);   // 4 us more
}

TEST(LinkClockTest, IdleLinkStartsAtArrival) {
  LinkClock link(1'000'000'000, kHz);
  EXPECT_EQ(link.Depart(0, 125), 1000u);  // 1000 bits: 1 us
  // Arrives long after the link went idle: no credit for the idle time.
  EXPECT_EQ(link.Depart(50'000, 125), 51'000u);
}

TEST(LinkClockTest, FractionalCyclesDoNotDrift) {
  // 3 Gb/s, 100 bytes: 800 bits take 800/3 = 266.67 ns. Departures are the
  // exact ends rounded up: 266.67 -> 267, 533.33 -> 534, 800 -> 800; and
  // after 300 frames exactly 80000 ns.
  LinkClock link(3'000'000'000, kHz);
  EXPECT_EQ(link.Depart(0, 100), 267u);
  EXPECT_EQ(link.Depart(0, 100), 534u);
  EXPECT_EQ(link.Depart(0, 100), 800u);
  uint64_t last = 0;
  for (int i = 3; i < 300; ++i) last = link.Depart(0, 100);
  EXPECT_EQ(last, 80'000u);
}

TEST(LinkClockTest, SlowLinkAndFastClock) {
  // 10 Mb/s with a 2.5 GHz TSC: 1500 bytes = 12000 bits = 1.2 ms =
  // 3,000,000 cycles.
  LinkClock link(10'000'000, 2'500'000'000);
  EXPECT_EQ(link.Depart(7, 1500), 7u + 3'000'000u);
}

ImpairConfig Marking(uint32_t min, uint32_t max, double p) {
  ImpairConfig c;
  c.rate_bps = 1'000'000'000;
  c.bottleneck_frames = 100;
  c.ecn_min_frames = min;
  c.ecn_max_frames = max;
  c.ecn_max_probability = p;
  return c;
}

TEST(MarkDecisionTest, ThresholdMarksAtAndAboveK) {
  ImpairmentModel model(Marking(10, 10, 1.0));
  for (uint32_t depth = 0; depth < 10; ++depth) {
    EXPECT_FALSE(model.DecideMark(depth)) << depth;
  }
  for (uint32_t depth = 10; depth <= 100; ++depth) {
    EXPECT_TRUE(model.DecideMark(depth)) << depth;
  }
}

TEST(MarkDecisionTest, NoMarkingWithoutThresholds) {
  ImpairConfig c = Marking(0, 0, 1.0);
  ImpairmentModel model(c);
  for (uint32_t depth = 0; depth <= 100; ++depth) {
    EXPECT_FALSE(model.DecideMark(depth));
  }
}

TEST(MarkDecisionTest, RedRampBetweenMinAndMax) {
  // min 10, max 20, Pmax 0.5: p(d) = 0.5 (d - 10) / 10; p(10) = 0,
  // p(15) = 0.25, p(19) = 0.45; at 20 and above always.
  ImpairmentModel model(Marking(10, 20, 0.5));
  constexpr int kDraws = 100'000;
  for (uint32_t depth : {0u, 9u, 10u}) {
    for (int i = 0; i < 1000; ++i) ASSERT_FALSE(model.DecideMark(depth));
  }
  for (uint32_t depth : {20u, 21u, 100u}) {
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(model.DecideMark(depth));
  }
  for (auto [depth, p] :
       {std::pair<uint32_t, double>{15, 0.25}, {19, 0.45}, {11, 0.05}}) {
    int marks = 0;
    for (int i = 0; i < kDraws; ++i) marks += model.DecideMark(depth) ? 1 : 0;
    const double sigma = std::sqrt(kDraws * p * (1 - p));
    EXPECT_NEAR(marks, kDraws * p, 6 * sigma) << "depth " << depth;
  }
}

TEST(MarkDecisionTest, SameSeedSameMarks) {
  ImpairmentModel a(Marking(0, 50, 0.3));
  ImpairmentModel b(Marking(0, 50, 0.3));
  for (uint32_t i = 0; i < 10000; ++i) {
    ASSERT_EQ(a.DecideMark(i % 60), b.DecideMark(i % 60)) << i;
  }
}

// The classic example header (checksum 0xb861 with TOS 0): 45 00 00 73 00 00
// 40 00 40 11 b8 61 c0 a8 00 01 c0 a8 00 c7, behind an Ethernet header, with
// TOS `tos` and the checksum adjusted by hand: the checksum is the
// complement of the sum, so adding t to the first word subtracts t from it.
std::vector<uint8_t> Ipv4Frame(uint8_t tos, uint16_t checksum,
                               bool vlan = false) {
  std::vector<uint8_t> frame = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
  if (vlan) frame.insert(frame.end(), {0x81, 0x00, 0x00, 0x05});
  frame.insert(frame.end(), {0x08, 0x00});
  const uint8_t ip[20] = {0x45,
                          tos,
                          0x00,
                          0x73,
                          0x00,
                          0x00,
                          0x40,
                          0x00,
                          0x40,
                          0x11,
                          static_cast<uint8_t>(checksum >> 8),
                          static_cast<uint8_t>(checksum),
                          0xc0,
                          0xa8,
                          0x00,
                          0x01,
                          0xc0,
                          0xa8,
                          0x00,
                          0xc7};
  frame.insert(frame.end(), ip, ip + 20);
  frame.resize(frame.size() + 30, 0xab);  // some payload
  return frame;
}

bool Ipv4ChecksumValid(const std::vector<uint8_t>& frame, size_t l3) {
  return checksum::Fold(checksum::Add(0, frame.data() + l3, 20)) == 0xffff;
}

TEST(EcnMarkTest, Ipv4Ect0BecomesCeWithHandComputedChecksum) {
  // TOS 0x02 (ECT(0)): checksum 0xb861 - 2 = 0xb85f. CE (0x03): 0xb85e.
  std::vector<uint8_t> frame = Ipv4Frame(0x02, 0xb85f);
  ASSERT_TRUE(Ipv4ChecksumValid(frame, 14));
  std::vector<uint8_t> want = Ipv4Frame(0x03, 0xb85e);
  EXPECT_EQ(MarkCongestionExperienced(frame.data(),
                                      static_cast<uint32_t>(frame.size())),
            MarkResult::kMarked);
  EXPECT_EQ(frame, want);
  EXPECT_TRUE(Ipv4ChecksumValid(frame, 14));
}

TEST(EcnMarkTest, Ipv4Ect1WithDscpKeepsDscp) {
  // TOS 0xb9: DSCP 46 (EF) and ECT(1). Checksum 0xb861 - 0xb9 = 0xb7a8;
  // CE keeps the DSCP: TOS 0xbb, checksum 0xb7a6.
  std::vector<uint8_t> frame = Ipv4Frame(0xb9, 0xb7a8);
  ASSERT_TRUE(Ipv4ChecksumValid(frame, 14));
  EXPECT_EQ(MarkCongestionExperienced(frame.data(),
                                      static_cast<uint32_t>(frame.size())),
            MarkResult::kMarked);
  EXPECT_EQ(frame, Ipv4Frame(0xbb, 0xb7a6));
}

TEST(EcnMarkTest, ChecksumCarryWraps) {
  // A header whose checksum field is 0x0000 before the change: the RFC 1624
  // update must give the value a full recomputation gives.
  std::vector<uint8_t> frame = Ipv4Frame(0x01, 0);
  uint8_t* ip = frame.data() + 14;
  // Pick the identification field so that the checksum comes out 0x0000.
  ip[10] = ip[11] = 0;
  const uint16_t sum_without_id =
      static_cast<uint16_t>(~checksum::Compute(ip, 20));
  // The checksum is 0 when the sum is 0xffff: id = 0xffff - sum (one's
  // complement).
  const uint16_t id = static_cast<uint16_t>(0xffff - sum_without_id);
  ip[4] = static_cast<uint8_t>(id >> 8);
  ip[5] = static_cast<uint8_t>(id);
  ASSERT_EQ(checksum::Compute(ip, 20), 0);
  ASSERT_TRUE(Ipv4ChecksumValid(frame, 14));
  EXPECT_EQ(MarkCongestionExperienced(frame.data(),
                                      static_cast<uint32_t>(frame.size())),
            MarkResult::kMarked);
  EXPECT_EQ(ip[1], 0x03);
  EXPECT_TRUE(Ipv4ChecksumValid(frame, 14));
}

TEST(EcnMarkTest, VlanTaggedIpv4) {
  std::vector<uint8_t> frame = Ipv4Frame(0x02, 0xb85f, /*vlan=*/true);
  EcnField field = FindEcnField(frame.data(), frame.size());
  EXPECT_EQ(field.kind, EcnField::Kind::kIpv4);
  EXPECT_EQ(field.l3_offset, 18u);
  EXPECT_EQ(field.codepoint, EcnCodepoint::kEct0);
  EXPECT_EQ(MarkCongestionExperienced(frame.data(),
                                      static_cast<uint32_t>(frame.size())),
            MarkResult::kMarked);
  EXPECT_EQ(frame, Ipv4Frame(0x03, 0xb85e, /*vlan=*/true));
}

TEST(EcnMarkTest, NotEctAndCeAreLeftAlone) {
  for (auto [tos, checksum, result] :
       {std::tuple<uint8_t, uint16_t, MarkResult>{0x00, 0xb861,
                                                  MarkResult::kNotEct},
        {0xb8, 0xb7a9, MarkResult::kNotEct},
        {0x03, 0xb85e, MarkResult::kAlreadyCe}}) {
    std::vector<uint8_t> frame = Ipv4Frame(tos, checksum);
    const std::vector<uint8_t> before = frame;
    EXPECT_EQ(MarkCongestionExperienced(frame.data(),
                                        static_cast<uint32_t>(frame.size())),
              result);
    EXPECT_EQ(frame, before);
  }
}

std::vector<uint8_t> Ipv6Frame(uint8_t traffic_class) {
  std::vector<uint8_t> frame = {0x02, 0, 0, 0, 0, 1,    0x02,
                                0,    0, 0, 0, 2, 0x86, 0xdd};
  // Version 6, traffic class split over bytes 0 and 1, flow label 0x12345.
  frame.push_back(static_cast<uint8_t>(0x60 | (traffic_class >> 4)));
  frame.push_back(static_cast<uint8_t>((traffic_class << 4) | 0x1));
  frame.insert(frame.end(), {0x23, 0x45, 0x00, 0x08, 0x11, 0x40});
  frame.resize(frame.size() + 32, 0xfd);  // addresses
  frame.resize(frame.size() + 8, 0x00);   // a UDP header
  return frame;
}

TEST(EcnMarkTest, Ipv6EctBecomesCe) {
  // Traffic class 0xba (DSCP 46, ECT(0)): bytes 0x6b 0xa1; CE: 0xbb, so
  // byte 1 becomes 0xb1; the flow label is untouched.
  std::vector<uint8_t> frame = Ipv6Frame(0xba);
  ASSERT_EQ(frame[14], 0x6b);
  ASSERT_EQ(frame[15], 0xa1);
  EXPECT_EQ(FindEcnField(frame.data(), frame.size()).codepoint,
            EcnCodepoint::kEct0);
  EXPECT_EQ(MarkCongestionExperienced(frame.data(),
                                      static_cast<uint32_t>(frame.size())),
            MarkResult::kMarked);
  EXPECT_EQ(frame, Ipv6Frame(0xbb));
  EXPECT_EQ(frame[15], 0xb1);

  std::vector<uint8_t> ect1 = Ipv6Frame(0x01);
  EXPECT_EQ(MarkCongestionExperienced(ect1.data(),
                                      static_cast<uint32_t>(ect1.size())),
            MarkResult::kMarked);
  EXPECT_EQ(ect1, Ipv6Frame(0x03));

  std::vector<uint8_t> not_ect = Ipv6Frame(0xb8);
  EXPECT_EQ(MarkCongestionExperienced(not_ect.data(),
                                      static_cast<uint32_t>(not_ect.size())),
            MarkResult::kNotEct);
  EXPECT_EQ(not_ect, Ipv6Frame(0xb8));
}

TEST(EcnMarkTest, NonIpAndTruncatedFramesAreNotEct) {
  std::vector<uint8_t> arp = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0,
                              0,    0,    0,    1,    0x08, 0x06, 0, 1};
  arp.resize(60, 0);
  const std::vector<uint8_t> arp_before = arp;
  EXPECT_EQ(
      MarkCongestionExperienced(arp.data(), static_cast<uint32_t>(arp.size())),
      MarkResult::kNotEct);
  EXPECT_EQ(arp, arp_before);
  // An ECT(0) IPv4 header cut short: nothing is touched.
  std::vector<uint8_t> frame = Ipv4Frame(0x02, 0xb85f);
  const std::vector<uint8_t> before = frame;
  EXPECT_EQ(MarkCongestionExperienced(frame.data(), 14 + 19),
            MarkResult::kNotEct);
  EXPECT_EQ(frame, before);
  EXPECT_EQ(MarkCongestionExperienced(frame.data(), 10), MarkResult::kNotEct);
}

TEST(DepthHistogramTest, SmallQueueHasExactDepths) {
  DepthHistogram h(100);  // (100 + 128) / 128 = 1 frame per bucket
  EXPECT_EQ(h.bucket_width(), 1u);
  EXPECT_EQ(h.Percentile(0.5), 0u);  // no samples
  // 100 samples: depth d once for d in 0..99.
  for (uint32_t d = 0; d < 100; ++d) h.Add(d);
  EXPECT_EQ(h.samples(), 100u);
  EXPECT_EQ(h.Percentile(0.5), 49u);   // the 50th sample
  EXPECT_EQ(h.Percentile(0.99), 98u);  // the 99th
  EXPECT_EQ(h.Percentile(1.0), 99u);
  EXPECT_EQ(h.Percentile(0.0), 0u);
}

TEST(DepthHistogramTest, LargeQueueRoundsUpToTheBucket) {
  DepthHistogram h(1023);  // (1023 + 128) / 128 = 8 frames per bucket
  EXPECT_EQ(h.bucket_width(), 8u);
  for (int i = 0; i < 90; ++i) h.Add(3);    // bucket 0: 0..7
  for (int i = 0; i < 10; ++i) h.Add(500);  // bucket 62: 496..503
  EXPECT_EQ(h.Percentile(0.5), 7u);
  EXPECT_EQ(h.Percentile(0.9), 7u);
  EXPECT_EQ(h.Percentile(0.99), 503u);
  // The full queue (1023) still has a bucket of its own range.
  h.Add(1023);
  EXPECT_EQ(h.counts()[127], 1u);
  EXPECT_EQ(h.Percentile(1.0), 1023u);
}

TEST(DepthHistogramTest, PercentileNeverExceedsTheCapacity) {
  // 256 frames: width (256 + 128) / 128 = 3; the full queue's bucket, 85,
  // covers 255..257, but no depth above 256 exists.
  DepthHistogram h(256);
  EXPECT_EQ(h.bucket_width(), 3u);
  h.Add(256);
  EXPECT_EQ(h.counts()[85], 1u);
  EXPECT_EQ(h.Percentile(0.5), 256u);
}

TEST(BottleneckValidationTest, NamesTheFieldAndWhatToWrite) {
  struct Case {
    void (*mutate)(ImpairConfig&);
    const char* message_start;
  };
  const Case cases[] = {
      {[](ImpairConfig& c) { c.rate_bps = kMaxRateBps + 1; }, "--rate_bps: "},
      {[](ImpairConfig& c) { c.bottleneck_frames = 0; },
       "--bottleneck_frames: 0 is"},
      {[](ImpairConfig& c) { c.bottleneck_frames = kMaxBottleneckFrames + 1; },
       "--bottleneck_frames: "},
      {[](ImpairConfig& c) { c.frame_overhead_bytes = 5000; },
       "--frame_overhead_bytes: 5000"},
      {[](ImpairConfig& c) {
         c.rate_bps = 1000;
         c.ecn_min_frames = 20;
         c.ecn_max_frames = 10;
       },
       "--ecn_min_frames: 20 is above"},
      {[](ImpairConfig& c) {
         c.rate_bps = 1000;
         c.ecn_max_frames = 2000;
       },
       "--ecn_max_frames: 2000 is above bottleneck_frames"},
      {[](ImpairConfig& c) { c.ecn_max_frames = 10; },
       "--ecn_max_frames: ECN marking needs a bottleneck"},
      {[](ImpairConfig& c) {
         c.rate_bps = 1000;
         c.ecn_max_frames = 10;
         c.ecn_max_probability = 0;
       },
       "--ecn_max_probability: 0 is not"},
      {[](ImpairConfig& c) { c.ecn_max_probability = 1.5; },
       "--ecn_max_probability: 1.5"},
  };
  for (const Case& test_case : cases) {
    ImpairConfig c;
    test_case.mutate(c);
    absl::Status status = ValidateImpairConfig(c, "--");
    ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << test_case.message_start;
    std::string message(status.message());
    EXPECT_EQ(message.rfind(test_case.message_start, 0), 0u) << message;
    EXPECT_NE(message.find("write"), std::string::npos) << message;
  }
  ImpairConfig ok = Marking(10, 20, 0.2);
  EXPECT_TRUE(ValidateImpairConfig(ok).ok());
  EXPECT_TRUE(HasBottleneck(ok));
  EXPECT_TRUE(MarksEcn(ok));
  EXPECT_FALSE(HasBottleneck(ImpairConfig()));
}

}  // namespace
}  // namespace spinnic::impair
