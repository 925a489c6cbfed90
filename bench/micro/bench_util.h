// Shared by the micro-benchmarks in bench/micro/: fixed iteration counts for
// callgrind.sh, and the empty loop it subtracts.
//
//   BENCHMARK(BM_Something)->Apply(bench::FixedIterationsIfRequested);
#ifndef SPINNIC_BENCH_MICRO_BENCH_UTIL_H_
#define SPINNIC_BENCH_MICRO_BENCH_UTIL_H_

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>

namespace spinnic::bench {

// callgrind.sh sets this to the number of iterations every benchmark must
// run for.
inline constexpr char kIterationsEnv[] = "SPINNIC_BENCH_ITERATIONS";

// With SPINNIC_BENCH_ITERATIONS=N in the environment, the benchmark runs for
// exactly N iterations, once, without calibration runs: instruction totals
// then turn into instructions per iteration. Without it Google Benchmark picks
// the count as usual. (This Google Benchmark, 1.7, has no "Nx" form of
// --benchmark_min_time.)
inline void FixedIterationsIfRequested(benchmark::internal::Benchmark* b) {
  const char* text = std::getenv(kIterationsEnv);
  if (text == nullptr || *text == '\0') return;
  char* end = nullptr;
  const long long n = std::strtoll(text, &end, 10);
  if (*end != '\0' || n <= 0) {
    std::fprintf(stderr, "%s=%s: want a positive iteration count\n",
                 kIterationsEnv, text);
    std::exit(2);
  }
  b->Iterations(static_cast<benchmark::IterationCount>(n));
}

// The benchmark loop alone: callgrind.sh subtracts its instructions per
// iteration from every other benchmark's. The compiler barrier (no
// instruction) keeps the compiler from collapsing the loop, as the
// DoNotOptimize calls in the real benchmarks do.
inline void BM_EmptyLoop(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace spinnic::bench

#endif  // SPINNIC_BENCH_MICRO_BENCH_UTIL_H_
