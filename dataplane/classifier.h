// Frame parsing and classification: the first thing an HPU does with a
// received frame. Pure functions over bytes (no DPDK), so that they are unit
// tested against golden frames and fuzzed (tests/fuzz/classifier_fuzz.cc).
#ifndef SPINNIC_DATAPLANE_CLASSIFIER_H_
#define SPINNIC_DATAPLANE_CLASSIFIER_H_

#include <array>
#include <cstdint>

#include "handlers/api/packet.h"

namespace spinnic {

// Why a frame is not forwarded. Every drop in the dataplane has one of these
// reasons and a counter (see hpu.h, docs/counters.md); names in
// DropReasonName().
enum class DropReason : uint8_t {
  kRunt = 0,        // shorter than an Ethernet header
  kTruncated,       // an IP/L4 header or IP length runs past the frame end
  kOversize,        // larger than the egress port's MTU allows
  kMultiSegment,    // a handler needed it contiguous and it could not be
  kHandlerDrop,     // a handler dropped it (DROP or FAIL)
  kHandlerInvalid,  // a handler returned a code not allowed at that point
  kTxFull,          // the egress queue stayed full (far side congested)
  kNoRoute,         // arrived on a port without a pair, nothing to do
  kNoBuffer,        // mbuf pool exhausted (emit, reply copies, scheduler)
  kSchedulerFull,   // the software scheduler's ring to an HPU was full
  kCount,
};

const char* DropReasonName(DropReason reason);

// What the classifier found, in the order of ARCHITECTURE.md's packet way.
enum class FrameClass : uint8_t {
  kPassthrough = 0,  // not for us: forward to the paired port
  kDrop,             // malformed: see ParsedFrame::drop_reason
  // Later transports add: kArpForUs, kNdpForUs, kDiad, kRoce.
};

// Addresses and ports pulled out of the frame for match rules. IPv4
// addresses are stored as IPv4-mapped IPv6 (::ffff:a.b.c.d) so that one
// prefix comparison serves both families.
struct ParsedFrame {
  PacketLayers layers;
  FrameClass frame_class = FrameClass::kPassthrough;
  DropReason drop_reason = DropReason::kCount;  // valid when kDrop
  // Valid only when layers.is_ipv4 or layers.is_ipv6 (left unwritten
  // otherwise: zeroing them costs per frame).
  std::array<uint8_t, 16> src_addr;
  std::array<uint8_t, 16> dst_addr;
  uint16_t src_port = 0;  // host order; 0 when there is no TCP/UDP header
  uint16_t dst_port = 0;
  bool has_l4_ports = false;
};

// Parses Ethernet (with up to two VLAN tags), IPv4 (with options), IPv6 (with
// a bounded walk over extension headers) and TCP/UDP/ICMP/ICMPv6 headers.
//
// Contract: never reads outside [data, data + length). Frames shorter than
// 14 bytes are kDrop/kRunt. An IP header that claims more bytes than the
// frame holds (header length, total/payload length) or an L4 header cut short
// is kDrop/kTruncated. Everything else is kPassthrough with the layers found:
// non-IP and unknown ethertypes just have no L3; IP fragments after the first
// and unknown protocols have no L4. Trailing bytes beyond the IP length
// (Ethernet padding) are allowed.
void ParseFrame(const uint8_t* data, uint32_t length, ParsedFrame* out);

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_CLASSIFIER_H_
