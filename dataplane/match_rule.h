// A 5-tuple/ethertype wildcard rule deciding which passthrough packets an
// ECTX's handlers run on, optionally narrowed by a tcpdump filter
// expression. Compiled from config/gRPC text once (Compile*), its fields
// matched per packet with a handful of compares (Matches); the filter is
// compiled and run by the Ectx that owns the rule (Ectx::Matches,
// pcap_filter.h).
#ifndef SPINNIC_DATAPLANE_MATCH_RULE_H_
#define SPINNIC_DATAPLANE_MATCH_RULE_H_

#include <endian.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dataplane/classifier.h"
#include "dataplane/common/byte_order.h"

namespace spinnic {

// The top `bits` bits set, for 0 <= bits <= 64 (a shift by 64 is undefined).
inline uint64_t HighMask(uint32_t bits) {
  return bits == 0 ? 0 : ~uint64_t{0} << (64 - bits);
}

// `address` with every bit past the first `bits` (0..128) cleared.
inline std::array<uint8_t, 16> MaskedAddress(
    const std::array<uint8_t, 16>& address, uint32_t bits) {
  if (bits > 128) bits = 128;
  uint64_t hi = LoadBe64(address.data()) & HighMask(bits > 64 ? 64 : bits);
  uint64_t lo =
      LoadBe64(address.data() + 8) & HighMask(bits > 64 ? bits - 64 : 0);
  std::array<uint8_t, 16> out;
  StoreBe64(out.data(), hi);
  StoreBe64(out.data() + 8, lo);
  return out;
}

// An address prefix over the 16-byte form ParsedFrame uses (IPv4 mapped).
struct AddressPrefix {
  std::array<uint8_t, 16> address{};
  // Leading bits of the 16-byte `address` that must match, counted in that
  // 16-byte form: an IPv4 /8 is stored as 104 (96 + 8). 0 matches all.
  uint8_t length = 0;
  bool is_ipv4 = false;

  // "10.0.0.0/8", "10.1.2.3" (a /32), "fd00::/64", "fd00::1" (a /128).
  // INVALID_ARGUMENT says what is wrong, e.g. host bits set or length > 32.
  static absl::StatusOr<AddressPrefix> Parse(absl::string_view text);

  bool Contains(const std::array<uint8_t, 16>& candidate) const;
};

struct MatchRule {
  static constexpr uint64_t kAllPorts = ~uint64_t{0};

  uint64_t in_port_mask = kAllPorts;  // bit i: port id i
  uint16_t ethertype = 0;             // 0: any
  bool match_ip_proto = false;
  uint8_t ip_proto = 0;
  bool match_src = false;
  AddressPrefix src;
  bool match_dst = false;
  AddressPrefix dst;
  uint16_t src_port_first = 0, src_port_last = 0xffff;
  uint16_t dst_port_first = 0, dst_port_last = 0xffff;
  // A tcpdump expression the frame's bytes must also pass; empty: none.
  // Only its text lives here: Ectx::Create compiles it (it needs the EAL)
  // and Ectx::Matches runs it after the fields.
  std::string pcap_filter;

  // True when every set field matches; pcap_filter is not looked at
  // (Ectx::Matches runs it). A rule that names L4 ports never matches a
  // frame without TCP/UDP ports; a rule with an address prefix never
  // matches a frame of the other family or without L3.
  bool Matches(const ParsedFrame& frame, uint16_t in_port) const;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_MATCH_RULE_H_
