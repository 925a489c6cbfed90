// Fuzz target for ParseFrame and MatchRule::Matches: the input is one
// received frame. Besides "no crash, no out-of-bounds read", it checks
// properties that hold for every frame:
//   - every offset lies inside the frame, in L3 < L4 < payload order;
//   - a forwarded frame parses the same with extra trailing bytes (padding);
//   - a dropped frame is still dropped with its last byte cut off;
//   - Matches agrees with a slow bit-by-bit reference implementation;
//   - ParseFrame's fast path agrees with the general parser, and
//     PassthroughVerdict with ParseFrame's verdict.
// Seeds: tests/fuzz/corpus/classifier/ (tests/fuzz/gen_corpus.py).

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/common/byte_order.h"
#include "dataplane/match_rule.h"

namespace spinnic {
namespace {

constexpr uint16_t kAbsent = PacketLayers::kAbsent;

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

bool HasL3(const ParsedFrame& f) {
  return f.layers.is_ipv4 || f.layers.is_ipv6;
}

bool Same(const ParsedFrame& a, const ParsedFrame& b) {
  const PacketLayers& x = a.layers;
  const PacketLayers& y = b.layers;
  bool same = a.frame_class == b.frame_class &&
              a.drop_reason == b.drop_reason && x.l3_offset == y.l3_offset &&
              x.l4_offset == y.l4_offset &&
              x.payload_offset == y.payload_offset && x.l3_end == y.l3_end &&
              x.ethertype == y.ethertype && x.ip_proto == y.ip_proto &&
              x.vlan_tags == y.vlan_tags && x.is_ipv4 == y.is_ipv4 &&
              x.is_ipv6 == y.is_ipv6 && a.src_port == b.src_port &&
              a.dst_port == b.dst_port && a.has_l4_ports == b.has_l4_ports;
  if (same && HasL3(a)) {
    same = a.src_addr == b.src_addr && a.dst_addr == b.dst_addr;
  }
  return same;
}

void CheckInvariants(const ParsedFrame& f, const uint8_t* data, size_t size) {
  if (f.frame_class == FrameClass::kDrop) {
    FUZZ_CHECK(f.drop_reason == DropReason::kRunt ||
               f.drop_reason == DropReason::kTruncated);
    FUZZ_CHECK((f.drop_reason == DropReason::kRunt) == (size < 14));
    return;
  }
  FUZZ_CHECK(f.frame_class == FrameClass::kPassthrough);
  FUZZ_CHECK(f.drop_reason == DropReason::kCount);
  FUZZ_CHECK(size >= 14);
  FUZZ_CHECK(f.layers.vlan_tags <= 2);
  FUZZ_CHECK(!(f.layers.is_ipv4 && f.layers.is_ipv6));
  FUZZ_CHECK(HasL3(f) == (f.layers.l3_offset != kAbsent));
  if (HasL3(f)) {
    FUZZ_CHECK(f.layers.l3_offset == 14u + 4u * f.layers.vlan_tags);
    FUZZ_CHECK(f.layers.ethertype == (f.layers.is_ipv4 ? 0x0800 : 0x86dd));
    FUZZ_CHECK(f.layers.l3_offset + (f.layers.is_ipv4 ? 20u : 40u) <= size);
    if (f.layers.is_ipv4) {
      static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0,    0,
                                              0, 0, 0, 0, 0xff, 0xff};
      FUZZ_CHECK(std::memcmp(f.src_addr.data(), kMapped, 12) == 0);
      FUZZ_CHECK(std::memcmp(f.dst_addr.data(), kMapped, 12) == 0);
    }
  } else {
    FUZZ_CHECK(f.layers.ip_proto == 0);
  }
  if (f.layers.l4_offset == kAbsent) {
    FUZZ_CHECK(f.layers.payload_offset == kAbsent);
    FUZZ_CHECK(!f.has_l4_ports && f.src_port == 0 && f.dst_port == 0);
    return;
  }
  FUZZ_CHECK(HasL3(f));
  FUZZ_CHECK(f.layers.l4_offset > f.layers.l3_offset);
  FUZZ_CHECK(f.layers.payload_offset > f.layers.l4_offset);
  // The L4 header lies inside the IP datagram, never in Ethernet padding.
  const uint8_t* ip = data + f.layers.l3_offset;
  const size_t ip_end = f.layers.is_ipv4
                            ? f.layers.l3_offset + LoadBe16(ip + 2)
                            : f.layers.l3_offset + 40u + LoadBe16(ip + 4);
  FUZZ_CHECK(ip_end <= size);
  FUZZ_CHECK(f.layers.payload_offset <= ip_end);
  const uint8_t proto = f.layers.ip_proto;
  FUZZ_CHECK(proto == 6 || proto == 17 || proto == 1 || proto == 58);
  FUZZ_CHECK(f.has_l4_ports == (proto == 6 || proto == 17));
}

// The obvious implementation, bit by bit, for differential checking.
bool ReferenceContains(const AddressPrefix& p,
                       const std::array<uint8_t, 16>& a) {
  const int bits = p.length > 128 ? 128 : p.length;
  for (int i = 0; i < bits; ++i) {
    const uint8_t mask = static_cast<uint8_t>(0x80 >> (i % 8));
    if ((p.address[i / 8] & mask) != (a[i / 8] & mask)) return false;
  }
  return true;
}

bool ReferenceMatches(const MatchRule& r, const ParsedFrame& f,
                      uint16_t in_port) {
  if (f.frame_class == FrameClass::kDrop) return false;
  if (in_port >= 64) {
    if (r.in_port_mask != MatchRule::kAllPorts) return false;
  } else if (((r.in_port_mask >> in_port) & 1) == 0) {
    return false;
  }
  if (r.ethertype != 0 && r.ethertype != f.layers.ethertype) return false;
  if (r.match_ip_proto && (!HasL3(f) || f.layers.ip_proto != r.ip_proto)) {
    return false;
  }
  if (r.match_src && (!HasL3(f) || r.src.is_ipv4 != f.layers.is_ipv4 ||
                      !ReferenceContains(r.src, f.src_addr))) {
    return false;
  }
  if (r.match_dst && (!HasL3(f) || r.dst.is_ipv4 != f.layers.is_ipv4 ||
                      !ReferenceContains(r.dst, f.dst_addr))) {
    return false;
  }
  const bool any_src = r.src_port_first == 0 && r.src_port_last == 0xffff;
  const bool any_dst = r.dst_port_first == 0 && r.dst_port_last == 0xffff;
  if (any_src && any_dst) return true;
  if (!f.has_l4_ports) return false;
  return f.src_port >= r.src_port_first && f.src_port <= r.src_port_last &&
         f.dst_port >= r.dst_port_first && f.dst_port <= r.dst_port_last;
}

AddressPrefix MustParse(const char* text) {
  absl::StatusOr<AddressPrefix> p = AddressPrefix::Parse(text);
  FUZZ_CHECK(p.ok());
  return *p;
}

std::vector<MatchRule> FixedRules() {
  std::vector<MatchRule> rules;
  rules.emplace_back();  // matches every forwarded frame
  MatchRule r;
  r.ethertype = 0x0800;
  r.match_ip_proto = true;
  r.ip_proto = 17;
  r.match_dst = true;
  r.dst = MustParse("10.0.0.0/8");
  r.dst_port_first = r.dst_port_last = 4791;
  rules.push_back(r);
  r = MatchRule{};
  r.match_src = true;
  r.src = MustParse("fd00::/8");
  r.in_port_mask = 0x5;
  rules.push_back(r);
  r = MatchRule{};
  r.match_dst = true;
  r.dst = MustParse("0.0.0.0/0");
  r.src_port_first = 1024;
  rules.push_back(r);
  r = MatchRule{};
  r.match_ip_proto = true;
  r.ip_proto = 58;
  r.in_port_mask = uint64_t{1} << 63 | 1;
  rules.push_back(r);
  return rules;
}

}  // namespace
}  // namespace spinnic

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spinnic;  // NOLINT(build/namespaces): entry point only
  if (size > 0xffffffffu) return 0;
  static const std::vector<MatchRule> kRules = FixedRules();
  const uint32_t length = static_cast<uint32_t>(size);

  ParsedFrame frame;
  ParseFrame(data, length, &frame);
  CheckInvariants(frame, data, size);
  // ParseFrame's inline fast path (plain IPv4 TCP/UDP, IPv6 UDP) gives
  // exactly what the general parser gives.
  ParsedFrame general;
  classifier_internal::ParseFrameGeneral(data, length, &general);
  FUZZ_CHECK(Same(frame, general));
  // The HPU's forwarding burst decides with PassthroughVerdict alone.
  FUZZ_CHECK(PassthroughVerdict(data, length) ==
             (frame.frame_class == FrameClass::kDrop ? frame.drop_reason
                                                     : DropReason::kCount));

  if (frame.frame_class == FrameClass::kPassthrough) {
    // Trailing bytes past what the parser used must not change anything.
    std::vector<uint8_t> padded(data, data + size);
    padded.resize(size + 17, 0xa5);
    ParsedFrame again;
    ParseFrame(padded.data(), static_cast<uint32_t>(padded.size()), &again);
    FUZZ_CHECK(Same(frame, again));
  } else if (size > 0) {
    ParsedFrame shorter;
    ParseFrame(data, length - 1, &shorter);
    FUZZ_CHECK(shorter.frame_class == FrameClass::kDrop);
  }

  // In-port ids past 63 matter (they only match unrestricted masks).
  const uint16_t in_port =
      size == 0 ? 0 : static_cast<uint16_t>(data[size - 1] % 72);
  for (const MatchRule& rule : kRules) {
    FUZZ_CHECK(rule.Matches(frame, in_port) ==
               ReferenceMatches(rule, frame, in_port));
  }
  if (HasL3(frame) && frame.frame_class == FrameClass::kPassthrough) {
    // A rule around the frame's own source address, at a length taken from
    // the input, exercises every prefix length against real addresses.
    MatchRule own;
    own.match_src = true;
    own.src.is_ipv4 = frame.layers.is_ipv4;
    own.src.address = frame.src_addr;
    own.src.length = data[size / 2];  // 129..255 act as 128
    FUZZ_CHECK(own.Matches(frame, in_port));
    own.src.address[15] ^= 1;
    FUZZ_CHECK(own.Matches(frame, in_port) ==
               ReferenceMatches(own, frame, in_port));
    own.match_dst = true;
    own.dst = own.src;
    FUZZ_CHECK(own.Matches(frame, in_port) ==
               ReferenceMatches(own, frame, in_port));
  }
  return 0;
}
