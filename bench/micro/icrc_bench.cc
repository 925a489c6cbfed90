// The RoCEv2 ICRC (dataplane/roce/icrc.h) per frame, for frames of 64 B ..
// 4 KiB (IPv4 RC SEND ONLY, the whole frame counted):
//   - ComputeIcrc, the dataplane's: masks the variant fields in place and
//     makes one rte_net_crc_calc(RTE_NET_CRC32_ETH) pass, with each of
//     librte_net's algorithms (scalar tables, SSE4.2 + PCLMULQDQ, AVX-512 +
//     VPCLMULQDQ);
//   - ComputeIcrcOver, the zero-copy frame's: the payload in a buffer of its
//     own, the headers' CRC continued over it with ISA-L;
//   - the same ICRC with zlib's crc32 (when zlib is installed), which can
//     continue a CRC and so needs no in-place masking: the masked headers
//     are copied to a small buffer, the rest is read where it is;
//   - ComputeIcrcReference, the byte-at-a-time table of the unit tests.
// time/KiB is the CPU time per KiB of frame.
//
// rte_net_crc allows an algorithm only up to the EAL's maximum SIMD width,
// so main() initialises the EAL with --force-max-simd-bitwidth=512.
// Run: build/bench/micro/icrc_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>
#include <rte_cpuflags.h>
#include <rte_eal.h>
#include <rte_net_crc.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if SPINNIC_HAVE_ZLIB
#include <zlib.h>
#endif

#include "absl/status/status.h"
#include "bench/micro/bench_util.h"
#include "dataplane/dataplane.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/icrc.h"
#include "tests/common/icrc_reference.h"

namespace spinnic::roce {
namespace {

constexpr uint32_t kIpOffset = 14;
constexpr uint32_t kUdpOffset = 34;
constexpr uint32_t kHeaders = 14 + 20 + 8 + 12;  // Ethernet .. BTH

// An IPv4 RC SEND ONLY frame of `size` bytes (size - 58 payload bytes; the
// ICRC does not care that 64 B leaves 6, unpadded) with its ICRC in place.
// Written by hand rather than with wire.cc's builder so that the bench needs
// icrc.cc alone.
std::vector<uint8_t> MakeFrame(uint32_t size) {
  std::vector<uint8_t> f(size);
  for (uint32_t i = 0; i < size; ++i) f[i] = static_cast<uint8_t>(i * 131);
  f[12] = 0x08;
  f[13] = 0x00;
  uint8_t* ip = f.data() + kIpOffset;
  ip[0] = 0x45;
  ip[1] = 0;
  const uint32_t total = size - kIpOffset;
  ip[2] = static_cast<uint8_t>(total >> 8);
  ip[3] = static_cast<uint8_t>(total);
  ip[6] = 0x40;
  ip[7] = 0;
  ip[8] = 64;
  ip[9] = 17;
  uint8_t* udp = f.data() + kUdpOffset;
  udp[2] = kRoceUdpPort >> 8;
  udp[3] = kRoceUdpPort & 0xff;
  udp[4] = static_cast<uint8_t>((total - 20) >> 8);
  udp[5] = static_cast<uint8_t>(total - 20);
  udp[6] = udp[7] = 0;
  uint8_t* bth = udp + 8;
  bth[0] = static_cast<uint8_t>(Opcode::kRcSendOnly);
  bth[1] = 0;  // no pad, TVer 0
  WriteIcrc(f.data(), size, IcrcSpan{kIpOffset, kUdpOffset, size - 4});
  return f;
}

IcrcSpan SpanOf(const std::vector<uint8_t>& f) {
  return IcrcSpan{kIpOffset, kUdpOffset, static_cast<uint32_t>(f.size()) - 4};
}

void ReportBytes(benchmark::State& state, size_t bytes) {
  const double total = static_cast<double>(state.iterations()) * bytes;
  state.SetBytesProcessed(static_cast<int64_t>(total));
  state.counters["time/KiB"] = benchmark::Counter(
      total / 1024, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int size : {64, 128, 256, 512, 1024, 2048, 4096}) b->Arg(size);
  bench::FixedIterationsIfRequested(b);
}

// Whether rte_net_crc_set_alg(alg) really gets `alg` here (librte_net
// silently falls back otherwise); the checks of DPDK's net_crc_sse.c and
// net_crc_avx512.c.
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

void BM_Icrc(benchmark::State& state, rte_net_crc_alg alg) {
  if (!NetCrcAlgAvailable(alg)) {
    state.SkipWithError("this CPU lacks the instructions it needs");
    return;
  }
  std::vector<uint8_t> frame = MakeFrame(state.range(0));
  const IcrcSpan span = SpanOf(frame);
  rte_net_crc_set_alg(alg);
  for (auto _ : state) {
    uint32_t icrc = 0;
    ComputeIcrc(frame.data(), frame.size(), span, &icrc);
    benchmark::DoNotOptimize(icrc);
  }
  ReportBytes(state, frame.size());
}
BENCHMARK_CAPTURE(BM_Icrc, rte_scalar, RTE_NET_CRC_SCALAR)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Icrc, rte_sse42, RTE_NET_CRC_SSE42)->Apply(Sizes);
BENCHMARK_CAPTURE(BM_Icrc, rte_avx512, RTE_NET_CRC_AVX512)->Apply(Sizes);

// The payload (all after the BTH) in a buffer of its own, with librte_net's
// widest algorithm for the headers.
void BM_IcrcOver(benchmark::State& state) {
  std::vector<uint8_t> frame = MakeFrame(state.range(0));
  const std::vector<uint8_t> payload(frame.begin() + kHeaders, frame.end() - 4);
  const IcrcSpan span{kIpOffset, kUdpOffset, kHeaders};
  rte_net_crc_set_alg(RTE_NET_CRC_AVX512);
  for (auto _ : state) {
    uint32_t icrc = 0;
    ComputeIcrcOver(frame.data(), kHeaders + kIcrcBytes, span, payload, {},
                    &icrc);
    benchmark::DoNotOptimize(icrc);
  }
  ReportBytes(state, frame.size());
}
BENCHMARK(BM_IcrcOver)->Apply(Sizes);

#if SPINNIC_HAVE_ZLIB
// The ICRC with zlib: masked copy of LRH stand-in + IPv4 + UDP + BTH, then
// crc32 continues over the frame in place.
uint32_t IcrcZlib(const uint8_t* frame, uint32_t length) {
  std::array<uint8_t, 8 + 20 + 8 + 12> head;
  std::memset(head.data(), 0xff, 8);
  std::memcpy(head.data() + 8, frame + kIpOffset, 20 + 8 + 12);
  uint8_t* ip = head.data() + 8;
  ip[1] = ip[8] = ip[10] = ip[11] = 0xff;
  ip[20 + 6] = ip[20 + 7] = 0xff;  // UDP checksum
  ip[28 + 4] = 0xff;               // BTH byte 4
  uLong crc = crc32(0L, head.data(), head.size());
  crc = crc32(crc, frame + kHeaders, length - kHeaders - kIcrcBytes);
  return static_cast<uint32_t>(crc);
}

void BM_IcrcZlib(benchmark::State& state) {
  const std::vector<uint8_t> frame = MakeFrame(state.range(0));
  for (auto _ : state) {
    benchmark::DoNotOptimize(IcrcZlib(frame.data(), frame.size()));
  }
  ReportBytes(state, frame.size());
}
BENCHMARK(BM_IcrcZlib)->Apply(Sizes);
#endif

void BM_IcrcReference(benchmark::State& state) {
  const std::vector<uint8_t> frame = MakeFrame(state.range(0));
  const IcrcSpan span = SpanOf(frame);
  for (auto _ : state) {
    uint32_t icrc = 0;
    ComputeIcrcReference(frame.data(), frame.size(), span, &icrc);
    benchmark::DoNotOptimize(icrc);
  }
  ReportBytes(state, frame.size());
}
BENCHMARK(BM_IcrcReference)->Apply(Sizes);

// Every implementation against the reference before anything is timed.
bool SelfCheck() {
  bool ok = true;
  for (uint32_t size : {64u, 1024u, 4096u}) {
    std::vector<uint8_t> frame = MakeFrame(size);
    uint32_t want = 0;
    ComputeIcrcReference(frame.data(), size, SpanOf(frame), &want);
    for (rte_net_crc_alg alg :
         {RTE_NET_CRC_SCALAR, RTE_NET_CRC_SSE42, RTE_NET_CRC_AVX512}) {
      if (!NetCrcAlgAvailable(alg)) continue;
      rte_net_crc_set_alg(alg);
      uint32_t got = 0;
      ComputeIcrc(frame.data(), size, SpanOf(frame), &got);
      if (got != want || !VerifyIcrc(frame.data(), size, SpanOf(frame))) {
        std::fprintf(stderr, "self-check: alg %d size %u: 0x%08x want 0x%08x\n",
                     alg, size, got, want);
        ok = false;
      }
    }
#if SPINNIC_HAVE_ZLIB
    if (IcrcZlib(frame.data(), size) != want) {
      std::fprintf(stderr, "self-check: zlib size %u\n", size);
      ok = false;
    }
#endif
  }
  return ok;
}

}  // namespace
}  // namespace spinnic::roce

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  absl::Status eal =
      spinnic::InitEal({"icrc_bench", "--no-huge", "-m", "64", "--no-pci",
                        "--no-shconf", "--no-telemetry", "-l", "0",
                        "--log-level", "4", "--force-max-simd-bitwidth=512"});
  if (!eal.ok()) {
    std::fprintf(stderr, "%s\n", std::string(eal.message()).c_str());
    return 1;
  }
  if (!spinnic::roce::SelfCheck()) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  rte_eal_cleanup();
  return 0;
}
