// The probe frame of spinnic-gen: an ordinary Ethernet / IPv4 / UDP frame
// whose UDP payload starts with a 22-byte probe header, so that spinnicd's
// classifier and match rules (and any switch or host on the way) see plain
// UDP. Defined once, here; the frame builder and the parser below are the
// only code that knows the offsets. Pure logic, no DPDK.
//
//   offset  size  field
//   0       14    Ethernet: dst MAC, src MAC, ethertype 0x0800
//   14      20    IPv4: version 4, IHL 5, DF, TTL 64, protocol 17, header
//                 checksum valid, total length = frame size - 14
//   34      8     UDP: src port = base + stream, dst port, length =
//                 frame size - 34, checksum 0 (none, legal in IPv4)
//   42      4     probe magic "SPNG" (0x53 0x50 0x4e 0x47)
//   46      2     stream id, big endian: the flow index (one sequence space
//                 per stream, so per-flow order is what is measured)
//   48      8     sequence number, big endian, from 0 in each stream's
//                 measured phase (warmup frames are numbered on their own)
//   56      8     TX TSC, big endian: rte_rdtsc() when the frame was built
//   64      ...   padding (zero bytes) up to the frame size
//
// 64 bytes of headers and probe: --size counts the frame without its FCS,
// so the smallest probe frame is 64 B (68 B on the wire with FCS). The
// classic minimum Ethernet frame (60 B + FCS) cannot hold a probe.
//
// Whether a received probe is "ours" is decided by the caller on top of
// the parser: the magic matches (parser), the stream id is below --flows
// and the TX TSC lies between the run's start and now (a frame left over
// from an earlier run, or from another machine, is not ours).
#ifndef SPINNIC_BENCH_LINERATE_GEN_PROBE_H_
#define SPINNIC_BENCH_LINERATE_GEN_PROBE_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "dataplane/common/byte_order.h"

namespace spinnic::gen {

// The probe header in the UDP payload. Byte arrays only: alignment 1, no
// padding, and every field is read and written big endian through the
// helpers below, whatever the host's byte order.
struct ProbeHeader {
  uint8_t magic[4];
  uint8_t stream[2];
  uint8_t seq[8];
  uint8_t tx_tsc[8];
};
static_assert(sizeof(ProbeHeader) == 22, "probe header is 22 bytes");
static_assert(alignof(ProbeHeader) == 1, "probe header is unaligned bytes");
static_assert(offsetof(ProbeHeader, magic) == 0);
static_assert(offsetof(ProbeHeader, stream) == 4);
static_assert(offsetof(ProbeHeader, seq) == 6);
static_assert(offsetof(ProbeHeader, tx_tsc) == 14);

inline constexpr std::array<uint8_t, 4> kProbeMagic = {0x53, 0x50, 0x4e,
                                                       0x47};  // "SPNG"
inline constexpr size_t kEthHeaderBytes = 14;
inline constexpr size_t kIpv4HeaderBytes = 20;  // as we send it (no options)
inline constexpr size_t kUdpHeaderBytes = 8;
// Frame offset of the probe header in a frame we build.
inline constexpr size_t kProbeOffset =
    kEthHeaderBytes + kIpv4HeaderBytes + kUdpHeaderBytes;
static_assert(kProbeOffset == 42);
inline constexpr size_t kMinFrameBytes = kProbeOffset + sizeof(ProbeHeader);
static_assert(kMinFrameBytes == 64, "a 64 B frame (without FCS) holds it");
inline constexpr size_t kMaxFrameBytes = 9000;
// The most bytes the parser ever reads: two VLAN tags, an IPv4 header with
// the longest options, UDP, the probe. A caller with a segmented frame
// copies this much of its start into one buffer (see ParseProbe).
inline constexpr size_t kMaxProbeHeadBytes =
    kEthHeaderBytes + 2 * 4 + 60 + kUdpHeaderBytes + sizeof(ProbeHeader);

// What the parser found in a probe.
struct Probe {
  uint16_t stream = 0;
  uint64_t seq = 0;
  uint64_t tx_tsc = 0;
};

// Why a frame is not a probe; kOk when it is.
enum class ProbeParse : uint8_t {
  kOk = 0,
  kTruncated,   // ends (or its IP/UDP lengths end) before the probe does
  kNotIpv4Udp,  // another ethertype, IP version or protocol
  kFragment,    // an IPv4 fragment: never a whole probe
  kBadMagic,    // UDP, but the payload does not start with "SPNG"
};

const char* ProbeParseName(ProbeParse result);

// Parses a received frame. `head` holds the frame's first `head_len`
// contiguous bytes (all of it, or at least min(frame_len,
// kMaxProbeHeadBytes) when the frame is segmented) and `frame_len` is the
// whole frame's length (head_len <= frame_len). Accepts up to two VLAN tags
// (0x8100, 0x88a8) and IPv4 options; checks that the IPv4 total length and
// the UDP length hold the probe and fit in the frame; does not check the
// checksums or the ports (a DUT may rewrite ports; the probe is the
// identity).
//
// Contract: never reads outside [head, head + head_len), for any bytes and
// any lengths; never writes `*out` unless it returns kOk.
ProbeParse ParseProbe(const uint8_t* head, size_t head_len, size_t frame_len,
                      Probe* out);

inline ProbeParse ParseProbe(absl::Span<const uint8_t> frame, Probe* out) {
  return ParseProbe(frame.data(), frame.size(), frame.size(), out);
}

// Addresses and ports of the frames a run sends.
struct FrameSpec {
  uint32_t size = kMinFrameBytes;  // frame bytes without FCS
  std::array<uint8_t, 6> dst_mac = {};
  std::array<uint8_t, 6> src_mac = {};
  uint32_t src_ip = 0xc6120001;  // 198.18.0.1 (RFC 2544 benchmarking)
  uint32_t dst_ip = 0xc6130001;  // 198.19.0.1
  uint16_t src_port = 10000;     // stream s goes from src_port + s
  uint16_t dst_port = 9;
};

// Writes a whole frame of `spec.size` bytes into `out` (out.size() >=
// spec.size): headers for stream 0, a zeroed probe, zero padding.
// INVALID_ARGUMENT if the size is out of [kMinFrameBytes, kMaxFrameBytes]
// or `out` is too small.
absl::Status BuildProbeFrame(const FrameSpec& spec, absl::Span<uint8_t> out);

// Hot path: turns a frame built by BuildProbeFrame (`frame` holds at least
// kMinFrameBytes) into the probe of `stream`: UDP src port base + stream,
// stream id, sequence number and TX TSC. No checksum to update (the IPv4
// header does not change; the UDP checksum is 0).
inline void StampProbe(uint8_t* frame, uint16_t base_src_port,
                       const Probe& probe) {
  StoreBe16(frame + kEthHeaderBytes + kIpv4HeaderBytes,
            static_cast<uint16_t>(base_src_port + probe.stream));
  uint8_t* header = frame + kProbeOffset;
  StoreBe16(header + offsetof(ProbeHeader, stream), probe.stream);
  StoreBe64(header + offsetof(ProbeHeader, seq), probe.seq);
  StoreBe64(header + offsetof(ProbeHeader, tx_tsc), probe.tx_tsc);
}

}  // namespace spinnic::gen

#endif  // SPINNIC_BENCH_LINERATE_GEN_PROBE_H_
