// TxPacer (dataplane/tx_pacer.h) on its own, against a model TX queue: a
// descriptor ring of fixed capacity that a "link" empties at a fixed rate.
// No EAL: the pacer only stores mbuf pointers and reads pkt_len.
#include "dataplane/tx_pacer.h"

#include <rte_mbuf_core.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace spinnic {
namespace {

// Frames of `length` bytes; the pacer never frees or writes them.
class Frames {
 public:
  explicit Frames(size_t count, uint32_t length = 1000)
      : mbufs_(new rte_mbuf[count]()) {
    for (size_t i = 0; i < count; ++i) mbufs_[i].pkt_len = length;
  }
  rte_mbuf* operator[](size_t i) { return &mbufs_[i]; }

 private:
  std::unique_ptr<rte_mbuf[]> mbufs_;
};

TxPacerConfig Pacer(uint32_t share, uint32_t queue = 64, uint64_t rate = 0) {
  TxPacerConfig config;
  config.enabled = true;
  config.passthrough_share_percent = share;
  config.queue_frames = queue;
  config.rate_bytes_per_s = rate;
  return config;
}

TEST(TxPacerTest, OffUnlessEnabled) {
  TxPacer pacer;
  pacer.Configure(TxPacerConfig(), 32);
  EXPECT_FALSE(pacer.enabled());
  EXPECT_EQ(pacer.room(), UINT32_MAX);
}

TEST(TxPacerTest, BoundedFifoKeepsWhatTheQueueRefusesFirstInLine) {
  TxPacer pacer;
  pacer.Configure(Pacer(0, 5), 32);
  Frames frames(6);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(pacer.Enqueue(frames[i]));
  EXPECT_FALSE(pacer.Enqueue(frames[5]));  // full: refused, still ours
  EXPECT_EQ(pacer.room(), 0u);

  std::vector<rte_mbuf*> sent;
  auto take_two = [&sent](rte_mbuf** packets, uint16_t count) {
    const uint16_t taken = std::min<uint16_t>(count, 2);
    sent.insert(sent.end(), packets, packets + taken);
    return taken;
  };
  TxPacer::Drained drained = pacer.Drain(0, take_two);
  EXPECT_EQ(drained.frames, 2u);
  EXPECT_EQ(drained.bytes, 2000u);
  EXPECT_EQ(pacer.queued(), 3u);
  pacer.Drain(0, take_two);
  pacer.Drain(0, take_two);
  ASSERT_EQ(sent.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sent[i], frames[i]) << i;  // in order
  EXPECT_EQ(pacer.queued(), 0u);

  // Wrapping around the slots, and Clear hands back what is left in order.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(pacer.Enqueue(frames[i]));
  std::vector<rte_mbuf*> released;
  pacer.Clear([&released](rte_mbuf* m) { released.push_back(m); });
  EXPECT_EQ(released, (std::vector<rte_mbuf*>{frames[0], frames[1], frames[2],
                                              frames[3]}));
  EXPECT_EQ(pacer.queued(), 0u);
}

// One loop of an HPU against a TX ring a link empties while the HPU works:
// `before` descriptors free up before the passthrough flush, `during` more
// between that flush and the pacer's drain (the time tx_burst and the rest
// of the flush take on a real NIC). Counts what each kind got into the ring.
struct LinkModel {
  uint32_t capacity = 64;
  uint32_t occupied = 0;
  uint64_t passthrough = 0, passthrough_refused = 0, transport = 0;

  void Free(uint32_t n) { occupied -= std::min(occupied, n); }
  uint16_t Take(uint32_t n) {
    const uint32_t taken = std::min(n, capacity - occupied);
    occupied += taken;
    return static_cast<uint16_t>(taken);
  }

  void Loop(TxPacer& pacer, uint32_t passthrough_offered, uint32_t before,
            uint32_t during) {
    Free(before);
    const uint16_t accepted = Take(passthrough_offered);
    passthrough += accepted;
    passthrough_refused += passthrough_offered - accepted;
    pacer.OnPassthrough(passthrough_offered, accepted, accepted);
    Free(during);
    const TxPacer::Drained drained = pacer.Drain(
        0, [this](rte_mbuf**, uint16_t count) { return Take(count); });
    transport += drained.frames;
  }
};

// A transport that always has a backlog (a lossy path retransmitting).
void Flood(TxPacer& pacer, Frames& frames) {
  for (size_t i = 0; pacer.room() != 0; ++i) pacer.Enqueue(frames[i % 64]);
}

// Passthrough asks for more than the link carries (24 frames per loop where
// 16 leave): the share decides what the ring takes.
double PassthroughShareUnderOverload(uint32_t share) {
  TxPacer pacer;
  pacer.Configure(Pacer(share, 256), 32);
  Frames frames(64);
  LinkModel link;
  for (int loop = 0; loop < 2100; ++loop) {
    // The first loops fill the empty ring, before any refusal: not counted.
    if (loop == 100) link.passthrough = link.transport = 0;
    Flood(pacer, frames);
    link.Loop(pacer, 24, 8, 8);
  }
  return static_cast<double>(link.passthrough) /
         static_cast<double>(link.passthrough + link.transport);
}

TEST(TxPacerTest, KeepsPassthroughShareOfACongestedQueue) {
  for (uint32_t share : {50u, 80u, 95u}) {
    const double got = PassthroughShareUnderOverload(share);
    // Less at most the credit carried over the warm-up (one burst's worth).
    EXPECT_GE(got, share / 100.0 - 0.002) << "share " << share;
  }
  // Without a share only the order holds: the slots that free up while the
  // HPU flushes go to the transport's backlog, and passthrough gets about
  // half the link: the test above could fail.
  EXPECT_LT(PassthroughShareUnderOverload(0), 0.6);
}

TEST(TxPacerTest, TransportsUseWhatPassthroughLeaves) {
  // Passthrough wants 4 of the 16 frames a loop: nothing of it is refused,
  // the share never engages, and the transport fills the rest of the link.
  TxPacer pacer;
  pacer.Configure(Pacer(80, 256), 32);
  Frames frames(64);
  LinkModel link;
  for (int loop = 0; loop < 1000; ++loop) {
    Flood(pacer, frames);
    link.Loop(pacer, 4, 8, 8);
  }
  EXPECT_EQ(link.passthrough_refused, 0u);
  EXPECT_FALSE(pacer.congested());
  EXPECT_EQ(link.passthrough, 4000u);
  // The link carried 16 a loop (less the first loop's empty ring).
  EXPECT_GE(link.passthrough + link.transport, 16u * 999);
}

TEST(TxPacerTest, RateCapsTransportBytes) {
  // 10 MB/s: in 10 ms, 100 KB plus at most the bucket's depth (16 KiB).
  TxPacer pacer;
  pacer.Configure(Pacer(0, 1024, 10'000'000), 32);
  EXPECT_TRUE(pacer.rate_limited());
  Frames frames(64, 1000);
  uint64_t bytes = 0;
  auto take_all = [](rte_mbuf**, uint16_t count) { return count; };
  const uint64_t start = 1'000'000'000;
  for (uint64_t t = 0; t <= 10'000'000; t += 10'000) {  // every 10 us
    Flood(pacer, frames);
    bytes += pacer.Drain(start + t, take_all).bytes;
  }
  EXPECT_GE(bytes, 100'000u);
  EXPECT_LE(bytes, 100'000u + TxPacer::kMinDepthBytes + 1000);
}

}  // namespace
}  // namespace spinnic
