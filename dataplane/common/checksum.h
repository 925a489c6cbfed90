// The Internet checksum (RFC 1071): the one copy the wire formats, the
// neighbour responder, handlers and tools use.
//
// The sum runs in native byte order, eight bytes per load and two
// accumulators (RFC 1071 2.(B): a one's complement sum of native-order words
// is the byte-swapped sum of the big-endian ones, so only the folded result
// is swapped). bench/micro/checksum_bench.cc measures it against DPDK's
// rte_raw_cksum (docs/primitives.md has the figures). Header-only and free of
// DPDK (the handler API uses it); nothing here allocates.
//
//   uint64_t acc = checksum::Add(0, ip + 8, 32);     // IPv6 addresses
//   acc = checksum::AddBe32(acc, udp_length);        // pseudo-header fields
//   acc = checksum::AddBe32(acc, kProtoUdp);
//   acc = checksum::Add(acc, udp, udp_length);
//   StoreBe16(udp + 6, static_cast<uint16_t>(~checksum::Fold(acc)));
#ifndef SPINNIC_DATAPLANE_COMMON_CHECKSUM_H_
#define SPINNIC_DATAPLANE_COMMON_CHECKSUM_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dataplane/common/byte_order.h"

namespace spinnic::checksum {

// Adds `v` to the one's complement accumulator `acc` with end-around carry.
// 2^64 = 1 (mod 2^16 - 1), so a carry out of bit 63 is worth 1 in the
// 16-bit one's complement sum.
inline uint64_t AddCarry(uint64_t acc, uint64_t v) {
  acc += v;
  return acc + (acc < v ? 1 : 0);
}

// Adds the `n` bytes at `p` to the accumulator `acc` (0 to start). Words are
// taken from `p` on (an odd trailing byte is padded with zero), so every
// segment but the last must have an even length.
inline uint64_t Add(uint64_t acc, const uint8_t* p, size_t n) {
  uint64_t acc2 = 0;
  while (n >= 32) {
    uint64_t a, b, c, d;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + 8, 8);
    std::memcpy(&c, p + 16, 8);
    std::memcpy(&d, p + 24, 8);
    acc = AddCarry(AddCarry(acc, a), b);
    acc2 = AddCarry(AddCarry(acc2, c), d);
    p += 32;
    n -= 32;
  }
  acc = AddCarry(acc, acc2);
  while (n >= 8) {
    uint64_t a;
    std::memcpy(&a, p, 8);
    acc = AddCarry(acc, a);
    p += 8;
    n -= 8;
  }
  // The tail (0..7 bytes) in fixed-size pieces (no memcpy call of a variable
  // length), each at an even offset, so each adds whole 16-bit words; an odd
  // last byte is paired with a zero byte, in either byte order.
  uint64_t tail = 0;
  if (n & 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    tail = v;
    p += 4;
  }
  if (n & 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    tail += v;
    p += 2;
  }
  if (n & 1) {
    uint16_t v = 0;
    std::memcpy(&v, p, 1);
    tail += v;
  }
  return AddCarry(acc, tail);
}

// Adds `v` as two big-endian 16-bit words (v >> 16, v & 0xffff): a
// pseudo-header's length and next header. A value below 2^16 is one word.
inline uint64_t AddBe32(uint64_t acc, uint32_t v) {
  return AddCarry(acc, HostToBe32(v));
}

// The accumulator folded to the 16-bit one's complement sum, as the value of
// a big-endian word (what LoadBe16 reads from a checksum field): 0xffff for a
// correct message whose checksum field is included.
inline uint16_t Fold(uint64_t acc) {
  while (acc > 0xffff) acc = (acc & 0xffff) + (acc >> 16);
  return BeToHost16(static_cast<uint16_t>(acc));
}

// The checksum field value for the `n` bytes at `p` (with the field zeroed).
inline uint16_t Compute(const uint8_t* p, size_t n) {
  return static_cast<uint16_t>(~Fold(Add(0, p, n)));
}

}  // namespace spinnic::checksum

#endif  // SPINNIC_DATAPLANE_COMMON_CHECKSUM_H_
