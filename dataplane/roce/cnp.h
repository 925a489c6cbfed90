// RoCEv2 Congestion Notification Packets (CNP, IBA annex A17.9): what a
// receiver sends back to the sender of CE-marked packets so that its DCQCN
// reaction point (dcqcn.h) slows down. docs/congestion.md.
//
// A CNP is an Ethernet / IP / UDP 4791 frame whose UDP payload is
//   BTH (12 bytes): opcode 0x81, SE/M/Pad/TVer 0, P_Key, FECN 0 and BECN 1,
//                   DestQP = the QP whose packets were marked (the sender's
//                   QP: the CNP travels back to it), AckReq 0, PSN 0;
//   16 reserved bytes, zero;
//   ICRC (4 bytes), computed as for every RoCEv2 packet (icrc.h).
// (Layout as in NVIDIA's "RoCEv2 CNP packet format example" and scapy's
// contrib/roce.py `cnp()`; the byte-exact example is tests/unit/roce/
// cnp_test.cc.) The UDP checksum is 0, as every RoCE NIC sends it.
//
// Opcode 0x81 is deliberately not in the opcode table (ib_types.h), so
// ParseFrame refuses a CNP as kBadOpcode and no RC state machine ever sees
// one; ParseCnp is the way in. Pure functions over bytes, like wire.h.
#ifndef SPINNIC_DATAPLANE_ROCE_CNP_H_
#define SPINNIC_DATAPLANE_ROCE_CNP_H_

#include <array>
#include <cstdint>

#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/wire.h"

namespace spinnic::roce {

inline constexpr uint8_t kCnpOpcode = 0x81;
inline constexpr uint32_t kCnpReservedBytes = 16;
// BTH, reserved bytes, ICRC: the UDP payload of every CNP.
inline constexpr uint32_t kCnpUdpPayloadBytes =
    kBthBytes + kCnpReservedBytes + kIcrcBytes;

// The whole frame: 14 (+4 with VLAN) + 20 or 40 + 8 + 32 bytes; 0 for an IP
// version other than 4 and 6.
uint32_t CnpFrameBytes(uint8_t ip_version, bool vlan = false);

// Writes the CNP for `dest_qp` (24 bits) into `frame`: addresses, VLAN,
// traffic class, TTL/hop limit, IPv4 id and UDP source port from `params`
// (its ipv6_udp_checksum is ignored: CNPs carry 0). Returns the frame
// length, or 0 (nothing meaningful written) when `capacity` is too small or
// the IP version is not 4 or 6.
uint32_t BuildCnp(const FrameParams& params, uint32_t dest_qp, uint8_t* frame,
                  uint32_t capacity, uint16_t pkey = kDefaultPkey);

// Cheap test for a receive path that already found UDP port 4791 at
// `udp_offset`: is the BTH opcode the CNP's? (ParseCnp checks the rest.)
inline bool LooksLikeCnp(const uint8_t* frame, uint32_t length,
                         uint32_t udp_offset) {
  return length > udp_offset + kUdpBytes &&
         frame[udp_offset + kUdpBytes] == kCnpOpcode;
}

// What a checked CNP says.
struct Cnp {
  uint32_t dest_qp = 0;  // the QP to slow down (ours, when it came to us)
  uint16_t pkey = 0;
  bool becn = false;
  uint8_t ip_version = 0;
  std::array<uint8_t, 16> src_ip{};  // IPv4 as ::ffff:a.b.c.d
  std::array<uint8_t, 16> dst_ip{};
  uint16_t src_port = 0;
};

// Checks a received CNP completely: the IP header (version, no options or
// fragments, the IPv4 checksum, UDP, lengths within the frame), the UDP
// header (length, port 4791, a nonzero checksum verified), a UDP payload of
// exactly kCnpUdpPayloadBytes, BTH opcode 0x81 and TVer 0, and last the
// ICRC. Returns kNone and fills `out`, or the first failure, named as
// ParseFrame names it (wire.h): kBadOpcode means "not a CNP",
// kUnexpectedPayload a CNP of the wrong size. Reserved bits and bytes are
// not checked (receivers ignore them). Like ParseFrame, the frame is
// writable only for the ICRC's in-place masking and is byte-identical
// afterwards; nothing outside [frame, frame + length) is touched.
ParseError ParseCnp(uint8_t* frame, uint32_t length, uint32_t ip_offset,
                    uint32_t udp_offset, Cnp* out);

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_CNP_H_
