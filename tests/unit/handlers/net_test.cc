// handlers/api/net.h: big-endian access, the one's complement fold, the RFC
// 1624 update checked against a full recomputation (frames.h's independent
// InternetChecksum), and where each protocol's L4 checksum field sits.
#include "handlers/api/net.h"

#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/packet.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

using ::spinnic::test_frames::InternetChecksum;
using ::testing::ElementsAre;

TEST(NetTest, Load16AndStore16AreBigEndian) {
  std::vector<uint8_t> bytes = {0x12, 0x34, 0x56};
  EXPECT_EQ(net::Load16(bytes, 0), 0x1234);
  EXPECT_EQ(net::Load16(bytes, 1), 0x3456);
  net::Store16(bytes, 1, 0xabcd);
  EXPECT_THAT(bytes, ElementsAre(0x12, 0xab, 0xcd));
  net::Store16(bytes, 0, 0x00ff);
  EXPECT_THAT(bytes, ElementsAre(0x00, 0xff, 0xcd));
}

TEST(NetTest, FoldAddsTheCarriesBackIn) {
  EXPECT_EQ(net::Fold(0), 0);
  EXPECT_EQ(net::Fold(0xffff), 0xffff);
  EXPECT_EQ(net::Fold(0x10000), 1);
  EXPECT_EQ(net::Fold(0x1fffe), 0xffff);  // 0xfffe + 1
  EXPECT_EQ(net::Fold(0x2fffe), 1);       // 0xfffe + 2 carries again
  EXPECT_EQ(net::Fold(0xffffffffffffffff), 0xffff);
}

// A fold keeps the sum modulo 0xffff and never turns a non-zero sum into 0.
TEST(NetTest, FoldKeepsTheSumModuloAllOnes) {
  std::mt19937_64 random(1071);
  for (int round = 0; round < 100000; ++round) {
    uint64_t sum = random() >> (random() % 64);
    uint16_t folded = net::Fold(sum);
    ASSERT_EQ(folded % 0xffff, sum % 0xffff) << std::hex << sum;
    ASSERT_EQ(folded == 0, sum == 0) << std::hex << sum;
  }
}

// Random data whose first word stays 0x4500 (like an IPv4 header), so the
// covered bytes are never all zero: for all-zero data a recomputation gives
// 0xffff where eqn. 3 gives 0x0000, the other one's complement zero.
std::vector<uint8_t> RandomWords(std::mt19937& random) {
  std::vector<uint8_t> data(2 * (2 + random() % 30));
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(random());
  net::Store16(data, 0, 0x4500);
  return data;
}

// A new value for `old_word`, often one of the values where sums wrap.
uint16_t NewWord(std::mt19937& random, uint16_t old_word) {
  switch (random() % 6) {
    case 0:
      return 0;
    case 1:
      return 0xffff;
    case 2:
      return old_word;
    case 3:
      return static_cast<uint16_t>(~old_word);
    default:
      return static_cast<uint16_t>(random());
  }
}

TEST(NetTest, UpdateChecksumMatchesAFullRecomputeForRandomWords) {
  std::mt19937 random(1624);
  for (int round = 0; round < 200000; ++round) {
    std::vector<uint8_t> data = RandomWords(random);
    const uint16_t checksum = InternetChecksum(data);
    const uint32_t at =
        static_cast<uint32_t>(2 + 2 * (random() % (data.size() / 2 - 1)));
    const uint16_t old_word = net::Load16(data, at);
    const uint16_t new_word = NewWord(random, old_word);
    net::Store16(data, at, new_word);
    ASSERT_EQ(net::UpdateChecksum(checksum, old_word, new_word),
              InternetChecksum(data))
        << "round " << round << std::hex << " checksum " << checksum << " word "
        << old_word << " -> " << new_word;
  }
}

// A run of words changes: the update takes the folded sums of the old and
// the new run, the way xor_payload updates its checksum in one pass.
TEST(NetTest, UpdateChecksumWithFoldedSumsMatchesAFullRecomputeForRuns) {
  std::mt19937 random(3);
  for (int round = 0; round < 50000; ++round) {
    std::vector<uint8_t> data = RandomWords(random);
    const uint16_t checksum = InternetChecksum(data);
    const uint32_t words = static_cast<uint32_t>(data.size() / 2);
    const uint32_t first = 1 + static_cast<uint32_t>(random() % (words - 1));
    const uint32_t last =
        first + static_cast<uint32_t>(random() % (words - first));
    uint64_t old_sum = 0;
    uint64_t new_sum = 0;
    for (uint32_t i = first; i <= last; ++i) {
      const uint16_t old_word = net::Load16(data, 2 * i);
      const uint16_t new_word = NewWord(random, old_word);
      net::Store16(data, 2 * i, new_word);
      old_sum += old_word;
      new_sum += new_word;
    }
    ASSERT_EQ(
        net::UpdateChecksum(checksum, net::Fold(old_sum), net::Fold(new_sum)),
        InternetChecksum(data))
        << "round " << round << " words " << first << ".." << last;
  }
}

// The stored checksum keeps the whole covered data summing to all ones.
TEST(NetTest, UpdatedChecksumVerifies) {
  std::vector<uint8_t> header = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
                                 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
                                 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
  net::Store16(header, 10, InternetChecksum(header));
  ASSERT_EQ(net::Load16(header, 10), 0xb861);
  const uint16_t old_word = net::Load16(header, 8);  // TTL 64, protocol 17
  const uint16_t new_word = 0x3f11;                  // TTL 63
  net::Store16(header, 8, new_word);
  net::Store16(
      header, 10,
      net::UpdateChecksum(net::Load16(header, 10), old_word, new_word));
  EXPECT_EQ(InternetChecksum(header), 0);
  EXPECT_EQ(net::Load16(header, 10), 0xb961);
}

uint32_t ChecksumOffsetOf(const FrameSpec& spec) {
  return net::L4ChecksumOffset(ClassifierLayers(Build(spec)));
}

TEST(NetTest, L4ChecksumOffsetPerProtocol) {
  FrameSpec udp;
  EXPECT_EQ(ChecksumOffsetOf(udp), 14u + 20 + 6);
  FrameSpec tcp;
  tcp.l4 = L4::kTcp;
  tcp.tcp_options = {0x02, 0x04, 0x05, 0xb4};
  EXPECT_EQ(ChecksumOffsetOf(tcp), 14u + 20 + 16);
  FrameSpec icmp;
  icmp.l4 = L4::kIcmp;
  icmp.ip4_options = {0x94, 0x04, 0x00, 0x00};
  EXPECT_EQ(ChecksumOffsetOf(icmp), 14u + 24 + 2);
  FrameSpec icmp6 = icmp;
  icmp6.ipv6 = true;
  icmp6.icmp_type = 128;
  icmp6.vlan_tcis = {5};
  EXPECT_EQ(ChecksumOffsetOf(icmp6), 18u + 40 + 2);
  FrameSpec udp6;
  udp6.ipv6 = true;
  udp6.ip6_fragment = 0x0001;  // first fragment: the L4 header is there
  EXPECT_EQ(ChecksumOffsetOf(udp6), 14u + 40 + 8 + 6);
}

// The offset found is the field the frame builder filled in.
TEST(NetTest, L4ChecksumOffsetFindsTheBuiltChecksum) {
  for (L4 l4 : {L4::kUdp, L4::kTcp, L4::kIcmp}) {
    for (bool ipv6 : {false, true}) {
      FrameSpec spec;
      spec.l4 = l4;
      spec.ipv6 = ipv6;
      spec.icmp_type = ipv6 ? 128 : 8;
      spec.payload = Text("some payload");
      std::vector<uint8_t> frame = Build(spec);
      uint32_t at = net::L4ChecksumOffset(ClassifierLayers(frame));
      ASSERT_NE(at, PacketLayers::kAbsent);
      frame[at] ^= 0x01;
      EXPECT_FALSE(ChecksumsValid(frame)) << "ipv6 " << ipv6;
    }
  }
}

TEST(NetTest, L4ChecksumOffsetIsAbsentWithoutAKnownChecksum) {
  FrameSpec arp;
  arp.non_ip_ethertype = 0x0806;
  arp.payload.assign(28, 0);
  EXPECT_EQ(ChecksumOffsetOf(arp), PacketLayers::kAbsent);
  FrameSpec gre;
  gre.l4 = L4::kNone;
  gre.payload.assign(8, 0);
  EXPECT_EQ(ChecksumOffsetOf(gre), PacketLayers::kAbsent);
  FrameSpec later_fragment;
  later_fragment.ip4_flags_fragment = 0x0003;
  later_fragment.payload.assign(8, 0);
  EXPECT_EQ(ChecksumOffsetOf(later_fragment), PacketLayers::kAbsent);

  // ICMP numbers in the other IP version, and a header too short to hold
  // the field, as no classifier reports them.
  PacketLayers layers;
  layers.l4_offset = 34;
  layers.payload_offset = 42;
  layers.is_ipv6 = true;
  layers.ip_proto = net::kProtoIcmp;
  EXPECT_EQ(net::L4ChecksumOffset(layers), PacketLayers::kAbsent);
  layers.is_ipv6 = false;
  layers.is_ipv4 = true;
  layers.ip_proto = net::kProtoIcmpv6;
  EXPECT_EQ(net::L4ChecksumOffset(layers), PacketLayers::kAbsent);
  layers.ip_proto = net::kProtoTcp;
  EXPECT_EQ(net::L4ChecksumOffset(layers), PacketLayers::kAbsent);
  layers.payload_offset = 34 + 18;
  EXPECT_EQ(net::L4ChecksumOffset(layers), 34u + 16);
  layers.payload_offset = PacketLayers::kAbsent;
  EXPECT_EQ(net::L4ChecksumOffset(layers), PacketLayers::kAbsent);
}

TEST(NetTest, ProtocolNumbersAreTheIanaOnes) {
  EXPECT_EQ(net::kProtoIcmp, 1);
  EXPECT_EQ(net::kProtoTcp, 6);
  EXPECT_EQ(net::kProtoUdp, 17);
  EXPECT_EQ(net::kProtoIpv6Frag, 44);
  EXPECT_EQ(net::kProtoAh, 51);
  EXPECT_EQ(net::kProtoIcmpv6, 58);
  EXPECT_EQ(ClassifierLayers(Build(FrameSpec{})).ip_proto, net::kProtoUdp);
}

}  // namespace
}  // namespace spinnic::handler_test
