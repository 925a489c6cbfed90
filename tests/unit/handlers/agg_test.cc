// agg: the key at each layer and width, masks and shifts, bucket mapping with
// and without clamp, packets without the key, the documented state layout
// byte for byte, concurrent lcores, and parameters refused with what to write.
#include <array>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "dataplane/ectx.h"
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

uint64_t Word(std::span<const uint8_t> state, size_t offset) {
  uint64_t value;
  std::memcpy(&value, state.data() + offset, 8);
  return value;
}

// The documented layout: totals at 0 and 8, no_key at 16, overflow at 24,
// bucket i at 32 + 16*i.
uint64_t Packets(std::span<const uint8_t> state) { return Word(state, 0); }
uint64_t Bytes(std::span<const uint8_t> state) { return Word(state, 8); }
uint64_t NoKey(std::span<const uint8_t> state) { return Word(state, 16); }
uint64_t Overflow(std::span<const uint8_t> state) { return Word(state, 24); }
Bucket ReadBucket(std::span<const uint8_t> state, size_t i) {
  return {Word(state, 32 + 16 * i), Word(state, 40 + 16 * i)};
}

// The state of `buckets` buckets: a FakeEctx sized the way an install sizes
// it (StateSizeFor), which the test also pins.
uint32_t StateSize(uint32_t buckets) { return 32 + 16 * buckets; }

// Runs agg on `frame` and checks that the frame is forwarded unchanged.
void Agg(const HandlerInstance& handler, HandlerContext& ctx,
         const std::vector<uint8_t>& frame) {
  TestPacket packet(frame, ClassifierLayers(frame));
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

std::vector<uint8_t> Arp() {
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(46, 0);
  return Build(arp);
}

TEST(AggTest, StateSizeFollowsBuckets) {
  const HandlerKind* kind = FindHandlerKind("agg");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->min_state_size, 48u);
  ASSERT_NE(kind->state_size_for, nullptr);
  for (uint32_t buckets : {1u, 256u, 65534u}) {
    absl::StatusOr<HandlerParams> params = HandlerParams::Validate(
        kind->params, {{"offset", "0"}, {"buckets", std::to_string(buckets)}});
    ASSERT_TRUE(params.ok()) << params.status();
    EXPECT_EQ(kind->state_size_for(*params), StateSize(buckets));
  }
  // The largest histogram still fits an ECTX's state.
  EXPECT_EQ(StateSize(65534), Ectx::kMaxStateSize);
}

TEST(AggTest, L2KeyIsTheEthertypeAtOffset12) {
  HandlerInstance handler = MakeHandler(
      "agg", {{"offset", "12"}, {"width", "2"}, {"buckets", "4096"}});
  FakeEctx ectx(StateSize(4096));
  std::vector<uint8_t> ip4 = UdpTo(7);  // 0x0800 = 2048
  FrameSpec tagged;
  tagged.vlan_tcis = {100};  // 0x8100 = 33024, % 4096 == 256
  std::vector<uint8_t> vlan = Build(tagged);
  std::vector<uint8_t> arp = Arp();  // 0x0806 = 2054
  Agg(handler, ectx.context(), ip4);
  Agg(handler, ectx.context(), vlan);
  Agg(handler, ectx.context(), arp);
  EXPECT_EQ(ReadBucket(ectx.state(), 2048), (Bucket{1, ip4.size()}));
  EXPECT_EQ(ReadBucket(ectx.state(), 256), (Bucket{1, vlan.size()}));
  EXPECT_EQ(ReadBucket(ectx.state(), 2054), (Bucket{1, arp.size()}));
  EXPECT_EQ(NoKey(ectx.state()), 0u);
}

TEST(AggTest, L3KeyIsTheTtlOrHopLimitAfterVlanTags) {
  HandlerInstance v4 =
      MakeHandler("agg", {{"from", "l3"}, {"offset", "8"}, {"width", "1"}});
  HandlerInstance v6 =
      MakeHandler("agg", {{"from", "l3"}, {"offset", "7"}, {"width", "1"}});
  FakeEctx ectx4(StateSize(256));
  FakeEctx ectx6(StateSize(256));
  FrameSpec spec;
  spec.ttl = 5;
  spec.vlan_tcis = {7, 8};  // QinQ: IP starts 8 bytes later
  Agg(v4, ectx4.context(), Build(spec));
  spec.ipv6 = true;
  spec.ttl = 200;
  Agg(v6, ectx6.context(), Build(spec));
  EXPECT_EQ(ReadBucket(ectx4.state(), 5).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx6.state(), 200).packets, 1u);
  EXPECT_EQ(Packets(ectx4.state()), 1u);
  EXPECT_EQ(Packets(ectx6.state()), 1u);
}

TEST(AggTest, L3FourByteKeyWithMaskAndShift) {
  // 198.51.100.7 = 0xc6336407; (& 0xffff00) >> 8 == 0x3364 == 13156.
  HandlerInstance handler = MakeHandler("agg", {{"from", "l3"},
                                                {"offset", "16"},
                                                {"width", "4"},
                                                {"mask", "0xffff00"},
                                                {"shift", "8"},
                                                {"buckets", "65534"}});
  FakeEctx ectx(StateSize(65534));
  std::vector<uint8_t> frame = UdpTo(7);
  Agg(handler, ectx.context(), frame);
  EXPECT_EQ(ReadBucket(ectx.state(), 13156), (Bucket{1, frame.size()}));
  // Without mask and shift: 0xc6336407 % 1000 == 711.
  HandlerInstance whole = MakeHandler(
      "agg",
      {{"from", "l3"}, {"offset", "16"}, {"width", "4"}, {"buckets", "1000"}});
  FakeEctx ectx2(StateSize(1000));
  Agg(whole, ectx2.context(), frame);
  EXPECT_EQ(ReadBucket(ectx2.state(), 711), (Bucket{1, frame.size()}));
}

TEST(AggTest, L4KeyIsTheDestinationPortOfTcpAndUdp) {
  HandlerInstance handler = MakeHandler(
      "agg", {{"from", "l4"}, {"offset", "2"}, {"buckets", "1024"}});
  FakeEctx ectx(StateSize(1024));
  FrameSpec tcp;
  tcp.l4 = L4::kTcp;
  tcp.ipv6 = true;
  tcp.dst_port = 443;
  FrameSpec options;
  options.ip4_options = {1, 1, 1, 0};  // IP options move L4
  options.dst_port = 1024 + 53;        // wraps to 53
  Agg(handler, ectx.context(), UdpTo(7));
  Agg(handler, ectx.context(), Build(tcp));
  Agg(handler, ectx.context(), Build(options));
  EXPECT_EQ(ReadBucket(ectx.state(), 7).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 443).packets, 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 53).packets, 1u);
  EXPECT_EQ(Overflow(ectx.state()), 0u);
}

TEST(AggTest, PayloadEightByteKey) {
  FrameSpec spec;
  spec.payload = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<uint8_t> frame = Build(spec);
  // 0x0102030405060708 % 1000 == 856.
  HandlerInstance whole = MakeHandler("agg", {{"from", "payload"},
                                              {"offset", "0"},
                                              {"width", "8"},
                                              {"buckets", "1000"}});
  FakeEctx ectx(StateSize(1000));
  Agg(whole, ectx.context(), frame);
  EXPECT_EQ(ReadBucket(ectx.state(), 856).packets, 1u);
  // Byte 6 of the field (0x07) via mask and shift; offset 1 reads 02..09.
  HandlerInstance masked = MakeHandler("agg", {{"from", "payload"},
                                               {"offset", "1"},
                                               {"width", "8"},
                                               {"mask", "0xff0000"},
                                               {"shift", "16"}});
  FakeEctx ectx2(StateSize(256));
  Agg(masked, ectx2.context(), frame);
  EXPECT_EQ(ReadBucket(ectx2.state(), 7).packets, 1u);
  EXPECT_EQ(NoKey(ectx2.state()), 0u);
}

TEST(AggTest, ClampCountsLargeKeysAsOverflow) {
  HandlerParamMap params = {{"from", "l4"}, {"offset", "2"}, {"buckets", "16"}};
  HandlerInstance wrap = MakeHandler("agg", params);
  params["clamp"] = "true";
  HandlerInstance clamp = MakeHandler("agg", params);
  FakeEctx wrapped(StateSize(16));
  FakeEctx clamped(StateSize(16));
  for (uint16_t port : {7, 23, 15, 16}) {
    Agg(wrap, wrapped.context(), UdpTo(port));
    Agg(clamp, clamped.context(), UdpTo(port));
  }
  EXPECT_EQ(ReadBucket(wrapped.state(), 7).packets, 2u);
  EXPECT_EQ(ReadBucket(wrapped.state(), 15).packets, 1u);
  EXPECT_EQ(ReadBucket(wrapped.state(), 0).packets, 1u);
  EXPECT_EQ(Overflow(wrapped.state()), 0u);
  EXPECT_EQ(ReadBucket(clamped.state(), 7).packets, 1u);
  EXPECT_EQ(ReadBucket(clamped.state(), 15).packets, 1u);
  EXPECT_EQ(ReadBucket(clamped.state(), 0).packets, 0u);
  EXPECT_EQ(Overflow(clamped.state()), 2u);
  EXPECT_EQ(Packets(clamped.state()), 4u);
}

TEST(AggTest, PacketsWithoutTheKeyCountAsNoKeyAndAreForwarded) {
  HandlerInstance l3 =
      MakeHandler("agg", {{"from", "l3"}, {"offset", "8"}, {"width", "1"}});
  HandlerInstance l4 = MakeHandler("agg", {{"from", "l4"}, {"offset", "2"}});
  HandlerInstance payload = MakeHandler(
      "agg", {{"from", "payload"}, {"offset", "8"}, {"width", "4"}});
  FakeEctx e3(StateSize(256));
  FakeEctx e4(StateSize(256));
  FakeEctx ep(StateSize(256));
  std::vector<uint8_t> arp = Arp();
  Agg(l3, e3.context(), arp);
  EXPECT_EQ(NoKey(e3.state()), 1u);
  EXPECT_EQ(Packets(e3.state()), 1u);
  EXPECT_EQ(Bytes(e3.state()), arp.size());

  FrameSpec later;
  later.ip4_flags_fragment = 0x0003;  // a fragment after the first: no L4
  Agg(l4, e4.context(), Build(later));
  Agg(l4, e4.context(), arp);
  EXPECT_EQ(NoKey(e4.state()), 2u);

  // Payload of 10 bytes: bytes 8..11 end past the datagram, and the frame's
  // Ethernet padding does not count as payload.
  FrameSpec padded;
  padded.payload.assign(10, 0xab);
  padded.pad_to = 60;
  Agg(payload, ep.context(), Build(padded));
  padded.payload.assign(12, 0xab);
  Agg(payload, ep.context(), Build(padded));
  EXPECT_EQ(NoKey(ep.state()), 1u);
  EXPECT_EQ(ReadBucket(ep.state(), 0xab).packets, 1u);  // 0xabababab % 256
  for (FakeEctx* ectx : {&e3, &e4}) {
    for (size_t i = 0; i < 256; ++i) {
      ASSERT_EQ(ReadBucket(ectx->state(), i), (Bucket{0, 0})) << i;
    }
  }
}

// The whole state after a known sequence, byte for byte.
TEST(AggTest, StateBytesAreExactlyTheDocumentedLayout) {
  HandlerInstance handler = MakeHandler(
      "agg",
      {{"from", "l4"}, {"offset", "2"}, {"buckets", "4"}, {"clamp", "true"}});
  FakeEctx ectx(StateSize(4));
  ASSERT_EQ(ectx.state().size(), 96u);
  std::vector<uint8_t> p0 = UdpTo(0, 1);
  std::vector<uint8_t> p2 = UdpTo(2, 100);
  std::vector<uint8_t> p2b = UdpTo(2, 7);
  std::vector<uint8_t> p3 = UdpTo(3, 1000);
  std::vector<uint8_t> p9 = UdpTo(9, 20);
  std::vector<uint8_t> arp = Arp();
  for (const auto* frame : {&p0, &p2, &p2b, &p3, &p9, &arp, &p2}) {
    Agg(handler, ectx.context(), *frame);
  }
  const uint64_t expected[12] = {
      7,  // packets
      p0.size() + 2 * p2.size() + p2b.size() + p3.size() + p9.size() +
          arp.size(),  // bytes
      1,               // no_key (arp)
      1,               // overflow (port 9)
      1,
      p0.size(),  // bucket 0
      0,
      0,  // bucket 1
      3,
      2 * p2.size() + p2b.size(),  // bucket 2
      1,
      p3.size(),  // bucket 3
  };
  std::array<uint8_t, sizeof(expected)> bytes;
  std::memcpy(bytes.data(), expected, sizeof(expected));
  EXPECT_EQ(Hex(ectx.state()), Hex(bytes));
}

TEST(AggTest, DropMakesItASink) {
  HandlerInstance handler =
      MakeHandler("agg", {{"offset", "12"}, {"drop", "true"}});
  FakeEctx ectx(StateSize(256));
  std::vector<uint8_t> frame = UdpTo(7);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler, ectx.context(), packet.view()),
            HandlerResult::kDrop);
  EXPECT_EQ(Packets(ectx.state()), 1u);
  EXPECT_EQ(ReadBucket(ectx.state(), 0x0800 % 256).packets, 1u);
}

// A hand-made state smaller than the buckets: beyond it counts as overflow
// and nothing past the state is written.
TEST(AggTest, BucketBeyondTheStateCountsAsOverflow) {
  HandlerInstance handler =
      MakeHandler("agg", {{"from", "l4"}, {"offset", "2"}, {"buckets", "8"}});
  alignas(64) std::array<uint8_t, 128> memory;
  memory.fill(0xee);
  std::memset(memory.data(), 0, 64);  // header + 2 buckets
  FakeActionSink sink;
  HandlerContext ctx(std::span<uint8_t>(memory.data(), 64), {}, &sink, 0, 0);
  Agg(handler, ctx, UdpTo(1));
  Agg(handler, ctx, UdpTo(5));
  EXPECT_EQ(ReadBucket(memory, 1).packets, 1u);
  EXPECT_EQ(Overflow(memory), 1u);
  EXPECT_EQ(Packets(memory), 2u);
  for (size_t i = 64; i < memory.size(); ++i) {
    ASSERT_EQ(memory[i], 0xee) << "wrote past the state at byte " << i;
  }
  // Less than the header, or misaligned: nothing at all.
  for (size_t size : {0, 8, 31}) {
    HandlerContext small(std::span<uint8_t>(memory.data() + 64, size), {},
                         &sink, 0, 0);
    Agg(handler, small, UdpTo(1));
  }
  HandlerContext misaligned(std::span<uint8_t>(memory.data() + 68, 48), {},
                            &sink, 0, 0);
  Agg(handler, misaligned, UdpTo(1));
  for (size_t i = 64; i < memory.size(); ++i) ASSERT_EQ(memory[i], 0xee);
}

TEST(AggTest, ConcurrentLcoresLoseNoCounts) {
  HandlerInstance handler =
      MakeHandler("agg", {{"from", "l4"}, {"offset", "2"}, {"buckets", "2"}});
  FakeEctx ectx(StateSize(2));
  constexpr int kThreads = 4;
  constexpr uint64_t kPacketsPerThread = 20000;
  std::vector<uint8_t> frame = UdpTo(1);
  PacketLayers layers = ClassifierLayers(frame);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      HandlerContext ctx(ectx.state(), {}, &ectx.sink(),
                         static_cast<uint32_t>(t), 0);
      TestPacket packet(frame, layers);
      for (uint64_t i = 0; i < kPacketsPerThread; ++i) {
        handler.ops()->payload(handler.self(), ctx, packet.view());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  constexpr uint64_t kTotal = kThreads * kPacketsPerThread;
  EXPECT_EQ(ReadBucket(ectx.state(), 1),
            (Bucket{kTotal, kTotal * frame.size()}));
  EXPECT_EQ(Packets(ectx.state()), kTotal);
  EXPECT_EQ(Bytes(ectx.state()), kTotal * frame.size());
  EXPECT_EQ(ReadBucket(ectx.state(), 0), (Bucket{0, 0}));
}

TEST(AggTest, BadParametersSayWhatToWrite) {
  const BadParams cases[] = {
      {{}, "offset"},
      {{{"offset", "2"}, {"from", "l5"}}, "write one of l2, l3, l4, payload"},
      {{{"offset", "2"}, {"width", "3"}}, "write 1, 2, 4 or 8 (bytes)"},
      {{{"offset", "2"}, {"width", "16"}}, "out of range [1, 8]"},
      {{{"offset", "2"}, {"mask", "0"}}, "leave mask out for the whole field"},
      {{{"offset", "2"}, {"width", "1"}, {"mask", "0x1ff"}},
       "has bits above a 1-byte field: write at most 0xff"},
      {{{"offset", "2"}, {"width", "1"}, {"shift", "8"}}, "write 0 to 7"},
      {{{"offset", "2"}, {"mask", "0xf0"}, {"shift", "8"}},
       "shifts out every bit of mask 0xf0"},
      {{{"offset", "2"}, {"buckets", "0"}}, "out of range [1, 65534]"},
      {{{"offset", "2"}, {"buckets", "65536"}}, "out of range [1, 65534]"},
      {{{"offset", "70000"}}, "out of range [0, 65535]"},
      {{{"offset", "2"}, {"clamp", "maybe"}}, "clamp"},
  };
  ExpectBadParamsSayWhatToFix("agg", cases);
}

}  // namespace
}  // namespace spinnic::handler_test
