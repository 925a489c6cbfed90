// The Internet checksum (RFC 1071): the one copy the wire formats, the
// neighbour responder, handlers and tools use.
//
// The sum runs in native byte order (RFC 1071 2.(B): a one's complement sum
// of native-order words is the byte-swapped sum of the big-endian ones, so
// only the folded result is swapped). Below kVectorMinBytes: eight bytes per
// load, two accumulators. From kVectorMinBytes on: the widest vector kernel
// the CPU has (AVX-512BW, else AVX2), chosen once at the first call
// (KernelName() says which; GetInfo reports it): 16-bit words summed in
// 32-bit lanes, 3.3x the scalar loop per 4 KiB on this machine.
// AddCopy copies while it sums (a sender builds a datagram from a payload
// and its checksum in one pass over the bytes).
// bench/micro/checksum_bench.cc measures every kernel against DPDK's
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

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "dataplane/common/byte_order.h"

namespace spinnic::checksum {

// Adds `v` to the one's complement accumulator `acc` with end-around carry.
// 2^64 = 1 (mod 2^16 - 1), so a carry out of bit 63 is worth 1 in the
// 16-bit one's complement sum.
inline uint64_t AddCarry(uint64_t acc, uint64_t v) {
  acc += v;
  return acc + (acc < v ? 1 : 0);
}

namespace internal {

// The scalar loop, for every length (and the vector kernels' tails).
inline uint64_t AddScalar(uint64_t acc, const uint8_t* p, size_t n) {
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

// The vector kernels sum each 32-bit lane's two 16-bit words into separate
// 32-bit lane accumulators, a block of at most kVectorBlockBytes at a time:
// each lane of each of the four accumulators then holds less than
// 2^10 * 0xffff < 2^26, so even their sum fits 32 bits before the fold.
inline constexpr size_t kVectorBlockBytes = 64 * 1024;

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_epi32(), which
// -Wmaybe-uninitialized reports once inlined (a known false positive).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx2"))) inline uint64_t FoldLanes(__m256i a, __m256i b,
                                                          __m256i c,
                                                          __m256i d) {
  const __m256i low32 = _mm256_set1_epi64x(0xffffffff);
  // Each lane is below 2^27 (a block's sums), so two 32-bit lanes' worth
  // fit any 64-bit lane after these adds.
  const __m256i ab = _mm256_add_epi32(a, b);
  const __m256i cd = _mm256_add_epi32(c, d);
  const __m256i sum = _mm256_add_epi64(
      _mm256_add_epi64(_mm256_and_si256(ab, low32), _mm256_srli_epi64(ab, 32)),
      _mm256_add_epi64(_mm256_and_si256(cd, low32), _mm256_srli_epi64(cd, 32)));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// `copy_to`: nullptr to sum only, else where the bytes are copied.
template <bool kCopy>
__attribute__((target("avx2"))) inline uint64_t AddAvx2(uint64_t acc,
                                                        uint8_t* copy_to,
                                                        const uint8_t* p,
                                                        size_t n) {
  const __m256i low16 = _mm256_set1_epi32(0xffff);
  while (n >= 64) {
    const size_t block =
        n < kVectorBlockBytes ? n & ~size_t{63} : kVectorBlockBytes;
    __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
    for (size_t i = 0; i < block; i += 64) {
      const __m256i a =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
      const __m256i b =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 32));
      if constexpr (kCopy) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(copy_to + i), a);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(copy_to + i + 32), b);
      }
      lo0 = _mm256_add_epi32(lo0, _mm256_and_si256(a, low16));
      hi0 = _mm256_add_epi32(hi0, _mm256_srli_epi32(a, 16));
      lo1 = _mm256_add_epi32(lo1, _mm256_and_si256(b, low16));
      hi1 = _mm256_add_epi32(hi1, _mm256_srli_epi32(b, 16));
    }
    // Low words weigh 1, high words 2^16 = 1 (mod 2^16 - 1): all add alike.
    acc = AddCarry(acc, FoldLanes(lo0, hi0, lo1, hi1));
    p += block;
    if constexpr (kCopy) copy_to += block;
    n -= block;
  }
  if constexpr (kCopy) std::memcpy(copy_to, p, n);
  return AddScalar(acc, p, n);
}

template <bool kCopy>
__attribute__((target("avx512f,avx512bw"))) inline uint64_t AddAvx512(
    uint64_t acc, uint8_t* copy_to, const uint8_t* p, size_t n) {
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  const __m512i low32 = _mm512_set1_epi64(0xffffffff);
  while (n >= 128) {
    const size_t block =
        n < kVectorBlockBytes ? n & ~size_t{127} : kVectorBlockBytes;
    __m512i lo0 = _mm512_setzero_si512(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
    for (size_t i = 0; i < block; i += 128) {
      const __m512i a = _mm512_loadu_si512(p + i);
      const __m512i b = _mm512_loadu_si512(p + i + 64);
      if constexpr (kCopy) {
        _mm512_storeu_si512(copy_to + i, a);
        _mm512_storeu_si512(copy_to + i + 64, b);
      }
      lo0 = _mm512_add_epi32(lo0, _mm512_and_si512(a, low16));
      hi0 = _mm512_add_epi32(hi0, _mm512_srli_epi32(a, 16));
      lo1 = _mm512_add_epi32(lo1, _mm512_and_si512(b, low16));
      hi1 = _mm512_add_epi32(hi1, _mm512_srli_epi32(b, 16));
    }
    // As FoldLanes: every lane is below 2^27, so 32-bit adds are safe.
    const __m512i all = _mm512_add_epi32(_mm512_add_epi32(lo0, hi0),
                                         _mm512_add_epi32(lo1, hi1));
    const __m512i sum = _mm512_add_epi64(_mm512_and_si512(all, low32),
                                         _mm512_srli_epi64(all, 32));
    acc = AddCarry(acc, static_cast<uint64_t>(_mm512_reduce_add_epi64(sum)));
    p += block;
    if constexpr (kCopy) copy_to += block;
    n -= block;
  }
  // The rest (< 128 bytes) through the AVX2 kernel and its scalar tail.
  return AddAvx2<kCopy>(acc, copy_to, p, n);
}
#pragma GCC diagnostic pop
#endif  // __x86_64__

enum class Kernel : uint8_t { kScalar, kAvx2, kAvx512 };

inline Kernel ChooseKernel() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    return Kernel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2")) return Kernel::kAvx2;
#endif
  return Kernel::kScalar;
}

// The kernel for this process, chosen at the first call.
inline Kernel ActiveKernel() {
  static const Kernel kernel = ChooseKernel();
  return kernel;
}

template <bool kCopy>
inline uint64_t AddWith(Kernel kernel, uint64_t acc, uint8_t* copy_to,
                        const uint8_t* p, size_t n) {
  switch (kernel) {
#if defined(__x86_64__)
    case Kernel::kAvx512:
      return AddAvx512<kCopy>(acc, copy_to, p, n);
    case Kernel::kAvx2:
      return AddAvx2<kCopy>(acc, copy_to, p, n);
#endif
    default:
      if constexpr (kCopy) std::memcpy(copy_to, p, n);
      return AddScalar(acc, p, n);
  }
}

}  // namespace internal

// From this many bytes on, Add runs the vector kernel; below, the scalar
// loop is as fast (the kernel's set-up and its 64-bit fold cost about as
// much as it saves at 128 bytes; bench/micro/checksum_bench).
inline constexpr size_t kVectorMinBytes = 256;

// Adds the `n` bytes at `p` to the accumulator `acc` (0 to start). Words are
// taken from `p` on (an odd trailing byte is padded with zero), so every
// segment but the last must have an even length.
inline uint64_t Add(uint64_t acc, const uint8_t* p, size_t n) {
  if (n < kVectorMinBytes) return internal::AddScalar(acc, p, n);
  return internal::AddWith<false>(internal::ActiveKernel(), acc, nullptr, p, n);
}

// Add, copying the `n` bytes to `to` on the way (the ranges must not
// overlap): one pass over the bytes instead of a memcpy and a sum.
inline uint64_t AddCopy(uint64_t acc, uint8_t* to, const uint8_t* p, size_t n) {
  if (n < kVectorMinBytes) {
    std::memcpy(to, p, n);
    return internal::AddScalar(acc, p, n);
  }
  return internal::AddWith<true>(internal::ActiveKernel(), acc, to, p, n);
}

// The kernel Add uses for long inputs: "avx512", "avx2" or "scalar".
inline const char* KernelName() {
  switch (internal::ActiveKernel()) {
    case internal::Kernel::kAvx512:
      return "avx512";
    case internal::Kernel::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
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
