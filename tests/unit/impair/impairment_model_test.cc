#include "dataplane/impair/impairment_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace spinnic::impair {
namespace {

constexpr int kDecisions = 200000;

struct Trace {
  std::vector<PacketFate> packets;
  std::vector<CopyFate> copies;
};

Trace RunModel(const ImpairConfig& config, int n, uint64_t stream = 0) {
  ImpairmentModel model(config, stream);
  Trace t;
  for (int i = 0; i < n; ++i) {
    PacketFate p = model.DecidePacket();
    t.packets.push_back(p);
    if (p.lost) continue;
    uint32_t length = 60 + static_cast<uint32_t>(i % 1400);
    t.copies.push_back(model.DecideCopy(length));
    if (p.duplicate) t.copies.push_back(model.DecideCopy(length));
  }
  return t;
}

bool Same(const CopyFate& a, const CopyFate& b) {
  return a.corrupt == b.corrupt && a.corrupt_offset == b.corrupt_offset &&
         a.corrupt_bit == b.corrupt_bit && a.reorder == b.reorder &&
         a.reorder_after == b.reorder_after && a.delay_us == b.delay_us;
}

ImpairConfig Everything(uint64_t seed) {
  ImpairConfig c;
  c.seed = seed;
  c.loss = 0.05;
  c.duplicate = 0.03;
  c.reorder = 0.02;
  c.reorder_depth = 5;
  c.corrupt = 0.01;
  c.delay_us = 100;
  c.jitter_us = 50;
  return c;
}

// |observed - expected| within 6 standard deviations of a binomial.
void ExpectRate(uint64_t hits, uint64_t trials, double p, const char* what) {
  double expected = p * static_cast<double>(trials);
  double sigma = std::sqrt(static_cast<double>(trials) * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(hits), expected, 6 * sigma + 1)
      << what << ": " << hits << " of " << trials << " for p=" << p;
}

TEST(ImpairmentModelTest, SameSeedSameDecisions) {
  Trace a = RunModel(Everything(42), 20000);
  Trace b = RunModel(Everything(42), 20000);
  ASSERT_EQ(a.packets.size(), b.packets.size());
  ASSERT_EQ(a.copies.size(), b.copies.size());
  for (size_t i = 0; i < a.packets.size(); ++i) {
    ASSERT_EQ(a.packets[i].lost, b.packets[i].lost) << i;
    ASSERT_EQ(a.packets[i].duplicate, b.packets[i].duplicate) << i;
  }
  for (size_t i = 0; i < a.copies.size(); ++i) {
    ASSERT_TRUE(Same(a.copies[i], b.copies[i])) << i;
  }
}

TEST(ImpairmentModelTest, OtherSeedOrStreamOtherDecisions) {
  Trace a = RunModel(Everything(42), 20000);
  Trace b = RunModel(Everything(43), 20000);
  Trace c = RunModel(Everything(42), 20000, /*stream=*/1);
  int differ_seed = 0, differ_stream = 0;
  for (size_t i = 0; i < a.packets.size(); ++i) {
    differ_seed += a.packets[i].lost != b.packets[i].lost;
    differ_stream += a.packets[i].lost != c.packets[i].lost;
  }
  EXPECT_GT(differ_seed, 100);
  EXPECT_GT(differ_stream, 100);
}

TEST(ImpairmentModelTest, LossStreamIndependentOfOtherSettings) {
  // The i-th loss decision depends only on the seed and i.
  ImpairConfig plain;
  plain.seed = 7;
  plain.loss = 0.1;
  ImpairConfig busy = Everything(7);
  busy.loss = 0.1;
  Trace a = RunModel(plain, 10000);
  Trace b = RunModel(busy, 10000);
  for (size_t i = 0; i < a.packets.size(); ++i) {
    ASSERT_EQ(a.packets[i].lost, b.packets[i].lost) << i;
  }
}

TEST(ImpairmentModelTest, RatesWithinStatisticalBounds) {
  ImpairConfig c = Everything(12345);
  c.corrupt_from = 14;
  ImpairmentModel model(c);
  uint64_t lost = 0, survivors = 0, dups = 0, copies = 0, corrupt = 0,
           reorder = 0;
  std::vector<uint64_t> depth(c.reorder_depth + 1, 0);
  uint64_t delay_sum = 0;
  for (int i = 0; i < kDecisions; ++i) {
    PacketFate p = model.DecidePacket();
    if (p.lost) {
      ++lost;
      continue;
    }
    ++survivors;
    dups += p.duplicate;
    for (int k = 0; k < (p.duplicate ? 2 : 1); ++k) {
      CopyFate f = model.DecideCopy(1000);
      ++copies;
      corrupt += f.corrupt;
      if (f.reorder) {
        ++reorder;
        ASSERT_GE(f.reorder_after, 1u);
        ASSERT_LE(f.reorder_after, c.reorder_depth);
        ++depth[f.reorder_after];
      } else {
        EXPECT_EQ(f.reorder_after, 0u);
      }
      ASSERT_GE(f.delay_us, c.delay_us);
      ASSERT_LE(f.delay_us, c.delay_us + c.jitter_us);
      delay_sum += f.delay_us;
    }
  }
  ExpectRate(lost, kDecisions, c.loss, "loss");
  ExpectRate(dups, survivors, c.duplicate, "duplicate");
  ExpectRate(corrupt, copies, c.corrupt, "corrupt");
  ExpectRate(reorder, copies, c.reorder, "reorder");
  for (uint32_t d = 1; d <= c.reorder_depth; ++d) {
    ExpectRate(depth[d], reorder, 1.0 / c.reorder_depth, "reorder depth");
  }
  double mean = static_cast<double>(delay_sum) / static_cast<double>(copies);
  EXPECT_NEAR(mean, c.delay_us + c.jitter_us / 2.0, 1.0);
}

TEST(ImpairmentModelTest, LossRatesForTheBench) {
  for (double p : {0.001, 0.01, 0.05, 0.5}) {
    ImpairConfig c;
    c.seed = 99;
    c.loss = p;
    ImpairmentModel model(c);
    uint64_t lost = 0;
    for (int i = 0; i < kDecisions; ++i) lost += model.DecidePacket().lost;
    ExpectRate(lost, kDecisions, p, "loss");
  }
}

TEST(ImpairmentModelTest, CorruptionFlipsExactlyOneBitAtOrAfterCorruptFrom) {
  for (uint32_t from : {0u, 14u, 42u}) {
    ImpairConfig c;
    c.seed = 5;
    c.corrupt = 1;
    c.corrupt_from = from;
    ImpairmentModel model(c);
    std::vector<uint32_t> hits_per_offset(128, 0);
    for (int i = 0; i < 20000; ++i) {
      uint32_t length = 43 + static_cast<uint32_t>(i % 80);
      CopyFate f = model.DecideCopy(length);
      ASSERT_TRUE(f.corrupt);
      ASSERT_GE(f.corrupt_offset, from);
      ASSERT_LT(f.corrupt_offset, length);
      ASSERT_LT(f.corrupt_bit, 8);
      std::vector<uint8_t> frame(length), before;
      for (uint32_t b = 0; b < length; ++b) frame[b] = static_cast<uint8_t>(b);
      before = frame;
      FlipBit(frame.data(), f.corrupt_offset, f.corrupt_bit);
      int bits = 0;
      for (uint32_t b = 0; b < length; ++b) {
        uint8_t diff = frame[b] ^ before[b];
        if (diff != 0) {
          EXPECT_GE(b, from);
        }
        bits += __builtin_popcount(diff);
      }
      ASSERT_EQ(bits, 1);
      ++hits_per_offset[f.corrupt_offset];
    }
    // Every allowed offset of the shortest frame gets hit.
    for (uint32_t b = from; b < 43; ++b) EXPECT_GT(hits_per_offset[b], 0u) << b;
  }
}

TEST(ImpairmentModelTest, ShortFramesAreNeverCorrupted) {
  ImpairConfig c;
  c.corrupt = 1;
  c.corrupt_from = 14;
  ImpairmentModel model(c);
  for (uint32_t length = 0; length <= 14; ++length) {
    EXPECT_FALSE(model.DecideCopy(length).corrupt) << length;
  }
  EXPECT_TRUE(model.DecideCopy(15).corrupt);
}

TEST(ImpairmentModelTest, ZeroRatesAreIdentity) {
  ImpairConfig c;  // all zero
  c.seed = 0xdeadbeef;
  ImpairmentModel model(c);
  for (int i = 0; i < kDecisions; ++i) {
    PacketFate p = model.DecidePacket();
    ASSERT_FALSE(p.lost);
    ASSERT_FALSE(p.duplicate);
    CopyFate f = model.DecideCopy(1500);
    ASSERT_FALSE(f.corrupt);
    ASSERT_FALSE(f.reorder);
    ASSERT_EQ(f.delay_us, 0u);
  }
}

TEST(ImpairmentModelTest, CertainRates) {
  ImpairConfig c;
  c.loss = 1;
  ImpairmentModel lose_all(c);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(lose_all.DecidePacket().lost);
  c.loss = 0;
  c.duplicate = 1;
  c.reorder = 1;
  c.reorder_depth = 1;
  ImpairmentModel model(c);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(model.DecidePacket().duplicate);
    CopyFate f = model.DecideCopy(100);
    ASSERT_TRUE(f.reorder);
    ASSERT_EQ(f.reorder_after, 1u);
  }
}

TEST(ImpairmentModelTest, ValidConfigsPass) {
  EXPECT_TRUE(ValidateImpairConfig(ImpairConfig()).ok());
  EXPECT_TRUE(ValidateImpairConfig(Everything(1)).ok());
  ImpairConfig c;
  c.loss = c.duplicate = c.reorder = c.corrupt = 1;
  c.reorder_depth = kMaxReorderDepth;
  c.delay_us = c.jitter_us = kMaxDelayUs;
  EXPECT_TRUE(ValidateImpairConfig(c).ok());
}

TEST(ImpairmentModelTest, ValidationNamesTheFieldAndWhatToWrite) {
  struct Case {
    void (*mutate)(ImpairConfig&);
    const char* message_start;
  };
  const Case cases[] = {
      {[](ImpairConfig& c) { c.loss = 1.5; }, "--loss: 1.5 is not a prob"},
      {[](ImpairConfig& c) { c.loss = -0.1; }, "--loss: -0.1 is not a prob"},
      {[](ImpairConfig& c) { c.duplicate = NAN; }, "--duplicate: "},
      {[](ImpairConfig& c) { c.reorder = 2; }, "--reorder: 2 is not"},
      {[](ImpairConfig& c) { c.corrupt = INFINITY; }, "--corrupt: "},
      {[](ImpairConfig& c) { c.reorder_depth = 0; }, "--reorder_depth: 0 is"},
      {[](ImpairConfig& c) { c.reorder_depth = 65; }, "--reorder_depth: 65"},
      {[](ImpairConfig& c) { c.reorder_timeout_us = 0; },
       "--reorder_timeout_us: 0 us"},
      {[](ImpairConfig& c) { c.delay_us = kMaxDelayUs + 1; },
       "--delay_us: 10000001 us"},
      {[](ImpairConfig& c) { c.jitter_us = kMaxDelayUs + 1; }, "--jitter_us: "},
      {[](ImpairConfig& c) { c.corrupt_from = 70000; },
       "--corrupt_from: 70000"},
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
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  // The prefix names where the field came from.
  ImpairConfig c;
  c.loss = 3;
  EXPECT_EQ(std::string(ValidateImpairConfig(c, "--a_to_b_").message())
                .rfind("--a_to_b_loss: ", 0),
            0u);
}

TEST(ImpairmentModelTest, XoshiroBelowStaysInRange) {
  Xoshiro256 rng(1);
  for (uint64_t n : {1ull, 2ull, 7ull, 1000ull}) {
    for (int i = 0; i < 10000; ++i) ASSERT_LT(rng.Below(n), n);
  }
  for (int i = 0; i < 10000; ++i) {
    double d = rng.NextDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
}

}  // namespace
}  // namespace spinnic::impair
