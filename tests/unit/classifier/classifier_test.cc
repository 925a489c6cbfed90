#include "dataplane/classifier.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/classifier/golden_frames.h"

namespace spinnic {
namespace {

using Frame = std::vector<uint8_t>;
constexpr uint16_t kAbsent = PacketLayers::kAbsent;

template <size_t N>
Frame Bytes(const uint8_t (&bytes)[N]) {
  return Frame(bytes, bytes + N);
}

// Parses from an exactly sized heap copy, so that a sanitizer build reports
// any read past the end instead of landing in the next array.
void ExpectSame(const ParsedFrame& a, const ParsedFrame& b);

// ParseFrame, and every frame a test parses checked against the general
// parser: ParseFrame's inline fast path must give the same (classifier.h).
ParsedFrame Parse(const Frame& frame, uint32_t length) {
  std::vector<uint8_t> copy(frame.begin(), frame.begin() + length);
  const uint8_t* data = copy.empty() ? nullptr : copy.data();
  ParsedFrame out;
  ParseFrame(data, length, &out);
  ParsedFrame general;
  classifier_internal::ParseFrameGeneral(data, length, &general);
  ExpectSame(out, general);
  return out;
}
ParsedFrame Parse(const Frame& frame) {
  return Parse(frame, static_cast<uint32_t>(frame.size()));
}

void SetBe16(Frame& f, size_t offset, uint16_t value) {
  f[offset] = static_cast<uint8_t>(value >> 8);
  f[offset + 1] = static_cast<uint8_t>(value);
}

std::array<uint8_t, 16> Mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

std::array<uint8_t, 16> Fd00(uint8_t last) {
  return {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
}

void ExpectSame(const ParsedFrame& a, const ParsedFrame& b) {
  EXPECT_EQ(a.frame_class, b.frame_class);
  EXPECT_EQ(a.drop_reason, b.drop_reason);
  EXPECT_EQ(a.layers.l3_offset, b.layers.l3_offset);
  EXPECT_EQ(a.layers.l4_offset, b.layers.l4_offset);
  EXPECT_EQ(a.layers.payload_offset, b.layers.payload_offset);
  if (a.frame_class != FrameClass::kDrop) {
    EXPECT_EQ(a.layers.l3_end, b.layers.l3_end);
  }
  EXPECT_EQ(a.layers.ethertype, b.layers.ethertype);
  EXPECT_EQ(a.layers.ip_proto, b.layers.ip_proto);
  EXPECT_EQ(a.layers.vlan_tags, b.layers.vlan_tags);
  EXPECT_EQ(a.layers.is_ipv4, b.layers.is_ipv4);
  EXPECT_EQ(a.layers.is_ipv6, b.layers.is_ipv6);
  // Addresses are written only when there is an L3 layer.
  if (a.layers.is_ipv4 || a.layers.is_ipv6) {
    EXPECT_EQ(a.src_addr, b.src_addr);
    EXPECT_EQ(a.dst_addr, b.dst_addr);
  }
  EXPECT_EQ(a.src_port, b.src_port);
  EXPECT_EQ(a.dst_port, b.dst_port);
  EXPECT_EQ(a.has_l4_ports, b.has_l4_ports);
}

void ExpectDrop(const ParsedFrame& p, DropReason reason) {
  EXPECT_EQ(p.frame_class, FrameClass::kDrop);
  EXPECT_EQ(p.drop_reason, reason) << DropReasonName(p.drop_reason);
}

void ExpectPassthrough(const ParsedFrame& p) {
  EXPECT_EQ(p.frame_class, FrameClass::kPassthrough)
      << DropReasonName(p.drop_reason);
  EXPECT_EQ(p.drop_reason, DropReason::kCount);
}

void ExpectNoL4(const ParsedFrame& p) {
  EXPECT_EQ(p.layers.l4_offset, kAbsent);
  EXPECT_EQ(p.layers.payload_offset, kAbsent);
  EXPECT_FALSE(p.has_l4_ports);
  EXPECT_EQ(p.src_port, 0);
  EXPECT_EQ(p.dst_port, 0);
}

void ExpectNoL3(const ParsedFrame& p) {
  EXPECT_EQ(p.layers.l3_offset, kAbsent);
  EXPECT_FALSE(p.layers.is_ipv4);
  EXPECT_FALSE(p.layers.is_ipv6);
  EXPECT_EQ(p.layers.ip_proto, 0);
  ExpectNoL4(p);
}

// An IPv6 frame (fd00::1 -> fd00::2) whose payload starts with `chain`
// (extension headers, already linked) followed by an 8-byte UDP header.
Frame Ipv6WithChain(uint8_t first_next, const Frame& chain) {
  Frame f(golden::kIpv6Udp, golden::kIpv6Udp + 54);
  f[20] = first_next;
  f.insert(f.end(), chain.begin(), chain.end());
  const Frame udp = {0x13, 0x88, 0x12, 0xb7, 0x00, 0x08, 0x00, 0x00};
  f.insert(f.end(), udp.begin(), udp.end());
  SetBe16(f, 18, static_cast<uint16_t>(f.size() - 54));
  return f;
}

// `count` Destination Options headers (8 bytes each, PadN), the last one
// pointing at UDP.
Frame DestOptsChain(int count) {
  Frame chain;
  for (int i = 0; i < count; ++i) {
    const uint8_t next = i + 1 == count ? 17 : 60;
    const Frame ext = {next, 0, 1, 4, 0, 0, 0, 0};
    chain.insert(chain.end(), ext.begin(), ext.end());
  }
  return chain;
}

TEST(DropReasonNameTest, EveryReasonHasADistinctName) {
  std::set<std::string> names;
  for (int i = 0; i < static_cast<int>(DropReason::kCount); ++i) {
    const std::string name = DropReasonName(static_cast<DropReason>(i));
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "unknown") << i;
    EXPECT_EQ(name.find(' '), std::string::npos) << name;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(DropReason::kCount));
  EXPECT_STREQ(DropReasonName(DropReason::kRunt), "runt");
  EXPECT_STREQ(DropReasonName(DropReason::kTruncated), "truncated");
}

TEST(DropReasonNameTest, OutOfRangeIsUnknown) {
  EXPECT_STREQ(DropReasonName(DropReason::kCount), "unknown");
  EXPECT_STREQ(DropReasonName(static_cast<DropReason>(200)), "unknown");
}

TEST(ParseFrameTest, Ipv4Udp) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv4Udp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 0x0800);
  EXPECT_EQ(p.layers.vlan_tags, 0);
  EXPECT_TRUE(p.layers.is_ipv4);
  EXPECT_FALSE(p.layers.is_ipv6);
  EXPECT_EQ(p.layers.l3_offset, 14);
  EXPECT_EQ(p.layers.ip_proto, 17);
  EXPECT_EQ(p.layers.l4_offset, 34);
  EXPECT_EQ(p.layers.payload_offset, 42);
  EXPECT_EQ(p.src_addr, Mapped(10, 0, 0, 1));
  EXPECT_EQ(p.dst_addr, Mapped(10, 0, 0, 2));
  EXPECT_TRUE(p.has_l4_ports);
  EXPECT_EQ(p.src_port, 1234);
  EXPECT_EQ(p.dst_port, 4791);
}

TEST(ParseFrameTest, Ipv4TcpWithOptions) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv4Tcp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ip_proto, 6);
  EXPECT_EQ(p.layers.l4_offset, 34);
  // Data offset 6: the MSS option belongs to the header, not the payload.
  EXPECT_EQ(p.layers.payload_offset, 58);
  EXPECT_EQ(p.src_addr, Mapped(192, 0, 2, 1));
  EXPECT_EQ(p.dst_addr, Mapped(198, 51, 100, 2));
  EXPECT_TRUE(p.has_l4_ports);
  EXPECT_EQ(p.src_port, 40000);
  EXPECT_EQ(p.dst_port, 80);
}

TEST(ParseFrameTest, Ipv4IcmpEcho) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv4Icmp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ip_proto, 1);
  EXPECT_EQ(p.layers.l4_offset, 34);
  EXPECT_EQ(p.layers.payload_offset, 42);  // the echo data
  EXPECT_FALSE(p.has_l4_ports);
  EXPECT_EQ(p.src_port, 0);
}

TEST(ParseFrameTest, Ipv4IcmpShorterThanEightBytesIsTruncated) {
  Frame f = Bytes(golden::kIpv4Icmp);
  SetBe16(f, 16, 20 + 4);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv4HeaderOptionsAreSkipped) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv4Options));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.l3_offset, 14);
  EXPECT_EQ(p.layers.l4_offset, 38);
  EXPECT_EQ(p.layers.payload_offset, 46);
  EXPECT_EQ(p.src_port, 53);
  EXPECT_EQ(p.dst_port, 53);
}

TEST(ParseFrameTest, Ipv4MaximumHeaderLength) {
  // IHL 15: 40 bytes of options (NOPs), then UDP.
  Frame f(golden::kIpv4Udp, golden::kIpv4Udp + 34);
  f[14] = 0x4f;
  f.insert(f.end(), 40, 0x01);
  f.insert(f.end(), golden::kIpv4Udp + 34, golden::kIpv4Udp + 46);
  SetBe16(f, 16, static_cast<uint16_t>(f.size() - 14));
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.l4_offset, 74);
  EXPECT_EQ(p.dst_port, 4791);
}

TEST(ParseFrameTest, Ipv4LaterFragmentHasNoL4) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv4FragLater));
  ExpectPassthrough(p);
  EXPECT_TRUE(p.layers.is_ipv4);
  EXPECT_EQ(p.layers.l3_offset, 14);
  EXPECT_EQ(p.layers.ip_proto, 17);
  EXPECT_EQ(p.src_addr, Mapped(10, 0, 0, 1));
  ExpectNoL4(p);
}

TEST(ParseFrameTest, Ipv4FragmentOffsetOneWithMoreFragmentsHasNoL4) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 20, 0x2001);  // MF, offset 8 bytes
  ExpectNoL4(Parse(f));
}

TEST(ParseFrameTest, Ipv4FirstFragmentHasL4) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 20, 0x2000);  // MF, offset 0
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.l4_offset, 34);
  EXPECT_EQ(p.dst_port, 4791);
}

TEST(ParseFrameTest, Ipv4DontFragmentFlagIsNotAFragment) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 20, 0x4000);  // DF
  EXPECT_EQ(Parse(f).layers.l4_offset, 34);
}

TEST(ParseFrameTest, Ipv4TinyFirstFragmentIsTruncated) {
  // The first fragment ends 4 bytes into the UDP header (RFC 1858).
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 20, 0x2000);
  SetBe16(f, 16, 24);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv4UnknownProtocolHasNoL4) {
  Frame f = Bytes(golden::kIpv4Udp);
  f[23] = 132;  // SCTP
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ip_proto, 132);
  EXPECT_EQ(p.layers.l3_offset, 14);
  ExpectNoL4(p);
}

TEST(ParseFrameTest, IcmpV6NumberInIpv4HasNoL4) {
  Frame f = Bytes(golden::kIpv4Icmp);
  f[23] = 58;
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  ExpectNoL4(p);
}

TEST(ParseFrameTest, Ipv4IhlBelowFiveIsTruncated) {
  for (uint8_t ihl = 0; ihl < 5; ++ihl) {
    Frame f = Bytes(golden::kIpv4Udp);
    f[14] = static_cast<uint8_t>(0x40 | ihl);
    ExpectDrop(Parse(f), DropReason::kTruncated);
  }
}

TEST(ParseFrameTest, Ipv4IhlPastFrameIsTruncated) {
  Frame f = Bytes(golden::kIpv4Udp);
  f[14] = 0x4f;  // 60-byte header, 32 bytes in the frame
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv4IhlPastTotalLengthIsTruncated) {
  Frame f = Bytes(golden::kIpv4Udp);
  f[14] = 0x47;  // 28-byte header in a 32-byte frame
  SetBe16(f, 16, 24);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv4TotalLengthPastFrameIsTruncated) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 16, 33);  // one byte more than the frame holds
  ExpectDrop(Parse(f), DropReason::kTruncated);
  SetBe16(f, 16, 0xffff);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv4TotalLengthBelowHeaderIsTruncated) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 16, 19);
  ExpectDrop(Parse(f), DropReason::kTruncated);
  SetBe16(f, 16, 0);  // e.g. a TSO frame that escaped the NIC
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv4HeaderCutShortIsTruncated) {
  const Frame f = Bytes(golden::kIpv4Udp);
  ExpectDrop(Parse(f, 14 + 19), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv4WithoutL4BytesIsPassthroughWhenProtocolUnknown) {
  Frame f(golden::kIpv4Udp, golden::kIpv4Udp + 34);
  f[23] = 253;  // experimental
  SetBe16(f, 16, 20);
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  ExpectNoL4(p);
}

TEST(ParseFrameTest, WrongIpVersionUnderIpv4EthertypeHasNoL3) {
  Frame f = Bytes(golden::kIpv4Udp);
  f[14] = 0x65;
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 0x0800);
  ExpectNoL3(p);
}

TEST(ParseFrameTest, WrongIpVersionUnderIpv6EthertypeHasNoL3) {
  Frame f = Bytes(golden::kIpv6Udp);
  f[14] = 0x40;
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 0x86dd);
  ExpectNoL3(p);
}

TEST(ParseFrameTest, TcpTruncatedHeaderIsTruncated) {
  // IPv4 total length covers only 12 bytes of TCP header.
  ExpectDrop(Parse(Bytes(golden::kIpv4Tcp), 14 + 20 + 12),
             DropReason::kTruncated);
  Frame f = Bytes(golden::kIpv4Tcp);
  SetBe16(f, 16, 20 + 12);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, TcpDataOffsetBelowFiveIsTruncated) {
  for (uint8_t doff = 0; doff < 5; ++doff) {
    Frame f = Bytes(golden::kIpv4Tcp);
    f[46] = static_cast<uint8_t>(doff << 4);
    ExpectDrop(Parse(f), DropReason::kTruncated);
  }
}

TEST(ParseFrameTest, TcpDataOffsetPastIpEndIsTruncated) {
  Frame f = Bytes(golden::kIpv4Tcp);
  f[46] = 0x70;  // 28 bytes, 24 present
  ExpectDrop(Parse(f), DropReason::kTruncated);
  f[46] = 0x50;  // 20 bytes: the MSS option becomes payload
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.payload_offset, 54);
}

TEST(ParseFrameTest, TcpOptionsInPaddingAreNotTakenForHeader) {
  // IP says 40 bytes (20 + bare TCP header); data offset 6 would reach into
  // the 4 trailing bytes, which lie past the IP datagram.
  Frame f = Bytes(golden::kIpv4Tcp);
  SetBe16(f, 16, 40);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, UdpCutShortIsTruncated) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 16, 27);
  ExpectDrop(Parse(f), DropReason::kTruncated);
  SetBe16(f, 16, 28);  // exactly the header, empty payload
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.payload_offset, 42);
}

TEST(ParseFrameTest, PaddedFrameParsesLikeUnpadded) {
  Frame padded = Bytes(golden::kIpv4Udp);
  padded.resize(60, 0x00);
  ExpectSame(Parse(padded), Parse(Bytes(golden::kIpv4Udp)));
  std::fill(padded.begin() + 46, padded.end(), 0xee);
  ExpectSame(Parse(padded), Parse(Bytes(golden::kIpv4Udp)));
}

TEST(ParseFrameTest, PaddedIpv6ParsesLikeUnpadded) {
  Frame padded = Bytes(golden::kIpv6ExtTcp);
  padded.resize(padded.size() + 30, 0xa5);
  ExpectSame(Parse(padded), Parse(Bytes(golden::kIpv6ExtTcp)));
}

TEST(ParseFrameTest, PaddingIsNeverTakenForL4) {
  // An IPv4 header announcing UDP but carrying no UDP bytes, padded to the
  // Ethernet minimum: the padding must not be read as a UDP header.
  Frame f(golden::kIpv4Udp, golden::kIpv4Udp + 34);
  SetBe16(f, 16, 20);
  f.resize(60, 0x11);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv6Udp) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv6Udp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 0x86dd);
  EXPECT_FALSE(p.layers.is_ipv4);
  EXPECT_TRUE(p.layers.is_ipv6);
  EXPECT_EQ(p.layers.l3_offset, 14);
  EXPECT_EQ(p.layers.ip_proto, 17);
  EXPECT_EQ(p.layers.l4_offset, 54);
  EXPECT_EQ(p.layers.payload_offset, 62);
  EXPECT_EQ(p.src_addr, Fd00(1));
  EXPECT_EQ(p.dst_addr, Fd00(2));
  EXPECT_EQ(p.src_port, 5000);
  EXPECT_EQ(p.dst_port, 4791);
  EXPECT_TRUE(p.has_l4_ports);
}

TEST(ParseFrameTest, Ipv6ExtensionHeadersAreWalked) {
  // Hop-by-Hop (8) + Routing (24) + Destination Options (8), then TCP.
  const ParsedFrame p = Parse(Bytes(golden::kIpv6ExtTcp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ip_proto, 6);
  EXPECT_EQ(p.layers.l4_offset, 14 + 40 + 8 + 24 + 8);
  EXPECT_EQ(p.layers.payload_offset, 94 + 20);
  EXPECT_EQ(p.src_port, 40001);
  EXPECT_EQ(p.dst_port, 443);
}

TEST(ParseFrameTest, Ipv6FirstFragmentHasL4) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv6FragFirst));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ip_proto, 17);
  EXPECT_EQ(p.layers.l4_offset, 62);
  EXPECT_EQ(p.layers.payload_offset, 70);
  EXPECT_EQ(p.src_port, 5001);
  EXPECT_EQ(p.dst_port, 4791);
}

TEST(ParseFrameTest, Ipv6LaterFragmentHasNoL4) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv6FragLater));
  ExpectPassthrough(p);
  EXPECT_TRUE(p.layers.is_ipv6);
  EXPECT_EQ(p.layers.ip_proto, 17);  // the fragment header's next header
  EXPECT_EQ(p.src_addr, Fd00(1));
  ExpectNoL4(p);
}

TEST(ParseFrameTest, Ipv6FragmentHeaderCutShortIsTruncated) {
  Frame f = Bytes(golden::kIpv6FragFirst);
  SetBe16(f, 18, 4);
  f.resize(54 + 4);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv6IcmpEcho) {
  const ParsedFrame p = Parse(Bytes(golden::kIpv6Icmpv6));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ip_proto, 58);
  EXPECT_EQ(p.layers.l4_offset, 54);
  EXPECT_EQ(p.layers.payload_offset, 62);
  EXPECT_FALSE(p.has_l4_ports);
}

TEST(ParseFrameTest, Ipv6AhEspAndNoNextHeaderHaveNoL4) {
  for (uint8_t next : {uint8_t{50}, uint8_t{51}, uint8_t{59}}) {
    Frame f = Bytes(golden::kIpv6Udp);
    f[20] = next;
    const ParsedFrame p = Parse(f);
    ExpectPassthrough(p);
    EXPECT_TRUE(p.layers.is_ipv6);
    EXPECT_EQ(p.layers.ip_proto, next);
    ExpectNoL4(p);
  }
}

TEST(ParseFrameTest, IcmpNumberInIpv6HasNoL4) {
  Frame f = Bytes(golden::kIpv6Icmpv6);
  f[20] = 1;
  ExpectNoL4(Parse(f));
}

TEST(ParseFrameTest, Ipv6EightExtensionHeadersAreWalked) {
  const ParsedFrame p = Parse(Ipv6WithChain(60, DestOptsChain(8)));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ip_proto, 17);
  EXPECT_EQ(p.layers.l4_offset, 54 + 8 * 8);
  EXPECT_TRUE(p.has_l4_ports);
}

TEST(ParseFrameTest, Ipv6NinthExtensionHeaderStopsTheWalk) {
  const ParsedFrame p = Parse(Ipv6WithChain(60, DestOptsChain(9)));
  ExpectPassthrough(p);
  EXPECT_TRUE(p.layers.is_ipv6);
  EXPECT_EQ(p.layers.ip_proto, 60);
  ExpectNoL4(p);
}

TEST(ParseFrameTest, Ipv6ExtensionHeaderPastPayloadIsTruncated) {
  Frame f = Ipv6WithChain(0, {17, 4, 1, 2, 0, 0, 0, 0});  // claims 40 bytes
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv6ExtensionHeaderInPaddingIsTruncated) {
  // Payload length 0 but a Hop-by-Hop header announced: the trailing bytes
  // are padding, not an extension header.
  Frame f(golden::kIpv6Udp, golden::kIpv6Udp + 54);
  f[20] = 0;
  SetBe16(f, 18, 0);
  f.resize(f.size() + 16, 0);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv6PayloadLengthPastFrameIsTruncated) {
  Frame f = Bytes(golden::kIpv6Udp);
  SetBe16(f, 18, 13);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv6HeaderCutShortIsTruncated) {
  ExpectDrop(Parse(Bytes(golden::kIpv6Udp), 14 + 39), DropReason::kTruncated);
}

TEST(ParseFrameTest, Ipv6UdpCutShortIsTruncated) {
  Frame f = Bytes(golden::kIpv6Udp);
  SetBe16(f, 18, 7);
  ExpectDrop(Parse(f), DropReason::kTruncated);
}

TEST(ParseFrameTest, VlanTagged) {
  const ParsedFrame p = Parse(Bytes(golden::kVlanIpv4Udp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.vlan_tags, 1);
  EXPECT_EQ(p.layers.ethertype, 0x0800);
  EXPECT_EQ(p.layers.l3_offset, 18);
  EXPECT_EQ(p.layers.l4_offset, 38);
  EXPECT_EQ(p.layers.payload_offset, 46);
  EXPECT_EQ(p.dst_port, 4791);
}

TEST(ParseFrameTest, QinQ) {
  const ParsedFrame p = Parse(Bytes(golden::kQinqIpv6Udp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.vlan_tags, 2);
  EXPECT_EQ(p.layers.ethertype, 0x86dd);
  EXPECT_EQ(p.layers.l3_offset, 22);
  EXPECT_EQ(p.layers.l4_offset, 62);
  EXPECT_EQ(p.layers.payload_offset, 70);
  EXPECT_EQ(p.src_addr, Fd00(1));
  EXPECT_EQ(p.dst_port, 4791);
}

TEST(ParseFrameTest, TwoCustomerTagsCountAsTwo) {
  Frame f = Bytes(golden::kQinqIpv6Udp);
  SetBe16(f, 12, 0x8100);
  const ParsedFrame p = Parse(f);
  EXPECT_EQ(p.layers.vlan_tags, 2);
  EXPECT_EQ(p.layers.l3_offset, 22);
}

TEST(ParseFrameTest, ThirdTagStopsWithoutL3) {
  Frame f(golden::kQinqIpv6Udp, golden::kQinqIpv6Udp + 20);
  const Frame third = {0x81, 0x00, 0x00, 0x1e};
  f.insert(f.end(), third.begin(), third.end());
  f.insert(f.end(), golden::kQinqIpv6Udp + 20, golden::kQinqIpv6Udp + 74);
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.vlan_tags, 2);
  EXPECT_EQ(p.layers.ethertype, 0x8100);
  ExpectNoL3(p);
}

TEST(ParseFrameTest, VlanTagCutShortIsTruncated) {
  const Frame f = Bytes(golden::kVlanIpv4Udp);
  for (uint32_t length = 14; length < 18; ++length) {
    const ParsedFrame p = Parse(f, length);
    ExpectDrop(p, DropReason::kTruncated);
    EXPECT_EQ(p.layers.vlan_tags, 0);
    EXPECT_EQ(p.layers.ethertype, 0x8100);
  }
  // A tagged frame that ends right after its tag has an L2 header only.
  const ParsedFrame p = Parse(f, 18);
  EXPECT_EQ(p.layers.vlan_tags, 1);
  ExpectDrop(p, DropReason::kTruncated);  // the IPv4 header is missing
}

TEST(ParseFrameTest, ArpHasNoL3) {
  const ParsedFrame p = Parse(Bytes(golden::kArp));
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 0x0806);
  EXPECT_EQ(p.layers.vlan_tags, 0);
  ExpectNoL3(p);
}

TEST(ParseFrameTest, UnknownEthertypeHasNoL3) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 12, 0x88b5);
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 0x88b5);
  ExpectNoL3(p);
}

TEST(ParseFrameTest, Ieee8023LengthFieldHasNoL3) {
  Frame f = Bytes(golden::kIpv4Udp);
  SetBe16(f, 12, 32);  // 802.3 length, LLC follows
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 32);
  ExpectNoL3(p);
}

TEST(ParseFrameTest, EthernetHeaderOnlyIsPassthrough) {
  Frame f(golden::kArp, golden::kArp + 14);
  const ParsedFrame p = Parse(f);
  ExpectPassthrough(p);
  EXPECT_EQ(p.layers.ethertype, 0x0806);
}

TEST(ParseFrameTest, RuntsAreDropped) {
  const Frame f = Bytes(golden::kIpv4Udp);
  for (uint32_t length = 0; length < 14; ++length) {
    const ParsedFrame p = Parse(f, length);
    ExpectDrop(p, DropReason::kRunt);
    EXPECT_EQ(p.layers.l3_offset, kAbsent);
  }
}

TEST(ParseFrameTest, NullEmptyFrameIsRunt) {
  ParsedFrame p;
  ParseFrame(nullptr, 0, &p);
  ExpectDrop(p, DropReason::kRunt);
}

TEST(ParseFrameTest, OutputIsResetOnEveryCall) {
  ParsedFrame p;
  const Frame udp = Bytes(golden::kIpv4Udp);
  ParseFrame(udp.data(), static_cast<uint32_t>(udp.size()), &p);
  const Frame arp = Bytes(golden::kArp);
  ParseFrame(arp.data(), static_cast<uint32_t>(arp.size()), &p);
  ExpectSame(p, Parse(arp));
  ExpectNoL3(p);
  ParseFrame(udp.data(), 5, &p);
  ExpectDrop(p, DropReason::kRunt);
  EXPECT_EQ(p.layers.ethertype, 0);
}

struct GoldenCase {
  const char* name;
  Frame frame;
};

std::vector<GoldenCase> ValidGoldens() {
  return {
      {"ipv4_udp", Bytes(golden::kIpv4Udp)},
      {"ipv4_tcp", Bytes(golden::kIpv4Tcp)},
      {"ipv4_icmp", Bytes(golden::kIpv4Icmp)},
      {"ipv4_options", Bytes(golden::kIpv4Options)},
      {"ipv4_frag_later", Bytes(golden::kIpv4FragLater)},
      {"ipv6_udp", Bytes(golden::kIpv6Udp)},
      {"ipv6_ext_tcp", Bytes(golden::kIpv6ExtTcp)},
      {"ipv6_frag_first", Bytes(golden::kIpv6FragFirst)},
      {"ipv6_frag_later", Bytes(golden::kIpv6FragLater)},
      {"ipv6_icmpv6", Bytes(golden::kIpv6Icmpv6)},
      {"vlan_ipv4_udp", Bytes(golden::kVlanIpv4Udp)},
      {"qinq_ipv6_udp", Bytes(golden::kQinqIpv6Udp)},
      {"arp", Bytes(golden::kArp)},
  };
}

// The fast path takes plain IPv4 UDP/TCP and IPv6 UDP, and leaves every
// other kind to the general parser (writing nothing).
TEST(ParseFrameTest, FastPathTakesOnlyThePlainKinds) {
  const std::set<std::string> fast = {"ipv4_udp", "ipv4_tcp", "ipv6_udp"};
  for (const GoldenCase& c : ValidGoldens()) {
    SCOPED_TRACE(c.name);
    ParsedFrame out;
    out.layers.ethertype = 0x1234;  // a fast path that declines leaves it
    const bool taken = classifier_internal::ParseCommonFrame(
        c.frame.data(), static_cast<uint32_t>(c.frame.size()), &out);
    EXPECT_EQ(taken, fast.contains(c.name));
    if (!taken) EXPECT_EQ(out.layers.ethertype, 0x1234);
  }
}

TEST(ParseFrameTest, GoldensArePassthrough) {
  for (const GoldenCase& c : ValidGoldens()) {
    SCOPED_TRACE(c.name);
    ExpectPassthrough(Parse(c.frame));
  }
}

// Cutting a valid frame anywhere gives, in order: runts below 14 bytes;
// truncated while some header the frame announces is incomplete (a VLAN
// tag, or anything up to the IP length); and from the full IP datagram (or
// the L2 header, for non-IP) on, exactly the full frame's result.
TEST(ParseFrameTest, EveryPrefixOfAValidFrameIsConsistent) {
  for (const GoldenCase& c : ValidGoldens()) {
    SCOPED_TRACE(c.name);
    const ParsedFrame full = Parse(c.frame);
    const bool has_l3 = full.layers.is_ipv4 || full.layers.is_ipv6;
    // The goldens are unpadded: an IP datagram ends where the frame does.
    const uint32_t needed = has_l3 ? static_cast<uint32_t>(c.frame.size())
                                   : 14u + 4u * full.layers.vlan_tags;
    for (uint32_t length = 0; length <= c.frame.size(); ++length) {
      SCOPED_TRACE(length);
      const ParsedFrame p = Parse(c.frame, length);
      if (length < 14) {
        ExpectDrop(p, DropReason::kRunt);
      } else if (length < needed) {
        ExpectDrop(p, DropReason::kTruncated);
      } else {
        ExpectSame(p, full);
      }
    }
  }
}

// Whatever the bytes, the result is internally consistent and every offset
// lies inside the frame. (The fuzz target checks the same on mutated
// inputs; this is the deterministic smoke version.)
TEST(ParseFrameTest, RandomMutationsKeepInvariants) {
  std::mt19937 rng(20240601);
  const std::vector<GoldenCase> goldens = ValidGoldens();
  for (int i = 0; i < 20000; ++i) {
    Frame f = goldens[rng() % goldens.size()].frame;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int j = 0; j < flips; ++j) f[rng() % f.size()] = rng() & 0xff;
    f.resize(rng() % (f.size() + 8), 0);
    const ParsedFrame p = Parse(f);
    const uint32_t n = static_cast<uint32_t>(f.size());
    if (p.frame_class == FrameClass::kDrop) {
      ASSERT_TRUE(p.drop_reason == DropReason::kRunt ||
                  p.drop_reason == DropReason::kTruncated);
      continue;
    }
    ASSERT_EQ(p.drop_reason, DropReason::kCount);
    ASSERT_LE(p.layers.vlan_tags, 2);
    ASSERT_FALSE(p.layers.is_ipv4 && p.layers.is_ipv6);
    const bool has_l3 = p.layers.is_ipv4 || p.layers.is_ipv6;
    ASSERT_EQ(has_l3, p.layers.l3_offset != kAbsent);
    if (has_l3) {
      ASSERT_LT(p.layers.l3_offset, n);
    }
    if (p.layers.l4_offset != kAbsent) {
      ASSERT_TRUE(has_l3);
      ASSERT_GT(p.layers.l4_offset, p.layers.l3_offset);
      ASSERT_GT(p.layers.payload_offset, p.layers.l4_offset);
      ASSERT_LE(p.layers.payload_offset, n);
    } else {
      ASSERT_EQ(p.layers.payload_offset, kAbsent);
      ASSERT_FALSE(p.has_l4_ports);
    }
  }
}

}  // namespace
}  // namespace spinnic
