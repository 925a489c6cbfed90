// datatype (handlers/datatype.cc) per packet: one Payload call per
// iteration, through the handler ops the engine calls, on a UDP frame whose
// payload is one packet of a long DiAD-like message (MessageInfo set as a
// transport sets it). The packet's message offset cycles through the
// message, so that packets start mid-block as they do on the wire.
// BM_DatatypeVectorPayload (layout=vector) args: payload bytes per packet,
// blocklen, stride (stride == blocklen: the contiguous fast path).
// BM_DatatypeIndexedPayload (layout=indexed) args: payload bytes per packet,
// blocks in the type, bytes per block (each block followed by a gap of the
// same size, with a count that covers the message): the binary search for
// the first block plus one copy per piece. Items/s reads as packets/s,
// bytes/s as payload bytes placed per second.
// Run: build/bench/micro/datatype_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/micro/bench_util.h"
#include "handlers/api/testing.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

// Payload calls of `handler` with packets of `payload` bytes walking
// through a message of `message` bytes, into `region`.
void RunPayloads(benchmark::State& state,
                 absl::StatusOr<HandlerInstance>& handler, uint64_t payload,
                 uint64_t message, std::vector<uint8_t>& region) {
  if (!handler.ok()) {
    state.SkipWithError(std::string(handler.status().message()).c_str());
    return;
  }
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

void BM_DatatypeVectorPayload(benchmark::State& state) {
  const uint64_t payload = static_cast<uint64_t>(state.range(0));
  const uint64_t blocklen = static_cast<uint64_t>(state.range(1));
  const uint64_t stride = static_cast<uint64_t>(state.range(2));
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest("datatype", {{"blocklen", std::to_string(blocklen)},
                                        {"stride", std::to_string(stride)}});
  // 64 packets' worth of message, its blocks spread by stride / blocklen.
  const uint64_t message = 64 * payload;
  std::vector<uint8_t> region((message / blocklen + 1) * stride, 0);
  RunPayloads(state, handler, payload, message, region);
}
BENCHMARK(BM_DatatypeVectorPayload)
    ->ArgNames({"payload", "blocklen", "stride"})
    ->Args({1404, 64, 64})      // contiguous: one memcpy
    ->Args({1404, 64, 256})     // 22-23 blocks per packet
    ->Args({1404, 8, 16})       // 176 tiny blocks per packet
    ->Args({1404, 1000, 1024})  // large blocks: 2-3 pieces
    ->Args({64, 48, 80})
    ->Apply(bench::FixedIterationsIfRequested);

void BM_DatatypeIndexedPayload(benchmark::State& state) {
  const uint64_t payload = static_cast<uint64_t>(state.range(0));
  const uint64_t blocks = static_cast<uint64_t>(state.range(1));
  const uint64_t blocklen = static_cast<uint64_t>(state.range(2));
  // Block j of blocklen bytes at 2 * j * blocklen: an indexed type with
  // as many blocks as asked, instances repeated to cover the message.
  std::string list;
  for (uint64_t j = 0; j < blocks; ++j) {
    absl::StrAppend(&list, j == 0 ? "" : ",", blocklen, "@", 2 * j * blocklen);
  }
  const uint64_t message = 64 * payload;
  const uint64_t size = blocks * blocklen;
  const uint64_t count = (message + size - 1) / size;
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest("datatype", {{"layout", "indexed"},
                                        {"blocks", list},
                                        {"count", std::to_string(count)}});
  std::vector<uint8_t> region(count * 2 * size, 0);
  RunPayloads(state, handler, payload, message, region);
}
BENCHMARK(BM_DatatypeIndexedPayload)
    ->ArgNames({"payload", "blocks", "blocklen"})
    ->Args({1404, 1, 64})     // one block: the vector 64 / 128 as indexed
    ->Args({1404, 16, 64})    // 22-23 pieces, search over 16 blocks
    ->Args({1404, 1024, 64})  // the same pieces, search over 1024 blocks
    ->Args({1404, 1024, 8})   // 176 tiny pieces
    ->Args({1404, 4, 1000})   // large blocks: 2-3 pieces
    ->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

}  // namespace
}  // namespace spinnic

BENCHMARK_MAIN();
