// The impairment stage's bottleneck on mbufs from a mempool: EAL
// (--no-huge), no ports. Time is a virtual TSC of 1 GHz (1 cycle = 1 ns)
// that the tests step, so every departure time is asserted exactly and no
// wall clock is involved.
#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "dataplane/common/checksum.h"
#include "dataplane/impair/impair_stage.h"

namespace spinnic::impair {
namespace {

constexpr uint64_t kHz = 1'000'000'000;
constexpr uint16_t kOutCap = 256;
constexpr uint64_t kStart = 1'000'000;

rte_mempool* g_pool = nullptr;

enum class Ecn : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

// An Ethernet/IPv4/UDP frame of `length` bytes whose IPv4 identification
// carries `seq`, TOS = ECN codepoint, with a valid header checksum.
std::vector<uint8_t> Ipv4Frame(uint16_t seq, Ecn ecn, uint32_t length = 1000) {
  std::vector<uint8_t> f(length, 0x5a);
  const uint8_t eth[14] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00};
  std::memcpy(f.data(), eth, 14);
  uint8_t* ip = f.data() + 14;
  const uint16_t total = static_cast<uint16_t>(length - 14);
  const uint8_t header[20] = {0x45,
                              static_cast<uint8_t>(ecn),
                              static_cast<uint8_t>(total >> 8),
                              static_cast<uint8_t>(total),
                              static_cast<uint8_t>(seq >> 8),
                              static_cast<uint8_t>(seq),
                              0x40,
                              0,
                              64,
                              17,
                              0,
                              0,
                              10,
                              0,
                              0,
                              1,
                              10,
                              0,
                              0,
                              2};
  std::memcpy(ip, header, 20);
  const uint16_t sum = checksum::Compute(ip, 20);
  ip[10] = static_cast<uint8_t>(sum >> 8);
  ip[11] = static_cast<uint8_t>(sum);
  return f;
}

std::vector<uint8_t> Ipv6Frame(uint16_t seq, Ecn ecn, uint32_t length = 1000) {
  std::vector<uint8_t> f(length, 0x6b);
  const uint8_t eth[14] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd};
  std::memcpy(f.data(), eth, 14);
  uint8_t* ip = f.data() + 14;
  ip[0] = 0x60;
  ip[1] = static_cast<uint8_t>(static_cast<uint8_t>(ecn) << 4);
  ip[2] = static_cast<uint8_t>(seq >> 8);  // the flow label carries seq
  ip[3] = static_cast<uint8_t>(seq);
  return f;
}

rte_mbuf* ToMbuf(const std::vector<uint8_t>& bytes) {
  rte_mbuf* m = rte_pktmbuf_alloc(g_pool);
  if (m == nullptr) return nullptr;
  char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(bytes.size()));
  if (data == nullptr) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  std::memcpy(data, bytes.data(), bytes.size());
  return m;
}

std::vector<uint8_t> Bytes(const rte_mbuf* m) {
  const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
  return std::vector<uint8_t>(p, p + m->data_len);
}

uint16_t SeqOf(const std::vector<uint8_t>& f) {
  if (f[12] == 0x86) return static_cast<uint16_t>(f[16] << 8 | f[17]);
  return static_cast<uint16_t>(f[18] << 8 | f[19]);
}

uint8_t EcnOf(const std::vector<uint8_t>& f) {
  if (f[12] == 0x86) return (f[15] >> 4) & 3;
  return f[15] & 3;
}

bool Ipv4ChecksumValid(const std::vector<uint8_t>& f) {
  return checksum::Fold(checksum::Add(0, f.data() + 14, 20)) == 0xffff;
}

struct Emitted {
  std::vector<uint8_t> bytes;
  uint64_t at;
};

// A stage on the virtual clock; several inputs may feed it.
class Link {
 public:
  explicit Link(const ImpairConfig& config) : stage_(config, 0, Options()) {}

  ImpairStage& stage() { return stage_; }
  std::vector<Emitted>& emitted() { return emitted_; }
  uint64_t now() const { return now_; }
  void Advance(uint64_t ns) { now_ += ns; }

  // One Process call: one input's burst at the current time.
  void Send(const std::vector<std::vector<uint8_t>>& frames) {
    std::vector<rte_mbuf*> in;
    for (const auto& f : frames) {
      rte_mbuf* m = ToMbuf(f);
      ASSERT_NE(m, nullptr);
      in.push_back(m);
    }
    Take(stage_.Process(in.data(), static_cast<uint16_t>(in.size()), now_, out_,
                        kOutCap));
  }
  void SendMbufs(std::vector<rte_mbuf*> in) {
    Take(stage_.Process(in.data(), static_cast<uint16_t>(in.size()), now_, out_,
                        kOutCap));
  }
  void Poll() { Take(stage_.Poll(now_, out_, kOutCap)); }
  // Steps the clock by `step` and polls, until nothing is held (bounded).
  void RunUntilEmpty(uint64_t step) {
    for (int i = 0; i < 1'000'000 && stage_.held() > 0; ++i) {
      Advance(step);
      Poll();
    }
    ASSERT_EQ(stage_.held(), 0u);
  }

 private:
  static StageOptions Options() {
    StageOptions options;
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
  uint64_t now_ = kStart;
  rte_mbuf* out_[kOutCap];
  std::vector<Emitted> emitted_;
};

ImpairConfig Bottleneck(uint64_t rate_bps, uint32_t frames) {
  ImpairConfig c;
  c.rate_bps = rate_bps;
  c.bottleneck_frames = frames;
  c.frame_overhead_bytes = 0;
  return c;
}

void ExpectConserved(const ImpairCounters& c, size_t emitted, size_t held) {
  EXPECT_EQ(c.out, emitted);
  EXPECT_EQ(c.out + c.queue_full_drops + c.tail_drops + held,
            c.in - c.lost + c.duplicated);
}

class BottleneckStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(g_pool, nullptr);
    in_use_before_ = rte_mempool_in_use_count(g_pool);
  }
  void TearDown() override {
    EXPECT_EQ(rte_mempool_in_use_count(g_pool), in_use_before_);
  }
  unsigned in_use_before_ = 0;
};

TEST_F(BottleneckStageTest, FramesLeaveAtTheConfiguredRate) {
  // 1 Gb/s, 1000-byte frames: 8 us each. 50 frames at once leave at
  // kStart + 8 us, + 16 us, ..., each at the first poll at or after its
  // time; polling every 1 us hits every time exactly.
  Link link(Bottleneck(1'000'000'000, 64));
  std::vector<std::vector<uint8_t>> burst;
  for (uint16_t s = 0; s < 50; ++s) burst.push_back(Ipv4Frame(s, Ecn::kNotEct));
  link.Send(burst);
  EXPECT_TRUE(link.emitted().empty());  // nothing is sent in zero time
  EXPECT_EQ(link.stage().queue_depth(), 50u);
  link.RunUntilEmpty(1000);
  ASSERT_EQ(link.emitted().size(), 50u);
  for (uint16_t s = 0; s < 50; ++s) {
    EXPECT_EQ(SeqOf(link.emitted()[s].bytes), s);
    EXPECT_EQ(link.emitted()[s].at, kStart + 8000u * (s + 1)) << s;
    EXPECT_EQ(link.emitted()[s].bytes, Ipv4Frame(s, Ecn::kNotEct));
  }
  EXPECT_EQ(link.stage().counters().queue_max, 50u);
  EXPECT_EQ(link.stage().counters().tail_drops, 0u);
  ExpectConserved(link.stage().counters(), 50, 0);
}

TEST_F(BottleneckStageTest, OverheadCountsOnTheWire) {
  // 100 Mb/s, 101-byte frames + 24 bytes overhead = 1000 bits = 10 us.
  ImpairConfig c = Bottleneck(100'000'000, 8);
  c.frame_overhead_bytes = 24;
  Link link(c);
  link.Send({Ipv4Frame(0, Ecn::kNotEct, 101), Ipv4Frame(1, Ecn::kNotEct, 101)});
  link.RunUntilEmpty(500);
  ASSERT_EQ(link.emitted().size(), 2u);
  EXPECT_EQ(link.emitted()[0].at, kStart + 10'000);
  EXPECT_EQ(link.emitted()[1].at, kStart + 20'000);
}

TEST_F(BottleneckStageTest, PacedArrivalsBelowTheRateNeverQueue) {
  // A frame every 10 us on an 8 us link: each leaves 8 us after it came,
  // and every arrival finds the queue empty.
  Link link(Bottleneck(1'000'000'000, 4));
  for (uint16_t s = 0; s < 20; ++s) {
    link.Send({Ipv4Frame(s, Ecn::kNotEct)});
    link.Advance(8000);
    link.Poll();
    link.Advance(2000);
  }
  ASSERT_EQ(link.emitted().size(), 20u);
  for (uint16_t s = 0; s < 20; ++s) {
    EXPECT_EQ(link.emitted()[s].at, kStart + 10'000u * s + 8000u);
  }
  EXPECT_EQ(link.stage().queue_depths().Percentile(1.0), 0u);
  EXPECT_EQ(link.stage().counters().queue_max, 1u);
}

TEST_F(BottleneckStageTest, TailDropAtDepth) {
  // A queue of 10: of 25 frames at once, 10 are queued and 15 dropped. The
  // arrivals found depths 0..9 once each and 10 (full) fifteen times.
  Link link(Bottleneck(1'000'000'000, 10));
  std::vector<std::vector<uint8_t>> burst;
  for (uint16_t s = 0; s < 25; ++s) burst.push_back(Ipv4Frame(s, Ecn::kEct0));
  link.Send(burst);
  const ImpairCounters& c = link.stage().counters();
  EXPECT_EQ(c.tail_drops, 15u);
  EXPECT_EQ(link.stage().queue_depth(), 10u);
  EXPECT_EQ(c.queue_max, 10u);
  const DepthHistogram& depths = link.stage().queue_depths();
  EXPECT_EQ(depths.samples(), 25u);
  for (uint32_t d = 0; d < 10; ++d) EXPECT_EQ(depths.counts()[d], 1u) << d;
  EXPECT_EQ(depths.counts()[10], 15u);
  EXPECT_EQ(depths.Percentile(0.5), 10u);  // the 13th of 25 samples
  EXPECT_EQ(depths.Percentile(0.2), 4u);   // the 5th
  // One frame's time later one slot is free again: the next arrival is
  // queued, the one after it dropped.
  link.Advance(8000);
  link.Send({Ipv4Frame(100, Ecn::kEct0), Ipv4Frame(101, Ecn::kEct0)});
  EXPECT_EQ(link.emitted().size(), 1u);
  EXPECT_EQ(c.tail_drops, 16u);
  link.RunUntilEmpty(1000);
  ASSERT_EQ(link.emitted().size(), 11u);
  for (uint16_t s = 0; s < 10; ++s)
    EXPECT_EQ(SeqOf(link.emitted()[s].bytes), s);
  EXPECT_EQ(SeqOf(link.emitted()[10].bytes), 100);
  EXPECT_EQ(c.ecn_marked, 0u);  // no marking configured
  ExpectConserved(c, 11, 0);
}

TEST_F(BottleneckStageTest, ThresholdMarksEctFramesAndKeepsChecksums) {
  // K = 4: of 10 ECT(0) frames at once, frames 4..9 found 4..9 queued and
  // get CE; 0..3 are untouched.
  ImpairConfig c = Bottleneck(1'000'000'000, 16);
  c.ecn_min_frames = 4;
  c.ecn_max_frames = 4;
  Link link(c);
  std::vector<std::vector<uint8_t>> burst;
  for (uint16_t s = 0; s < 10; ++s) burst.push_back(Ipv4Frame(s, Ecn::kEct0));
  link.Send(burst);
  link.RunUntilEmpty(1000);
  ASSERT_EQ(link.emitted().size(), 10u);
  for (uint16_t s = 0; s < 10; ++s) {
    const std::vector<uint8_t>& got = link.emitted()[s].bytes;
    EXPECT_EQ(SeqOf(got), s);
    EXPECT_TRUE(Ipv4ChecksumValid(got)) << s;
    if (s < 4) {
      EXPECT_EQ(got, Ipv4Frame(s, Ecn::kEct0)) << s;
    } else {
      // Exactly the frame that was sent as CE: TOS and checksum only.
      EXPECT_EQ(got, Ipv4Frame(s, Ecn::kCe)) << s;
    }
  }
  EXPECT_EQ(link.stage().counters().ecn_marked, 6u);
  EXPECT_EQ(link.stage().counters().ecn_not_ect, 0u);
}

TEST_F(BottleneckStageTest, OnlyEctFramesAreMarked) {
  // Marking from depth 0: every frame would be marked. ECT(0), ECT(1) (IPv4
  // and IPv6) get CE; Not-ECT and a non-IP frame are counted in ecn_not_ect
  // and pass untouched; CE ones in ecn_already_ce.
  ImpairConfig c = Bottleneck(1'000'000'000, 16);
  c.ecn_min_frames = 0;
  c.ecn_max_frames = 1;  // depth >= 1 always, and depth 0 ramps at p = 0
  Link link(c);
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  const std::vector<std::vector<uint8_t>> sent = {
      Ipv4Frame(0, Ecn::kNotEct),  // depth 0: not even a candidate
      Ipv4Frame(1, Ecn::kEct0),   Ipv4Frame(2, Ecn::kEct1),
      Ipv4Frame(3, Ecn::kNotEct), Ipv4Frame(4, Ecn::kCe),
      Ipv6Frame(5, Ecn::kEct0),   Ipv6Frame(6, Ecn::kEct1),
      Ipv6Frame(7, Ecn::kNotEct), arp};
  link.Send(sent);
  link.RunUntilEmpty(1000);
  ASSERT_EQ(link.emitted().size(), sent.size());
  const uint8_t want_ecn[] = {0, 3, 3, 0, 3, 3, 3, 0};
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(EcnOf(link.emitted()[i].bytes), want_ecn[i]) << i;
    if (i < 5) EXPECT_TRUE(Ipv4ChecksumValid(link.emitted()[i].bytes)) << i;
  }
  EXPECT_EQ(link.emitted()[8].bytes, arp);
  EXPECT_EQ(link.emitted()[0].bytes, sent[0]);
  EXPECT_EQ(link.emitted()[3].bytes, sent[3]);
  EXPECT_EQ(link.emitted()[4].bytes, sent[4]);
  EXPECT_EQ(link.emitted()[7].bytes, sent[7]);
  const ImpairCounters& k = link.stage().counters();
  EXPECT_EQ(k.ecn_marked, 4u);
  EXPECT_EQ(k.ecn_not_ect, 3u);  // seq 3, seq 7, the ARP frame
  EXPECT_EQ(k.ecn_already_ce, 1u);
}

TEST_F(BottleneckStageTest, SharedFrameIsCopiedBeforeMarking) {
  // A transport keeps a clone of what it sent (for retransmission): marking
  // must not change the bytes the clone sees.
  ImpairConfig c = Bottleneck(1'000'000'000, 16);
  c.ecn_min_frames = 0;
  c.ecn_max_frames = 1;
  Link link(c);
  const std::vector<uint8_t> first = Ipv4Frame(0, Ecn::kEct0);
  const std::vector<uint8_t> second = Ipv4Frame(1, Ecn::kEct0);
  rte_mbuf* original = ToMbuf(second);
  ASSERT_NE(original, nullptr);
  rte_mbuf_refcnt_update(original, 1);  // someone else holds it too
  link.Send({first});
  link.SendMbufs({original});
  link.RunUntilEmpty(1000);
  ASSERT_EQ(link.emitted().size(), 2u);
  EXPECT_EQ(link.emitted()[1].bytes, Ipv4Frame(1, Ecn::kCe));
  EXPECT_EQ(Bytes(original), second);  // the other holder's view unchanged
  EXPECT_EQ(link.stage().counters().ecn_marked, 1u);
  rte_pktmbuf_free(original);
}

TEST_F(BottleneckStageTest, IncastSharesOneQueueAtTheLinkRate) {
  // Four senders, each a 500-byte frame every 4 us, into one 1 Gb/s link
  // (4 us per frame): 4x overload. The link stays busy from the first
  // arrival, so by time t exactly floor((t - kStart) / 4 us) frames have
  // left, whoever sent them; the queue holds at most 32 and the rest are
  // tail drops; every sender gets frames through.
  Link link(Bottleneck(1'000'000'000, 32));
  constexpr int kSenders = 4;
  constexpr int kTicks = 500;
  uint16_t seq[kSenders] = {};
  for (int tick = 0; tick < kTicks; ++tick) {
    for (int s = 0; s < kSenders; ++s) {
      // The sender's index in the top bits of the sequence number.
      link.Send({Ipv4Frame(static_cast<uint16_t>(s << 12 | seq[s]++),
                           Ecn::kEct0, 500)});
    }
    const uint64_t elapsed = link.now() - kStart;
    ASSERT_EQ(link.emitted().size(), elapsed / 4000) << tick;
    ASSERT_LE(link.stage().queue_depth(), 32u);
    link.Advance(4000);
  }
  link.Poll();
  EXPECT_EQ(link.emitted().size(), static_cast<size_t>(kTicks));
  for (size_t i = 1; i < link.emitted().size(); ++i) {
    EXPECT_EQ(link.emitted()[i].at - link.emitted()[i - 1].at, 4000u);
  }
  const ImpairCounters& c = link.stage().counters();
  EXPECT_EQ(c.in, static_cast<uint64_t>(kSenders * kTicks));
  EXPECT_EQ(c.queue_max, 32u);
  int per_sender[kSenders] = {};
  for (const Emitted& e : link.emitted()) ++per_sender[SeqOf(e.bytes) >> 12];
  for (int s = 0; s < kSenders; ++s) EXPECT_GT(per_sender[s], 0) << s;
  ExpectConserved(c, link.emitted().size(), link.stage().held());
  link.RunUntilEmpty(4000);
  ExpectConserved(c, link.emitted().size(), 0);
}

TEST_F(BottleneckStageTest, ImpairmentsComeBeforeTheBottleneck) {
  // With delay 20 us, a frame reaches the link 20 us after it came in, then
  // takes its 8 us: it leaves at +28 us. Loss still happens first.
  ImpairConfig c = Bottleneck(1'000'000'000, 16);
  c.delay_us = 20;
  Link link(c);
  link.Send({Ipv4Frame(0, Ecn::kNotEct), Ipv4Frame(1, Ecn::kNotEct)});
  link.RunUntilEmpty(1000);
  ASSERT_EQ(link.emitted().size(), 2u);
  EXPECT_EQ(link.emitted()[0].at, kStart + 28'000);
  EXPECT_EQ(link.emitted()[1].at, kStart + 36'000);
}

TEST_F(BottleneckStageTest, FlushAndDestructorReleaseTheQueue) {
  {
    Link link(Bottleneck(1'000'000, 64));  // 1 Mb/s: 8 ms per frame
    std::vector<std::vector<uint8_t>> burst;
    for (uint16_t s = 0; s < 20; ++s) {
      burst.push_back(Ipv4Frame(s, Ecn::kNotEct));
    }
    link.Send(burst);
    EXPECT_EQ(link.stage().held(), 20u);
    rte_mbuf* out[8];
    uint16_t n = link.stage().Flush(out, 8);
    ASSERT_EQ(n, 8);
    for (uint16_t i = 0; i < n; ++i) {
      EXPECT_EQ(SeqOf(Bytes(out[i])), i);  // FIFO order
      rte_pktmbuf_free(out[i]);
    }
    EXPECT_EQ(link.stage().counters().flushed, 8u);
    EXPECT_EQ(link.stage().held(), 12u);
  }
  // The destructor freed the other 12: TearDown checks the pool.
}

}  // namespace
}  // namespace spinnic::impair

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* eal_args[] = {
      "bottleneck_stage_test", "--no-huge", "-m", "128",         "--no-pci",
      "--no-shconf",           "-l",        "0",  "--log-level", "4"};
  int eal_argc = static_cast<int>(sizeof eal_args / sizeof eal_args[0]);
  if (rte_eal_init(eal_argc, const_cast<char**>(eal_args)) < 0) {
    std::fprintf(stderr, "EAL init failed\n");
    return 1;
  }
  spinnic::impair::g_pool = rte_pktmbuf_pool_create(
      "bottleneck_test", 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
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
