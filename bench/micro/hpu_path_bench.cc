// Per-packet costs of the HPU's path, without ports: classification, match
// lookup as installed ECTXs grow, and sPIN dispatch of a null handler.
// Items/s reads as packets/s. Run: build/bench/micro/hpu_path_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/ectx_table.h"
#include "dataplane/spin_engine.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

frames::Bytes UdpFrame() {
  return frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                      1234, 5678, frames::Bytes(18, 0));
}

void BM_ParseFrameUdp4(benchmark::State& state) {
  frames::Bytes frame = UdpFrame();
  ParsedFrame parsed;
  for (auto _ : state) {
    ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseFrameUdp4);

void BM_ParseFrameIpv6(benchmark::State& state) {
  frames::Bytes frame = frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1",
                                     "fd00::2", 1, 2, frames::Bytes(18, 0));
  ParsedFrame parsed;
  for (auto _ : state) {
    ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseFrameIpv6);

// N installed ECTXs whose rules do not match, then one that does: the cost
// of the linear rule walk an unmatched-until-last packet pays.
void BM_EctxMatchWorstCase(benchmark::State& state) {
  std::vector<std::shared_ptr<const Ectx>> ectxs;
  for (int i = 0; i < state.range(0); ++i) {
    HandlerConfig config;
    config.name = "e" + std::to_string(i);
    config.kind = "null";
    config.match.match_ip_proto = true;
    config.match.ip_proto = 17;
    config.match.dst_port_first = config.match.dst_port_last =
        static_cast<uint16_t>(10000 + i);
    if (i + 1 == state.range(0)) {
      config.match.dst_port_first = config.match.dst_port_last = 5678;
    }
    auto ectx = Ectx::Create(static_cast<uint32_t>(i), config);
    if (!ectx.ok()) {
      state.SkipWithError("cannot create ECTX");
      return;
    }
    ectxs.push_back(std::move(*ectx));
  }
  EctxTable table(std::move(ectxs));
  frames::Bytes frame = UdpFrame();
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  for (auto _ : state) {
    benchmark::DoNotOptimize(table.Match(parsed, 0));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EctxMatchWorstCase)->Arg(1)->Arg(16)->Arg(256);

void BM_EngineNullHandler(benchmark::State& state) {
  HandlerConfig config;
  config.name = "null";
  config.kind = "null";
  auto ectx = Ectx::Create(0, config);
  if (!ectx.ok()) {
    state.SkipWithError("cannot create ECTX");
    return;
  }
  std::vector<EctxCounters> counters(Ectx::kMaxEctxs);
  SpinEngine engine(0, nullptr, counters);
  frames::Bytes frame = UdpFrame();
  ParsedFrame parsed;
  ParseFrame(frame.data(), static_cast<uint32_t>(frame.size()), &parsed);
  for (auto _ : state) {
    PacketView view(frame.data(), static_cast<uint32_t>(frame.size()),
                    parsed.layers, 0);
    engine.RunSinglePacketMessage(**ectx, view);
    benchmark::DoNotOptimize(view);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EngineNullHandler);

}  // namespace
}  // namespace spinnic

BENCHMARK_MAIN();
