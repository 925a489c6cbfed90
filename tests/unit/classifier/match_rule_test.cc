#include "dataplane/match_rule.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dataplane/classifier.h"
#include "tests/unit/classifier/golden_frames.h"

namespace spinnic {
namespace {

using Address = std::array<uint8_t, 16>;

Address Mapped(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

Address Fd00(uint8_t last) {
  return {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
}

template <size_t N>
ParsedFrame Parse(const uint8_t (&bytes)[N]) {
  ParsedFrame out;
  ParseFrame(bytes, N, &out);
  return out;
}

AddressPrefix MustParse(absl::string_view text) {
  absl::StatusOr<AddressPrefix> prefix = AddressPrefix::Parse(text);
  EXPECT_TRUE(prefix.ok()) << text << ": " << prefix.status();
  return prefix.ok() ? *prefix : AddressPrefix{};
}

// The error for `text`, which must be INVALID_ARGUMENT.
std::string ParseError(absl::string_view text) {
  absl::StatusOr<AddressPrefix> prefix = AddressPrefix::Parse(text);
  EXPECT_EQ(prefix.status().code(), absl::StatusCode::kInvalidArgument)
      << "\"" << text << "\" parsed";
  return std::string(prefix.status().message());
}

TEST(AddressPrefixParseTest, Ipv4Network) {
  const AddressPrefix p = MustParse("10.0.0.0/8");
  EXPECT_TRUE(p.is_ipv4);
  EXPECT_EQ(p.address, Mapped(10, 0, 0, 0));
  // Lengths count bits of the 16-byte mapped form: 96 + 8.
  EXPECT_EQ(p.length, 104);
}

TEST(AddressPrefixParseTest, Ipv4HostIsSlash32) {
  const AddressPrefix p = MustParse("10.1.2.3");
  EXPECT_TRUE(p.is_ipv4);
  EXPECT_EQ(p.address, Mapped(10, 1, 2, 3));
  EXPECT_EQ(p.length, 128);
  EXPECT_EQ(MustParse("10.1.2.3/32").length, 128);
}

TEST(AddressPrefixParseTest, Ipv4Any) {
  const AddressPrefix p = MustParse("0.0.0.0/0");
  EXPECT_TRUE(p.is_ipv4);
  EXPECT_EQ(p.length, 96);
}

TEST(AddressPrefixParseTest, Ipv6Network) {
  const AddressPrefix p = MustParse("fd00::/64");
  EXPECT_FALSE(p.is_ipv4);
  EXPECT_EQ(p.address, Fd00(0));
  EXPECT_EQ(p.length, 64);
  EXPECT_EQ(MustParse("FD00::/8").address, Fd00(0));
}

TEST(AddressPrefixParseTest, Ipv6HostIsSlash128) {
  const AddressPrefix p = MustParse("fd00::1");
  EXPECT_FALSE(p.is_ipv4);
  EXPECT_EQ(p.address, Fd00(1));
  EXPECT_EQ(p.length, 128);
}

TEST(AddressPrefixParseTest, Ipv6Any) {
  const AddressPrefix p = MustParse("::/0");
  EXPECT_FALSE(p.is_ipv4);
  EXPECT_EQ(p.length, 0);
  EXPECT_EQ(p.address, Address{});
}

TEST(AddressPrefixParseTest, HostBitsSetNamesTheFix) {
  std::string error = ParseError("10.0.0.1/8");
  EXPECT_NE(error.find("host bits"), std::string::npos) << error;
  EXPECT_NE(error.find("\"10.0.0.0/8\""), std::string::npos) << error;
  EXPECT_NE(error.find("\"10.0.0.1\""), std::string::npos) << error;

  error = ParseError("192.168.1.130/25");
  EXPECT_NE(error.find("\"192.168.1.128/25\""), std::string::npos) << error;

  error = ParseError("fd00::1/64");
  EXPECT_NE(error.find("host bits"), std::string::npos) << error;
  EXPECT_NE(error.find("\"fd00::/64\""), std::string::npos) << error;

  // Bit 113 is the first host bit of a /113; bit 112 still belongs to it.
  error = ParseError("fd00::c000/113");
  EXPECT_NE(error.find("\"fd00::8000/113\""), std::string::npos) << error;
  EXPECT_TRUE(AddressPrefix::Parse("fd00::8000/113").ok());
}

TEST(AddressPrefixParseTest, LengthOutOfRange) {
  std::string error = ParseError("10.0.0.0/33");
  EXPECT_NE(error.find("33"), std::string::npos) << error;
  EXPECT_NE(error.find("0..32"), std::string::npos) << error;
  error = ParseError("fd00::/129");
  EXPECT_NE(error.find("129"), std::string::npos) << error;
  EXPECT_NE(error.find("0..128"), std::string::npos) << error;
  ParseError("10.0.0.0/999");
  ParseError("10.0.0.0/1000");
}

TEST(AddressPrefixParseTest, RejectsGarbage) {
  const std::vector<std::string> garbage = {
      "",
      "/",
      "/8",
      "10.0.0.0/",
      "10.0.0.0/abc",
      "10.0.0.0/8/8",
      "10.0.0.0//8",
      "10.0.0.0/+8",
      "10.0.0.0/-1",
      "10.0.0.0/ 8",
      " 10.0.0.0/8",
      "10.0.0.0/8 ",
      "hello",
      "10.0.0",
      "10.0.0.256",
      "1.2.3.4.5",
      "010.0.0.1",
      "0x0a.0.0.1",
      "::1::2",
      ":::",
      "fe80::1%eth0",
      "fd00::1/64x",
      "10.0.0.1 ",
      std::string("10.0.0.1\0garbage", 16),
      std::string("10.0.0.0/8\0", 11),
      std::string(200, '1'),
      "\xff\xfe",
  };
  for (const std::string& text : garbage) {
    SCOPED_TRACE(text);
    const std::string error = ParseError(text);
    EXPECT_FALSE(error.empty());
    EXPECT_LT(error.size(), 400u);
  }
}

TEST(AddressPrefixParseTest, Ipv4MappedIpv6IsRejectedWithTheIpv4Form) {
  std::string error = ParseError("::ffff:10.0.0.0/104");
  EXPECT_NE(error.find("\"10.0.0.0/8\""), std::string::npos) << error;
  error = ParseError("::ffff:10.1.2.3");
  EXPECT_NE(error.find("\"10.1.2.3/32\""), std::string::npos) << error;
  // Prefixes that merely contain the mapped block are ordinary IPv6.
  EXPECT_TRUE(AddressPrefix::Parse("::/64").ok());
  EXPECT_TRUE(AddressPrefix::Parse("::/80").ok());
}

TEST(AddressPrefixContainsTest, ZeroLengthMatchesEverything) {
  AddressPrefix any;
  EXPECT_TRUE(any.Contains(Fd00(1)));
  EXPECT_TRUE(any.Contains(Mapped(1, 2, 3, 4)));
  EXPECT_TRUE(any.Contains(Address{}));
}

TEST(AddressPrefixContainsTest, Ipv4) {
  const AddressPrefix p = MustParse("10.0.0.0/8");
  EXPECT_TRUE(p.Contains(Mapped(10, 0, 0, 0)));
  EXPECT_TRUE(p.Contains(Mapped(10, 255, 255, 255)));
  EXPECT_FALSE(p.Contains(Mapped(11, 0, 0, 0)));
  EXPECT_FALSE(p.Contains(Mapped(9, 255, 255, 255)));
  // Same low 32 bits, but not an IPv4-mapped address.
  Address v6{};
  v6[12] = 10;
  EXPECT_FALSE(p.Contains(v6));

  const AddressPrefix host = MustParse("192.0.2.1");
  EXPECT_TRUE(host.Contains(Mapped(192, 0, 2, 1)));
  EXPECT_FALSE(host.Contains(Mapped(192, 0, 2, 0)));
  EXPECT_FALSE(host.Contains(Mapped(192, 0, 2, 2)));

  const AddressPrefix any4 = MustParse("0.0.0.0/0");
  EXPECT_TRUE(any4.Contains(Mapped(255, 255, 255, 255)));
  EXPECT_FALSE(any4.Contains(Fd00(1)));
}

TEST(AddressPrefixContainsTest, Ipv6BoundaryLengths) {
  // All-ones address with the prefix covering the first `len` bits; the
  // candidate differs in exactly one bit, just inside or just outside.
  for (int len : {1, 7, 8, 9, 63, 64, 65, 96, 127, 128}) {
    SCOPED_TRACE(len);
    AddressPrefix p;
    p.address.fill(0);
    for (int bit = 0; bit < len; ++bit) {
      p.address[bit / 8] |= static_cast<uint8_t>(0x80 >> (bit % 8));
    }
    p.length = static_cast<uint8_t>(len);
    Address inside = p.address;
    EXPECT_TRUE(p.Contains(inside));
    if (len < 128) {
      inside[len / 8] ^= static_cast<uint8_t>(0x80 >> (len % 8));
      EXPECT_TRUE(p.Contains(inside));
    }
    Address outside = p.address;
    outside[(len - 1) / 8] ^= static_cast<uint8_t>(0x80 >> ((len - 1) % 8));
    EXPECT_FALSE(p.Contains(outside));
  }
}

TEST(AddressPrefixContainsTest, LengthAbove128ActsAs128) {
  AddressPrefix p;
  p.address = Fd00(1);
  p.length = 200;
  EXPECT_TRUE(p.Contains(Fd00(1)));
  EXPECT_FALSE(p.Contains(Fd00(2)));
}

TEST(MatchRuleTest, DefaultRuleMatchesEveryForwardedFrame) {
  const MatchRule rule;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv6ExtTcp), 3));
  EXPECT_TRUE(rule.Matches(Parse(golden::kArp), 63));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4FragLater), 64));
  EXPECT_TRUE(rule.Matches(Parse(golden::kQinqIpv6Udp), 0xffff));
}

TEST(MatchRuleTest, DroppedFramesNeverMatch) {
  ParsedFrame runt;
  ParseFrame(golden::kIpv4Udp, 10, &runt);
  EXPECT_FALSE(MatchRule{}.Matches(runt, 0));
  ParsedFrame truncated;
  ParseFrame(golden::kIpv4Udp, 40, &truncated);
  ASSERT_EQ(truncated.frame_class, FrameClass::kDrop);
  EXPECT_FALSE(MatchRule{}.Matches(truncated, 0));
}

TEST(MatchRuleTest, InPortMask) {
  const ParsedFrame f = Parse(golden::kIpv4Udp);
  MatchRule rule;
  rule.in_port_mask = 0b101;
  EXPECT_TRUE(rule.Matches(f, 0));
  EXPECT_FALSE(rule.Matches(f, 1));
  EXPECT_TRUE(rule.Matches(f, 2));
  EXPECT_FALSE(rule.Matches(f, 3));
  rule.in_port_mask = uint64_t{1} << 63;
  EXPECT_TRUE(rule.Matches(f, 63));
  EXPECT_FALSE(rule.Matches(f, 62));
  // Ids beyond the mask's width never match a restricted mask...
  rule.in_port_mask = ~uint64_t{0} >> 1;
  EXPECT_FALSE(rule.Matches(f, 64));
  EXPECT_FALSE(rule.Matches(f, 0xffff));
  // ...but do match the unrestricted one.
  rule.in_port_mask = MatchRule::kAllPorts;
  EXPECT_TRUE(rule.Matches(f, 64));
  EXPECT_TRUE(rule.Matches(f, 0xffff));
  rule.in_port_mask = 0;
  EXPECT_FALSE(rule.Matches(f, 0));
  EXPECT_FALSE(rule.Matches(f, 64));
}

TEST(MatchRuleTest, Ethertype) {
  MatchRule rule;
  rule.ethertype = 0x0800;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kVlanIpv4Udp), 0));  // innermost
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv6Udp), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kArp), 0));
  rule.ethertype = 0x0806;
  EXPECT_TRUE(rule.Matches(Parse(golden::kArp), 0));
  rule.ethertype = 0x86dd;
  EXPECT_TRUE(rule.Matches(Parse(golden::kQinqIpv6Udp), 0));
  rule.ethertype = 0x8100;  // tags are not the innermost ethertype
  EXPECT_FALSE(rule.Matches(Parse(golden::kVlanIpv4Udp), 0));
}

TEST(MatchRuleTest, IpProto) {
  MatchRule rule;
  rule.match_ip_proto = true;
  rule.ip_proto = 17;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv6Udp), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4FragLater), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv6FragLater), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Tcp), 0));
  rule.ip_proto = 6;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv6ExtTcp), 0));  // after exts
  rule.ip_proto = 58;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv6Icmpv6), 0));
  // Protocol 0 must not match frames whose ip_proto is 0 for lack of L3.
  rule.ip_proto = 0;
  EXPECT_FALSE(rule.Matches(Parse(golden::kArp), 0));
  rule.match_ip_proto = false;
  EXPECT_TRUE(rule.Matches(Parse(golden::kArp), 0));
}

TEST(MatchRuleTest, SourceAndDestinationPrefixes) {
  MatchRule rule;
  rule.match_src = true;
  rule.src = MustParse("10.0.0.0/24");
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  rule.match_dst = true;
  rule.dst = MustParse("10.0.0.2");
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  rule.dst = MustParse("10.0.0.1");
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Udp), 0));

  MatchRule v6;
  v6.match_dst = true;
  v6.dst = MustParse("fd00::/16");
  EXPECT_TRUE(v6.Matches(Parse(golden::kIpv6Udp), 0));
  EXPECT_TRUE(v6.Matches(Parse(golden::kQinqIpv6Udp), 0));
  v6.dst = MustParse("fd00::1");
  EXPECT_FALSE(v6.Matches(Parse(golden::kIpv6Udp), 0));
  v6.match_src = true;
  v6.src = MustParse("fd00::1");
  v6.dst = MustParse("fd00::2");
  EXPECT_TRUE(v6.Matches(Parse(golden::kIpv6Udp), 0));
}

TEST(MatchRuleTest, PrefixNeverMatchesTheOtherFamilyOrNoL3) {
  MatchRule any6;
  any6.match_src = true;
  any6.src = MustParse("::/0");
  EXPECT_TRUE(any6.Matches(Parse(golden::kIpv6Udp), 0));
  EXPECT_FALSE(any6.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_FALSE(any6.Matches(Parse(golden::kArp), 0));

  MatchRule any4;
  any4.match_dst = true;
  any4.dst = MustParse("0.0.0.0/0");
  EXPECT_TRUE(any4.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_TRUE(any4.Matches(Parse(golden::kIpv4FragLater), 0));
  EXPECT_FALSE(any4.Matches(Parse(golden::kIpv6Udp), 0));
  EXPECT_FALSE(any4.Matches(Parse(golden::kArp), 0));
}

TEST(MatchRuleTest, DestinationPortRange) {
  MatchRule rule;
  rule.dst_port_first = 4791;
  rule.dst_port_last = 4791;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv6Udp), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Tcp), 0));  // dport 80
  rule.dst_port_first = 4792;
  rule.dst_port_last = 5000;
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  rule.dst_port_first = 4000;
  rule.dst_port_last = 4790;
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  rule.dst_port_last = 4791;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
}

TEST(MatchRuleTest, SourcePortRange) {
  MatchRule rule;
  rule.src_port_first = 1234;
  rule.src_port_last = 1234;
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  rule.src_port_first = 1235;
  rule.src_port_last = 0xffff;
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Tcp), 0));  // sport 40000
  rule.src_port_first = 0;
  rule.src_port_last = 1233;
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Udp), 0));
}

TEST(MatchRuleTest, PortRuleNeverMatchesFramesWithoutPorts) {
  MatchRule rule;
  rule.dst_port_first = 0;
  rule.dst_port_last = 100;  // would include the absent port 0
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Icmp), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv6Icmpv6), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4FragLater), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv6FragLater), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kArp), 0));
  EXPECT_TRUE(rule.Matches(Parse(golden::kIpv4Tcp), 0));
  MatchRule src_only;
  src_only.src_port_first = 1;
  EXPECT_FALSE(src_only.Matches(Parse(golden::kIpv4Icmp), 0));
}

TEST(MatchRuleTest, EmptyPortRangeMatchesNothing) {
  MatchRule rule;
  rule.dst_port_first = 5000;
  rule.dst_port_last = 4000;
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Udp), 0));
  EXPECT_FALSE(rule.Matches(Parse(golden::kIpv4Tcp), 0));
}

TEST(MatchRuleTest, AllFieldsTogether) {
  MatchRule rule;
  rule.in_port_mask = 0b10;
  rule.ethertype = 0x86dd;
  rule.match_ip_proto = true;
  rule.ip_proto = 17;
  rule.match_src = true;
  rule.src = MustParse("fd00::/64");
  rule.match_dst = true;
  rule.dst = MustParse("fd00::2");
  rule.src_port_first = 5000;
  rule.src_port_last = 5000;
  rule.dst_port_first = 4791;
  rule.dst_port_last = 4791;
  const ParsedFrame f = Parse(golden::kQinqIpv6Udp);
  EXPECT_TRUE(rule.Matches(f, 1));
  EXPECT_FALSE(rule.Matches(f, 0));
  // Each field alone spoils the match.
  MatchRule r = rule;
  r.ethertype = 0x0800;
  EXPECT_FALSE(r.Matches(f, 1));
  r = rule;
  r.ip_proto = 6;
  EXPECT_FALSE(r.Matches(f, 1));
  r = rule;
  r.src = MustParse("fd01::/64");
  EXPECT_FALSE(r.Matches(f, 1));
  r = rule;
  r.dst = MustParse("fd00::3");
  EXPECT_FALSE(r.Matches(f, 1));
  r = rule;
  r.src_port_first = r.src_port_last = 5001;
  EXPECT_FALSE(r.Matches(f, 1));
  r = rule;
  r.dst_port_first = r.dst_port_last = 4790;
  EXPECT_FALSE(r.Matches(f, 1));
  // Unset match_* flags make the prefix fields irrelevant.
  r = rule;
  r.match_src = false;
  r.src = MustParse("fd01::/64");
  EXPECT_TRUE(r.Matches(f, 1));
}

}  // namespace
}  // namespace spinnic
