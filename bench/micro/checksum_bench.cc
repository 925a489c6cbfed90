// Checksum and CRC helpers per byte, at 64 B, 1 KiB and 9 KiB:
//   - the Internet checksum: the project's one copy (checksum::Compute,
//     dataplane/common/checksum.h: native order, 8 bytes per load); the
//     big-endian word loop (net::Load16 over the bytes, net::Fold) that
//     reflect.cc, neighbor.cc and the RoCE wire format each had a copy of
//     before, kept here as the baseline; DPDK's rte_raw_cksum (the same sum,
//     host-order words) and rte_ipv4_cksum (a 20-byte header); RFC 1624's
//     incremental update (net::UpdateChecksum, per call);
//   - rte_hash_crc (CRC32-C), with the SSE4.2 instruction and in software;
//   - rte_net_crc_calc(RTE_NET_CRC32_ETH), the CRC the RoCEv2 ICRC is built
//     on, with each of its algorithms: scalar (table), SSE4.2 + PCLMULQDQ,
//     AVX-512 + VPCLMULQDQ.
// bytes_per_second is throughput; time/KiB the CPU time per KiB.
//
// rte_net_crc allows an algorithm only up to the EAL's maximum SIMD width
// (0 before rte_eal_init: scalar only; 256 by default on x86: no AVX-512),
// so main() initialises the EAL with --force-max-simd-bitwidth=512.
// Run: build/bench/micro/checksum_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>
#include <rte_byteorder.h>
#include <rte_cpuflags.h>
#include <rte_eal.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_net_crc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#if SPINNIC_HAVE_ISAL
#include <isa-l/crc.h>
#endif
#include "bench/micro/bench_util.h"
#include "dataplane/common/checksum.h"
#include "dataplane/dataplane.h"
#include "handlers/api/net.h"

namespace spinnic {
namespace {

// The Internet checksum (RFC 1071) over `bytes`, one big-endian word at a
// time (an odd last byte as a high byte), folded and complemented: the
// removed copies' loop, the baseline and the self-check's reference.
uint16_t NetChecksum(std::span<const uint8_t> bytes) {
  uint64_t sum = 0;
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  for (uint32_t i = 0; i + 1 < n; i += 2) sum += net::Load16(bytes, i);
  if (n % 2 != 0) sum += uint64_t{bytes[n - 1]} << 8;
  return static_cast<uint16_t>(~net::Fold(sum));
}

std::vector<uint8_t> RandomBytes(size_t n) {
  std::mt19937 random(1);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(random());
  return bytes;
}

void ReportBytes(benchmark::State& state, size_t bytes) {
  const double total = static_cast<double>(state.iterations()) * bytes;
  state.SetBytesProcessed(static_cast<int64_t>(total));
  state.counters["time/KiB"] = benchmark::Counter(
      total / 1024, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->Arg(64)->Arg(1024)->Arg(9216);
  bench::FixedIterationsIfRequested(b);
}

// An IPv4 header (20), a small packet, a full one and a jumbo.
void ChecksumSizes(benchmark::internal::Benchmark* b) {
  b->Arg(20)->Arg(64)->Arg(256)->Arg(1500)->Arg(4096)->Arg(9216);
  bench::FixedIterationsIfRequested(b);
}

void BM_Checksum(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(checksum::Compute(bytes.data(), bytes.size()));
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_Checksum)->Apply(ChecksumSizes);

// Each kernel of checksum::Add on its own (Compute above picks the widest
// from 256 bytes on).
void BM_ChecksumKernel(benchmark::State& state,
                       checksum::internal::Kernel kernel) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(checksum::internal::AddWith<false>(
        kernel, 0, nullptr, bytes.data(), bytes.size()));
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK_CAPTURE(BM_ChecksumKernel, scalar,
                  checksum::internal::Kernel::kScalar)
    ->Apply(ChecksumSizes);
BENCHMARK_CAPTURE(BM_ChecksumKernel, avx2, checksum::internal::Kernel::kAvx2)
    ->Apply(ChecksumSizes);
BENCHMARK_CAPTURE(BM_ChecksumKernel, avx512,
                  checksum::internal::Kernel::kAvx512)
    ->Apply(ChecksumSizes);

// A sender's copy of a payload into its frame plus the checksum over it:
// memcpy then Add (two passes) against AddCopy (one).
void BM_CopyThenChecksum(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  std::vector<uint8_t> frame(bytes.size() + 64);
  for (auto _ : state) {
    std::memcpy(frame.data() + 62, bytes.data(), bytes.size());
    benchmark::DoNotOptimize(checksum::Add(0, frame.data() + 62, bytes.size()));
    benchmark::ClobberMemory();
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_CopyThenChecksum)->Apply(ChecksumSizes);

void BM_ChecksumCopy(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  std::vector<uint8_t> frame(bytes.size() + 64);
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        checksum::AddCopy(0, frame.data() + 62, bytes.data(), bytes.size()));
    benchmark::ClobberMemory();
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_ChecksumCopy)->Apply(ChecksumSizes);

void BM_Memcpy(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  std::vector<uint8_t> frame(bytes.size() + 64);
  for (auto _ : state) {
    std::memcpy(frame.data() + 62, bytes.data(), bytes.size());
    benchmark::ClobberMemory();
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_Memcpy)->Apply(ChecksumSizes);

void BM_NetChecksum(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(NetChecksum(bytes));
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_NetChecksum)->Apply(ChecksumSizes);

// One 16-bit word of the covered bytes changed: the checksum's update, per
// call. Each update feeds the next (a latency chain, as when a handler
// rewrites several words of one header).
void BM_NetUpdateChecksum(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(1024);
  uint16_t checksum = NetChecksum(bytes);
  uint32_t at = 0;
  for (auto _ : state) {
    checksum = net::UpdateChecksum(checksum, net::Load16(bytes, at),
                                   net::Load16(bytes, at + 2));
    at = (at + 2) & 1019;  // stays an even offset below 1022
    benchmark::DoNotOptimize(checksum);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NetUpdateChecksum)->Apply(bench::FixedIterationsIfRequested);

void BM_RteRawCksum(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(rte_raw_cksum(bytes.data(), bytes.size()));
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_RteRawCksum)->Apply(ChecksumSizes);

// rte_ipv4_cksum over a 20-byte header, against checksum::Compute at 20
// bytes above (BM_Checksum/20).
void BM_RteIpv4Cksum(benchmark::State& state) {
  std::vector<uint8_t> bytes = RandomBytes(20);
  bytes[0] = 0x45;  // version 4, IHL 5
  const auto* header = reinterpret_cast<const rte_ipv4_hdr*>(bytes.data());
  for (auto _ : state) {
    benchmark::DoNotOptimize(rte_ipv4_cksum(header));
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_RteIpv4Cksum)->Apply(bench::FixedIterationsIfRequested);

// CRC32-C; `alg` is CRC32_SSE42_x64 (the default on x86-64: the crc32
// instruction, 8 bytes at a time) or CRC32_SW (tables).
void BM_RteHashCrc(benchmark::State& state, uint8_t alg) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  rte_hash_crc_set_alg(alg);
  for (auto _ : state) {
    benchmark::DoNotOptimize(rte_hash_crc(
        bytes.data(), static_cast<uint32_t>(bytes.size()), 0xffffffff));
  }
  rte_hash_crc_set_alg(CRC32_SSE42_x64);
  ReportBytes(state, bytes.size());
}
BENCHMARK_CAPTURE(BM_RteHashCrc, sse42, uint8_t{CRC32_SSE42_x64})->Apply(Sizes);
BENCHMARK_CAPTURE(BM_RteHashCrc, sw, uint8_t{CRC32_SW})->Apply(Sizes);

// Whether rte_net_crc_set_alg(alg) gets `alg` on this CPU rather than
// falling back silently (to SSE4.2, or to the scalar tables); mirrors the
// checks of DPDK's net_crc_sse.c and net_crc_avx512.c. The SIMD width they
// also need is forced to 512 in main(). Valgrind hides AVX-512 from CPUID.
bool NetCrcAlgAvailable(rte_net_crc_alg alg) {
  auto has = [](rte_cpu_flag_t flag) {
    return rte_cpu_get_flag_enabled(flag) > 0;
  };
  const bool sse42 = has(RTE_CPUFLAG_SSE4_2) && has(RTE_CPUFLAG_PCLMULQDQ);
  switch (alg) {
    case RTE_NET_CRC_SCALAR:
      return true;
    case RTE_NET_CRC_SSE42:
      return sse42;
    case RTE_NET_CRC_AVX512:
      return sse42 && has(RTE_CPUFLAG_AVX512F) && has(RTE_CPUFLAG_AVX512BW) &&
             has(RTE_CPUFLAG_AVX512DQ) && has(RTE_CPUFLAG_AVX512VL) &&
             has(RTE_CPUFLAG_VPCLMULQDQ);
    default:
      return false;
  }
}

// CRC32 as Ethernet's FCS and the RoCEv2 ICRC compute it.
void BM_RteNetCrc32Eth(benchmark::State& state, rte_net_crc_alg alg) {
  if (!NetCrcAlgAvailable(alg)) {
    state.SkipWithError("this CPU lacks the instructions it needs");
    return;
  }
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  rte_net_crc_set_alg(alg);
  for (auto _ : state) {
    benchmark::DoNotOptimize(rte_net_crc_calc(
        bytes.data(), static_cast<uint32_t>(bytes.size()), RTE_NET_CRC32_ETH));
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK_CAPTURE(BM_RteNetCrc32Eth, scalar, RTE_NET_CRC_SCALAR)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_RteNetCrc32Eth, sse42, RTE_NET_CRC_SSE42)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_RteNetCrc32Eth, avx512, RTE_NET_CRC_AVX512)->Apply(Sizes);

#if SPINNIC_HAVE_ISAL
// The same CRC from ISA-L (a libdpdk-dev dependency), which picks its own
// widest kernel at the first call (VPCLMULQDQ where the CPU has it,
// whatever the EAL's SIMD limit).
void BM_IsalCrc32GzipRefl(benchmark::State& state) {
  const std::vector<uint8_t> bytes = RandomBytes(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(crc32_gzip_refl(0, bytes.data(), bytes.size()));
  }
  ReportBytes(state, bytes.size());
}
BENCHMARK(BM_IsalCrc32GzipRefl)->Apply(Sizes);
#endif

BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

// Every implementation against known answers before anything is timed: a
// fast wrong checksum is not a result.
bool SelfCheck() {
  bool ok = true;
  auto expect = [&ok](const char* what, uint32_t got, uint32_t want) {
    if (got != want) {
      std::fprintf(stderr, "self-check: %s = 0x%08x, want 0x%08x\n", what, got,
                   want);
      ok = false;
    }
  };
  // The standard check input "123456789" (CRC catalogue check values).
  const char* check = "123456789";
  for (uint8_t alg : {uint8_t{CRC32_SW}, uint8_t{CRC32_SSE42_x64}}) {
    rte_hash_crc_set_alg(alg);
    expect("rte_hash_crc(\"123456789\")", ~rte_hash_crc(check, 9, 0xffffffff),
           0xe3069283);
  }
  rte_hash_crc_set_alg(CRC32_SSE42_x64);
  for (rte_net_crc_alg alg :
       {RTE_NET_CRC_SCALAR, RTE_NET_CRC_SSE42, RTE_NET_CRC_AVX512}) {
    if (!NetCrcAlgAvailable(alg)) continue;
    rte_net_crc_set_alg(alg);
    expect("rte_net_crc_calc(\"123456789\", CRC32_ETH)",
           rte_net_crc_calc(check, 9, RTE_NET_CRC32_ETH), 0xcbf43926);
    // Long enough for the vector paths' folding loops, odd for their tails.
    const std::vector<uint8_t> bytes = RandomBytes(9215);
    rte_net_crc_set_alg(RTE_NET_CRC_SCALAR);
    const uint32_t want = rte_net_crc_calc(
        bytes.data(), static_cast<uint32_t>(bytes.size()), RTE_NET_CRC32_ETH);
    rte_net_crc_set_alg(alg);
    expect("rte_net_crc_calc(9215 random bytes, CRC32_ETH) vs scalar",
           rte_net_crc_calc(bytes.data(), static_cast<uint32_t>(bytes.size()),
                            RTE_NET_CRC32_ETH),
           want);
  }
  // RFC 1071's example words 0001 f203 f4f5 f6f7: sum ddf2, checksum 220d.
  const uint8_t rfc1071[] = {0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7};
  expect("NetChecksum(RFC 1071 example)", NetChecksum(rfc1071), 0x220d);
  expect("checksum::Compute(RFC 1071 example)",
         checksum::Compute(rfc1071, sizeof(rfc1071)), 0x220d);
  for (size_t n = 0; n <= 200; ++n) {
    const std::vector<uint8_t> bytes = RandomBytes(n);
    expect("checksum::Compute vs NetChecksum",
           checksum::Compute(bytes.data(), bytes.size()), NetChecksum(bytes));
  }
  for (size_t n : {size_t{64}, size_t{1023}, size_t{9216}}) {
    const std::vector<uint8_t> bytes = RandomBytes(n);
    expect("checksum::Compute vs NetChecksum",
           checksum::Compute(bytes.data(), bytes.size()), NetChecksum(bytes));
    // rte_raw_cksum sums host-order (little-endian) words: byte-swapped.
    expect("rte_raw_cksum vs NetChecksum",
           static_cast<uint16_t>(
               ~rte_bswap16(rte_raw_cksum(bytes.data(), bytes.size()))),
           NetChecksum(bytes));
    // RFC 1624: changing one word and updating gives the full recompute.
    std::vector<uint8_t> changed = bytes;
    const uint16_t old_word = net::Load16(changed, 10);
    net::Store16(changed, 10, static_cast<uint16_t>(old_word ^ 0x5a5a));
    expect("UpdateChecksum vs recompute",
           net::UpdateChecksum(NetChecksum(bytes), old_word,
                               net::Load16(changed, 10)),
           NetChecksum(changed));
  }
  return ok;
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  absl::Status eal =
      spinnic::InitEal({"checksum_bench", "--no-huge", "-m", "64", "--no-pci",
                        "--no-shconf", "--no-telemetry", "-l", "0",
                        "--log-level", "4", "--force-max-simd-bitwidth=512"});
  if (!eal.ok()) {
    std::fprintf(stderr, "%s\n", std::string(eal.message()).c_str());
    return 1;
  }
  if (!spinnic::SelfCheck()) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rte_eal_cleanup();
  return 0;
}
