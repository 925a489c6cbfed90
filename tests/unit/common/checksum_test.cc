// The Internet checksum (dataplane/common/checksum.h): every kernel the CPU
// has (scalar, AVX2, AVX-512) against a big-endian word loop written from
// RFC 1071, at every length up to 600 bytes, long and multi-block lengths,
// four alignments and all-ones input (the largest lane sums); AddCopy copies
// exactly what it sums; segments continue a sum.
#include "dataplane/common/checksum.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace spinnic::checksum {
namespace {

using internal::Kernel;

// RFC 1071: the one's complement sum of big-endian 16-bit words (an odd
// last byte is the high byte of a word), folded and complemented.
uint16_t Reference(const uint8_t* p, size_t n) {
  uint64_t sum = 0;
  for (size_t i = 0; i + 1 < n; i += 2) sum += uint32_t{p[i]} << 8 | p[i + 1];
  if (n % 2 != 0) sum += uint32_t{p[n - 1]} << 8;
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

std::vector<Kernel> KernelsHere() {
  std::vector<Kernel> kernels = {Kernel::kScalar};
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) kernels.push_back(Kernel::kAvx2);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    kernels.push_back(Kernel::kAvx512);
  }
#endif
  return kernels;
}

uint16_t WithKernel(Kernel kernel, const uint8_t* p, size_t n) {
  return static_cast<uint16_t>(
      ~Fold(internal::AddWith<false>(kernel, 0, nullptr, p, n)));
}

std::vector<size_t> Lengths() {
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 600; ++n) lengths.push_back(n);
  for (size_t n : {1023, 1024, 1500, 4095, 4096, 9216, 65535, 65536, 65537,
                   3 * 65536 + 77}) {
    lengths.push_back(n);
  }
  return lengths;
}

TEST(Checksum, EveryKernelMatchesTheRfc1071WordLoop) {
  std::mt19937 random(11);
  std::vector<uint8_t> bytes(3 * 65536 + 77 + 3);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  for (Kernel kernel : KernelsHere()) {
    for (size_t n : Lengths()) {
      for (size_t misalign : {0, 1, 2, 3}) {
        const uint8_t* p = bytes.data() + misalign;
        ASSERT_EQ(WithKernel(kernel, p, n), Reference(p, n))
            << "kernel " << int(kernel) << " length " << n << " at +"
            << misalign;
      }
    }
  }
}

// All-ones words make every 32-bit lane grow fastest: a block's lane sums
// must still fold without overflow.
TEST(Checksum, AllOnesOverManyBlocksDoesNotOverflow) {
  const std::vector<uint8_t> ones(5 * 65536 + 6, 0xff);
  for (Kernel kernel : KernelsHere()) {
    ASSERT_EQ(WithKernel(kernel, ones.data(), ones.size()),
              Reference(ones.data(), ones.size()))
        << "kernel " << int(kernel);
  }
}

TEST(Checksum, AddCopyCopiesWhatItSums) {
  std::mt19937 random(12);
  std::vector<uint8_t> src(70000);
  for (uint8_t& b : src) b = static_cast<uint8_t>(random());
  for (Kernel kernel : KernelsHere()) {
    for (size_t n : {size_t{0}, size_t{7}, size_t{255}, size_t{256},
                     size_t{1501}, size_t{4096}, size_t{69999}}) {
      std::vector<uint8_t> dst(n + 2, 0xa5);
      const uint64_t sum =
          internal::AddWith<true>(kernel, 0, dst.data() + 1, src.data(), n);
      EXPECT_EQ(static_cast<uint16_t>(~Fold(sum)), Reference(src.data(), n));
      EXPECT_TRUE(std::equal(src.begin(), src.begin() + n, dst.begin() + 1));
      EXPECT_EQ(dst.front(), 0xa5) << "wrote before the destination";
      EXPECT_EQ(dst.back(), 0xa5) << "wrote past the destination";
    }
  }
  // The dispatching entry point, too.
  std::vector<uint8_t> dst(4096);
  EXPECT_EQ(static_cast<uint16_t>(
                ~Fold(AddCopy(0, dst.data(), src.data(), dst.size()))),
            Reference(src.data(), dst.size()));
}

// A datagram summed in even-length segments (pseudo-header, headers,
// payload), the way the transports build one, equals the one-piece sum.
TEST(Checksum, SegmentsContinueTheSum) {
  std::mt19937 random(13);
  std::vector<uint8_t> bytes(4096 + 40 + 7);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  uint64_t acc = Add(0, bytes.data(), 40);
  acc = Add(acc, bytes.data() + 40, 300);
  acc = Add(acc, bytes.data() + 340, bytes.size() - 340);
  EXPECT_EQ(static_cast<uint16_t>(~Fold(acc)),
            Reference(bytes.data(), bytes.size()));
  EXPECT_EQ(Compute(bytes.data(), bytes.size()),
            Reference(bytes.data(), bytes.size()));
}

TEST(Checksum, KernelNameIsTheWidestTheCpuHas) {
  const std::string name = KernelName();
  const Kernel widest = KernelsHere().back();
  EXPECT_EQ(name, widest == Kernel::kAvx512 ? "avx512"
                  : widest == Kernel::kAvx2 ? "avx2"
                                            : "scalar");
}

}  // namespace
}  // namespace spinnic::checksum
