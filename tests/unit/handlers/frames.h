// Builds real Ethernet / VLAN / IPv4 / IPv6 / UDP / TCP / ICMP / ICMPv6 frames
// with correct checksums for handler tests, and checks the checksums of the
// frames that handlers produce. Deliberately shares no code with the handlers:
// expected frames are built from scratch (full checksum computation), so a
// handler's incremental checksum update is checked against an independent
// result. The builder itself is pinned to golden bytes in testing_test.cc.
#ifndef SPINNIC_TESTS_UNIT_HANDLERS_FRAMES_H_
#define SPINNIC_TESTS_UNIT_HANDLERS_FRAMES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/classifier.h"
#include "gtest/gtest.h"
#include "handlers/api/packet.h"

namespace spinnic::test_frames {

using Mac = std::array<uint8_t, 6>;
using Ipv4Address = std::array<uint8_t, 4>;
using Ipv6Address = std::array<uint8_t, 16>;

enum class L4 : uint8_t {
  kNone,  // IP with `raw_proto` and `payload` right after the IP header
  kUdp,
  kTcp,
  kIcmp,  // ICMP over IPv4, ICMPv6 over IPv6 (echo layout)
};

struct FrameSpec {
  Mac dst_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  Mac src_mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  // TCIs, outer first. With two tags the outer TPID is 0x88a8 (QinQ).
  std::vector<uint16_t> vlan_tcis;
  // Set for a non-IP frame: this ethertype, then `payload`.
  std::optional<uint16_t> non_ip_ethertype;

  bool ipv6 = false;
  Ipv4Address src_ip4 = {192, 0, 2, 1};
  Ipv4Address dst_ip4 = {198, 51, 100, 7};
  Ipv6Address src_ip6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                         0,    0,    0,    0,    0, 0, 0, 0x01};
  Ipv6Address dst_ip6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0x02,
                         0,    0,    0,    0,    0, 0, 0, 0x07};
  uint8_t ttl = 64;
  uint16_t ip_id = 0x1c46;
  uint16_t ip4_flags_fragment = 0x4000;  // DF
  std::vector<uint8_t> ip4_options;      // a multiple of 4 bytes
  // When set, an IPv6 fragment header with this offset/M word is inserted.
  std::optional<uint16_t> ip6_fragment;

  L4 l4 = L4::kUdp;
  uint8_t raw_proto = 47;  // for L4::kNone
  uint16_t src_port = 40000;
  uint16_t dst_port = 7;
  uint32_t tcp_seq = 0x01020304;
  uint32_t tcp_ack = 0xa0b0c0d0;
  uint8_t tcp_flags = 0x18;  // PSH ACK
  uint16_t tcp_window = 0xfaf0;
  std::vector<uint8_t> tcp_options;  // a multiple of 4 bytes
  uint8_t icmp_type = 8;             // echo request; 128 for ICMPv6
  uint8_t icmp_code = 0;
  uint16_t icmp_id = 0x4d2;
  uint16_t icmp_seq = 1;
  bool udp_zero_checksum = false;

  std::vector<uint8_t> payload;
  // Zero padding after the IP datagram up to this frame length (60 is the
  // Ethernet minimum without FCS).
  size_t pad_to = 0;
};

inline void Put16(std::vector<uint8_t>& out, uint16_t value) {
  out.push_back(static_cast<uint8_t>(value >> 8));
  out.push_back(static_cast<uint8_t>(value));
}
inline void Put32(std::vector<uint8_t>& out, uint32_t value) {
  Put16(out, static_cast<uint16_t>(value >> 16));
  Put16(out, static_cast<uint16_t>(value));
}
inline void Append(std::vector<uint8_t>& out, std::span<const uint8_t> bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}
inline uint16_t Get16(std::span<const uint8_t> bytes, size_t at) {
  return static_cast<uint16_t>(bytes[at] << 8 | bytes[at + 1]);
}
inline void Set16(std::span<uint8_t> bytes, size_t at, uint16_t value) {
  bytes[at] = static_cast<uint8_t>(value >> 8);
  bytes[at + 1] = static_cast<uint8_t>(value);
}

// RFC 1071 one's complement sum of big-endian 16-bit words, folded; `sum`
// carries a partial sum (e.g. of a pseudo-header) in.
inline uint16_t OnesComplementSum(std::span<const uint8_t> bytes,
                                  uint32_t sum = 0) {
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) sum += Get16(bytes, i);
  if (bytes.size() % 2 != 0) sum += uint32_t{bytes.back()} << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}
inline uint16_t InternetChecksum(std::span<const uint8_t> bytes,
                                 uint32_t sum = 0) {
  return static_cast<uint16_t>(~OnesComplementSum(bytes, sum));
}

// Sum of the TCP/UDP/ICMPv6 pseudo-header.
inline uint32_t PseudoHeaderSum(const FrameSpec& spec, uint8_t proto,
                                uint32_t l4_length) {
  std::vector<uint8_t> pseudo;
  if (spec.ipv6) {
    Append(pseudo, spec.src_ip6);
    Append(pseudo, spec.dst_ip6);
    Put32(pseudo, l4_length);
    Put32(pseudo, proto);
  } else {
    Append(pseudo, spec.src_ip4);
    Append(pseudo, spec.dst_ip4);
    Put16(pseudo, proto);
    Put16(pseudo, static_cast<uint16_t>(l4_length));
  }
  return OnesComplementSum(pseudo);
}

inline uint8_t ProtoOf(const FrameSpec& spec) {
  switch (spec.l4) {
    case L4::kUdp:
      return 17;
    case L4::kTcp:
      return 6;
    case L4::kIcmp:
      return spec.ipv6 ? 58 : 1;
    case L4::kNone:
      break;
  }
  return spec.raw_proto;
}

// The L4 segment (header and payload) with its checksum filled in.
inline std::vector<uint8_t> BuildL4(const FrameSpec& spec) {
  std::vector<uint8_t> l4;
  size_t checksum_at = 0;
  bool pseudo = true;
  switch (spec.l4) {
    case L4::kNone:
      return spec.payload;
    case L4::kUdp:
      Put16(l4, spec.src_port);
      Put16(l4, spec.dst_port);
      Put16(l4, static_cast<uint16_t>(8 + spec.payload.size()));
      Put16(l4, 0);
      checksum_at = 6;
      break;
    case L4::kTcp:
      Put16(l4, spec.src_port);
      Put16(l4, spec.dst_port);
      Put32(l4, spec.tcp_seq);
      Put32(l4, spec.tcp_ack);
      l4.push_back(
          static_cast<uint8_t>((5 + spec.tcp_options.size() / 4) << 4));
      l4.push_back(spec.tcp_flags);
      Put16(l4, spec.tcp_window);
      Put16(l4, 0);  // checksum
      Put16(l4, 0);  // urgent pointer
      Append(l4, spec.tcp_options);
      checksum_at = 16;
      break;
    case L4::kIcmp:
      l4.push_back(spec.icmp_type);
      l4.push_back(spec.icmp_code);
      Put16(l4, 0);
      Put16(l4, spec.icmp_id);
      Put16(l4, spec.icmp_seq);
      checksum_at = 2;
      pseudo = spec.ipv6;
      break;
  }
  Append(l4, spec.payload);
  uint32_t initial = pseudo ? PseudoHeaderSum(spec, ProtoOf(spec),
                                              static_cast<uint32_t>(l4.size()))
                            : 0;
  uint16_t checksum = InternetChecksum(l4, initial);
  if (spec.l4 == L4::kUdp) {
    if (spec.udp_zero_checksum) {
      checksum = 0;
    } else if (checksum == 0) {
      checksum = 0xffff;
    }
  }
  Set16(l4, checksum_at, checksum);
  return l4;
}

inline std::vector<uint8_t> Build(const FrameSpec& spec) {
  std::vector<uint8_t> frame;
  Append(frame, spec.dst_mac);
  Append(frame, spec.src_mac);
  for (size_t i = 0; i < spec.vlan_tcis.size(); ++i) {
    Put16(frame, spec.vlan_tcis.size() == 2 && i == 0 ? 0x88a8 : 0x8100);
    Put16(frame, spec.vlan_tcis[i]);
  }
  if (spec.non_ip_ethertype.has_value()) {
    Put16(frame, *spec.non_ip_ethertype);
    Append(frame, spec.payload);
  } else if (spec.ipv6) {
    Put16(frame, 0x86dd);
    std::vector<uint8_t> l4 = BuildL4(spec);
    size_t ext = spec.ip6_fragment.has_value() ? 8 : 0;
    Put32(frame, 0x60000000);
    Put16(frame, static_cast<uint16_t>(ext + l4.size()));
    frame.push_back(ext != 0 ? 44 : ProtoOf(spec));
    frame.push_back(spec.ttl);
    Append(frame, spec.src_ip6);
    Append(frame, spec.dst_ip6);
    if (spec.ip6_fragment.has_value()) {
      frame.push_back(ProtoOf(spec));
      frame.push_back(0);
      Put16(frame, *spec.ip6_fragment);
      Put32(frame, 0xdecafbad);
    }
    Append(frame, l4);
  } else {
    Put16(frame, 0x0800);
    std::vector<uint8_t> l4 = BuildL4(spec);
    std::vector<uint8_t> ip;
    size_t header_length = 20 + spec.ip4_options.size();
    ip.push_back(static_cast<uint8_t>(0x40 | header_length / 4));
    ip.push_back(0);
    Put16(ip, static_cast<uint16_t>(header_length + l4.size()));
    Put16(ip, spec.ip_id);
    Put16(ip, spec.ip4_flags_fragment);
    ip.push_back(spec.ttl);
    ip.push_back(ProtoOf(spec));
    Put16(ip, 0);
    Append(ip, spec.src_ip4);
    Append(ip, spec.dst_ip4);
    Append(ip, spec.ip4_options);
    Set16(ip, 10, InternetChecksum(ip));
    Append(frame, ip);
    Append(frame, l4);
  }
  if (frame.size() < spec.pad_to) frame.resize(spec.pad_to, 0);
  return frame;
}

// What a ping-pong responder should send back for `spec`.
inline FrameSpec Reflected(FrameSpec spec) {
  std::swap(spec.src_mac, spec.dst_mac);
  if (spec.non_ip_ethertype.has_value()) return spec;
  std::swap(spec.src_ip4, spec.dst_ip4);
  std::swap(spec.src_ip6, spec.dst_ip6);
  if (spec.l4 == L4::kUdp || spec.l4 == L4::kTcp) {
    std::swap(spec.src_port, spec.dst_port);
  }
  if (spec.l4 == L4::kIcmp) {
    if (!spec.ipv6 && spec.icmp_type == 8) spec.icmp_type = 0;
    if (spec.ipv6 && spec.icmp_type == 128) spec.icmp_type = 129;
  }
  return spec;
}

inline std::vector<uint8_t> XorBytes(std::vector<uint8_t> bytes,
                                     std::span<const uint8_t> key) {
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] ^= key[i % key.size()];
  return bytes;
}

// Layers as the dataplane's classifier reports them. Fails the test if the
// classifier would not hand the frame to a handler.
inline PacketLayers ClassifierLayers(std::span<const uint8_t> frame) {
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  EXPECT_EQ(parsed.frame_class, FrameClass::kPassthrough)
      << "the classifier drops this test frame: "
      << DropReasonName(parsed.drop_reason);
  return parsed.layers;
}

// Checks every checksum in `frame` from scratch: the IPv4 header checksum and
// the TCP/UDP/ICMP/ICMPv6 checksum over the whole segment (as the IP length
// gives it, so padding is left out). A UDP checksum of 0 over IPv4 passes.
// Not for fragments: their L4 checksum covers bytes the frame lacks.
inline ::testing::AssertionResult ChecksumsValid(
    std::span<const uint8_t> frame) {
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  if (parsed.frame_class != FrameClass::kPassthrough) {
    return ::testing::AssertionFailure() << "classifier drops the frame";
  }
  const PacketLayers& layers = parsed.layers;
  if (!layers.is_ipv4 && !layers.is_ipv6) {
    return ::testing::AssertionSuccess() << "no IP, nothing to check";
  }
  const size_t l3 = layers.l3_offset;
  size_t ip_end = 0;
  std::vector<uint8_t> pseudo;
  if (layers.is_ipv4) {
    size_t header_length = (frame[l3] & 0x0f) * 4u;
    uint16_t sum = OnesComplementSum(frame.subspan(l3, header_length));
    if (sum != 0xffff) {
      return ::testing::AssertionFailure()
             << "IPv4 header checksum is off: header sums to 0x" << std::hex
             << sum;
    }
    ip_end = l3 + Get16(frame, l3 + 2);
    Append(pseudo, frame.subspan(l3 + 12, 8));
  } else {
    ip_end = l3 + 40 + Get16(frame, l3 + 4);
    Append(pseudo, frame.subspan(l3 + 8, 32));
  }
  if (layers.l4_offset == PacketLayers::kAbsent) {
    return ::testing::AssertionSuccess() << "no L4 header";
  }
  const size_t l4 = layers.l4_offset;
  const uint32_t l4_length = static_cast<uint32_t>(ip_end - l4);
  const uint8_t proto = layers.ip_proto;
  if (proto == 17 && layers.is_ipv4 && Get16(frame, l4 + 6) == 0) {
    return ::testing::AssertionSuccess() << "UDP without checksum";
  }
  if (layers.is_ipv4) {
    Put16(pseudo, proto);
    Put16(pseudo, static_cast<uint16_t>(l4_length));
  } else {
    Put32(pseudo, l4_length);
    Put32(pseudo, proto);
  }
  uint32_t initial = proto == 1 ? 0 : OnesComplementSum(pseudo);
  uint16_t sum = OnesComplementSum(frame.subspan(l4, l4_length), initial);
  if (sum != 0xffff) {
    return ::testing::AssertionFailure()
           << "L4 (protocol " << int{proto} << ") checksum is off: sums to 0x"
           << std::hex << sum;
  }
  return ::testing::AssertionSuccess();
}

// Hex dump for readable failure messages on byte-exact compares.
inline std::string Hex(std::span<const uint8_t> bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    absl::StrAppend(&out, i % 16 == 0 && i != 0 ? "\n" : " ",
                    absl::Hex(bytes[i], absl::kZeroPad2));
  }
  return out;
}

}  // namespace spinnic::test_frames

#endif  // SPINNIC_TESTS_UNIT_HANDLERS_FRAMES_H_
