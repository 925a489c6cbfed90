// The impairment stage on mbufs from a mempool: EAL (--no-huge), no ports.
// Time is injected (a fake TSC of 1 GHz) except in the one real-time test,
// which asserts only a lower bound on the hold time.
#include "dataplane/impair/impair_stage.h"

#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace spinnic::impair {
namespace {

constexpr uint64_t kHz = 1'000'000'000;  // fake TSC: 1 cycle = 1 ns
constexpr uint16_t kOutCap = 256;

rte_mempool* g_pool = nullptr;

uint32_t FrameLength(uint32_t seq) { return 60 + (seq * 7) % 400; }

// A frame whose every byte follows from its sequence number.
std::vector<uint8_t> FrameBytes(uint32_t seq) {
  std::vector<uint8_t> bytes(FrameLength(seq));
  for (size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<uint8_t>(i * 31 + seq * 17 + (i >> 3));
  }
  std::memcpy(bytes.data() + 14, &seq, sizeof seq);
  return bytes;
}

rte_mbuf* MakeFrame(uint32_t seq) {
  rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
  if (m == nullptr) return nullptr;
  std::vector<uint8_t> bytes = FrameBytes(seq);
  char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(bytes.size()));
  std::memcpy(data, bytes.data(), bytes.size());
  return m;
}

std::vector<uint8_t> Bytes(const rte_mbuf* m) {
  std::vector<uint8_t> bytes(m->pkt_len);
  const void* p = rte_pktmbuf_read(m, 0, m->pkt_len, bytes.data());
  if (p != bytes.data()) std::memcpy(bytes.data(), p, m->pkt_len);
  return bytes;
}

// Bits that differ from the frame it came from (by its sequence number,
// which corruption may have hit too: then it cannot tell, returns -1).
int DifferingBits(const std::vector<uint8_t>& got, uint32_t seq,
                  uint32_t* first_offset) {
  std::vector<uint8_t> want = FrameBytes(seq);
  if (got.size() != want.size()) return -1;
  int bits = 0;
  *first_offset = UINT32_MAX;
  for (size_t i = 0; i < want.size(); ++i) {
    uint8_t diff = got[i] ^ want[i];
    if (diff != 0 && *first_offset == UINT32_MAX) {
      *first_offset = static_cast<uint32_t>(i);
    }
    bits += __builtin_popcount(diff);
  }
  return bits;
}

uint32_t SeqOf(const std::vector<uint8_t>& bytes) {
  uint32_t seq;
  std::memcpy(&seq, bytes.data() + 14, sizeof seq);
  return seq;
}

struct Emitted {
  std::vector<uint8_t> bytes;
  uint64_t at;  // fake TSC when emitted
};

// Drives a stage with numbered frames in bursts and records what came out.
class Driver {
 public:
  Driver(const ImpairConfig& config, StageOptions options = {})
      : stage_(config, 0, WithHz(options)) {}

  ImpairStage& stage() { return stage_; }
  std::vector<Emitted>& emitted() { return emitted_; }
  uint64_t now() const { return now_; }

  // Sends frames [first, first + n) in one call at the current time.
  void Send(uint32_t first, uint16_t n, uint16_t out_cap = kOutCap) {
    std::vector<rte_mbuf*> in;
    for (uint32_t s = first; s < first + n; ++s) {
      rte_mbuf* m = MakeFrame(s);
      ASSERT_NE(m, nullptr);
      in.push_back(m);
      sent_at_.resize(std::max<size_t>(sent_at_.size(), s + 1));
      sent_at_[s] = now_;
    }
    Take(stage_.Process(in.data(), n, now_, out_, out_cap));
  }
  void Poll() { Take(stage_.Poll(now_, out_, kOutCap)); }
  void Advance(uint64_t cycles) { now_ += cycles; }
  // Flushes until nothing is held (bounded).
  void FlushAll() {
    for (int i = 0; i < 100000 && stage_.held() > 0; ++i) {
      Take(stage_.Flush(out_, kOutCap));
    }
    ASSERT_EQ(stage_.held(), 0u);
  }
  uint64_t SentAt(uint32_t seq) const { return sent_at_[seq]; }

  std::vector<uint32_t> Seqs() const {
    std::vector<uint32_t> seqs;
    for (const Emitted& e : emitted_) seqs.push_back(SeqOf(e.bytes));
    return seqs;
  }

 private:
  static StageOptions WithHz(StageOptions options) {
    options.tsc_hz = kHz;
    return options;
  }
  void Take(uint16_t n) {
    for (uint16_t i = 0; i < n; ++i) {
      emitted_.push_back({Bytes(out_[i]), now_});
      rte_pktmbuf_free(out_[i]);
    }
  }

  ImpairStage stage_;
  uint64_t now_ = 1'000'000;
  rte_mbuf* out_[kOutCap];
  std::vector<Emitted> emitted_;
  std::vector<uint64_t> sent_at_;
};

void ExpectConserved(const ImpairCounters& c, size_t emitted) {
  EXPECT_EQ(c.out, emitted);
  EXPECT_EQ(c.out + c.queue_full_drops, c.in - c.lost + c.duplicated);
}

class ImpairStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_pool, nullptr);
    in_use_before_ = rte_mempool_in_use_count(g_pool);
  }
  void TearDown() override {
    // Every mbuf back in the pool: nothing leaked, nothing freed twice.
    EXPECT_EQ(rte_mempool_in_use_count(g_pool), in_use_before_);
  }
  unsigned in_use_before_ = 0;
};

TEST_F(ImpairStageTest, ZeroRatesAreIdentity) {
  Driver d{ImpairConfig{}};
  for (uint32_t s = 0; s < 2016; s += 32) d.Send(s, 32);
  ASSERT_EQ(d.emitted().size(), 2016u);
  for (uint32_t s = 0; s < 2016; ++s) {
    ASSERT_EQ(d.emitted()[s].bytes, FrameBytes(s)) << s;
  }
  EXPECT_EQ(d.stage().held(), 0u);
  ExpectConserved(d.stage().counters(), d.emitted().size());
}

TEST_F(ImpairStageTest, ConservationWithEverything) {
  ImpairConfig c;
  c.seed = 2024;
  c.loss = 0.05;
  c.duplicate = 0.05;
  c.reorder = 0.05;
  c.corrupt = 0.05;
  c.delay_us = 20;
  c.jitter_us = 10;
  StageOptions options;
  options.hold_capacity = 8192;
  Driver d{c, options};
  constexpr uint32_t kFrames = 20000;
  for (uint32_t s = 0; s < kFrames; s += 32) {
    d.Send(s, 32);
    d.Advance(2000);  // 2 us per burst: a delay spans several bursts
  }
  for (int i = 0; i < 100; ++i) {
    d.Advance(1000);
    d.Poll();
  }
  d.FlushAll();
  const ImpairCounters& k = d.stage().counters();
  EXPECT_EQ(k.in, kFrames);
  EXPECT_GT(k.lost, 0u);
  EXPECT_GT(k.duplicated, 0u);
  EXPECT_GT(k.reordered, 0u);
  EXPECT_GT(k.corrupted, 0u);
  EXPECT_GT(k.delayed, 0u);
  EXPECT_EQ(k.queue_full_drops, 0u);
  EXPECT_EQ(k.no_buffer, 0u);
  ExpectConserved(k, d.emitted().size());
  // Every frame came out intact or with exactly one bit flipped after the
  // Ethernet header.
  uint64_t corrupted = 0;
  for (const Emitted& e : d.emitted()) {
    uint32_t seq = SeqOf(e.bytes);
    uint32_t offset;
    int bits = seq < kFrames ? DifferingBits(e.bytes, seq, &offset) : -1;
    if (bits == 0) continue;
    ++corrupted;
    if (bits == 1) {
      EXPECT_GE(offset, 14u);
    }
  }
  EXPECT_EQ(corrupted, k.corrupted);
}

TEST_F(ImpairStageTest, ReorderingKeepsTheMultisetOfFrames) {
  ImpairConfig c;
  c.seed = 77;
  c.reorder = 0.2;
  c.reorder_depth = 4;
  Driver d{c};
  constexpr uint32_t kFrames = 5000;
  for (uint32_t s = 0; s < kFrames; s += 16) {
    d.Send(s, static_cast<uint16_t>(std::min<uint32_t>(16, kFrames - s)));
    d.Advance(100);
  }
  d.FlushAll();
  std::vector<uint32_t> seqs = d.Seqs();
  ASSERT_EQ(seqs.size(), kFrames);
  int out_of_order = 0;
  for (size_t i = 1; i < seqs.size(); ++i)
    out_of_order += seqs[i] < seqs[i - 1];
  EXPECT_GT(out_of_order, 100);
  EXPECT_GT(d.stage().counters().reordered, 0u);
  std::sort(seqs.begin(), seqs.end());
  for (uint32_t s = 0; s < kFrames; ++s) ASSERT_EQ(seqs[s], s);
  for (const Emitted& e : d.emitted()) {
    ASSERT_EQ(e.bytes, FrameBytes(SeqOf(e.bytes)));
  }
  ExpectConserved(d.stage().counters(), d.emitted().size());
}

TEST_F(ImpairStageTest, ReorderedFrameOvertakenByAtMostDepthAmongFew) {
  // Depth 1 and a low rate: a reordered frame is overtaken by one later
  // frame, or by a few when the next frames are themselves reordered (they
  // are all released, in arrival order, behind the first one that passes).
  ImpairConfig c;
  c.seed = 3;
  c.reorder = 0.01;
  c.reorder_depth = 1;
  Driver d{c};
  for (uint32_t s = 0; s < 3000; s += 10) d.Send(s, 10);
  d.FlushAll();
  std::vector<uint32_t> seqs = d.Seqs();
  ASSERT_EQ(seqs.size(), 3000u);
  for (size_t i = 0; i < seqs.size(); ++i) {
    int64_t displacement =
        static_cast<int64_t>(i) - static_cast<int64_t>(seqs[i]);
    EXPECT_LE(std::abs(displacement), 4)
        << "at " << i << ": " << seqs[i - 2] << " " << seqs[i - 1] << " "
        << seqs[i] << " " << seqs[i + 1] << " " << seqs[i + 2];
  }
}

TEST_F(ImpairStageTest, ReorderTimeoutReleasesWithoutTraffic) {
  ImpairConfig c;
  c.reorder = 1;
  c.reorder_depth = 8;
  c.reorder_timeout_us = 50;
  Driver d{c};
  d.Send(0, 1);
  EXPECT_EQ(d.emitted().size(), 0u);
  EXPECT_EQ(d.stage().held(), 1u);
  d.Advance(49'000);
  d.Poll();
  EXPECT_EQ(d.emitted().size(), 0u);
  d.Advance(1'000);
  d.Poll();
  EXPECT_EQ(d.emitted().size(), 1u);
  EXPECT_EQ(d.stage().held(), 0u);
}

TEST_F(ImpairStageTest, DuplicatesAreByteIdenticalRealCopies) {
  ImpairConfig c;
  c.seed = 11;
  c.duplicate = 1;
  Driver d{c};
  rte_mbuf* in[8];
  rte_mbuf* out[kOutCap];
  for (uint32_t s = 0; s < 8; ++s) in[s] = MakeFrame(s);
  uint16_t n = d.stage().Process(in, 8, 0, out, kOutCap);
  ASSERT_EQ(n, 16);
  for (uint32_t s = 0; s < 8; ++s) {
    rte_mbuf* a = out[2 * s];
    rte_mbuf* b = out[2 * s + 1];
    EXPECT_NE(a, b);
    EXPECT_NE(rte_pktmbuf_mtod(a, void*), rte_pktmbuf_mtod(b, void*));
    EXPECT_TRUE(RTE_MBUF_DIRECT(b));
    EXPECT_EQ(rte_mbuf_refcnt_read(b), 1);
    EXPECT_EQ(Bytes(a), FrameBytes(s));
    EXPECT_EQ(Bytes(b), FrameBytes(s));
    // Changing one never changes the other.
    rte_pktmbuf_mtod(a, uint8_t*)[20] ^= 0xff;
    EXPECT_EQ(Bytes(b), FrameBytes(s));
  }
  for (uint16_t i = 0; i < n; ++i) rte_pktmbuf_free(out[i]);
  EXPECT_EQ(d.stage().counters().duplicated, 8u);
}

TEST_F(ImpairStageTest, CorruptionHitsEachCopyIndependentlyByOneBit) {
  ImpairConfig c;
  c.seed = 19;
  c.duplicate = 1;
  c.corrupt = 1;
  c.corrupt_from = 14;
  Driver d{c};
  for (uint32_t s = 0; s < 500; s += 20) d.Send(s, 20);
  ASSERT_EQ(d.emitted().size(), 1000u);
  int pairs_differing = 0;
  for (size_t i = 0; i < 1000; i += 2) {
    uint32_t seq = static_cast<uint32_t>(i / 2);
    for (size_t k = 0; k < 2; ++k) {
      uint32_t offset = 0;
      ASSERT_EQ(DifferingBits(d.emitted()[i + k].bytes, seq, &offset), 1)
          << seq;
      EXPECT_GE(offset, 14u);
    }
    pairs_differing += d.emitted()[i].bytes != d.emitted()[i + 1].bytes;
  }
  EXPECT_GT(pairs_differing, 450);
  EXPECT_EQ(d.stage().counters().corrupted, 1000u);
}

TEST_F(ImpairStageTest, CorruptingASharedMbufCopiesItFirst) {
  ImpairConfig c;
  c.corrupt = 1;
  Driver d{c};
  rte_mbuf* m = MakeFrame(5);
  rte_mbuf_refcnt_update(m, 1);  // someone else holds it too
  rte_mbuf* out[4];
  ASSERT_EQ(d.stage().Process(&m, 1, 0, out, 4), 1);
  EXPECT_NE(out[0], m);
  EXPECT_EQ(Bytes(m), FrameBytes(5));  // the other holder sees no change
  uint32_t offset;
  EXPECT_EQ(DifferingBits(Bytes(out[0]), 5, &offset), 1);
  rte_pktmbuf_free(out[0]);
  rte_pktmbuf_free(m);
}

TEST_F(ImpairStageTest, DelayHoldsFramesAtLeastDelayUs) {
  ImpairConfig c;
  c.seed = 8;
  c.delay_us = 1000;
  c.jitter_us = 300;
  Driver d{c};
  const uint64_t delay = c.delay_us * (kHz / 1'000'000);
  for (uint32_t s = 0; s < 640; s += 32) {
    d.Send(s, 32);
    d.Advance(10'000);
  }
  // Nothing may leave before the first frame's delay has passed.
  EXPECT_EQ(d.emitted().size(), 0u);
  for (int i = 0; i < 400 && d.stage().held() > 0; ++i) {
    d.Advance(10'000);
    d.Poll();
  }
  ASSERT_EQ(d.emitted().size(), 640u);
  EXPECT_EQ(d.stage().counters().delayed, 640u);
  EXPECT_GE(d.stage().counters().held_max, 200u);
  for (const Emitted& e : d.emitted()) {
    uint32_t seq = SeqOf(e.bytes);
    EXPECT_GE(e.at - d.SentAt(seq), delay) << seq;
  }
  ExpectConserved(d.stage().counters(), d.emitted().size());
}

TEST_F(ImpairStageTest, DelayWithoutJitterKeepsOrder) {
  ImpairConfig c;
  c.delay_us = 100;
  Driver d{c};
  for (uint32_t s = 0; s < 1000; s += 10) {
    d.Send(s, 10);
    d.Advance(3'000);
    d.Poll();
  }
  for (int i = 0; i < 100; ++i) {
    d.Advance(3'000);
    d.Poll();
  }
  std::vector<uint32_t> seqs = d.Seqs();
  ASSERT_EQ(seqs.size(), 1000u);
  for (uint32_t s = 0; s < 1000; ++s) ASSERT_EQ(seqs[s], s);
}

TEST_F(ImpairStageTest, DelayInRealTimeIsALowerBound) {
  ImpairConfig c;
  c.delay_us = 2000;
  ImpairStage stage(c, 0);  // the real TSC
  const uint64_t delay = stage.MicrosToTsc(c.delay_us);
  rte_mbuf* in[16];
  rte_mbuf* out[kOutCap];
  for (uint32_t s = 0; s < 16; ++s) in[s] = MakeFrame(s);
  const uint64_t sent = rte_rdtsc();
  size_t got = stage.Process(in, 16, sent, out, kOutCap);
  EXPECT_EQ(got, 0u);
  const uint64_t give_up = sent + rte_get_tsc_hz() * 5;
  while (got < 16 && rte_rdtsc() < give_up) {
    uint64_t now = rte_rdtsc();
    uint16_t n = stage.Poll(now, out, kOutCap);
    for (uint16_t i = 0; i < n; ++i) {
      EXPECT_GE(rte_rdtsc() - sent, delay);
      rte_pktmbuf_free(out[i]);
    }
    got += n;
  }
  EXPECT_EQ(got, 16u);
}

TEST_F(ImpairStageTest, QueueBoundIsRespectedAndCounted) {
  ImpairConfig c;
  c.delay_us = 1000;
  StageOptions options;
  options.hold_capacity = 16;
  Driver d{c, options};
  for (uint32_t s = 0; s < 100; s += 25) {
    d.Send(s, 25);
    EXPECT_LE(d.stage().held(), 16u);
  }
  const ImpairCounters& k = d.stage().counters();
  EXPECT_EQ(k.delayed, 16u);
  EXPECT_EQ(k.queue_full_drops, 84u);
  EXPECT_EQ(k.held_max, 16u);
  d.Advance(1'000'000);
  d.Poll();
  EXPECT_EQ(d.emitted().size(), 16u);
  // The first 16 frames made it, the rest were dropped.
  std::vector<uint32_t> seqs = d.Seqs();
  for (uint32_t s = 0; s < 16; ++s) EXPECT_EQ(seqs[s], s);
  ExpectConserved(k, d.emitted().size());
}

TEST_F(ImpairStageTest, ReorderSlotsAreBounded) {
  ImpairConfig c;
  c.reorder = 1;
  c.reorder_depth = 64;
  c.reorder_timeout_us = 10'000'000;
  StageOptions options;
  options.reorder_slots = 4;
  Driver d{c, options};
  for (uint32_t s = 0; s < 200; s += 10) {
    d.Send(s, 10);
    EXPECT_LE(d.stage().held(), 4u);
  }
  EXPECT_LE(d.stage().counters().held_max, 4u);
  EXPECT_GT(d.stage().counters().reorder_skipped, 0u);
  d.FlushAll();
  ExpectConserved(d.stage().counters(), d.emitted().size());
  EXPECT_EQ(d.emitted().size(), 200u);
}

TEST_F(ImpairStageTest, SmallOutputArrayDefersWithoutLoss) {
  ImpairConfig c;
  c.duplicate = 0.5;
  Driver d{c};
  for (uint32_t s = 0; s < 320; s += 32) d.Send(s, 32, /*out_cap=*/4);
  for (int i = 0; i < 1000 && d.stage().held() > 0; ++i) d.Poll();
  EXPECT_EQ(d.stage().held(), 0u);
  const ImpairCounters& k = d.stage().counters();
  EXPECT_EQ(k.queue_full_drops, 0u);
  ExpectConserved(k, d.emitted().size());
  // Order is kept: a duplicate follows its original.
  std::vector<uint32_t> seqs = d.Seqs();
  EXPECT_TRUE(std::is_sorted(seqs.begin(), seqs.end()));
}

TEST_F(ImpairStageTest, SameSeedSameOutput) {
  ImpairConfig c;
  c.seed = 1234;
  c.loss = 0.1;
  c.duplicate = 0.1;
  c.reorder = 0.1;
  c.corrupt = 0.1;
  c.delay_us = 5;
  c.jitter_us = 5;
  std::vector<std::vector<uint8_t>> runs[2];
  for (auto& run : runs) {
    Driver d{c};
    for (uint32_t s = 0; s < 3000; s += 30) {
      d.Send(s, 30);
      d.Advance(1'500);
    }
    d.FlushAll();
    for (Emitted& e : d.emitted()) run.push_back(std::move(e.bytes));
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST_F(ImpairStageTest, DestructorFreesHeldFrames) {
  ImpairConfig c;
  c.delay_us = 1000;
  c.reorder = 0.5;
  {
    Driver d{c};
    d.Send(0, 50);
    EXPECT_EQ(d.stage().held(), 50u);
  }
  // TearDown checks that the pool has every mbuf back.
}

}  // namespace
}  // namespace spinnic::impair

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* eal_args[] = {
      "impair_stage_test", "--no-huge", "-m", "128",         "--no-pci",
      "--no-shconf",       "-l",        "0",  "--log-level", "4"};
  int eal_argc = static_cast<int>(sizeof eal_args / sizeof eal_args[0]);
  if (rte_eal_init(eal_argc, const_cast<char**>(eal_args)) < 0) {
    std::fprintf(stderr, "EAL init failed\n");
    return 1;
  }
  spinnic::impair::g_pool = rte_pktmbuf_pool_create(
      "impair_test", 16383, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
  if (spinnic::impair::g_pool == nullptr) {
    std::fprintf(stderr, "cannot create the mbuf pool\n");
    rte_eal_cleanup();
    return 1;
  }
  int rc = RUN_ALL_TESTS();
  rte_mempool_free(spinnic::impair::g_pool);
  rte_eal_cleanup();
  return rc;
}
