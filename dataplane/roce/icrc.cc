// rte_vect_{get,set}_max_simd_bitwidth are experimental in DPDK 22.11.
#define ALLOW_EXPERIMENTAL_API 1
#include "dataplane/roce/icrc.h"

#include <rte_cpuflags.h>
#include <rte_net_crc.h>
// DPDK 22.11's rte_vect.h declares its functions without extern "C".
extern "C" {
#include <rte_vect.h>
}
#include <isa-l/crc.h>

#include <array>
#include <cstring>
#include <span>

#include "dataplane/common/byte_order.h"
#include "dataplane/roce/ib_types.h"

namespace spinnic::roce {
namespace {

constexpr uint32_t kIpv4MinBytes = 20;
constexpr uint32_t kIpv4MaxBytes = 60;
constexpr uint32_t kIpv6Bytes = 40;
constexpr uint32_t kUdpBytes = 8;
constexpr uint32_t kUdpChecksumOffset = 6;
constexpr uint32_t kBthVariantByte = 4;

// Variant bytes of the IP header: offset and the bits that are variant
// (replaced by ones). IPv4: TOS, TTL, header checksum. IPv6: traffic class
// and flow label (the low nibble of byte 0 and bytes 1..3) and hop limit.
struct MaskedByte {
  uint8_t offset;
  uint8_t mask;
};
constexpr std::array<MaskedByte, 4> kIpv4Masked = {
    {{1, 0xff}, {8, 0xff}, {10, 0xff}, {11, 0xff}}};
constexpr std::array<MaskedByte, 5> kIpv6Masked = {
    {{0, 0x0f}, {1, 0xff}, {2, 0xff}, {3, 0xff}, {7, 0xff}}};

uint8_t IpVersion(const uint8_t* frame, const IcrcSpan& span) {
  return frame[span.ip_offset] >> 4;
}

}  // namespace

bool IcrcSpanValid(const uint8_t* frame, uint32_t length,
                   const IcrcSpan& span) {
  if (span.ip_offset < kIcrcLrhBytes || span.ip_offset >= length) return false;
  if (span.udp_offset < span.ip_offset) return false;
  const uint32_t ip_bytes = span.udp_offset - span.ip_offset;
  switch (IpVersion(frame, span)) {
    case 4:
      if (ip_bytes < kIpv4MinBytes || ip_bytes > kIpv4MaxBytes) return false;
      break;
    case 6:
      if (ip_bytes != kIpv6Bytes) return false;
      break;
    default:
      return false;
  }
  const uint64_t bth_end = uint64_t{span.udp_offset} + kUdpBytes + kBthBytes;
  return span.icrc_offset >= bth_end &&
         uint64_t{span.icrc_offset} + kIcrcBytes <= length;
}

namespace {
const char* icrc_algorithm = "scalar";
// Whether the CPU has AVX (then vzeroupper exists); set by InitIcrc.
bool clear_upper_vector_state = false;

bool Has(enum rte_cpu_flag_t flag) {
  return rte_cpu_get_flag_enabled(flag) > 0;
}

// ISA-L's CRC. Its AVX-512 kernel (Debian's ISA-L 2.30) returns without
// vzeroupper, and the dirty upper register state then slows every SSE
// instruction our (non-AVX) code runs after it: a zero-copy RoCE WRITE cost
// its requester about 2,300 cycles more per 4 KiB than copying did
// (bench/cost/README.md, "Zero-copy and vzeroupper"). Clear it here.
uint32_t ContinueCrc(uint32_t crc, std::span<const uint8_t> bytes) {
  crc = crc32_gzip_refl(crc, bytes.data(), bytes.size());
#if defined(RTE_ARCH_X86)
  if (clear_upper_vector_state) asm volatile("vzeroupper" ::: "memory");
#endif
  return crc;
}
}  // namespace

void InitIcrc() {
  // The widest algorithm the CPU allows; librte_net falls back to SSE4.2
  // and then to the table by itself. It also caps the choice by the EAL's
  // SIMD limit, 256 bits unless the user forced one: the AVX-512
  // (VPCLMULQDQ) CRC is 2.3x SSE4.2's at 1 KiB here (61 against 144 ns,
  // bench/micro/icrc_bench), so raise the limit for this choice only and
  // put it back: the rest of DPDK keeps the vector paths the EAL chose. A
  // limit the user forced (--force-max-simd-bitwidth) is left as it is.
  // Before rte_eal_init (0) nothing is raised: the table, as before.
  const uint16_t limit = rte_vect_get_max_simd_bitwidth();
  const bool raised = limit != 0 && limit < RTE_VECT_SIMD_512 &&
                      rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512) == 0;
  rte_net_crc_set_alg(RTE_NET_CRC_AVX512);
  // ISA-L resolves its kernel at the first call: make it here too.
#if defined(RTE_ARCH_X86)
  clear_upper_vector_state = Has(RTE_CPUFLAG_AVX);
#endif
  const uint8_t byte = 0;
  (void)ContinueCrc(0, std::span<const uint8_t>(&byte, 1));
  // What librte_net chose, by the rule it applies.
  const uint16_t allowed = rte_vect_get_max_simd_bitwidth();
  if (raised) rte_vect_set_max_simd_bitwidth(limit);
#if defined(RTE_ARCH_X86)
  if (allowed >= RTE_VECT_SIMD_512 && Has(RTE_CPUFLAG_AVX512F) &&
      Has(RTE_CPUFLAG_VPCLMULQDQ)) {
    icrc_algorithm = "avx512";
  } else if (allowed >= RTE_VECT_SIMD_128 && Has(RTE_CPUFLAG_SSE4_2) &&
             Has(RTE_CPUFLAG_PCLMULQDQ)) {
    icrc_algorithm = "sse42";
  } else {
    icrc_algorithm = "scalar";
  }
#else
  icrc_algorithm = allowed >= RTE_VECT_SIMD_128 ? "simd" : "scalar";
#endif
}

const char* IcrcAlgorithm() { return icrc_algorithm; }

bool ComputeIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span,
                 uint32_t* icrc) {
  if (!IcrcSpanValid(frame, length, span)) return false;
  uint8_t* const start = frame + span.ip_offset - kIcrcLrhBytes;
  uint8_t* const ip = frame + span.ip_offset;
  uint8_t* const udp_checksum = frame + span.udp_offset + kUdpChecksumOffset;
  uint8_t* const bth_variant =
      frame + span.udp_offset + kUdpBytes + kBthVariantByte;
  const bool ipv4 = IpVersion(frame, span) == 4;

  // Save what the masks overwrite.
  std::array<uint8_t, kIcrcLrhBytes> saved_lrh;
  std::memcpy(saved_lrh.data(), start, kIcrcLrhBytes);
  std::array<uint8_t, 8> saved_ip;  // bytes 0..7 (IPv6) or the 4 IPv4 ones
  std::array<uint8_t, 2> saved_udp = {udp_checksum[0], udp_checksum[1]};
  const uint8_t saved_bth = *bth_variant;
  if (ipv4) {
    for (size_t i = 0; i < kIpv4Masked.size(); ++i) {
      saved_ip[i] = ip[kIpv4Masked[i].offset];
      ip[kIpv4Masked[i].offset] = 0xff;
    }
  } else {
    std::memcpy(saved_ip.data(), ip, saved_ip.size());
    for (const MaskedByte& m : kIpv6Masked) ip[m.offset] |= m.mask;
  }
  std::memset(start, 0xff, kIcrcLrhBytes);
  udp_checksum[0] = 0xff;
  udp_checksum[1] = 0xff;
  *bth_variant = 0xff;

  *icrc = rte_net_crc_calc(start,
                           span.icrc_offset - (span.ip_offset - kIcrcLrhBytes),
                           RTE_NET_CRC32_ETH);

  // Restore.
  *bth_variant = saved_bth;
  udp_checksum[0] = saved_udp[0];
  udp_checksum[1] = saved_udp[1];
  if (ipv4) {
    for (size_t i = 0; i < kIpv4Masked.size(); ++i) {
      ip[kIpv4Masked[i].offset] = saved_ip[i];
    }
  } else {
    std::memcpy(ip, saved_ip.data(), saved_ip.size());
  }
  std::memcpy(start, saved_lrh.data(), kIcrcLrhBytes);
  return true;
}

bool ComputeIcrcOver(uint8_t* headers, uint32_t length, const IcrcSpan& span,
                     std::span<const uint8_t> payload,
                     std::span<const uint8_t> pad, uint32_t* icrc) {
  uint32_t crc = 0;
  if (!ComputeIcrc(headers, length, span, &crc)) return false;
  // rte_net_crc's result is zlib's CRC-32 value, which ISA-L's
  // crc32_gzip_refl takes as the seed to continue from.
  crc = ContinueCrc(crc, payload);
  *icrc = ContinueCrc(crc, pad);
  return true;
}

bool VerifyIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span) {
  uint32_t icrc = 0;
  if (!ComputeIcrc(frame, length, span, &icrc)) return false;
  const uint8_t* p = frame + span.icrc_offset;
  return LoadLe32(p) == icrc;
}

bool WriteIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span) {
  uint32_t icrc = 0;
  if (!ComputeIcrc(frame, length, span, &icrc)) return false;
  uint8_t* p = frame + span.icrc_offset;
  StoreLe32(p, icrc);
  return true;
}

}  // namespace spinnic::roce
