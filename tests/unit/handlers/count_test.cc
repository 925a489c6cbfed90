// count: buckets by key, the documented state layout, staying inside state
// that is smaller than the buckets need, exact totals under concurrent
// lcores, and frames forwarded byte for byte.
#include <array>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

struct Bucket {
  uint64_t packets;
  uint64_t bytes;
  bool operator==(const Bucket&) const = default;
};

void PrintTo(const Bucket& bucket, std::ostream* os) {
  *os << "{packets " << bucket.packets << ", bytes " << bucket.bytes << "}";
}

// Reads bucket `i` at the documented offsets: packets at 16*i, bytes at
// 16*i + 8, host order.
Bucket ReadBucket(std::span<const uint8_t> state, size_t i) {
  Bucket bucket;
  std::memcpy(&bucket.packets, state.data() + 16 * i, 8);
  std::memcpy(&bucket.bytes, state.data() + 16 * i + 8, 8);
  return bucket;
}

// Runs `count` on `frame` and checks that the frame is forwarded unchanged.
void Count(const HandlerInstance& handler, HandlerContext& ctx,
           const std::vector<uint8_t>& frame, uint16_t in_port = 0) {
  TestPacket packet(frame, ClassifierLayers(frame), in_port);
  EXPECT_EQ(RunPayload(handler, ctx, packet.view()), HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(Hex(packet.bytes()), Hex(frame));
}

std::vector<uint8_t> UdpTo(uint16_t dst_port, size_t payload = 10) {
  FrameSpec spec;
  spec.dst_port = dst_port;
  spec.payload.assign(payload, 0xab);
  return Build(spec);
}

TEST(CountTest, DefaultCountsEverythingIntoOneTotal) {
  HandlerInstance handler = MakeHandler("count");
  FakeEctx ectx(FindHandlerKind("count")->min_state_size);
  std::vector<uint8_t> small = UdpTo(7, 1);
  std::vector<uint8_t> large = UdpTo(9, 1000);
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(46, 0);
  std::vector<uint8_t> non_ip = Build(arp);
  Count(handler, ectx.context(), small);
  Count(handler, ectx.context(), large);
  Count(handler, ectx.context(), non_ip);
  EXPECT_EQ(ReadBucket(ectx.state(), 0),
            (Bucket{3, small.size() + large.size() + non_ip.size()}));
}

TEST(CountTest, CountsWholeFramesIncludingPadding) {
  HandlerInstance handler = MakeHandler("count");
  FakeEctx ectx(16);
  FrameSpec spec;
  spec.pad_to = 60;
  Count(handler, ectx.context(), Build(spec));
  EXPECT_EQ(ReadBucket(ectx.state(), 0), (Bucket{1, 60}));
}

TEST(CountTest, ByDstPortUsesPortModuloBuckets) {
  HandlerInstance handler =
      MakeHandler("count", {{"by", "dst_port"}, {"buckets", "16"}});
  FakeEctx ectx(16 * 16);
  std::vector<uint8_t> to7 = UdpTo(7);
  std::vector<uint8_t> to23 = UdpTo(23);  // 23 % 16 == 7
  std::vector<uint8_t> to80 = UdpTo(80);  // 80 % 16 == 0
  FrameSpec tcp;
  tcp.l4 = L4::kTcp;
  tcp.dst_port = 443;  // 443 % 16 == 11
  std::vector<uint8_t> tcp443 = Build(tcp);
  FrameSpec icmp;
  icmp.l4 = L4::kIcmp;
  std::vector<uint8_t> no_ports = Build(icmp);
  Count(handler, ectx.context(), to7);
  Count(handler, ectx.context(), to23);
  Count(handler, ectx.context(), to80);
  Count(handler, ectx.context(), tcp443);
  Count(handler, ectx.context(), no_ports);
  EXPECT_EQ(ReadBucket(ectx.state(), 7), (Bucket{2, to7.size() * 2}));
  EXPECT_EQ(ReadBucket(ectx.state(), 11), (Bucket{1, tcp443.size()}));
  EXPECT_EQ(ReadBucket(ectx.state(), 0),
            (Bucket{2, to80.size() + no_ports.size()}));
  for (size_t i : {1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 13, 14, 15}) {
    EXPECT_EQ(ReadBucket(ectx.state(), i), (Bucket{0, 0})) << "bucket " << i;
  }
}

TEST(CountTest, BySrcPort) {
  HandlerInstance handler =
      MakeHandler("count", {{"by", "src_port"}, {"buckets", "100"}});
  FakeEctx ectx(16 * 100);
  FrameSpec spec;
  spec.ipv6 = true;
  spec.src_port = 12345;  // % 100 == 45
  std::vector<uint8_t> frame = Build(spec);
  Count(handler, ectx.context(), frame);
  EXPECT_EQ(ReadBucket(ectx.state(), 45), (Bucket{1, frame.size()}));
}

TEST(CountTest, ByIpProto) {
  HandlerInstance handler =
      MakeHandler("count", {{"by", "ip_proto"}, {"buckets", "256"}});
  FakeEctx ectx(16 * 256);
  FrameSpec udp;
  FrameSpec tcp;
  tcp.l4 = L4::kTcp;
  tcp.ipv6 = true;
  FrameSpec icmp6;
  icmp6.l4 = L4::kIcmp;
  icmp6.ipv6 = true;
  icmp6.icmp_type = 128;
  FrameSpec gre;
  gre.l4 = L4::kNone;
  gre.raw_proto = 47;
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(28, 0);
  for (const FrameSpec* spec : {&udp, &tcp, &icmp6, &gre, &arp}) {
    Count(handler, ectx.context(), Build(*spec));
  }
  EXPECT_EQ(ReadBucket(ectx.state(), 17).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 6).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 58).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 47).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 0).packets, 1u);  // non-IP
}

TEST(CountTest, ByInPort) {
  HandlerInstance handler =
      MakeHandler("count", {{"by", "in_port"}, {"buckets", "4"}});
  FakeEctx ectx(16 * 4);
  std::vector<uint8_t> frame = UdpTo(7);
  Count(handler, ectx.context(), frame, /*in_port=*/1);
  Count(handler, ectx.context(), frame, /*in_port=*/5);  // 5 % 4 == 1
  Count(handler, ectx.context(), frame, /*in_port=*/2);
  EXPECT_EQ(ReadBucket(ectx.state(), 1).packets, 2u);
  EXPECT_EQ(ReadBucket(ectx.state(), 2).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 0).packets, 0u);
}

TEST(CountTest, FragmentsAfterTheFirstHaveNoPorts) {
  HandlerInstance handler =
      MakeHandler("count", {{"by", "dst_port"}, {"buckets", "16"}});
  FakeEctx ectx(16 * 16);
  FrameSpec later;
  later.dst_port = 7;
  later.ip4_flags_fragment = 0x0003;  // offset 24 bytes: no L4 header
  Count(handler, ectx.context(), Build(later));
  EXPECT_EQ(ReadBucket(ectx.state(), 0).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 7).packets, 0u);
}

// The install only checks kMinStateSize (16), so buckets that do not fit are
// possible: they count into bucket 0 and nothing past the state is written.
TEST(CountTest, BucketBeyondTheStateCountsIntoBucketZero) {
  HandlerInstance handler =
      MakeHandler("count", {{"by", "dst_port"}, {"buckets", "8"}});
  // 2 buckets of state inside a larger buffer whose tail must stay intact.
  alignas(64) std::array<uint8_t, 64> memory;
  memory.fill(0xee);
  std::memset(memory.data(), 0, 32);
  FakeActionSink sink;
  HandlerContext ctx(std::span<uint8_t>(memory.data(), 32), {}, &sink, 0, 0);
  std::vector<uint8_t> to1 = UdpTo(1);
  std::vector<uint8_t> to5 = UdpTo(5);  // bucket 5 does not fit
  Count(handler, ctx, to1);
  Count(handler, ctx, to5);
  EXPECT_EQ(ReadBucket(memory, 1), (Bucket{1, to1.size()}));
  EXPECT_EQ(ReadBucket(memory, 0), (Bucket{1, to5.size()}));
  for (size_t i = 32; i < memory.size(); ++i) {
    ASSERT_EQ(memory[i], 0xee) << "wrote past the state at byte " << i;
  }
}

TEST(CountTest, StateSmallerThanOneBucketCountsNothing) {
  HandlerInstance handler = MakeHandler("count");
  alignas(64) std::array<uint8_t, 32> memory;
  memory.fill(0xee);
  FakeActionSink sink;
  for (size_t size : {0, 8, 15}) {
    HandlerContext ctx(std::span<uint8_t>(memory.data(), size), {}, &sink, 0,
                       0);
    Count(handler, ctx, UdpTo(7));
  }
  for (uint8_t byte : memory) ASSERT_EQ(byte, 0xee);
}

TEST(CountTest, MisalignedStateIsLeftAlone) {
  HandlerInstance handler = MakeHandler("count");
  alignas(64) std::array<uint8_t, 64> memory;
  memory.fill(0);
  FakeActionSink sink;
  HandlerContext ctx(std::span<uint8_t>(memory.data() + 4, 32), {}, &sink, 0,
                     0);
  Count(handler, ctx, UdpTo(7));
  for (uint8_t byte : memory) ASSERT_EQ(byte, 0);
}

// Several HPUs run one ECTX: the atomic adds must not lose updates.
TEST(CountTest, ConcurrentLcoresLoseNoCounts) {
  HandlerInstance handler =
      MakeHandler("count", {{"by", "dst_port"}, {"buckets", "2"}});
  FakeEctx ectx(32);
  constexpr int kThreads = 4;
  constexpr int kPacketsPerThread = 20000;
  std::vector<uint8_t> frame = UdpTo(1);
  PacketLayers layers = ClassifierLayers(frame);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      HandlerContext ctx(ectx.state(), {}, &ectx.sink(),
                         static_cast<uint32_t>(t), 0);
      TestPacket packet(frame, layers);
      for (int i = 0; i < kPacketsPerThread; ++i) {
        handler.ops()->payload(handler.self(), ctx, packet.view());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ReadBucket(ectx.state(), 1),
            (Bucket{kThreads * kPacketsPerThread,
                    uint64_t{kThreads} * kPacketsPerThread * frame.size()}));
  EXPECT_EQ(ReadBucket(ectx.state(), 0), (Bucket{0, 0}));
}

TEST(CountTest, BadParametersSayWhatToFix) {
  const BadParams cases[] = {
      {{{"by", "dport"}},
       "write one of none, ip_proto, dst_port, src_port, in_port"},
      {{{"by", "dst_port"}, {"buckets", "0"}}, "out of range [1, 4096]"},
      {{{"by", "dst_port"}, {"buckets", "4097"}}, "out of range [1, 4096]"},
      {{{"by", "dst_port"}, {"buckets", "many"}}, "not an unsigned integer"},
      {{{"buckets", "8"}}, "needs a key to split by: set 'by'"},
  };
  ExpectBadParamsSayWhatToFix("count", cases);
}

TEST(CountTest, BucketsBoundsAreAccepted) {
  EXPECT_TRUE(
      CreateHandlerForTest("count", {{"by", "dst_port"}, {"buckets", "1"}})
          .ok());
  EXPECT_TRUE(
      CreateHandlerForTest("count", {{"by", "dst_port"}, {"buckets", "4096"}})
          .ok());
}

}  // namespace
}  // namespace spinnic::handler_test
