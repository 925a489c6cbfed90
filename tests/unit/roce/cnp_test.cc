// RoCEv2 CNPs: the builder against a byte-exact example and the parser's
// checks. The IPv4 example is NVIDIA's "RoCEv2 CNP packet format example"
// (a ConnectX CNP: IP 22.22.22.8 -> 22.22.22.7, id 0x98c6, TTL 0x20,
// TOS 0x89, UDP 56238 -> 4791, DestQP 0xd2), ICRC included; the ICRC of
// every other frame here is checked against the table-driven reference
// (tests/common/icrc_reference.h), not the code under test.
#include "dataplane/roce/cnp.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/common/byte_order.h"
#include "dataplane/common/checksum.h"
#include "dataplane/roce/icrc.h"
#include "tests/common/hex.h"
#include "tests/common/icrc_reference.h"

namespace spinnic::roce {
namespace {

using testing_hex::FromHex;
using testing_hex::ToHex;

// The IP packet of the example, hex: IPv4 header (checksum 0x6927), UDP
// (length 40, checksum 0), BTH (opcode 81, P_Key ffff, BECN 40, DestQP
// 0000d2, PSN 0), 16 reserved zero bytes, ICRC dafc1bef.
constexpr char kExampleIp[] =
    "4589003c98c640002011692716161608"
    "16161607dbae12b7002800008100ffff"
    "400000d2000000000000000000000000"
    "0000000000000000dafc1bef";

FrameParams ExampleParams() {
  FrameParams p;
  p.dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x07};
  p.src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x08};
  p.ip_version = 4;
  p.src_ip = Ipv4Mapped(0x16161608);
  p.dst_ip = Ipv4Mapped(0x16161607);
  p.ipv4_id = 0x98c6;
  p.hop_limit = 0x20;
  p.traffic_class = 0x89;
  p.udp_src_port = 56238;
  p.ipv4_dont_fragment = true;
  return p;
}

std::vector<uint8_t> Build(const FrameParams& params, uint32_t dest_qp) {
  std::vector<uint8_t> frame(256, 0xee);
  const uint32_t n = BuildCnp(params, dest_qp, frame.data(),
                              static_cast<uint32_t>(frame.size()));
  frame.resize(n);
  return frame;
}

TEST(CnpTest, Ipv4MatchesTheConnectXExampleByteForByte) {
  const std::vector<uint8_t> frame = Build(ExampleParams(), 0xd2);
  ASSERT_EQ(frame.size(), 14u + 60u);
  EXPECT_EQ(CnpFrameBytes(4), 74u);
  EXPECT_EQ(ToHex(frame.data(), 14),
            "020000000007020000000008"
            "0800");
  EXPECT_EQ(ToHex(frame.data() + 14, 60), kExampleIp);
}

TEST(CnpTest, ParsesTheExample) {
  std::vector<uint8_t> frame = FromHex(std::string("02000000000702000000000808"
                                                   "00") +
                                       kExampleIp);
  ASSERT_EQ(frame.size(), 74u);
  const std::vector<uint8_t> before = frame;
  EXPECT_TRUE(LooksLikeCnp(frame.data(), 74, 34));
  Cnp cnp;
  ASSERT_EQ(ParseCnp(frame.data(), 74, 14, 34, &cnp), ParseError::kNone);
  EXPECT_EQ(cnp.dest_qp, 0xd2u);
  EXPECT_EQ(cnp.pkey, 0xffff);
  EXPECT_TRUE(cnp.becn);
  EXPECT_EQ(cnp.ip_version, 4);
  EXPECT_EQ(cnp.src_ip, Ipv4Mapped(0x16161608));
  EXPECT_EQ(cnp.dst_ip, Ipv4Mapped(0x16161607));
  EXPECT_EQ(cnp.src_port, 56238);
  EXPECT_EQ(frame, before);  // the ICRC check put every byte back
}

TEST(CnpTest, RegularParserRefusesCnps) {
  // ParseFrame's opcode table has no 0x81: a CNP never reaches an RC QP.
  std::vector<uint8_t> frame = Build(ExampleParams(), 0xd2);
  Packet packet;
  EXPECT_EQ(ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), 14,
                       34, &packet),
            ParseError::kBadOpcode);
}

TEST(CnpTest, Ipv6WithVlan) {
  FrameParams p;
  p.dst_mac = {0x02, 0, 0, 0, 0, 1};
  p.src_mac = {0x02, 0, 0, 0, 0, 2};
  p.vlan = true;
  p.vlan_tci = 0x6005;
  p.ip_version = 6;
  p.src_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  p.dst_ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  p.traffic_class = 0xc0;  // DSCP 48, Not-ECT: CNPs are not marked
  p.hop_limit = 64;
  p.udp_src_port = 0xc123;
  p.ipv6_udp_checksum = true;  // ignored: CNPs carry 0
  std::vector<uint8_t> frame = Build(p, 0xabcdef);
  ASSERT_EQ(frame.size(), 18u + 40u + 8u + 32u);
  EXPECT_EQ(CnpFrameBytes(6, true), 98u);
  // VLAN tag, IPv6 payload length 40, next header UDP.
  EXPECT_EQ(ToHex(frame.data() + 12, 6),
            "81006005"
            "86dd");
  EXPECT_EQ(LoadBe16(frame.data() + 18 + 4), 40);
  EXPECT_EQ(frame[18 + 6], 17);
  // UDP: ports, length 40, checksum 0.
  EXPECT_EQ(ToHex(frame.data() + 58, 8), "c12312b700280000");
  // BTH: opcode 81, flags 0, P_Key ffff, BECN, DestQP abcdef, AckReq 0, PSN
  // 0; then 16 zero bytes.
  EXPECT_EQ(ToHex(frame.data() + 66, 12), "8100ffff40abcdef00000000");
  EXPECT_EQ(ToHex(frame.data() + 78, 16), std::string(32, '0'));
  // The ICRC, against the reference.
  uint32_t reference = 0;
  const uint32_t n = static_cast<uint32_t>(frame.size());
  ASSERT_TRUE(
      ComputeIcrcReference(frame.data(), n, {18, 58, n - 4}, &reference));
  EXPECT_EQ(LoadLe32(frame.data() + n - 4), reference);
  Cnp cnp;
  ASSERT_EQ(ParseCnp(frame.data(), n, 18, 58, &cnp), ParseError::kNone);
  EXPECT_EQ(cnp.dest_qp, 0xabcdefu);
  EXPECT_EQ(cnp.ip_version, 6);
  EXPECT_EQ(cnp.src_ip, p.src_ip);
}

TEST(CnpTest, BuilderRefusesSmallBuffersAndBadVersions) {
  std::vector<uint8_t> frame(73);
  EXPECT_EQ(BuildCnp(ExampleParams(), 1, frame.data(), 73), 0u);
  FrameParams p = ExampleParams();
  p.ip_version = 5;
  frame.resize(200);
  EXPECT_EQ(BuildCnp(p, 1, frame.data(), 200), 0u);
  EXPECT_EQ(CnpFrameBytes(5), 0u);
}

// Rewrites the ICRC after a deliberate change (so that only the change is
// wrong).
void FixIcrc(std::vector<uint8_t>& frame, uint32_t ip_end) {
  WriteIcrc(frame.data(), static_cast<uint32_t>(frame.size()),
            IcrcSpan{14, 34, ip_end - 4});
}

void FixIpv4Checksum(std::vector<uint8_t>& frame) {
  StoreBe16(frame.data() + 24, 0);
  StoreBe16(frame.data() + 24, checksum::Compute(frame.data() + 14, 20));
}

TEST(CnpTest, ParserNamesWhatIsWrong) {
  const std::vector<uint8_t> good = Build(ExampleParams(), 0xd2);
  const uint32_t n = static_cast<uint32_t>(good.size());
  struct Case {
    const char* what;
    void (*mutate)(std::vector<uint8_t>&);
    ParseError want;
  };
  const Case cases[] = {
      {"a bit of the reserved bytes: ICRC",
       [](std::vector<uint8_t>& f) { f[50] ^= 1; }, ParseError::kBadIcrc},
      {"ICRC itself", [](std::vector<uint8_t>& f) { f[73] ^= 0x80; },
       ParseError::kBadIcrc},
      {"another opcode",
       [](std::vector<uint8_t>& f) {
         f[42] = 0x11;
         FixIcrc(f, 74);
       },
       ParseError::kBadOpcode},
      {"TVer 1",
       [](std::vector<uint8_t>& f) {
         f[43] = 1;
         FixIcrc(f, 74);
       },
       ParseError::kBadTver},
      {"IPv4 checksum", [](std::vector<uint8_t>& f) { f[24] ^= 1; },
       ParseError::kIpChecksum},
      {"not UDP",
       [](std::vector<uint8_t>& f) {
         f[23] = 6;
         FixIpv4Checksum(f);
       },
       ParseError::kNotUdp},
      {"other port",
       [](std::vector<uint8_t>& f) { StoreBe16(f.data() + 36, 4792); },
       ParseError::kNotRocePort},
      {"IP options",
       [](std::vector<uint8_t>& f) {
         f[14] = 0x46;
         FixIpv4Checksum(f);
       },
       ParseError::kIpOptions},
      {"fragment",
       [](std::vector<uint8_t>& f) {
         f[20] = 0x20;  // MF
         FixIpv4Checksum(f);
       },
       ParseError::kIpFragment},
      {"IP length past the frame",
       [](std::vector<uint8_t>& f) {
         StoreBe16(f.data() + 16, 61);
         FixIpv4Checksum(f);
       },
       ParseError::kIpLength},
      {"UDP length disagrees",
       [](std::vector<uint8_t>& f) { StoreBe16(f.data() + 38, 36); },
       ParseError::kUdpLength},
      {"wrong UDP checksum",
       [](std::vector<uint8_t>& f) { StoreBe16(f.data() + 40, 0x1234); },
       ParseError::kUdpChecksum},
      {"not IP", [](std::vector<uint8_t>& f) { f[14] = 0x55; },
       ParseError::kNotIp},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> frame = good;
    c.mutate(frame);
    Cnp cnp;
    EXPECT_EQ(ParseCnp(frame.data(), n, 14, 34, &cnp), c.want) << c.what;
  }
  Cnp cnp;
  std::vector<uint8_t> frame = good;
  EXPECT_EQ(ParseCnp(frame.data(), n, 4, 34, &cnp), ParseError::kBadOffsets);
  EXPECT_EQ(ParseCnp(frame.data(), n, 14, 30, &cnp), ParseError::kBadOffsets);
  EXPECT_EQ(ParseCnp(frame.data(), 20, 14, 34, &cnp), ParseError::kTruncated);
}

TEST(CnpTest, SizeOtherThanACnpIsRefused) {
  // 4 bytes more (IP and UDP lengths agreeing, ICRC right): too long; 4
  // fewer: too short.
  for (int delta : {4, -4}) {
    std::vector<uint8_t> frame = Build(ExampleParams(), 7);
    frame.resize(frame.size() + delta, 0);
    const uint32_t n = static_cast<uint32_t>(frame.size());
    StoreBe16(frame.data() + 16, static_cast<uint16_t>(60 + delta));
    FixIpv4Checksum(frame);
    StoreBe16(frame.data() + 38, static_cast<uint16_t>(40 + delta));
    FixIcrc(frame, n);
    Cnp cnp;
    EXPECT_EQ(
        ParseCnp(frame.data(), n, 14, 34, &cnp),
        delta > 0 ? ParseError::kUnexpectedPayload : ParseError::kTooShort)
        << delta;
  }
}

TEST(CnpTest, ValidNonzeroUdpChecksumIsAccepted) {
  std::vector<uint8_t> frame = Build(ExampleParams(), 0xd2);
  const uint32_t n = static_cast<uint32_t>(frame.size());
  // The UDP checksum over the pseudo-header and the datagram (the ICRC does
  // not cover it, so the ICRC stays right).
  uint64_t sum = checksum::Add(0, frame.data() + 26, 8);
  sum = checksum::AddBe32(sum, 40);
  sum = checksum::AddBe32(sum, 17);
  sum = checksum::Add(sum, frame.data() + 34, 40);
  StoreBe16(frame.data() + 40, static_cast<uint16_t>(~checksum::Fold(sum)));
  Cnp cnp;
  EXPECT_EQ(ParseCnp(frame.data(), n, 14, 34, &cnp), ParseError::kNone);
}

}  // namespace
}  // namespace spinnic::roce
