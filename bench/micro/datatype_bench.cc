// vector_scatter (handlers/vector_scatter.cc) per packet: one Payload call
// per iteration, through the handler ops the engine calls, on a UDP frame
// whose payload is one packet of a long DiAD-like message (MessageInfo set
// as a transport sets it). The packet's message offset cycles through the
// message, so that packets start mid-block as they do on the wire. Args:
// payload bytes per packet, blocklen, stride (stride == blocklen: the
// contiguous fast path). Items/s reads as packets/s, bytes/s as payload
// bytes placed per second.
// Run: build/bench/micro/vector_scatter_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/micro/bench_util.h"
#include "handlers/api/testing.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

void BM_VectorScatterPayload(benchmark::State& state) {
  const uint64_t payload = static_cast<uint64_t>(state.range(0));
  const uint64_t blocklen = static_cast<uint64_t>(state.range(1));
  const uint64_t stride = static_cast<uint64_t>(state.range(2));
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest(
      "vector_scatter", {{"blocklen", std::to_string(blocklen)},
                         {"stride", std::to_string(stride)}});
  if (!handler.ok()) {
    state.SkipWithError(std::string(handler.status().message()).c_str());
    return;
  }
  // 64 packets' worth of message, its blocks spread by stride / blocklen.
  const uint64_t message = 64 * payload;
  std::vector<uint8_t> region((message / blocklen + 1) * stride, 0);
  FakeEctx ectx(/*state_size=*/48);
  ectx.AddRegion(1, region);
  TestPacket packet(frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                 "10.0.0.2", 1234, 5678,
                                 frames::Bytes(payload, 0x47)));
  MessageInfo info{.transport = MessageTransport::kDiadWrite,
                   .offset = 0,
                   .length = message};
  for (auto _ : state) {
    packet.view().SetMessage(info);
    benchmark::DoNotOptimize(
        RunPayload(*handler, ectx.context(), packet.view()));
    info.offset += payload;
    if (info.offset == message) info.offset = 0;
  }
  benchmark::DoNotOptimize(region.data());
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * payload);
}
BENCHMARK(BM_VectorScatterPayload)
    ->ArgNames({"payload", "blocklen", "stride"})
    ->Args({1404, 64, 64})      // contiguous: one memcpy
    ->Args({1404, 64, 256})     // 22-23 blocks per packet
    ->Args({1404, 8, 16})       // 176 tiny blocks per packet
    ->Args({1404, 1000, 1024})  // large blocks: 2-3 pieces
    ->Args({64, 48, 80})
    ->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

}  // namespace
}  // namespace spinnic

BENCHMARK_MAIN();
