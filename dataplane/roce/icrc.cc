#include "dataplane/roce/icrc.h"

#include <isa-l/crc.h>
#include <rte_cpuflags.h>

#include <array>
#include <cstring>

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

const char* icrc_algorithm = "isa-l table";

bool Has(enum rte_cpu_flag_t flag) {
  return rte_cpu_get_flag_enabled(flag) > 0;
}

// CRC-32 of `n` bytes continuing `crc` (0 to start; zlib's convention, which
// crc32_gzip_refl follows: the pre- and post-inversions are inside).
inline uint32_t Crc32(uint32_t crc, const uint8_t* p, uint64_t n) {
  return crc32_gzip_refl(crc, p, n);
}

}  // namespace

void InitIcrc() {
  // ISA-L resolves its multibinary dispatch at the first call; make it here,
  // on one thread, rather than on the first packet of every lcore.
  const uint8_t byte = 0;
  (void)Crc32(0, &byte, 1);
#if defined(RTE_ARCH_X86)
  // ISA-L 2.30's choice for crc32_gzip_refl (crc_multibinary.asm): the
  // 512-bit VPCLMULQDQ kernel where AVX-512 and VPCLMULQDQ are there, else
  // the PCLMULQDQ one.
  if (Has(RTE_CPUFLAG_AVX512F) && Has(RTE_CPUFLAG_AVX512BW) &&
      Has(RTE_CPUFLAG_AVX512DQ) && Has(RTE_CPUFLAG_AVX512VL) &&
      Has(RTE_CPUFLAG_VPCLMULQDQ)) {
    icrc_algorithm = "isa-l avx512-vpclmulqdq";
  } else if (Has(RTE_CPUFLAG_PCLMULQDQ)) {
    icrc_algorithm = "isa-l pclmulqdq";
  }
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

  *icrc = Crc32(0, start, span.icrc_offset - (span.ip_offset - kIcrcLrhBytes));

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
  crc = Crc32(crc, payload.data(), payload.size());
  *icrc = Crc32(crc, pad.data(), pad.size());
  return true;
}

bool VerifyIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span) {
  uint32_t icrc = 0;
  if (!ComputeIcrc(frame, length, span, &icrc)) return false;
  return LoadLe32(frame + span.icrc_offset) == icrc;
}

bool WriteIcrc(uint8_t* frame, uint32_t length, const IcrcSpan& span) {
  uint32_t icrc = 0;
  if (!ComputeIcrc(frame, length, span, &icrc)) return false;
  uint8_t* p = frame + span.icrc_offset;
  StoreLe32(p, icrc);
  return true;
}

}  // namespace spinnic::roce
