// Neighbour discovery for the appliance's own addresses, so that stock Linux
// hosts and peers can reach it: IPv6 Neighbor Solicitation -> Advertisement
// (RFC 4861) and IPv4 ARP request -> reply (RFC 826), plus the builders of
// the solicitations/requests we send to resolve a peer and the parsers that
// learn (ip, mac) from the answers. Pure functions over bytes (no DPDK), no
// allocation: the caller passes the reply buffer. Fuzzed by
// tests/fuzz/neighbor_fuzz.cc; docs/diad.md ("Neighbour discovery").
//
// The HPU calls HandleNeighborFrame() for every frame addressed to the
// appliance (or broadcast/multicast) before the transports:
//
//   NeighborResult r = HandleNeighborFrame(bytes, parsed, local, reply_buf);
//   switch (r.verdict) {
//     case NeighborVerdict::kNotNeighbor: ...  // go on classifying
//     case NeighborVerdict::kNotForUs: ...     // pass through untouched
//     case NeighborVerdict::kAnswer:           // send reply_buf[0, length)
//     case NeighborVerdict::kLearned: ...      // r.ip / r.mac into the table
//     case NeighborVerdict::kMalformed:        // ++drops[r.error]
//   }
//
// Replies are not padded to the 60-byte Ethernet minimum (the NIC pads, as
// for the kernel's 42-byte ARP replies). Replies keep the request's VLAN
// tags (up to two, as the classifier parses them); the builders send
// untagged frames.
#ifndef SPINNIC_DATAPLANE_NEIGHBOR_H_
#define SPINNIC_DATAPLANE_NEIGHBOR_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "dataplane/classifier.h"

namespace spinnic {

using MacAddress = std::array<uint8_t, 6>;
using Ipv4Address = std::array<uint8_t, 4>;
using Ipv6Address = std::array<uint8_t, 16>;

enum class NeighborVerdict : uint8_t {
  kNotNeighbor = 0,  // not ARP, not an NS/NA: classify it further
  kNotForUs,         // an NS / ARP request for an address that is not ours
  kAnswer,           // a reply is in the caller's buffer: send it back
  kLearned,          // an NA / ARP reply: NeighborResult::ip/mac learned
  kMalformed,        // refused: NeighborResult::error says why
};

// Why a neighbour frame was refused (kMalformed); counted by reason.
enum class NeighborError : uint8_t {
  kNone = 0,
  kTruncated,        // ARP body / NS / NA shorter than its fixed part
  kBadHopLimit,      // NS/NA with an IPv6 hop limit other than 255
  kBadCode,          // ICMPv6 code not 0
  kBadChecksum,      // ICMPv6 checksum wrong
  kBadOption,        // an option of length 0 or running past the message
  kBadTarget,        // multicast target address
  kBadSource,        // NS from :: with a source link-layer option, to a
                     // destination that is not the solicited-node address,
                     // or from/to a multicast link-layer address
  kBadDestination,   // NS to neither the target nor its solicited-node group
  kNoLinkLayer,      // NA without a target link-layer address option
  kBadArp,           // ARP not Ethernet/IPv4 (htype, ptype, hlen, plen) or an
                     // operation other than request/reply
  kAddressConflict,  // an NA / ARP reply claims one of our own addresses
  kNoRoom,           // the reply buffer is too small for the answer
                     // (kMaxNeighborReplyBytes always suffices)
  kCount,
};

const char* NeighborVerdictName(NeighborVerdict verdict);
const char* NeighborErrorName(NeighborError error);

// The appliance's addresses on one port.
struct LocalAddresses {
  MacAddress mac{};
  std::span<const Ipv6Address> ipv6;
  std::span<const Ipv4Address> ipv4;
};

struct NeighborResult {
  NeighborVerdict verdict = NeighborVerdict::kNotNeighbor;
  NeighborError error = NeighborError::kNone;  // kMalformed only
  uint32_t reply_length = 0;                   // kAnswer: bytes written
  // kLearned: the peer's address (IPv4 as IPv4-mapped IPv6, ::ffff:a.b.c.d,
  // as in ParsedFrame) and link-layer address.
  Ipv6Address ip{};
  MacAddress mac{};
  bool is_ipv4 = false;  // kLearned from ARP
};

// Reply buffers must hold this much: a Neighbor Advertisement behind two
// VLAN tags (22 + 40 + 32 bytes); an ARP reply needs at most 50.
inline constexpr size_t kMaxNeighborReplyBytes = 94;
// Frames the builders write (untagged).
inline constexpr size_t kNeighborSolicitationBytes = 86;
inline constexpr size_t kArpRequestBytes = 42;

// Classifies `frame` (parsed by ParseFrame into `parsed`) as ARP or NS/NA
// and, for an NS or ARP request for one of `local`'s addresses, writes the
// answer into `reply` (an NS from :: -- duplicate address detection -- is
// answered to ff02::1 with the S flag clear). NAs and ARP replies from
// anyone are kLearned: the caller keeps only the peers it resolves. Checks
// run in this order, the first failure wins. NS/NA: length, target (an NS
// for another address is kNotForUs), hop limit, code, checksum, options,
// then for an NA the target (multicast, ours), the option's presence and
// address, for an NS the source/destination rules and the reply's room.
// ARP: length, htype/ptype/hlen/plen/operation, target (requests), sender
// address, conflict (replies), the reply's room. Never
// reads outside `frame` or writes outside `reply`; `reply` is untouched
// unless the verdict is kAnswer. `frame` and `reply` must not overlap.
NeighborResult HandleNeighborFrame(std::span<const uint8_t> frame,
                                   const ParsedFrame& parsed,
                                   const LocalAddresses& local,
                                   std::span<uint8_t> reply);
// The same, parsing the frame first.
NeighborResult HandleNeighborFrame(std::span<const uint8_t> frame,
                                   const LocalAddresses& local,
                                   std::span<uint8_t> reply);

// ff02::1:ffXX:XXXX for `target` (RFC 4291 2.7.1).
Ipv6Address SolicitedNodeAddress(const Ipv6Address& target);

// A multicast Neighbor Solicitation for `target` from `src_ip` (ours) and
// `src_mac`: to the solicited-node group (Ethernet 33:33:ff:XX:XX:XX), hop
// limit 255, with our source link-layer address option. Returns the frame
// length (kNeighborSolicitationBytes), or 0 when `out` is too small.
uint32_t BuildNeighborSolicitation(const MacAddress& src_mac,
                                   const Ipv6Address& src_ip,
                                   const Ipv6Address& target,
                                   std::span<uint8_t> out);

// A broadcast ARP request for `target` from `src_ip` / `src_mac`. Returns
// the frame length (kArpRequestBytes), or 0 when `out` is too small.
uint32_t BuildArpRequest(const MacAddress& src_mac, const Ipv4Address& src_ip,
                         const Ipv4Address& target, std::span<uint8_t> out);

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_NEIGHBOR_H_
