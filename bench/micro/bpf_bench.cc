// eBPF handlers against their native twins (handlers/bpf/examples/): one
// Payload call per iteration on the same 64-byte UDP frame, through the
// handler ops the engine calls, the eBPF program JIT-compiled; and the MPI
// vector scatter on a 1024-byte payload. Items/s
// reads as packets/s; bench/micro/callgrind.sh gives instructions per call.
// Run: build/bench/micro/bpf_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "bench/micro/bench_util.h"
#include "handlers/api/testing.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

std::string ExampleHex(const char* name) {
  const std::string path =
      std::string(SPINNIC_BPF_EXAMPLES_DIR) + "/" + name + ".o";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s: build the examples (clang)\n",
                 path.c_str());
    std::exit(1);
  }
  std::string bytes{std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>()};
  return absl::BytesToHexString(bytes);
}

// `kind` with `params`, or the eBPF example `example` when it is set.
void RunHandler(benchmark::State& state, const char* kind,
                const char* example) {
  absl::flat_hash_map<std::string, std::string> params;
  if (example != nullptr) params["program"] = ExampleHex(example);
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest(example != nullptr ? "bpf" : kind, params);
  if (!handler.ok()) {
    state.SkipWithError(std::string(handler.status().message()).c_str());
    return;
  }
  FakeEctx ectx(/*state_size=*/16);
  TestPacket packet(frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                 "10.0.0.2", 1234, 5678,
                                 frames::Bytes(18, 0x47)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        RunPayload(*handler, ectx.context(), packet.view()));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_NativeCount(benchmark::State& s) { RunHandler(s, "count", nullptr); }
void BM_BpfCount(benchmark::State& s) { RunHandler(s, "count", "count"); }
void BM_NativeFilter(benchmark::State& s) { RunHandler(s, "filter", nullptr); }
void BM_BpfFilter(benchmark::State& s) { RunHandler(s, "filter", "filter"); }
void BM_NativeReflect(benchmark::State& s) {
  RunHandler(s, "reflect", nullptr);
}
void BM_BpfReflect(benchmark::State& s) { RunHandler(s, "reflect", "reflect"); }
// The MPI vector datatype (the eBPF example vector_scatter.c, BLOCKLEN 64,
// STRIDE 256, against the native datatype kind's layout=vector): one
// 1024-byte payload, the middle packet of a message, scattered as 16 blocks
// into a bound region; Payload only (the engine's message is long).
void RunScatter(benchmark::State& state, bool ebpf) {
  absl::flat_hash_map<std::string, std::string> params;
  if (ebpf) {
    params["program"] = ExampleHex("vector_scatter");
  } else {
    params = {{"blocklen", "64"}, {"stride", "256"}};
  }
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest(ebpf ? "bpf" : "datatype", params);
  if (!handler.ok()) {
    state.SkipWithError(std::string(handler.status().message()).c_str());
    return;
  }
  std::vector<uint8_t> region(1 << 16);
  FakeEctx ectx(/*state_size=*/48);
  ectx.AddRegion(1, region);
  TestPacket packet(frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                 "10.0.0.2", 1234, 5678,
                                 frames::Bytes(1024, 0x5a)));
  packet.view().SetMessage({.transport = MessageTransport::kDiadStream,
                            .offset = 1024,
                            .length = 4096});
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        RunPayload(*handler, ectx.context(), packet.view()));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * 1024);
}
void BM_NativeVectorScatter(benchmark::State& s) { RunScatter(s, false); }
void BM_BpfVectorScatter(benchmark::State& s) { RunScatter(s, true); }

BENCHMARK(BM_NativeCount)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(BM_BpfCount)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(BM_NativeFilter)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(BM_BpfFilter)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(BM_NativeReflect)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(BM_BpfReflect)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(BM_NativeVectorScatter)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(BM_BpfVectorScatter)->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

}  // namespace
}  // namespace spinnic

BENCHMARK_MAIN();
