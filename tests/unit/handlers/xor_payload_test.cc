// xor_payload: the payload (and only the payload) is XORed with the repeating
// key, the result equals the frame built from scratch with that payload, its
// checksums verify, and a second pass restores the original bytes.
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

std::vector<uint8_t> Apply(const HandlerInstance& handler,
                           const std::vector<uint8_t>& frame) {
  FakeEctx ectx;
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
  return packet.bytes();
}

// XORs `spec`'s payload with `key` and checks the handler's output against
// the frame built from scratch with the XORed payload (checksums computed in
// full there), then that a second pass restores the input.
void ExpectXored(const HandlerInstance& handler, const FrameSpec& spec,
                 std::span<const uint8_t> key) {
  std::vector<uint8_t> in = Build(spec);
  ASSERT_TRUE(ChecksumsValid(in));
  FrameSpec xored = spec;
  xored.payload = XorBytes(spec.payload, key);
  std::vector<uint8_t> out = Apply(handler, in);
  EXPECT_EQ(Hex(out), Hex(Build(xored)));
  EXPECT_TRUE(ChecksumsValid(out));
  EXPECT_EQ(Hex(Apply(handler, out)), Hex(in));
}

TEST(XorPayloadTest, Ipv4UdpSingleByteKey) {
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "5a"}});
  FrameSpec spec;
  spec.payload = Text("secret message");
  ExpectXored(handler, spec, std::vector<uint8_t>{0x5a});
}

TEST(XorPayloadTest, Ipv6TcpRepeatingKeyOddLengths) {
  std::vector<uint8_t> key = {0xde, 0xad, 0xbe};
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "deadbe"}});
  FrameSpec spec;
  spec.ipv6 = true;
  spec.l4 = L4::kTcp;
  spec.tcp_options = {0x01, 0x01, 0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 2};
  spec.payload = Text("an odd-length payload");
  ASSERT_EQ(spec.payload.size() % 2, 1u);
  ExpectXored(handler, spec, key);
}

TEST(XorPayloadTest, Ipv4TcpAndIpv6Udp) {
  std::vector<uint8_t> key = {0x01, 0x02, 0x03, 0x04};
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "01020304"}});
  FrameSpec tcp;
  tcp.l4 = L4::kTcp;
  tcp.payload = Text("0123456789");
  ExpectXored(handler, tcp, key);
  FrameSpec udp6;
  udp6.ipv6 = true;
  udp6.vlan_tcis = {42};
  udp6.payload = Text("0123456789a");
  ExpectXored(handler, udp6, key);
}

TEST(XorPayloadTest, IcmpAndIcmpv6EchoPayloads) {
  std::vector<uint8_t> key = {0xff, 0x00};
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "ff00"}});
  FrameSpec icmp;
  icmp.l4 = L4::kIcmp;
  icmp.payload = Text("ping data");
  ExpectXored(handler, icmp, key);
  icmp.ipv6 = true;
  icmp.icmp_type = 128;
  ExpectXored(handler, icmp, key);
}

// Random payloads, lengths and keys against the from-scratch checksum, so the
// incremental update meets its wrap-around corner cases.
TEST(XorPayloadTest, ChecksumMatchesFullRecomputationOnRandomFrames) {
  std::mt19937 random(1234);
  for (int round = 0; round < 2000; ++round) {
    std::vector<uint8_t> key(1 + random() % 64);
    for (uint8_t& byte : key) byte = static_cast<uint8_t>(random());
    std::string hex;
    for (uint8_t byte : key)
      absl::StrAppend(&hex, absl::Hex(byte, absl::kZeroPad2));
    HandlerInstance handler = MakeHandler("xor_payload", {{"key", hex}});
    FrameSpec spec;
    spec.ipv6 = random() % 2 == 0;
    spec.l4 = random() % 2 == 0 ? L4::kUdp : L4::kTcp;
    spec.src_port = static_cast<uint16_t>(random());
    spec.payload.resize(random() % 300);
    for (uint8_t& byte : spec.payload) byte = static_cast<uint8_t>(random());
    SCOPED_TRACE(absl::StrCat("round ", round, " key ", hex));
    ExpectXored(handler, spec, key);
    if (HasFailure()) break;
  }
}

TEST(XorPayloadTest, UdpZeroChecksumOverIpv4StaysZero) {
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "77"}});
  FrameSpec spec;
  spec.udp_zero_checksum = true;
  spec.payload = Text("unchecked");
  std::vector<uint8_t> out = Apply(handler, Build(spec));
  EXPECT_EQ(Get16(out, 14 + 20 + 6), 0);
  FrameSpec xored = spec;
  xored.payload = XorBytes(spec.payload, std::vector<uint8_t>{0x77});
  EXPECT_EQ(Hex(out), Hex(Build(xored)));
}

// In UDP a computed checksum of 0 goes out as 0xffff (0 means "none"). Find a
// payload word whose frame has that checksum and make the handler produce it.
TEST(XorPayloadTest, UdpChecksumThatComputesToZeroIsSentAsAllOnes) {
  HandlerInstance flip = MakeHandler("xor_payload", {{"key", "ffff"}});
  FrameSpec target;
  bool found = false;
  for (uint32_t word = 0; word <= 0xffff && !found; ++word) {
    target.payload = {static_cast<uint8_t>(word >> 8),
                      static_cast<uint8_t>(word)};
    found = Get16(Build(target), 14 + 20 + 6) == 0xffff;
  }
  ASSERT_TRUE(found);
  FrameSpec input = target;
  input.payload = XorBytes(target.payload, std::vector<uint8_t>{0xff});
  std::vector<uint8_t> out = Apply(flip, Build(input));
  EXPECT_EQ(Get16(out, 14 + 20 + 6), 0xffff);
  EXPECT_EQ(Hex(out), Hex(Build(target)));
}

TEST(XorPayloadTest, WithoutFixChecksumTheChecksumIsLeftAlone) {
  HandlerInstance handler =
      MakeHandler("xor_payload", {{"key", "5a"}, {"fix_checksum", "false"}});
  FrameSpec spec;
  spec.payload = Text("raw");
  std::vector<uint8_t> in = Build(spec);
  std::vector<uint8_t> out = Apply(handler, in);
  std::vector<uint8_t> expected = in;
  for (size_t i = in.size() - 3; i < in.size(); ++i) expected[i] ^= 0x5a;
  EXPECT_EQ(Hex(out), Hex(expected));
  EXPECT_FALSE(ChecksumsValid(out));
}

// An incremental update keeps a wrong checksum wrong by the same amount, so
// the receiver still sees the corruption that happened before the appliance.
TEST(XorPayloadTest, ABadChecksumStaysBad) {
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "a5"}});
  FrameSpec spec;
  spec.l4 = L4::kTcp;
  spec.payload = Text("corrupted upstream");
  std::vector<uint8_t> in = Build(spec);
  in.back() ^= 0x01;  // corrupt a payload byte after the checksum was made
  ASSERT_FALSE(ChecksumsValid(in));
  std::vector<uint8_t> out = Apply(handler, in);
  EXPECT_FALSE(ChecksumsValid(out));
  EXPECT_EQ(Hex(Apply(handler, out)), Hex(in));
}

TEST(XorPayloadTest, EthernetPaddingIsNotPayload) {
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "ff"}});
  FrameSpec spec;
  spec.payload = Text("ab");
  spec.pad_to = 60;
  std::vector<uint8_t> out = Apply(handler, Build(spec));
  FrameSpec xored = spec;
  xored.payload = XorBytes(spec.payload, std::vector<uint8_t>{0xff});
  EXPECT_EQ(Hex(out), Hex(Build(xored)));  // padding still zeros
  EXPECT_TRUE(ChecksumsValid(out));
}

TEST(XorPayloadTest, FragmentsPassUnchangedWhenFixingChecksums) {
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "5a"}});
  FrameSpec first4;
  first4.ip4_flags_fragment = 0x2000;  // MF, offset 0
  first4.payload = Text("first fragment");
  std::vector<uint8_t> in4 = Build(first4);
  EXPECT_EQ(Hex(Apply(handler, in4)), Hex(in4));

  FrameSpec first6;
  first6.ipv6 = true;
  first6.ip6_fragment = 0x0001;  // offset 0, M
  first6.payload = Text("first fragment");
  std::vector<uint8_t> in6 = Build(first6);
  EXPECT_EQ(Hex(Apply(handler, in6)), Hex(in6));

  FrameSpec later = first4;
  later.ip4_flags_fragment = 0x0004;  // offset 32: no L4 header to find
  std::vector<uint8_t> in_later = Build(later);
  EXPECT_EQ(Hex(Apply(handler, in_later)), Hex(in_later));
}

TEST(XorPayloadTest, FragmentsAreXoredWhenNotFixingChecksums) {
  HandlerInstance handler =
      MakeHandler("xor_payload", {{"key", "5a"}, {"fix_checksum", "false"}});
  FrameSpec first6;
  first6.ipv6 = true;
  first6.ip6_fragment = 0x0001;
  first6.payload = Text("xy");
  std::vector<uint8_t> in = Build(first6);
  std::vector<uint8_t> expected = in;
  expected[expected.size() - 2] ^= 0x5a;
  expected[expected.size() - 1] ^= 0x5a;
  EXPECT_EQ(Hex(Apply(handler, in)), Hex(expected));
}

TEST(XorPayloadTest, FramesWithoutL4PayloadPassUnchanged) {
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", "5a"}});
  FrameSpec gre;
  gre.l4 = L4::kNone;
  gre.payload = Text("tunnelled");
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(28, 3);
  FrameSpec empty;
  empty.l4 = L4::kTcp;
  for (const FrameSpec* spec : {&gre, &arp, &empty}) {
    std::vector<uint8_t> in = Build(*spec);
    EXPECT_EQ(Hex(Apply(handler, in)), Hex(in));
  }
}

TEST(XorPayloadTest, LongestKeyIsAccepted) {
  std::vector<uint8_t> key(64);
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i);
  std::string hex;
  for (uint8_t byte : key)
    absl::StrAppend(&hex, absl::Hex(byte, absl::kZeroPad2));
  HandlerInstance handler = MakeHandler("xor_payload", {{"key", hex}});
  FrameSpec spec;
  spec.payload.assign(150, 0x33);
  ExpectXored(handler, spec, key);
}

TEST(XorPayloadTest, BadParametersSayWhatToFix) {
  const BadParams cases[] = {
      {{}, "missing required parameter 'key'"},
      {{{"key", ""}}, "has 0 bytes: write 1 to 64 hex bytes"},
      {{{"key", std::string(130, 'f')}}, "has 65 bytes: write 1 to 64"},
      {{{"key", "5"}}, "even number of digits"},
      {{{"key", "0xff"}}, "'0x' is not a hex byte"},
      {{{"key", "5a"}, {"fix_checksum", "2"}},
       "not a bool; write true or false"},
  };
  ExpectBadParamsSayWhatToFix("xor_payload", cases);
}

}  // namespace
}  // namespace spinnic::handler_test
