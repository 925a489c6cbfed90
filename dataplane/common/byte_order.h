// Big-endian (network order) and little-endian loads and stores of unaligned
// bytes: the one copy every wire format, handler and tool uses.
//
// memcpy of the whole word and one byte swap (the compiler emits a plain load
// or store plus bswap/movbe), not a byte loop. Header-only and free of DPDK,
// so that the handler API (handlers/api/net.h) stays DPDK-free; the swaps
// are the compiler builtins rte_byteorder.h itself uses on x86. Nothing here
// allocates or checks bounds: the caller has.
#ifndef SPINNIC_DATAPLANE_COMMON_BYTE_ORDER_H_
#define SPINNIC_DATAPLANE_COMMON_BYTE_ORDER_H_

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace spinnic {

// Host <-> big-endian (network) order of a value.
inline constexpr uint16_t HostToBe16(uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    return __builtin_bswap16(v);
  }
  return v;
}
inline constexpr uint32_t HostToBe32(uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    return __builtin_bswap32(v);
  }
  return v;
}
inline constexpr uint64_t HostToBe64(uint64_t v) {
  if constexpr (std::endian::native == std::endian::little) {
    return __builtin_bswap64(v);
  }
  return v;
}
inline constexpr uint16_t BeToHost16(uint16_t v) { return HostToBe16(v); }
inline constexpr uint32_t BeToHost32(uint32_t v) { return HostToBe32(v); }
inline constexpr uint64_t BeToHost64(uint64_t v) { return HostToBe64(v); }

// Host <-> little-endian order of a value.
inline constexpr uint32_t HostToLe32(uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) {
    return __builtin_bswap32(v);
  }
  return v;
}
inline constexpr uint64_t HostToLe64(uint64_t v) {
  if constexpr (std::endian::native == std::endian::big) {
    return __builtin_bswap64(v);
  }
  return v;
}
inline constexpr uint32_t LeToHost32(uint32_t v) { return HostToLe32(v); }
inline constexpr uint64_t LeToHost64(uint64_t v) { return HostToLe64(v); }

// Big-endian loads from `p` (any alignment).
inline uint16_t LoadBe16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return BeToHost16(v);
}
inline uint32_t LoadBe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return BeToHost32(v);
}
inline uint64_t LoadBe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return BeToHost64(v);
}
// The 24-bit big-endian field at `p` (InfiniBand QPNs and PSNs).
inline uint32_t LoadBe24(const uint8_t* p) {
  return uint32_t{LoadBe16(p)} << 8 | p[2];
}
// The big-endian field of `bytes` (0..8) bytes at `p`.
inline uint64_t LoadBe(const uint8_t* p, size_t bytes) {
  uint64_t value = 0;
  for (size_t i = 0; i < bytes; ++i) value = value << 8 | p[i];
  return value;
}

// Big-endian stores to `p` (any alignment).
inline void StoreBe16(uint8_t* p, uint16_t v) {
  v = HostToBe16(v);
  std::memcpy(p, &v, sizeof(v));
}
inline void StoreBe32(uint8_t* p, uint32_t v) {
  v = HostToBe32(v);
  std::memcpy(p, &v, sizeof(v));
}
inline void StoreBe64(uint8_t* p, uint64_t v) {
  v = HostToBe64(v);
  std::memcpy(p, &v, sizeof(v));
}
// The low 24 bits of `v`, big-endian.
inline void StoreBe24(uint8_t* p, uint32_t v) {
  StoreBe16(p, static_cast<uint16_t>(v >> 8));
  p[2] = static_cast<uint8_t>(v);
}
// The low `bytes` (0..8) bytes of `v`, big-endian.
inline void StoreBe(uint8_t* p, size_t bytes, uint64_t v) {
  for (size_t i = bytes; i-- > 0;) {
    p[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
}

// Little-endian loads and stores (the ICRC's wire order, pcap headers, NAAICE
// hosts' data).
inline uint32_t LoadLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return LeToHost32(v);
}
inline void StoreLe32(uint8_t* p, uint32_t v) {
  v = HostToLe32(v);
  std::memcpy(p, &v, sizeof(v));
}
inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return LeToHost64(v);
}
inline void StoreLe64(uint8_t* p, uint64_t v) {
  v = HostToLe64(v);
  std::memcpy(p, &v, sizeof(v));
}

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_COMMON_BYTE_ORDER_H_
