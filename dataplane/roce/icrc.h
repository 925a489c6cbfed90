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
// fields, runs one CRC pass over the contiguous span, then puts every byte
// back. The frame is therefore briefly modified: it must not be read
// concurrently (it never is: one lcore owns a frame) and must be one
// contiguous buffer; a frame whose payload lies elsewhere (zero-copy) is
// ComputeIcrcOver's, which continues the CRC over the other parts.
//
// The CRC is ISA-L's crc32_gzip_refl, not DPDK's rte_net_crc: the same raw
// speed on this CPU (VPCLMULQDQ both, 32 ns/KiB at 1 KiB,
// bench/micro/checksum_bench), but ISA-L continues a CRC from a seed, so a
// zero-copy frame needs no zlib crc32_combine per part and no EAL SIMD
// limit has to be raised for the choice. ComputeIcrc per 4 KiB frame: 121
// against 163 ns with rte_net_crc AVX-512; 64 B frames alike (28 ns;
// bench/micro/icrc_bench, docs/primitives.md). ISA-L picks its kernel at the
// first call; InitIcrc makes that call on the main lcore before any worker.
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
// ip_offset >= 8 (a RoCEv2 frame has at least its Ethernet header in front
// of IP), an IPv4 or IPv6 version nibble at
// ip_offset, an IP header of a possible size, room for UDP + BTH before
// icrc_offset and the 4 ICRC bytes inside the frame.
bool IcrcSpanValid(const uint8_t* frame, uint32_t length, const IcrcSpan& span);

// Resolves ISA-L's CRC kernel once, on the calling thread (see above).
// Idempotent; ComputeIcrc works without it (the first call resolves).
void InitIcrc();
// The kernel ISA-L runs on this CPU: "isa-l avx512-vpclmulqdq",
// "isa-l pclmulqdq" or "isa-l table" (GetInfo's roce.icrc_algorithm).
const char* IcrcAlgorithm();

// The ICRC of the frame, the value whose little-endian bytes go at
// icrc_offset. Returns false (and computes nothing) when !IcrcSpanValid.
bool ComputeIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span,
                 uint32_t* icrc);

// The ICRC of a frame whose bytes after the headers lie elsewhere
// (zero-copy): ComputeIcrc over `headers` up to span.icrc_offset (the end
// of the headers; `length` counts 4 more bytes after it, as ComputeIcrc
// wants), continued over `payload`, then `pad`. False for an invalid span.
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
