// The RoCEv2 ICRC computed the slow, obvious way, as the reference the unit
// tests, the fuzz target and bench/micro/icrc_bench.cc check
// dataplane/roce/icrc.h's rte_net_crc path against: a plain 256-entry table,
// a byte at a time, the masked bytes substituted on the fly (the frame is
// only read). Test code only; production computes the ICRC with rte_net_crc.
#ifndef SPINNIC_TESTS_COMMON_ICRC_REFERENCE_H_
#define SPINNIC_TESTS_COMMON_ICRC_REFERENCE_H_

#include <array>
#include <cstdint>

#include "dataplane/roce/icrc.h"

namespace spinnic::roce {
namespace icrc_reference_internal {

constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1) != 0 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
    }
    table[i] = crc;
  }
  return table;
}
inline constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

inline uint32_t CrcUpdate(uint32_t crc, uint8_t byte) {
  return kCrcTable[(crc ^ byte) & 0xff] ^ (crc >> 8);
}

// Variant bytes of the IP header: offset and the bits that are variant
// (replaced by ones). IPv4: TOS, TTL, header checksum. IPv6: traffic class
// and flow label (the low nibble of byte 0 and bytes 1..3) and hop limit.
struct MaskedByte {
  uint8_t offset;
  uint8_t mask;
};
inline constexpr std::array<MaskedByte, 4> kIpv4Masked = {
    {{1, 0xff}, {8, 0xff}, {10, 0xff}, {11, 0xff}}};
inline constexpr std::array<MaskedByte, 5> kIpv6Masked = {
    {{0, 0x0f}, {1, 0xff}, {2, 0xff}, {3, 0xff}, {7, 0xff}}};

inline constexpr uint32_t kUdpBytes = 8;
inline constexpr uint32_t kUdpChecksumOffset = 6;
inline constexpr uint32_t kBthVariantByte = 4;

}  // namespace icrc_reference_internal

// CRC-32 (Ethernet polynomial, reflected, initial ~0, final inversion:
// zlib's crc32) of `length` bytes.
inline uint32_t Crc32Reference(const uint8_t* data, uint32_t length) {
  using icrc_reference_internal::CrcUpdate;
  uint32_t crc = 0xffffffffu;
  for (uint32_t i = 0; i < length; ++i) crc = CrcUpdate(crc, data[i]);
  return ~crc;
}

// What ComputeIcrc computes, without modifying the frame. False (nothing
// computed) when !IcrcSpanValid.
inline bool ComputeIcrcReference(const uint8_t* frame, uint32_t length,
                                 const IcrcSpan& span, uint32_t* icrc) {
  namespace in = icrc_reference_internal;
  if (!IcrcSpanValid(frame, length, span)) return false;
  const bool ipv4 = frame[span.ip_offset] >> 4 == 4;
  const uint32_t udp_checksum = span.udp_offset + in::kUdpChecksumOffset;
  const uint32_t bth_variant =
      span.udp_offset + in::kUdpBytes + in::kBthVariantByte;
  uint32_t crc = 0xffffffffu;
  for (uint32_t i = 0; i < kIcrcLrhBytes; ++i) crc = in::CrcUpdate(crc, 0xff);
  for (uint32_t i = span.ip_offset; i < span.icrc_offset; ++i) {
    uint8_t byte = frame[i];
    if (i < span.udp_offset) {
      const uint32_t at = i - span.ip_offset;
      if (ipv4) {
        for (const in::MaskedByte& m : in::kIpv4Masked) {
          if (m.offset == at) byte |= m.mask;
        }
      } else {
        for (const in::MaskedByte& m : in::kIpv6Masked) {
          if (m.offset == at) byte |= m.mask;
        }
      }
    } else if (i == udp_checksum || i == udp_checksum + 1 || i == bth_variant) {
      byte = 0xff;
    }
    crc = in::CrcUpdate(crc, byte);
  }
  *icrc = ~crc;
  return true;
}

}  // namespace spinnic::roce

#endif  // SPINNIC_TESTS_COMMON_ICRC_REFERENCE_H_
