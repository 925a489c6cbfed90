// The RoCEv2 invariant CRC (ICRC, IBA annex A17.3.3), computed in place on a
// received or built frame (docs/roce-wire.md).
//
// The ICRC is CRC-32 (Ethernet polynomial, reflected, initial value ~0,
// final inversion: zlib's crc32) over
//   8 bytes of 0xff (they stand for the InfiniBand LRH that RoCEv2 lacks),
//   the IP header with the fields routers may change set to all ones
//     (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label,
//     hop limit),
//   the UDP header with its checksum set to 0xffff,
//   the BTH with byte 4 (FECN, BECN, reserved) set to 0xff,
//   everything after the BTH up to the ICRC (extension headers, payload,
//   pad),
// and is transmitted least-significant byte first.
//
// Copy-free: ComputeIcrc writes 0xff over the 8 bytes in front of the IP
// header (the tail of the Ethernet header or VLAN tag) and over the variant
// fields, runs one rte_net_crc_calc(RTE_NET_CRC32_ETH) pass over the
// contiguous span, then puts every byte back. The frame is therefore briefly
// modified: it must not be read concurrently (it never is: one lcore owns a
// frame) and must be one contiguous buffer -- multi-segment mbufs have to be
// linearised by the caller first (rte_pktmbuf_linearize).
//
// A zero-copy frame (ComputeIcrcOver) continues the headers' CRC over the
// payload where it lies with ISA-L's crc32_gzip_refl, which takes a CRC so
// far as its seed; rte_net_crc cannot. Why not ISA-L for everything: its raw
// speed equals rte_net_crc's AVX-512 kernel (32 vs 33 ns/KiB at 1 KiB,
// bench/micro/checksum_bench), but in the cost model's NAAICE RPC every
// packet cost 90 cycles more with it (721-737 against 637-656,
// bench/cost/cost_bench; instructions fewer), so each library does what it
// measured best at: docs/roce-wire.md.
//
// rte_net_crc without the EAL (unit tests, fuzz targets): the first call
// reads rte_vect_get_max_simd_bitwidth(), which is 0 before rte_eal_init, so
// the table (scalar) algorithm is chosen -- correct, only slower. After
// rte_eal_init it picks SSE4.2+PCLMULQDQ, or AVX-512+VPCLMULQDQ when the SIMD
// limit allows 512 bits (InitIcrc raises it for the choice). librte_net keeps
// the first choice for good, and while choosing it briefly has no handler, so
// two lcores making their first call at once could crash: the dataplane calls
// InitIcrc() once on the main lcore after rte_eal_init, before any worker
// starts.
#ifndef SPINNIC_DATAPLANE_ROCE_ICRC_H_
#define SPINNIC_DATAPLANE_ROCE_ICRC_H_

#include <cstdint>
#include <span>

namespace spinnic::roce {

// Bytes of 0xff that stand in for the LRH at the start of the ICRC span.
inline constexpr uint32_t kIcrcLrhBytes = 8;

// Where the parts of a RoCEv2 frame are. The IP header runs from ip_offset
// to udp_offset (20 bytes and more for IPv4, exactly 40 for IPv6), the BTH
// starts at udp_offset + 8, the ICRC's 4 bytes at icrc_offset.
struct IcrcSpan {
  uint32_t ip_offset = 0;
  uint32_t udp_offset = 0;
  uint32_t icrc_offset = 0;
};

// True when `span` is one ComputeIcrc accepts for a frame of `length` bytes:
// ip_offset >= 8 (the in-place trick writes the 8 bytes before the IP
// header; Ethernet always has them), an IPv4 or IPv6 version nibble at
// ip_offset, an IP header of a possible size, room for UDP + BTH before
// icrc_offset and the 4 ICRC bytes inside the frame.
bool IcrcSpanValid(const uint8_t* frame, uint32_t length, const IcrcSpan& span);

// Initialises librte_net's CRC choice once (see above), allowing its
// AVX-512 algorithm where the CPU has it even under the EAL's default
// 256-bit SIMD limit. Call after rte_eal_init on the main lcore; harmless
// without the EAL (scalar).
void InitIcrc();
// The algorithm InitIcrc chose: "avx512", "sse42" or "scalar" (GetInfo's
// roce.icrc_algorithm).
const char* IcrcAlgorithm();

// The ICRC of the frame, the value whose little-endian bytes go at
// icrc_offset. Returns false (and computes nothing) when !IcrcSpanValid. The
// frame is modified while the CRC runs and restored byte for byte before
// returning.
bool ComputeIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span,
                 uint32_t* icrc);

// The ICRC of a frame whose bytes after the headers lie elsewhere
// (zero-copy): ComputeIcrc over `headers` up to span.icrc_offset (the end
// of the headers; `length` counts 4 more bytes after it, as ComputeIcrc
// wants), continued over `payload`, then `pad` (ISA-L). False for an
// invalid span.
bool ComputeIcrcOver(uint8_t* headers, uint32_t length, const IcrcSpan& span,
                     std::span<const uint8_t> payload,
                     std::span<const uint8_t> pad, uint32_t* icrc);

// ComputeIcrc and compare with the 4 bytes at icrc_offset. False for an
// invalid span too.
bool VerifyIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span);

// ComputeIcrc and store it at icrc_offset. False (nothing written) for an
// invalid span.
bool WriteIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span);

// The table-driven reference the tests check this against is
// tests/common/icrc_reference.h.

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_ICRC_H_
