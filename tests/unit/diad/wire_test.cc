// The DiAD wire format (dataplane/diad/wire.h): golden bytes derived
// independently of the C++ code, header round trips, one frame per parse
// error, every prefix and every bit flip of a valid frame, the checksum
// against a byte-by-byte reference, serial-number arithmetic.
#include "dataplane/diad/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/common/hex.h"

namespace spinnic::diad {
namespace {

using testing_hex::FromHex;
using testing_hex::ToHex;

Endpoint MakeEndpoint(uint8_t last) {
  Endpoint e;
  e.mac = {0x02, 0, 0, 0, 0, last};
  e.ip = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, last};
  return e;
}

const Endpoint kSrc = MakeEndpoint(1);
const Endpoint kDst = MakeEndpoint(2);

// The expected frame was computed by this Python 3 script (standard library
// only), which follows docs/diad.md rather than wire.cc; its output is
// pasted below. The flow label is the 20-bit hash documented in wire.cc.
//
//   import struct
//   def csum(d):
//       d += b'\0' * (len(d) % 2)
//       s = sum(struct.unpack('!%dH' % (len(d) // 2), d))
//       while s >> 16: s = (s & 0xffff) + (s >> 16)
//       return ~s & 0xffff
//   def flow(c):
//       h = ((c + 1) * 0x9e3779b1) & 0xffffffff; h ^= h >> 15
//       h = (h * 0x85ebca6b) & 0xffffffff; h ^= h >> 13
//       return (h & 0xfffff) or 1
//   M1, M2 = bytes.fromhex('020000000001'), bytes.fromhex('020000000002')
//   A1 = bytes.fromhex('fd' + '00' * 14 + '01')
//   A2 = bytes.fromhex('fd' + '00' * 14 + '02')
//   ch, payload = 5, b'hello world'
//   hdr = struct.pack('!BBHIIIIIIQIIHBB', 0x12, 0x07, ch, 0x11223344,
//                     0x55667788, 0x01020304, 0x0a0b0c0d, 0xdeadbeef,
//                     0xcafef00d, 0x0123456789abcdef, 100, 89,
//                     len(payload), 0, 0)
//   ulen = 8 + 48 + len(payload)
//   udp = struct.pack('!HHHH', 0xc000 + ch, 4792, ulen, 0) + hdr + payload
//   c = csum(A1 + A2 + struct.pack('!I3xB', ulen, 17) + udp) or 0xffff
//   udp = udp[:6] + struct.pack('!H', c) + udp[8:]
//   ip = struct.pack('!IHBB', 6 << 28 | flow(ch), ulen, 17, 64) + A1 + A2
//   print((M2 + M1 + b'\x86\xdd' + ip + udp).hex())
const char kGoldenWriteRequest[] =
    "02000000000202000000000186dd"                              // Ethernet
    "6000eff100431140fd000000000000000000000000000001"          // IPv6
    "fd000000000000000000000000000002"                          //
    "c00512b800436bc0"                                          // UDP
    "120700051122334455667788010203040a0b0c0ddeadbeefcafef00d"  // DiAD
    "0123456789abcdef0000006400000059000b0000"                  //
    "68656c6c6f20776f726c64";                                   // payload

Header GoldenHeader() {
  Header h;
  h.type = PacketType::kWriteRequest;
  h.flags = kFlagFirst | kFlagLast | kFlagAckNow;
  h.channel = 5;
  h.src_epoch = 0x11223344;
  h.dst_epoch = 0x55667788;
  h.seq = 0x01020304;
  h.ack = 0x0a0b0c0d;
  h.txn = 0xdeadbeef;
  h.key = 0xcafef00d;
  h.address = 0x0123456789abcdefull;
  h.msg_length = 100;
  h.msg_offset = 89;
  h.payload_length = 999;  // BuildFrame sets it from the payload
  h.status = Status::kOk;
  return h;
}

const uint8_t kHello[] = {'h', 'e', 'l', 'l', 'o', ' ',
                          'w', 'o', 'r', 'l', 'd'};

std::vector<uint8_t> Build(const Header& h, std::span<const uint8_t> payload,
                           uint16_t port = kDefaultUdpPort) {
  std::vector<uint8_t> frame(kFrameOverhead + payload.size());
  const uint32_t n = BuildFrame(kSrc, kDst, port, h, payload, frame.data());
  EXPECT_EQ(n, frame.size());
  return frame;
}

ParseError Parse(const std::vector<uint8_t>& frame, Header* h = nullptr,
                 uint32_t* payload_offset = nullptr) {
  Header scratch;
  uint32_t offset = 0;
  // An exactly sized heap copy, so that ASan sees the frame's end.
  std::vector<uint8_t> copy(frame);
  return ParseFrame(copy.data(), static_cast<uint32_t>(copy.size()),
                    kEthernetBytes, kEthernetBytes + kIpv6Bytes,
                    h ? h : &scratch,
                    payload_offset ? payload_offset : &offset);
}

// A byte-by-byte reference for the UDP checksum (RFC 1071 as written).
uint16_t ReferenceUdpChecksum(const std::vector<uint8_t>& frame) {
  const size_t udp = kEthernetBytes + kIpv6Bytes;
  const uint32_t udp_length = frame[udp + 4] << 8 | frame[udp + 5];
  std::vector<uint8_t> data(frame.begin() + kEthernetBytes + 8,
                            frame.begin() + kEthernetBytes + 40);
  data.push_back(0);
  data.push_back(0);
  data.push_back(static_cast<uint8_t>(udp_length >> 8));
  data.push_back(static_cast<uint8_t>(udp_length));
  data.push_back(0);
  data.push_back(0);
  data.push_back(0);
  data.push_back(17);
  data.insert(data.end(), frame.begin() + udp,
              frame.begin() + udp + udp_length);
  data[40 + 6] = data[40 + 7] = 0;
  if (data.size() % 2) data.push_back(0);
  uint32_t sum = 0;
  for (size_t i = 0; i < data.size(); i += 2) {
    sum += data[i] << 8 | data[i + 1];
  }
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  const uint16_t c = static_cast<uint16_t>(~sum);
  return c == 0 ? 0xffff : c;
}

void ExpectSameHeader(const Header& a, const Header& b) {
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.channel, b.channel);
  EXPECT_EQ(a.src_epoch, b.src_epoch);
  EXPECT_EQ(a.dst_epoch, b.dst_epoch);
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.ack, b.ack);
  EXPECT_EQ(a.txn, b.txn);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.address, b.address);
  EXPECT_EQ(a.msg_length, b.msg_length);
  EXPECT_EQ(a.msg_offset, b.msg_offset);
  EXPECT_EQ(a.payload_length, b.payload_length);
  EXPECT_EQ(a.status, b.status);
}

TEST(WireTest, GoldenWriteRequest) {
  const std::vector<uint8_t> frame = Build(GoldenHeader(), kHello);
  EXPECT_EQ(ToHex(frame.data(), frame.size()), kGoldenWriteRequest);
}

// SELECTIVE recovery's frames (docs/diad.md, "Selective repeat"), computed
// by the script above with this frame() in place of its last lines:
//
//   def frame(vt, flags, seq, ack, txn, key, payload, ch=5):
//       hdr = struct.pack('!BBHIIIIIIQIIHBB', vt, flags, ch, 0x11223344,
//                         0x55667788, seq, ack, txn, key, 0, len(payload),
//                         0, len(payload), 0, 0)
//       (then ulen, udp, c, ip and the print as above)
//   # ACK with SACK: ack 256; 258, 259 and 265 held
//   frame(0x16, 0x10, 0x40, 0x100, 0, 0x5341434b, bytes([0x30, 0x40]))
//   # probe reply with SACK, echoing the UNACK's seq 0x120 in txn
//   frame(0x16, 0x18, 0x40, 0x100, 0x120, 0x5341434b, bytes([0x20]))
//   # UNACK advertising SELECTIVE (key "SACK"), seq = its next_seq
//   frame(0x18, 0x00, 0x120, 0x40, 0, 0x5341434b, b'')
const char kGoldenSack[] =
    "02000000000202000000000186dd"                              // Ethernet
    "6000eff1003a1140fd000000000000000000000000000001"          // IPv6
    "fd000000000000000000000000000002"                          //
    "c00512b8003a433d"                                          // UDP
    "1610000511223344556677880000004000000100000000005341434b"  // DiAD
    "00000000000000000000000200000000000200"                    //
    "00"                                                        //
    "3040";                                                     // bitmap
const char kGoldenProbeReplySack[] =
    "02000000000202000000000186dd"
    "6000eff100391140fd000000000000000000000000000001"
    "fd000000000000000000000000000002"
    "c00512b800395259"
    "1618000511223344556677880000004000000100000001205341434b"
    "0000000000000000000000010000000000010000"
    "20";
const char kGoldenUnackAdvert[] =
    "02000000000202000000000186dd"
    "6000eff100381140fd000000000000000000000000000001"
    "fd000000000000000000000000000002"
    "c00512b800387175"
    "1800000511223344556677880000012000000040000000005341434b"
    "0000000000000000000000000000000000000000";

Header SelectiveHeader(PacketType type, uint8_t flags, uint32_t seq,
                       uint32_t ack, uint32_t txn, uint32_t msg_length) {
  Header h;
  h.type = type;
  h.flags = flags;
  h.channel = 5;
  h.src_epoch = 0x11223344;
  h.dst_epoch = 0x55667788;
  h.seq = seq;
  h.ack = ack;
  h.txn = txn;
  h.key = kSackCapable;
  h.msg_length = msg_length;
  return h;
}

TEST(WireTest, GoldenSelectiveFrames) {
  const uint8_t sack[] = {0x30, 0x40};
  const uint8_t probe[] = {0x20};
  struct Case {
    Header h;
    std::span<const uint8_t> payload;
    const char* golden;
  } cases[] = {
      {SelectiveHeader(PacketType::kAck, kFlagSack, 0x40, 0x100, 0, 2), sack,
       kGoldenSack},
      {SelectiveHeader(PacketType::kAck, kFlagSack | kFlagProbeReply, 0x40,
                       0x100, 0x120, 1),
       probe, kGoldenProbeReplySack},
      {SelectiveHeader(PacketType::kUnack, 0, 0x120, 0x40, 0, 0),
       {},
       kGoldenUnackAdvert},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.golden);
    const std::vector<uint8_t> frame = Build(c.h, c.payload);
    EXPECT_EQ(ToHex(frame.data(), frame.size()), c.golden);
    Header parsed;
    uint32_t payload_offset = 0;
    ASSERT_EQ(Parse(FromHex(c.golden), &parsed, &payload_offset),
              ParseError::kNone);
    Header expected = c.h;
    expected.payload_length = static_cast<uint16_t>(c.payload.size());
    ExpectSameHeader(parsed, expected);
    EXPECT_EQ(payload_offset, kFrameOverhead);
  }
}

TEST(WireTest, SackRules) {
  const uint8_t bitmap[2] = {0x30, 0x40};
  Header h = SelectiveHeader(PacketType::kAck, kFlagSack, 0, 7, 0, 2);
  EXPECT_EQ(Parse(Build(h, bitmap)), ParseError::kNone);
  // SACK only on an ACK, and only with its bitmap.
  Header no_bitmap = h;
  no_bitmap.msg_length = 0;
  EXPECT_EQ(Parse(Build(no_bitmap, {})), ParseError::kBadFlags);
  for (PacketType type : {PacketType::kNack, PacketType::kUnack,
                          PacketType::kStream, PacketType::kWriteRequest}) {
    Header other = h;
    other.type = type;
    EXPECT_EQ(Parse(Build(other, bitmap)), ParseError::kBadFlags);
  }
  // The bitmap is described one way: msg_length = its length, offset 0.
  Header bad = h;
  bad.msg_length = 3;
  EXPECT_EQ(Parse(Build(bad, bitmap)), ParseError::kBadLength);
  bad = h;
  bad.msg_offset = 1;
  EXPECT_EQ(Parse(Build(bad, bitmap)), ParseError::kBadLength);
  // At most kMaxSackBytes (a 32768-packet window).
  std::vector<uint8_t> big(kMaxSackBytes + 1, 0);
  bad = h;
  bad.msg_length = kMaxSackBytes + 1;
  EXPECT_EQ(Parse(Build(bad, big)), ParseError::kBadLength);
  big.resize(kMaxSackBytes);
  bad.msg_length = kMaxSackBytes;
  EXPECT_EQ(Parse(Build(bad, big)), ParseError::kNone);
  // An ACK without the flag still carries no payload.
  Header plain = h;
  plain.flags = 0;
  EXPECT_EQ(Parse(Build(plain, bitmap)), ParseError::kBadLength);
}

TEST(WireTest, GoldenParses) {
  const std::vector<uint8_t> frame = FromHex(kGoldenWriteRequest);
  Header h;
  uint32_t payload_offset = 0;
  ASSERT_EQ(Parse(frame, &h, &payload_offset), ParseError::kNone);
  Header expected = GoldenHeader();
  expected.payload_length = sizeof(kHello);
  ExpectSameHeader(h, expected);
  EXPECT_EQ(payload_offset, kFrameOverhead);
  EXPECT_EQ(std::memcmp(frame.data() + payload_offset, kHello, sizeof(kHello)),
            0);
  EXPECT_TRUE(h.first());
  EXPECT_TRUE(h.last());
}

TEST(WireTest, BuildFrameLeavesPayloadInPlaceAndRefusesOversize) {
  std::vector<uint8_t> frame(kFrameOverhead + sizeof(kHello));
  std::memcpy(frame.data() + kFrameOverhead, kHello, sizeof(kHello));
  const uint32_t n = BuildFrame(
      kSrc, kDst, kDefaultUdpPort, GoldenHeader(),
      std::span<const uint8_t>(frame.data() + kFrameOverhead, sizeof(kHello)),
      frame.data());
  EXPECT_EQ(n, frame.size());
  EXPECT_EQ(ToHex(frame.data(), frame.size()), kGoldenWriteRequest);

  std::vector<uint8_t> big(kMaxPayloadBytes + 1);
  std::vector<uint8_t> out(kFrameOverhead + big.size(), 0xaa);
  Header h = GoldenHeader();
  h.msg_length = static_cast<uint32_t>(big.size());
  h.msg_offset = 0;
  EXPECT_EQ(BuildFrame(kSrc, kDst, kDefaultUdpPort, h, big, out.data()), 0u);
  EXPECT_EQ(out[0], 0xaa);  // nothing written
  big.pop_back();
  h.msg_length = static_cast<uint32_t>(big.size());
  ASSERT_EQ(BuildFrame(kSrc, kDst, kDefaultUdpPort, h, big, out.data()),
            kFrameOverhead + kMaxPayloadBytes);
  out.pop_back();
  EXPECT_EQ(Parse(out), ParseError::kNone);

  h.channel = kMaxChannels;
  EXPECT_EQ(BuildFrame(kSrc, kDst, kDefaultUdpPort, h, {}, out.data()), 0u);
}

TEST(WireTest, FlowLabelDependsOnlyOnChannel) {
  Header h;
  h.type = PacketType::kAck;
  std::set<uint32_t> labels;
  for (uint16_t channel = 0; channel < 64; ++channel) {
    h.channel = channel;
    h.seq = channel * 7;
    std::vector<uint8_t> a = Build(h, {});
    h.seq += 1;
    h.ack = 99;
    std::vector<uint8_t> b = Build(h, {});
    const uint32_t label_a = (a[14] & 0x0f) << 16 | a[15] << 8 | a[16];
    const uint32_t label_b = (b[14] & 0x0f) << 16 | b[15] << 8 | b[16];
    EXPECT_EQ(label_a, label_b);
    EXPECT_NE(label_a, 0u);
    EXPECT_EQ(a[14] >> 4, 6);
    labels.insert(label_a);
  }
  EXPECT_EQ(labels.size(), 64u);  // channels spread over ECMP paths
}

TEST(WireTest, StoreLoadRoundTrip) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 10000; ++i) {
    Header h;
    h.type = static_cast<PacketType>(1 + rng() % kMaxPacketType);
    h.flags = static_cast<uint8_t>(rng());
    h.channel = static_cast<uint16_t>(rng());
    h.src_epoch = static_cast<uint32_t>(rng());
    h.dst_epoch = static_cast<uint32_t>(rng());
    h.seq = static_cast<uint32_t>(rng());
    h.ack = static_cast<uint32_t>(rng());
    h.txn = static_cast<uint32_t>(rng());
    h.key = static_cast<uint32_t>(rng());
    h.address = rng();
    h.msg_length = static_cast<uint32_t>(rng());
    h.msg_offset = static_cast<uint32_t>(rng());
    h.payload_length = static_cast<uint16_t>(rng());
    h.status = static_cast<Status>(rng());
    uint8_t bytes[kHeaderBytes];
    std::memset(bytes, 0xee, sizeof(bytes));
    StoreHeader(h, bytes);
    EXPECT_EQ(bytes[0] >> 4, kVersion);
    EXPECT_EQ(bytes[47], 0);
    Header back;
    LoadHeader(bytes, &back);
    ExpectSameHeader(back, h);
  }
}

TEST(WireTest, StoreHeaderIsBigEndianAtDocumentedOffsets) {
  uint8_t bytes[kHeaderBytes];
  StoreHeader(GoldenHeader(), bytes);
  const std::vector<uint8_t> golden = FromHex(kGoldenWriteRequest);
  // Only payload_length differs from the golden frame's header.
  EXPECT_EQ(ToHex(bytes, 44), ToHex(golden.data() + 62, 44));
  EXPECT_EQ(bytes[44], 999 >> 8);
  EXPECT_EQ(bytes[45], 999 & 0xff);
}

TEST(WireTest, ChecksumMatchesReferenceForEveryLength) {
  std::mt19937_64 rng(7);
  for (size_t n = 0; n < 300; ++n) {
    std::vector<uint8_t> payload(n);
    for (uint8_t& b : payload) b = static_cast<uint8_t>(rng());
    if (n % 3 == 0) std::fill(payload.begin(), payload.end(), 0xff);
    Header h;
    h.type = PacketType::kStream;
    h.channel = static_cast<uint16_t>(rng() % kMaxChannels);
    h.msg_length = static_cast<uint32_t>(n);
    h.address = rng();
    std::vector<uint8_t> frame = Build(h, payload);
    const uint16_t got = frame[60] << 8 | frame[61];
    EXPECT_EQ(got, ReferenceUdpChecksum(frame)) << "payload " << n;
    EXPECT_EQ(Parse(frame), ParseError::kNone) << "payload " << n;
  }
}

// ------------------------------------------------------------ parse errors

// An ACK without payload: the smallest valid frame.
Header MinimalAck() {
  Header h;
  h.type = PacketType::kAck;
  h.channel = 3;
  h.src_epoch = 1;
  h.ack = 10;
  return h;
}

// Rewrites header byte `at` (0..47) of `frame` and fixes the checksum, so
// that only the header check can fail.
std::vector<uint8_t> WithHeaderByte(std::vector<uint8_t> frame, size_t at,
                                    uint8_t value) {
  frame[kEthernetBytes + kIpv6Bytes + kUdpBytes + at] = value;
  SetUdpChecksum(frame.data(), static_cast<uint32_t>(frame.size()));
  return frame;
}

TEST(WireTest, MinimalFrameParses) {
  const std::vector<uint8_t> frame = Build(MinimalAck(), {});
  EXPECT_EQ(frame.size(), kFrameOverhead);
  Header h;
  uint32_t payload_offset = 0;
  EXPECT_EQ(Parse(frame, &h, &payload_offset), ParseError::kNone);
  EXPECT_EQ(payload_offset, frame.size());
  EXPECT_EQ(h.type, PacketType::kAck);
  EXPECT_EQ(h.ack, 10u);
}

TEST(WireTest, Truncated) {
  std::vector<uint8_t> frame = Build(MinimalAck(), {});
  std::vector<uint8_t> short_frame(frame.begin(), frame.end() - 1);
  EXPECT_EQ(Parse(short_frame), ParseError::kTruncated);
  // UDP length one past the frame (and the IPv6 payload length).
  std::vector<uint8_t> f = frame;
  f[59] += 1;
  EXPECT_EQ(Parse(f), ParseError::kTruncated);
  // UDP length within the frame but past the IPv6 payload length.
  f = frame;
  f.push_back(0);
  f[59] += 1;
  EXPECT_EQ(Parse(f), ParseError::kTruncated);
  // IPv6 payload length past the frame.
  f = frame;
  f[19] += 1;
  EXPECT_EQ(Parse(f), ParseError::kTruncated);
  // UDP length below a DiAD header.
  f = frame;
  f[59] -= 1;
  EXPECT_EQ(Parse(f), ParseError::kTruncated);
  // Offsets that make no room for the IPv6 header, or overflow.
  Header h;
  uint32_t offset;
  EXPECT_EQ(ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), 14,
                       53, &h, &offset),
            ParseError::kTruncated);
  EXPECT_EQ(ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()),
                       0xfffffff0u, 0xffffffffu, &h, &offset),
            ParseError::kTruncated);
}

TEST(WireTest, TrailingPaddingIsAllowed) {
  std::vector<uint8_t> frame = Build(MinimalAck(), {});
  frame.resize(frame.size() + 4, 0);  // Ethernet padding past the IPv6 end
  EXPECT_EQ(Parse(frame), ParseError::kNone);
}

TEST(WireTest, BadChecksum) {
  std::vector<uint8_t> frame = Build(MinimalAck(), {});
  std::vector<uint8_t> f = frame;
  f[61] ^= 1;
  EXPECT_EQ(Parse(f), ParseError::kBadChecksum);
  f = frame;
  f[60] = f[61] = 0;  // IPv6 forbids "no checksum"
  EXPECT_EQ(Parse(f), ParseError::kBadChecksum);
}

TEST(WireTest, ChecksumZeroIsSentAsFfff) {
  // Find a frame whose checksum computes to 0 by varying the ack field: the
  // field must then read 0xffff and the frame must parse.
  Header h = MinimalAck();
  for (uint32_t ack = 0; ack < 0x20000; ++ack) {
    h.ack = ack;
    std::vector<uint8_t> frame = Build(h, {});
    if (frame[60] == 0xff && frame[61] == 0xff) {
      EXPECT_EQ(Parse(frame), ParseError::kNone);
      return;
    }
  }
  FAIL() << "no frame with checksum 0xffff found";
}

TEST(WireTest, BadVersion) {
  const std::vector<uint8_t> frame = Build(MinimalAck(), {});
  EXPECT_EQ(Parse(WithHeaderByte(frame, 0, 0x26)), ParseError::kBadVersion);
  EXPECT_EQ(Parse(WithHeaderByte(frame, 0, 0x06)), ParseError::kBadVersion);
}

TEST(WireTest, BadType) {
  const std::vector<uint8_t> frame = Build(MinimalAck(), {});
  EXPECT_EQ(Parse(WithHeaderByte(frame, 0, 0x10)), ParseError::kBadType);
  for (uint8_t type = kMaxPacketType + 1; type < 16; ++type) {
    EXPECT_EQ(Parse(WithHeaderByte(frame, 0, 0x10 | type)),
              ParseError::kBadType);
  }
}

TEST(WireTest, BadFlags) {
  const std::vector<uint8_t> ack = Build(MinimalAck(), {});
  EXPECT_EQ(Parse(WithHeaderByte(ack, 1, 0x10)), ParseError::kBadFlags);
  EXPECT_EQ(Parse(WithHeaderByte(ack, 1, 0x80)), ParseError::kBadFlags);
  EXPECT_EQ(Parse(WithHeaderByte(ack, 1, kFlagFirst)), ParseError::kBadFlags);
  EXPECT_EQ(Parse(WithHeaderByte(ack, 1, kFlagLast)), ParseError::kBadFlags);
  EXPECT_EQ(Parse(WithHeaderByte(ack, 1, kFlagProbeReply)), ParseError::kNone);
  EXPECT_EQ(Parse(WithHeaderByte(ack, 1, kFlagAckNow)), ParseError::kNone);
  Header h = MinimalAck();
  h.type = PacketType::kStream;
  h.msg_length = 4;
  const uint8_t data[4] = {1, 2, 3, 4};
  const std::vector<uint8_t> stream = Build(h, data);
  EXPECT_EQ(Parse(WithHeaderByte(stream, 1, kFlagFirst | kFlagLast)),
            ParseError::kNone);
  EXPECT_EQ(Parse(WithHeaderByte(stream, 1, kFlagProbeReply)),
            ParseError::kBadFlags);
  h.type = PacketType::kNack;
  h.msg_length = 0;
  EXPECT_EQ(Parse(WithHeaderByte(Build(h, {}), 1, kFlagFirst)),
            ParseError::kBadFlags);
}

TEST(WireTest, BadReserved) {
  const std::vector<uint8_t> frame = Build(MinimalAck(), {});
  EXPECT_EQ(Parse(WithHeaderByte(frame, 47, 1)), ParseError::kBadReserved);
}

TEST(WireTest, BadLength) {
  Header h = MinimalAck();
  h.type = PacketType::kWriteRequest;
  h.msg_length = 4;
  const uint8_t data[4] = {1, 2, 3, 4};
  const std::vector<uint8_t> frame = Build(h, data);
  ASSERT_EQ(Parse(frame), ParseError::kNone);
  // payload_length disagrees with the UDP length.
  EXPECT_EQ(Parse(WithHeaderByte(frame, 45, 3)), ParseError::kBadLength);
  EXPECT_EQ(Parse(WithHeaderByte(frame, 45, 5)), ParseError::kBadLength);
  // msg_offset + payload_length > msg_length.
  EXPECT_EQ(Parse(WithHeaderByte(frame, 43, 1)), ParseError::kBadLength);
  EXPECT_EQ(Parse(WithHeaderByte(frame, 39, 3)), ParseError::kBadLength);
  // ... also where 32-bit arithmetic would wrap: offset 0xfffffffe + 4.
  std::vector<uint8_t> wrap = frame;
  for (size_t at = 40; at < 44; ++at) wrap[62 + at] = 0xff;
  wrap[62 + 43] = 0xfe;
  for (size_t at = 36; at < 40; ++at) wrap[62 + at] = 0xff;
  SetUdpChecksum(wrap.data(), static_cast<uint32_t>(wrap.size()));
  EXPECT_EQ(Parse(wrap), ParseError::kBadLength);
  // A payload on every type that carries none.
  for (PacketType type :
       {PacketType::kAck, PacketType::kNack, PacketType::kUnack,
        PacketType::kReadRequest, PacketType::kWriteResponse}) {
    Header c = h;
    c.type = type;
    c.flags = 0;
    EXPECT_EQ(Parse(Build(c, data)), ParseError::kBadLength)
        << PacketTypeName(type);
    EXPECT_EQ(Parse(Build(c, {})), ParseError::kNone) << PacketTypeName(type);
  }
  for (PacketType type : {PacketType::kWriteRequest, PacketType::kReadResponse,
                          PacketType::kStream}) {
    Header c = h;
    c.type = type;
    EXPECT_EQ(Parse(Build(c, data)), ParseError::kNone) << PacketTypeName(type);
  }
}

TEST(WireTest, ChannelMismatch) {
  const std::vector<uint8_t> frame = Build(MinimalAck(), {});
  std::vector<uint8_t> f = frame;
  f[55] += 1;  // source port 0xc004 for channel 3
  SetUdpChecksum(f.data(), static_cast<uint32_t>(f.size()));
  EXPECT_EQ(Parse(f), ParseError::kChannelMismatch);
  // Channel kMaxChannels with the matching source port is still refused.
  f = WithHeaderByte(frame, 2, kMaxChannels >> 8);
  f = WithHeaderByte(f, 3, kMaxChannels & 0xff);
  f[54] = (kChannelPortBase + kMaxChannels) >> 8;
  f[55] = (kChannelPortBase + kMaxChannels) & 0xff;
  SetUdpChecksum(f.data(), static_cast<uint32_t>(f.size()));
  EXPECT_EQ(Parse(f), ParseError::kChannelMismatch);
}

TEST(WireTest, FirstFailureWins) {
  // Bad version, type, flags and reserved at once: the version is reported.
  std::vector<uint8_t> frame = Build(MinimalAck(), {});
  frame = WithHeaderByte(frame, 1, 0xff);
  frame = WithHeaderByte(frame, 47, 0xff);
  EXPECT_EQ(Parse(WithHeaderByte(frame, 0, 0x2f)), ParseError::kBadVersion);
  EXPECT_EQ(Parse(WithHeaderByte(frame, 0, 0x1f)), ParseError::kBadType);
  EXPECT_EQ(Parse(frame), ParseError::kBadFlags);
  // A bad checksum hides everything behind it.
  frame[61] ^= 0x40;
  EXPECT_EQ(Parse(frame), ParseError::kBadChecksum);
}

TEST(WireTest, EveryPrefixIsRefused) {
  const std::vector<uint8_t> golden = FromHex(kGoldenWriteRequest);
  for (size_t n = 0; n < golden.size(); ++n) {
    std::vector<uint8_t> prefix(golden.begin(), golden.begin() + n);
    // The IPv6 header must be in the prefix for the offsets to make sense,
    // but ParseFrame must cope either way.
    EXPECT_NE(Parse(prefix), ParseError::kNone) << "prefix " << n;
  }
}

TEST(WireTest, EveryBitFlipIsDetected) {
  const std::vector<uint8_t> golden = FromHex(kGoldenWriteRequest);
  const size_t udp = kEthernetBytes + kIpv6Bytes;
  for (size_t at = kEthernetBytes + 4; at < golden.size(); ++at) {
    // Traffic class, flow label, next header and hop limit are the
    // classifier's business; payload length and addresses are covered.
    if (at == kEthernetBytes + 6 || at == kEthernetBytes + 7) continue;
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> f = golden;
      f[at] ^= static_cast<uint8_t>(1 << bit);
      const ParseError e = Parse(f);
      const bool length_field =
          (at >= kEthernetBytes + 4 && at < kEthernetBytes + 6) ||
          (at >= udp + 4 && at < udp + 6);
      if (length_field) {
        EXPECT_NE(e, ParseError::kNone) << "byte " << at << " bit " << bit;
      } else {
        EXPECT_EQ(e, ParseError::kBadChecksum)
            << "byte " << at << " bit " << bit;
      }
    }
  }
}

TEST(WireTest, Names) {
  std::set<std::string> names;
  for (int t = 1; t <= kMaxPacketType; ++t) {
    names.insert(PacketTypeName(static_cast<PacketType>(t)));
  }
  EXPECT_EQ(names.size(), kMaxPacketType);
  EXPECT_STREQ(PacketTypeName(static_cast<PacketType>(0)), "unknown");
  names.clear();
  for (int e = 0; e < static_cast<int>(ParseError::kCount); ++e) {
    names.insert(ParseErrorName(static_cast<ParseError>(e)));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(ParseError::kCount));
  EXPECT_EQ(names.count("unknown"), 0u);
  EXPECT_STREQ(ParseErrorName(ParseError::kCount), "unknown");
  EXPECT_STREQ(StatusName(Status::kPeerDown), "peer_down");
  EXPECT_STREQ(StatusName(static_cast<Status>(0x7f)), "unknown");
}

TEST(WireTest, SequenceArithmeticWrapsAround) {
  EXPECT_EQ(SeqDiff(5, 3), 2);
  EXPECT_EQ(SeqDiff(3, 5), -2);
  EXPECT_EQ(SeqDiff(0, 0xffffffffu), 1);
  EXPECT_EQ(SeqDiff(0xffffffffu, 0), -1);
  EXPECT_EQ(SeqDiff(2, 0xfffffffeu), 4);
  EXPECT_TRUE(SeqBefore(0xfffffff0u, 0x10));
  EXPECT_FALSE(SeqBefore(0x10, 0xfffffff0u));
  EXPECT_FALSE(SeqBefore(7, 7));
  EXPECT_TRUE(SeqBefore(0x7ffffffeu, 0x7fffffffu));
  EXPECT_TRUE(SeqBefore(0x7fffffffu, 0x80000000u));
  EXPECT_EQ(SeqDiff(0x80000000u, 0), INT32_MIN);
  // Half the space away is "before" by the int32 convention.
  EXPECT_TRUE(SeqBefore(0x80000000u, 0));
}

}  // namespace
}  // namespace spinnic::diad
