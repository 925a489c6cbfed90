// reflect: each frame comes out exactly as a responder would have built its
// answer from scratch (addresses and ports swapped, echo answered, every
// checksum valid) and goes back out of its ingress port.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

class ReflectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest("reflect");
    ASSERT_TRUE(handler.ok()) << handler.status();
    handler_ = *std::move(handler);
  }

  // Runs reflect on `frame`; returns the bytes that would go on the wire.
  std::vector<uint8_t> Run(const std::vector<uint8_t>& frame,
                           Disposition expected = Disposition::kReply) {
    TestPacket packet(frame, ClassifierLayers(frame), /*in_port=*/1);
    EXPECT_EQ(RunPayload(handler_, ectx_.context(), packet.view()),
              HandlerResult::kSuccess);
    EXPECT_EQ(packet.view().GetDisposition(), expected);
    EXPECT_EQ(packet.view().Length(), frame.size());
    return packet.bytes();
  }

  // The answer must equal the reflected frame built from scratch, byte for
  // byte, and every checksum in it must verify.
  void ExpectReflected(const FrameSpec& spec) {
    std::vector<uint8_t> in = Build(spec);
    ASSERT_TRUE(ChecksumsValid(in));
    std::vector<uint8_t> out = Run(in);
    EXPECT_EQ(Hex(out), Hex(Build(Reflected(spec))));
    EXPECT_TRUE(ChecksumsValid(out));
  }

  HandlerInstance handler_;
  FakeEctx ectx_;
};

TEST_F(ReflectTest, Ipv4Udp) {
  FrameSpec spec;
  spec.payload = Text("ping-pong payload");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, Ipv4Tcp) {
  FrameSpec spec;
  spec.l4 = L4::kTcp;
  spec.src_port = 51000;
  spec.dst_port = 80;
  spec.tcp_options = {0x02, 0x04, 0x05, 0xb4};
  spec.payload = Text("GET / HTTP/1.1\r\n");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, Ipv6Udp) {
  FrameSpec spec;
  spec.ipv6 = true;
  spec.payload = Text("odd length");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, Ipv6Tcp) {
  FrameSpec spec;
  spec.ipv6 = true;
  spec.l4 = L4::kTcp;
  spec.payload = Text("data");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, UdpWithoutChecksumStaysWithout) {
  FrameSpec spec;
  spec.udp_zero_checksum = true;
  spec.payload = Text("x");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, Icmpv4EchoRequestBecomesReply) {
  FrameSpec spec;
  spec.l4 = L4::kIcmp;
  spec.icmp_type = 8;
  spec.payload = Text("abcdefghijklmnopqrstuvwabcdefghi");
  std::vector<uint8_t> out = Run(Build(spec));
  EXPECT_EQ(out[14 + 20], 0) << "ICMP type";
  EXPECT_EQ(Hex(out), Hex(Build(Reflected(spec))));
  EXPECT_TRUE(ChecksumsValid(out));
}

TEST_F(ReflectTest, Icmpv6EchoRequestBecomesReply) {
  FrameSpec spec;
  spec.ipv6 = true;
  spec.l4 = L4::kIcmp;
  spec.icmp_type = 128;
  spec.payload = Text("ping6");
  std::vector<uint8_t> out = Run(Build(spec));
  EXPECT_EQ(out[14 + 40], 129) << "ICMPv6 type";
  EXPECT_EQ(Hex(out), Hex(Build(Reflected(spec))));
  EXPECT_TRUE(ChecksumsValid(out));
}

// The incremental checksum update has its corner cases where the sum wraps;
// sweeping the sequence number walks the checksum through every value.
TEST_F(ReflectTest, EchoChecksumIsRightForEverySequenceNumber) {
  for (bool ipv6 : {false, true}) {
    FrameSpec spec;
    spec.ipv6 = ipv6;
    spec.l4 = L4::kIcmp;
    spec.icmp_type = ipv6 ? 128 : 8;
    spec.payload = Text("abc");
    for (uint32_t seq = 0; seq <= 0xffff; ++seq) {
      spec.icmp_seq = static_cast<uint16_t>(seq);
      std::vector<uint8_t> out = Run(Build(spec));
      std::vector<uint8_t> expected = Build(Reflected(spec));
      ASSERT_EQ(out, expected) << "seq " << seq << " ipv6 " << ipv6;
    }
  }
}

// An echo with id 0, sequence 0 and an all-zero payload covers only zero
// bytes besides the type: RFC 1624 eqn. 3 alone answers 0x0000 there, which
// receivers reject; the reply must carry 0xffff.
TEST_F(ReflectTest, AllZeroEchoGetsAValidReplyChecksum) {
  FrameSpec spec;
  spec.l4 = L4::kIcmp;
  spec.icmp_type = 8;
  spec.icmp_id = 0;
  spec.icmp_seq = 0;
  spec.payload = std::vector<uint8_t>(8, 0);
  std::vector<uint8_t> out = Run(Build(spec));
  EXPECT_EQ(Hex(out), Hex(Build(Reflected(spec))));
  EXPECT_TRUE(ChecksumsValid(out));
  EXPECT_EQ(out[14 + 20 + 2], 0xff);
  EXPECT_EQ(out[14 + 20 + 3], 0xff);
}

TEST_F(ReflectTest, OtherIcmpMessagesOnlySwapAddresses) {
  FrameSpec spec;
  spec.l4 = L4::kIcmp;
  spec.icmp_type = 13;  // timestamp request: not answered, just reflected
  spec.payload.assign(12, 0x5a);
  ExpectReflected(spec);
  spec.icmp_type = 0;  // an echo reply stays a reply
  ExpectReflected(spec);
  spec.ipv6 = true;
  spec.icmp_type = 135;  // neighbour solicitation
  ExpectReflected(spec);
}

TEST_F(ReflectTest, Ipv4WithOptions) {
  FrameSpec spec;
  spec.ip4_options = {0x94, 0x04, 0x00, 0x00};  // router alert
  spec.payload = Text("opt");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, VlanTaggedFrameKeepsItsTag) {
  FrameSpec spec;
  spec.vlan_tcis = {0x2064};  // PCP 1, VID 100
  spec.payload = Text("tagged");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, QinQTaggedIpv6Tcp) {
  FrameSpec spec;
  spec.vlan_tcis = {10, 20};
  spec.ipv6 = true;
  spec.l4 = L4::kTcp;
  spec.payload = Text("q");
  ExpectReflected(spec);
}

TEST_F(ReflectTest, PaddingIsKept) {
  FrameSpec spec;
  spec.payload = Text("hi");
  spec.pad_to = 60;
  ExpectReflected(spec);
}

TEST_F(ReflectTest, UnknownIpProtocolSwapsAddressesOnly) {
  FrameSpec spec;
  spec.l4 = L4::kNone;
  spec.raw_proto = 47;
  spec.payload = {0x00, 0x00, 0x08, 0x00, 1, 2, 3, 4};
  ExpectReflected(spec);
}

TEST_F(ReflectTest, NonIpFrameSwapsMacsOnly) {
  FrameSpec spec;
  spec.non_ip_ethertype = 0x88b5;  // local experimental
  spec.payload = Text("raw ethernet payload, left as it is");
  std::vector<uint8_t> in = Build(spec);
  std::vector<uint8_t> out = Run(in);
  EXPECT_EQ(Hex(out), Hex(Build(Reflected(spec))));
  EXPECT_TRUE(std::equal(in.begin() + 12, in.end(), out.begin() + 12));
}

TEST_F(ReflectTest, FramesToGroupAddressesAreForwardedUnchanged) {
  FrameSpec spec;
  spec.dst_mac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  spec.non_ip_ethertype = 0x0806;
  spec.payload.assign(28, 1);
  std::vector<uint8_t> broadcast = Build(spec);
  EXPECT_EQ(Hex(Run(broadcast, Disposition::kForward)), Hex(broadcast));

  FrameSpec multicast;
  multicast.dst_mac = {0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb};
  multicast.dst_ip4 = {224, 0, 0, 251};
  multicast.dst_port = 5353;
  std::vector<uint8_t> mdns = Build(multicast);
  EXPECT_EQ(Hex(Run(mdns, Disposition::kForward)), Hex(mdns));
}

TEST_F(ReflectTest, ReflectingTwiceRestoresTheFrame) {
  FrameSpec spec;
  spec.ipv6 = true;
  spec.payload = Text("there and back");
  std::vector<uint8_t> in = Build(spec);
  EXPECT_EQ(Hex(Run(Run(in))), Hex(in));
}

TEST_F(ReflectTest, TouchesNoStateAndEmitsNothing) {
  Run(Build(FrameSpec{}));
  EXPECT_TRUE(ectx_.sink().frames().empty());
  EXPECT_TRUE(ectx_.sink().events().empty());
}

TEST(ReflectParamsTest, TakesNoParameters) {
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest("reflect", {{"swap", "true"}});
  EXPECT_EQ(handler.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(handler.status().message(), HasSubstr("no parameters"));
}

}  // namespace
}  // namespace spinnic::handler_test
