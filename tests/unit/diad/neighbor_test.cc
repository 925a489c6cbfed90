// Neighbour discovery for our own addresses (dataplane/neighbor.h): golden
// NS -> NA and ARP request -> reply exchanges in both directions, derived
// independently of the C++ code, every refusal reason, VLAN tags, and every
// prefix of every frame.
#include "dataplane/neighbor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/common/hex.h"

namespace spinnic {
namespace {

using testing_hex::FromHex;
using testing_hex::ToHex;

// The golden frames below are the output of this Python 3 script (standard
// library only), written from RFC 4861 / RFC 826 rather than from
// neighbor.cc. We are 02:00:00:00:00:01, fd00::1 and 10.0.0.1; the peer is
// 02:00:00:00:00:02, fd00::2 and 10.0.0.2.
//
//   import struct
//   def csum(d):
//       d += b'\0' * (len(d) % 2)
//       s = sum(struct.unpack('!%dH' % (len(d) // 2), d))
//       while s >> 16: s = (s & 0xffff) + (s >> 16)
//       return ~s & 0xffff
//   M1, M2 = bytes.fromhex('020000000001'), bytes.fromhex('020000000002')
//   A1 = bytes.fromhex('fd' + '00' * 14 + '01')
//   A2 = bytes.fromhex('fd' + '00' * 14 + '02')
//   def ip6(src, dst, payload):
//       return (struct.pack('!IHBB', 0x60000000, len(payload), 58, 255) +
//               src + dst + payload)
//   def icmp6(src, dst, msg):
//       c = csum(src + dst + struct.pack('!I3xB', len(msg), 58) + msg)
//       return msg[:2] + struct.pack('!H', c) + msg[4:]
//   def sn(a): return bytes.fromhex('ff0200000000000000000001ff') + a[13:]
//   def ns(smac, src, target, opt=True):
//       dst = sn(target)
//       msg = (struct.pack('!BBHI', 135, 0, 0, 0) + target +
//              (b'\x01\x01' + smac if opt else b''))
//       return (b'\x33\x33' + dst[12:] + smac + b'\x86\xdd' +
//               ip6(src, dst, icmp6(src, dst, msg)))
//   def na(smac, dmac, src, dst, target, flags):
//       msg = (struct.pack('!BBHB3x', 136, 0, 0, flags) + target +
//              b'\x02\x01' + smac)
//       return dmac + smac + b'\x86\xdd' + ip6(src, dst, icmp6(src, dst, msg))
//   ns(M2, A2, A1)                      # kNsFromPeer
//   na(M1, M2, A1, A2, A1, 0x60)        # kNaToPeer (S, O)
//   ns(M2, bytes(16), A1, opt=False)    # kDadNs
//   na(M1, bytes.fromhex('333300000001'), A1,
//      bytes.fromhex('ff02' + '00' * 13 + '01'), A1, 0x20)  # kDadNa (O)
//   ns(M1, A1, A2)                      # kNsFromUs
//   na(M2, M1, A2, A1, A2, 0x60)        # kNaFromPeer
//   V1, V2 = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
//   def arp(dmac, smac, op, sha, spa, tha, tpa):
//       return (dmac + smac + b'\x08\x06' +
//               struct.pack('!HHBBH', 1, 0x0800, 6, 4, op) +
//               sha + spa + tha + tpa)
//   arp(b'\xff' * 6, M2, 1, M2, V2, bytes(6), V1)  # kArpRequestFromPeer
//   arp(M2, M1, 2, M1, V1, M2, V2)                 # kArpReplyToPeer
//   arp(b'\xff' * 6, M1, 1, M1, V1, bytes(6), V2)  # kArpRequestFromUs
//   arp(M1, M2, 2, M2, V2, M1, V1)                 # kArpReplyFromPeer
const char kNsFromPeer[] =
    "3333ff00000102000000000286dd6000000000203afffd0000000000000000000000000000"
    "02ff0200000000000000000001ff00000187007d9700000000fd0000000000000000000000"
    "000000010101020000000002";
const char kNaToPeer[] =
    "02000000000202000000000186dd6000000000203afffd0000000000000000000000000000"
    "01fd00000000000000000000000000000288001c9c60000000fd0000000000000000000000"
    "000000010201020000000001";
const char kDadNs[] =
    "3333ff00000102000000000286dd6000000000183aff000000000000000000000000000000"
    "00ff0200000000000000000001ff00000187007da500000000fd0000000000000000000000"
    "00000001";
const char kDadNa[] =
    "33330000000102000000000186dd6000000000203afffd0000000000000000000000000000"
    "01ff02000000000000000000000000000188005a9b20000000fd0000000000000000000000"
    "000000010201020000000001";
const char kNsFromUs[] =
    "3333ff00000202000000000186dd6000000000203afffd0000000000000000000000000000"
    "01ff0200000000000000000001ff00000287007d9700000000fd0000000000000000000000"
    "000000020101020000000001";
const char kNaFromPeer[] =
    "02000000000102000000000286dd6000000000203afffd0000000000000000000000000000"
    "02fd00000000000000000000000000000188001c9a60000000fd0000000000000000000000"
    "000000020201020000000002";
const char kArpRequestFromPeer[] =
    "ffffffffffff020000000002080600010800060400010200000000020a0000020000000000"
    "000a000001";
const char kArpReplyToPeer[] =
    "020000000002020000000001080600010800060400020200000000010a0000010200000000"
    "020a000002";
const char kArpRequestFromUs[] =
    "ffffffffffff020000000001080600010800060400010200000000010a0000010000000000"
    "000a000002";
const char kArpReplyFromPeer[] =
    "020000000001020000000002080600010800060400020200000000020a0000020200000000"
    "010a000001";

const MacAddress kOurMac = {0x02, 0, 0, 0, 0, 1};
const MacAddress kPeerMac = {0x02, 0, 0, 0, 0, 2};
const Ipv6Address kOurIp6 = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
const Ipv6Address kOtherIp6 = {0xfd, 0, 0, 0, 0, 0, 0, 0,
                               0,    0, 0, 0, 0, 0, 0, 9};
const Ipv6Address kPeerIp6 = {0xfd, 0, 0, 0, 0, 0, 0, 0,
                              0,    0, 0, 0, 0, 0, 0, 2};
const Ipv4Address kOurIp4 = {10, 0, 0, 1};
const Ipv4Address kPeerIp4 = {10, 0, 0, 2};

// Two addresses of each family, ours second, so that the lookup walks.
const Ipv6Address kLocal6[] = {kOtherIp6, kOurIp6};
const Ipv4Address kLocal4[] = {{192, 0, 2, 7}, kOurIp4};

LocalAddresses Local() {
  LocalAddresses local;
  local.mac = kOurMac;
  local.ipv6 = kLocal6;
  local.ipv4 = kLocal4;
  return local;
}

struct Outcome {
  NeighborResult result;
  std::vector<uint8_t> reply;  // the first reply_length bytes
};

Outcome Handle(const std::vector<uint8_t>& frame,
               size_t reply_room = kMaxNeighborReplyBytes) {
  std::vector<uint8_t> copy(frame);  // exactly sized, for ASan
  std::vector<uint8_t> reply(reply_room, 0xee);
  Outcome out;
  out.result = HandleNeighborFrame(copy, Local(), reply);
  EXPECT_LE(out.result.reply_length, reply_room);
  if (out.result.verdict == NeighborVerdict::kAnswer) {
    out.reply.assign(reply.begin(), reply.begin() + out.result.reply_length);
  } else {
    EXPECT_EQ(out.result.reply_length, 0u);
    for (uint8_t b : reply) EXPECT_EQ(b, 0xee) << "reply written";
  }
  return out;
}

// Recomputes the ICMPv6 checksum of an untagged NS/NA (byte-by-byte
// reference), so that a mutation fails only the check it aims at.
void FixIcmpv6Checksum(std::vector<uint8_t>* frame) {
  std::vector<uint8_t>& f = *frame;
  const uint32_t length = f[18] << 8 | f[19];
  f[56] = f[57] = 0;
  uint32_t sum = length + 58;
  for (size_t i = 22; i < 54; i += 2) sum += f[i] << 8 | f[i + 1];
  for (size_t i = 0; i < length; i += 2) {
    sum += f[54 + i] << 8 | (i + 1 < length ? f[55 + i] : 0);
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  f[56] = static_cast<uint8_t>(~sum >> 8);
  f[57] = static_cast<uint8_t>(~sum);
}

std::vector<uint8_t> AddVlan(const std::vector<uint8_t>& frame, uint16_t tci) {
  std::vector<uint8_t> out(frame.begin(), frame.begin() + 12);
  out.push_back(0x81);
  out.push_back(0x00);
  out.push_back(static_cast<uint8_t>(tci >> 8));
  out.push_back(static_cast<uint8_t>(tci));
  out.insert(out.end(), frame.begin() + 12, frame.end());
  return out;
}

void ExpectMalformed(const std::vector<uint8_t>& frame, NeighborError error) {
  const Outcome out = Handle(frame);
  EXPECT_EQ(out.result.verdict, NeighborVerdict::kMalformed);
  EXPECT_EQ(out.result.error, error) << NeighborErrorName(out.result.error);
}

// ------------------------------------------------------------------ IPv6

TEST(NeighborTest, SolicitationForUsGetsGoldenAdvertisement) {
  const Outcome out = Handle(FromHex(kNsFromPeer));
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kAnswer);
  EXPECT_EQ(out.result.reply_length, 86u);
  EXPECT_EQ(ToHex(out.reply.data(), out.reply.size()), kNaToPeer);
}

TEST(NeighborTest, ReplyGoesToTheSourceLinkLayerOption) {
  // The option names 02:00:00:00:00:02; the frame comes from ...:77.
  std::vector<uint8_t> ns = FromHex(kNsFromPeer);
  ns[11] = 0x77;
  const Outcome out = Handle(ns);
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kAnswer);
  EXPECT_EQ(ToHex(out.reply.data(), out.reply.size()), kNaToPeer);
}

TEST(NeighborTest, UnicastSolicitationWithoutOption) {
  // Neighbour unreachability detection: to fd00::1 itself, no option; the
  // answer goes to the frame's source MAC.
  std::vector<uint8_t> ns = FromHex(kNsFromPeer);
  ns.resize(ns.size() - 8);
  ns[19] = 24;  // IPv6 payload length
  std::memcpy(ns.data() + 38, kOurIp6.data(), 16);
  std::memcpy(ns.data(), kOurMac.data(), 6);
  ns[11] = 0x55;
  FixIcmpv6Checksum(&ns);
  const Outcome out = Handle(ns);
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kAnswer);
  std::vector<uint8_t> expected = FromHex(kNaToPeer);
  expected[5] = 0x55;
  EXPECT_EQ(ToHex(out.reply.data(), out.reply.size()),
            ToHex(expected.data(), expected.size()));
}

TEST(NeighborTest, DuplicateAddressDetection) {
  const Outcome out = Handle(FromHex(kDadNs));
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kAnswer);
  EXPECT_EQ(ToHex(out.reply.data(), out.reply.size()), kDadNa);
}

TEST(NeighborTest, SolicitationForAnotherAddressIsNotForUs) {
  std::vector<uint8_t> ns = FromHex(kNsFromPeer);
  ns[54 + 8 + 15] = 0x42;  // target fd00::42, checksum now wrong too
  EXPECT_EQ(Handle(ns).result.verdict, NeighborVerdict::kNotForUs);
  EXPECT_EQ(Handle(FromHex(kNsFromUs)).result.verdict,
            NeighborVerdict::kNotForUs);
}

TEST(NeighborTest, MalformedSolicitations) {
  const std::vector<uint8_t> ns = FromHex(kNsFromPeer);
  std::vector<uint8_t> f = ns;
  f[21] = 254;  // hop limit: not in the checksum
  ExpectMalformed(f, NeighborError::kBadHopLimit);
  f = ns;
  f[21] = 1;
  ExpectMalformed(f, NeighborError::kBadHopLimit);
  f = ns;
  f[57] ^= 0x01;
  ExpectMalformed(f, NeighborError::kBadChecksum);
  f = ns;
  f[60] ^= 0x80;  // reserved bits are covered by the checksum
  ExpectMalformed(f, NeighborError::kBadChecksum);
  f = ns;
  f[55] = 1;
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadCode);
  f = ns;
  f[79] = 0;  // option length 0
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadOption);
  f = ns;
  f[79] = 2;  // option runs past the message
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadOption);
  f = ns;
  std::memcpy(f.data() + 22, kLocal6[0].data(), 16);
  f[22] = 0xff;  // multicast source
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadSource);
  f = ns;
  std::memcpy(f.data() + 38, kPeerIp6.data(), 16);  // to someone else
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadDestination);
  f = ns;
  f[80] = 0x03;  // source link-layer option names a multicast MAC
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadSource);
  // DAD with a source link-layer option.
  f = ns;
  std::memset(f.data() + 22, 0, 16);
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadSource);
  // DAD not to the solicited-node group.
  f = FromHex(kDadNs);
  std::memcpy(f.data() + 38, kOurIp6.data(), 16);
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadSource);
}

TEST(NeighborTest, TruncatedSolicitation) {
  // An ICMPv6 message of 20 bytes: the target is cut short.
  std::vector<uint8_t> f = FromHex(kDadNs);
  f.resize(f.size() - 4);
  f[19] = 20;
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kTruncated);
}

TEST(NeighborTest, ReplyBufferTooSmall) {
  const std::vector<uint8_t> ns = FromHex(kNsFromPeer);
  const Outcome out = Handle(ns, 85);
  EXPECT_EQ(out.result.verdict, NeighborVerdict::kMalformed);
  EXPECT_EQ(out.result.error, NeighborError::kNoRoom);
  EXPECT_EQ(Handle(ns, 86).result.verdict, NeighborVerdict::kAnswer);
  const std::vector<uint8_t> arp = FromHex(kArpRequestFromPeer);
  EXPECT_EQ(Handle(arp, 41).result.error, NeighborError::kNoRoom);
  EXPECT_EQ(Handle(arp, 42).result.verdict, NeighborVerdict::kAnswer);
}

TEST(NeighborTest, VlanTagsAreKept) {
  const std::vector<uint8_t> ns = AddVlan(FromHex(kNsFromPeer), 0x0064);
  const Outcome out = Handle(ns);
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kAnswer);
  const std::vector<uint8_t> expected = AddVlan(FromHex(kNaToPeer), 0x0064);
  EXPECT_EQ(ToHex(out.reply.data(), out.reply.size()),
            ToHex(expected.data(), expected.size()));
  // QinQ: the largest reply.
  const std::vector<uint8_t> qinq = AddVlan(ns, 0x000a);
  const Outcome out2 = Handle(qinq);
  ASSERT_EQ(out2.result.verdict, NeighborVerdict::kAnswer);
  EXPECT_EQ(out2.result.reply_length, kMaxNeighborReplyBytes);
  const std::vector<uint8_t> arp = AddVlan(FromHex(kArpRequestFromPeer), 7);
  const Outcome out3 = Handle(arp);
  ASSERT_EQ(out3.result.verdict, NeighborVerdict::kAnswer);
  const std::vector<uint8_t> arp_expected =
      AddVlan(FromHex(kArpReplyToPeer), 7);
  EXPECT_EQ(ToHex(out3.reply.data(), out3.reply.size()),
            ToHex(arp_expected.data(), arp_expected.size()));
}

TEST(NeighborTest, WeSolicitAndLearnTheAdvertisement) {
  uint8_t frame[kNeighborSolicitationBytes];
  ASSERT_EQ(BuildNeighborSolicitation(kOurMac, kOurIp6, kPeerIp6, frame),
            kNeighborSolicitationBytes);
  EXPECT_EQ(ToHex(frame, sizeof(frame)), kNsFromUs);
  // The peer's side of the same exchange builds the peer's golden NS.
  ASSERT_EQ(BuildNeighborSolicitation(kPeerMac, kPeerIp6, kOurIp6, frame),
            kNeighborSolicitationBytes);
  EXPECT_EQ(ToHex(frame, sizeof(frame)), kNsFromPeer);
  EXPECT_EQ(BuildNeighborSolicitation(kOurMac, kOurIp6, kPeerIp6,
                                      std::span<uint8_t>(frame, 85)),
            0u);

  const Outcome out = Handle(FromHex(kNaFromPeer));
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kLearned);
  EXPECT_EQ(out.result.ip, kPeerIp6);
  EXPECT_EQ(out.result.mac, kPeerMac);
  EXPECT_FALSE(out.result.is_ipv4);
}

TEST(NeighborTest, MalformedAdvertisements) {
  const std::vector<uint8_t> na = FromHex(kNaFromPeer);
  std::vector<uint8_t> f = na;
  f[21] = 64;
  ExpectMalformed(f, NeighborError::kBadHopLimit);
  f = na;
  f[57] ^= 0x10;
  ExpectMalformed(f, NeighborError::kBadChecksum);
  f = na;
  f[62] = 0xff;  // multicast target
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadTarget);
  f = na;
  std::memcpy(f.data() + 62, kOurIp6.data(), 16);  // claims our address
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kAddressConflict);
  f = na;
  f[78] = 1;  // a source, not a target, link-layer option
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kNoLinkLayer);
  f = na;
  f.resize(f.size() - 8);
  f[19] = 24;
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kNoLinkLayer);
  f = na;
  f[80] = 0x01;  // multicast MAC in the option
  FixIcmpv6Checksum(&f);
  ExpectMalformed(f, NeighborError::kBadSource);
}

// ------------------------------------------------------------------- ARP

TEST(NeighborTest, ArpRequestForUsGetsGoldenReply) {
  const Outcome out = Handle(FromHex(kArpRequestFromPeer));
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kAnswer);
  EXPECT_EQ(ToHex(out.reply.data(), out.reply.size()), kArpReplyToPeer);
  // Padded to 60 bytes on the wire: the same answer.
  std::vector<uint8_t> padded = FromHex(kArpRequestFromPeer);
  padded.resize(60, 0);
  const Outcome out2 = Handle(padded);
  ASSERT_EQ(out2.result.verdict, NeighborVerdict::kAnswer);
  EXPECT_EQ(ToHex(out2.reply.data(), out2.reply.size()), kArpReplyToPeer);
}

TEST(NeighborTest, WeRequestAndLearnTheArpReply) {
  uint8_t frame[kArpRequestBytes];
  ASSERT_EQ(BuildArpRequest(kOurMac, kOurIp4, kPeerIp4, frame),
            kArpRequestBytes);
  EXPECT_EQ(ToHex(frame, sizeof(frame)), kArpRequestFromUs);
  ASSERT_EQ(BuildArpRequest(kPeerMac, kPeerIp4, kOurIp4, frame),
            kArpRequestBytes);
  EXPECT_EQ(ToHex(frame, sizeof(frame)), kArpRequestFromPeer);
  EXPECT_EQ(BuildArpRequest(kOurMac, kOurIp4, kPeerIp4,
                            std::span<uint8_t>(frame, 41)),
            0u);

  const Outcome out = Handle(FromHex(kArpReplyFromPeer));
  ASSERT_EQ(out.result.verdict, NeighborVerdict::kLearned);
  const Ipv6Address mapped = {0, 0, 0,    0,    0,  0, 0, 0,
                              0, 0, 0xff, 0xff, 10, 0, 0, 2};
  EXPECT_EQ(out.result.ip, mapped);
  EXPECT_EQ(out.result.mac, kPeerMac);
  EXPECT_TRUE(out.result.is_ipv4);
}

TEST(NeighborTest, ArpNotForUsAndMalformed) {
  EXPECT_EQ(Handle(FromHex(kArpRequestFromUs)).result.verdict,
            NeighborVerdict::kNotForUs);
  const std::vector<uint8_t> req = FromHex(kArpRequestFromPeer);
  std::vector<uint8_t> f(req.begin(), req.end() - 1);
  ExpectMalformed(f, NeighborError::kTruncated);
  for (size_t at : {15, 17, 18, 19, 21}) {  // htype, ptype, hlen, plen, op
    f = req;
    f[at] ^= 0x04;
    ExpectMalformed(f, NeighborError::kBadArp);
  }
  f = req;
  f[22] = 0x01;  // multicast sender
  ExpectMalformed(f, NeighborError::kBadSource);
  f = FromHex(kArpReplyFromPeer);
  f[31] = 1;  // sender 10.0.0.1: someone claims our address
  ExpectMalformed(f, NeighborError::kAddressConflict);
}

// ----------------------------------------------------------------- other

TEST(NeighborTest, OtherFramesAreNotNeighbor) {
  // ICMPv6 echo request and an IPv6 UDP frame.
  std::vector<uint8_t> echo = FromHex(kNsFromPeer);
  echo[54] = 128;
  EXPECT_EQ(Handle(echo).result.verdict, NeighborVerdict::kNotNeighbor);
  std::vector<uint8_t> udp = FromHex(kNsFromPeer);
  udp[20] = 17;
  EXPECT_EQ(Handle(udp).result.verdict, NeighborVerdict::kNotNeighbor);
  std::vector<uint8_t> ipv4 = FromHex(kArpRequestFromPeer);
  ipv4[13] = 0x00;  // ethertype IPv4: a broken IPv4 header, not ARP
  EXPECT_EQ(Handle(ipv4).result.verdict, NeighborVerdict::kNotNeighbor);
  EXPECT_EQ(Handle({}).result.verdict, NeighborVerdict::kNotNeighbor);
}

TEST(NeighborTest, EveryPrefixOfEveryFrameIsSafe) {
  for (const char* hex : {kNsFromPeer, kNaToPeer, kDadNs, kDadNa, kNsFromUs,
                          kNaFromPeer, kArpRequestFromPeer, kArpReplyToPeer,
                          kArpRequestFromUs, kArpReplyFromPeer}) {
    const std::vector<uint8_t> frame = FromHex(hex);
    for (size_t n = 0; n < frame.size(); ++n) {
      const std::vector<uint8_t> prefix(frame.begin(), frame.begin() + n);
      const Outcome out = Handle(prefix);
      EXPECT_NE(out.result.verdict, NeighborVerdict::kAnswer) << hex << n;
      EXPECT_NE(out.result.verdict, NeighborVerdict::kLearned) << hex << n;
    }
  }
}

TEST(NeighborTest, SolicitedNodeAddress) {
  const Ipv6Address a = {0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,    0,
                         0,    0,    0,    0,    0xab, 0xcd, 0xef, 0x12};
  const Ipv6Address expected = {0xff, 0x02, 0, 0, 0,    0,    0,    0,
                                0,    0,    0, 1, 0xff, 0xcd, 0xef, 0x12};
  EXPECT_EQ(SolicitedNodeAddress(a), expected);
}

TEST(NeighborTest, Names) {
  std::set<std::string> names;
  for (int e = 0; e < static_cast<int>(NeighborError::kCount); ++e) {
    names.insert(NeighborErrorName(static_cast<NeighborError>(e)));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(NeighborError::kCount));
  EXPECT_EQ(names.count("unknown"), 0u);
  EXPECT_STREQ(NeighborVerdictName(NeighborVerdict::kAnswer), "answer");
  EXPECT_STREQ(NeighborVerdictName(static_cast<NeighborVerdict>(99)),
               "unknown");
}

}  // namespace
}  // namespace spinnic
