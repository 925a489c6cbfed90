// filter: drops everything it is given by default; with payload_prefix only
// what starts with the prefix (never matching Ethernet padding); invert swaps
// the two sets. Frames are never modified.
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

// The handler's verdict on `frame`, checking that the bytes are untouched.
HandlerResult Verdict(const HandlerInstance& handler,
                      const std::vector<uint8_t>& frame) {
  FakeEctx ectx;
  TestPacket packet(frame, ClassifierLayers(frame));
  std::optional<HandlerResult> result =
      RunPayload(handler, ectx.context(), packet.view());
  EXPECT_EQ(Hex(packet.bytes()), Hex(frame));
  EXPECT_TRUE(ectx.sink().frames().empty());
  return result.value_or(HandlerResult::kFail);
}

std::vector<uint8_t> Udp(absl::string_view payload) {
  FrameSpec spec;
  spec.payload = Text(payload);
  return Build(spec);
}

TEST(FilterTest, WithoutPrefixDropsEverything) {
  HandlerInstance handler = MakeHandler("filter");
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(28, 0);
  FrameSpec tcp6;
  tcp6.ipv6 = true;
  tcp6.l4 = L4::kTcp;
  EXPECT_EQ(Verdict(handler, Udp("anything")), HandlerResult::kDrop);
  EXPECT_EQ(Verdict(handler, Build(arp)), HandlerResult::kDrop);
  EXPECT_EQ(Verdict(handler, Build(tcp6)), HandlerResult::kDrop);
}

TEST(FilterTest, PrefixDropsOnlyMatchingPayloads) {
  HandlerInstance handler =
      MakeHandler("filter", {{"payload_prefix", "474554"}});  // GET
  EXPECT_EQ(Verdict(handler, Udp("GET /index.html")), HandlerResult::kDrop);
  EXPECT_EQ(Verdict(handler, Udp("GET")), HandlerResult::kDrop);
  EXPECT_EQ(Verdict(handler, Udp("POST /")), HandlerResult::kSuccess);
  EXPECT_EQ(Verdict(handler, Udp("GE")), HandlerResult::kSuccess);
  EXPECT_EQ(Verdict(handler, Udp("")), HandlerResult::kSuccess);
  EXPECT_EQ(Verdict(handler, Udp("xGET")), HandlerResult::kSuccess);
}

TEST(FilterTest, PrefixIsMatchedAfterTcpOptions) {
  HandlerInstance handler =
      MakeHandler("filter", {{"payload_prefix", "474554"}});
  FrameSpec spec;
  spec.l4 = L4::kTcp;
  spec.ipv6 = true;
  spec.vlan_tcis = {7};
  spec.tcp_options = {0x01, 0x01, 0x08, 0x0a, 0, 0, 0, 1, 0, 0, 0, 2};
  spec.payload = Text("GET /");
  EXPECT_EQ(Verdict(handler, Build(spec)), HandlerResult::kDrop);
  spec.payload = Text("PUT /");
  EXPECT_EQ(Verdict(handler, Build(spec)), HandlerResult::kSuccess);
}

TEST(FilterTest, PrefixIsMatchedAfterTheIcmpHeader) {
  HandlerInstance handler = MakeHandler("filter", {{"payload_prefix", "cafe"}});
  FrameSpec spec;
  spec.l4 = L4::kIcmp;
  spec.payload = {0xca, 0xfe, 0x00};
  EXPECT_EQ(Verdict(handler, Build(spec)), HandlerResult::kDrop);
}

// A short frame is padded with zeros to 60 bytes; the padding is not
// payload, so a zero prefix must not match an empty datagram.
TEST(FilterTest, PrefixNeverMatchesEthernetPadding) {
  HandlerInstance handler = MakeHandler("filter", {{"payload_prefix", "0000"}});
  FrameSpec spec;
  spec.pad_to = 60;
  std::vector<uint8_t> frame = Build(spec);
  ASSERT_EQ(frame.size(), 60u);
  EXPECT_EQ(Verdict(handler, frame), HandlerResult::kSuccess);
  spec.payload = {0x00, 0x00};
  EXPECT_EQ(Verdict(handler, Build(spec)), HandlerResult::kDrop);
}

TEST(FilterTest, FramesWithoutL4PayloadNeverMatchAPrefix) {
  HandlerInstance handler = MakeHandler("filter", {{"payload_prefix", "00"}});
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(28, 0);
  FrameSpec gre;
  gre.l4 = L4::kNone;
  gre.payload.assign(8, 0);
  FrameSpec later_fragment;
  later_fragment.ip4_flags_fragment = 0x0001;
  later_fragment.payload.assign(8, 0);
  EXPECT_EQ(Verdict(handler, Build(arp)), HandlerResult::kSuccess);
  EXPECT_EQ(Verdict(handler, Build(gre)), HandlerResult::kSuccess);
  EXPECT_EQ(Verdict(handler, Build(later_fragment)), HandlerResult::kSuccess);
}

TEST(FilterTest, InvertDropsWhatDoesNotStartWithThePrefix) {
  HandlerInstance handler =
      MakeHandler("filter", {{"payload_prefix", "474554"}, {"invert", "true"}});
  EXPECT_EQ(Verdict(handler, Udp("GET /")), HandlerResult::kSuccess);
  EXPECT_EQ(Verdict(handler, Udp("POST /")), HandlerResult::kDrop);
  EXPECT_EQ(Verdict(handler, Udp("")), HandlerResult::kDrop);
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(28, 0);
  EXPECT_EQ(Verdict(handler, Build(arp)), HandlerResult::kDrop);
}

TEST(FilterTest, LongestPrefixIsAccepted) {
  std::string hex(128, 'a');  // 64 bytes of 0xaa
  HandlerInstance handler = MakeHandler("filter", {{"payload_prefix", hex}});
  FrameSpec spec;
  spec.payload.assign(64, 0xaa);
  EXPECT_EQ(Verdict(handler, Build(spec)), HandlerResult::kDrop);
  spec.payload[63] = 0xab;
  EXPECT_EQ(Verdict(handler, Build(spec)), HandlerResult::kSuccess);
}

TEST(FilterTest, BadParametersSayWhatToFix) {
  const BadParams cases[] = {
      {{{"payload_prefix", "abc"}}, "even number of digits"},
      {{{"payload_prefix", "zz"}}, "'zz' is not a hex byte"},
      {{{"payload_prefix", std::string(130, 'a')}},
       "has 65 bytes: write at most 64"},
      {{{"invert", "true"}}, "needs a payload_prefix"},
      {{{"payload_prefix", "00"}, {"invert", "yes"}},
       "not a bool; write true or false"},
  };
  ExpectBadParamsSayWhatToFix("filter", cases);
}

}  // namespace
}  // namespace spinnic::handler_test
