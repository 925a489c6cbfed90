// The sPIN use-case handlers (docs/handlers.md) per packet, in process, one
// thread: each benchmark calls the entry points the engine would call for
// one packet of a message (Payload for a middle packet; Header + Payload +
// Completion for single-packet requests), through the kind's ops table, on
// a 1024-byte payload unless its name says otherwise. Puts and replies go
// to a sink that only counts them, so the figures are the handler's own
// work (the transport's cost per put is hpu_path_bench's and diad's).
// bench/micro/callgrind.sh gives instructions per packet; cycles per packet
// are ns/packet times the clock (Google Benchmark prints the MHz).
//
// BM_Host_* are the same work without offload, on the host CPU, for the
// ratio: the transport stores the packet contiguously and the host then
// unpacks (datatype) or sums (reduce) it.
//
// Run: build-rel/bench/micro/usecase_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/micro/bench_util.h"
#include "handlers/api/testing.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

constexpr uint32_t kPayload = 1024;

// Counts actions; copies nothing (a DiAD put copies into mbufs, which the
// transport's own benchmarks measure).
class CountingSink final : public ActionSink {
 public:
  bool EmitFrame(std::span<const uint8_t>, EmitPort) override {
    ++actions;
    return true;
  }
  bool RaiseEvent(uint32_t, std::span<const uint8_t>) override {
    ++actions;
    return true;
  }
  bool PutToPeer(const PeerPut& put) override {
    benchmark::DoNotOptimize(put.data.data());
    ++actions;
    return true;
  }
  uint64_t actions = 0;
};

// One ECTX: state, region 0 (and a base address), the counting sink.
class Ectx {
 public:
  Ectx(uint32_t state_size, size_t region_bytes)
      : state_(state_size / 8 + 8, 0), region_(region_bytes, 0) {
    regions_.push_back({.id = 1,
                        .bytes = region_,
                        .readable = true,
                        .writable = true,
                        .base_address = kBase});
  }
  HandlerContext Context() {
    return HandlerContext(
        {reinterpret_cast<uint8_t*>(state_.data()), state_.size() * 8},
        regions_, &sink_, 0, 0);
  }
  std::vector<uint8_t>& region() { return region_; }
  uint64_t actions() const { return sink_.actions; }
  static constexpr uint64_t kBase = 0x100000;

 private:
  std::vector<uint64_t> state_;  // 8-byte aligned
  std::vector<uint8_t> region_;
  std::vector<BoundRegion> regions_;
  CountingSink sink_;
};

HandlerInstance MakeOrSkip(
    benchmark::State& state, absl::string_view kind,
    const absl::flat_hash_map<std::string, std::string>& params) {
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest(kind, params);
  if (!handler.ok()) {
    state.SkipWithError(std::string(handler.status().message()).c_str());
    return {};
  }
  return *std::move(handler);
}

std::vector<uint8_t> UdpFrame(std::vector<uint8_t> payload) {
  return frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                      1234, 5678, payload);
}

// Payload of the middle packet of a 4-packet message, per iteration.
void RunPayloadLoop(benchmark::State& state, const HandlerInstance& handler,
                    Ectx& ectx, const MessageInfo& info) {
  TestPacket packet(UdpFrame(frames::Bytes(kPayload, 0x5a)));
  HandlerContext ctx = ectx.Context();
  for (auto _ : state) {
    packet.view().SetMessage(info);
    benchmark::DoNotOptimize(RunPayload(handler, ctx, packet.view()));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * kPayload);
  state.counters["actions/packet"] = benchmark::Counter(
      static_cast<double>(ectx.actions()) / state.iterations());
}

constexpr MessageInfo kMiddleOfStream{
    .transport = MessageTransport::kDiadStream,
    .source = 1,
    .offset = kPayload,
    .length = 4 * kPayload};
constexpr MessageInfo kMiddleOfWrite{.transport = MessageTransport::kDiadWrite,
                                     .source = 1,
                                     .offset = kPayload,
                                     .length = 4 * kPayload,
                                     .address = Ectx::kBase + kPayload};

void BM_Pingpong(benchmark::State& state) {
  HandlerInstance h = MakeOrSkip(state, "pingpong",
                                 {{"mode", "stream"}, {"reply_stream", "9"}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 0);
  RunPayloadLoop(state, h, ectx, kMiddleOfStream);
}

// The root of a tree of 8: three children.
void BM_BcastRootOf8(benchmark::State& state) {
  HandlerInstance h = MakeOrSkip(
      state, "bcast",
      {{"tree", "n0,n1,n2,n3,n4,n5,n6,n7"}, {"rank", "0"}, {"rkey", "7"}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 1 << 16);
  RunPayloadLoop(state, h, ectx, kMiddleOfWrite);
}

void BM_RaidData(benchmark::State& state) {
  HandlerInstance h = MakeOrSkip(state, "raid_parity",
                                 {{"role", "data"},
                                  {"parity_peer", "p"},
                                  {"parity_rkey", "7"},
                                  {"parity_address", "0x1000"}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 1 << 16);
  RunPayloadLoop(state, h, ectx, kMiddleOfWrite);
}

void BM_RaidParity(benchmark::State& state) {
  HandlerInstance h = MakeOrSkip(state, "raid_parity", {{"role", "parity"}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 1 << 16);
  RunPayloadLoop(state, h, ectx, kMiddleOfWrite);
}

// 16 blocks of 64 bytes every 256 per packet (sPIN's vector case).
void BM_DatatypeVector(benchmark::State& state) {
  HandlerInstance h =
      MakeOrSkip(state, "datatype", {{"blocklen", "64"}, {"stride", "256"}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 1 << 16);
  RunPayloadLoop(state, h, ectx, kMiddleOfStream);
}

// 64 blocks of 64 bytes at scattered displacements: the packet covers 16.
void BM_DatatypeIndexed(benchmark::State& state) {
  std::string blocks;
  for (int i = 0; i < 64; ++i) {
    absl::StrAppend(&blocks, blocks.empty() ? "" : ",", "64@", i * 320 + 7);
  }
  HandlerInstance h = MakeOrSkip(state, "datatype",
                                 {{"layout", "indexed"}, {"blocks", blocks}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 1 << 16);
  RunPayloadLoop(state, h, ectx, kMiddleOfStream);
}

// Without offload: the transport stores the packet where the write says,
// then the host copies its 16 blocks into place.
void BM_Host_DatatypeVector(benchmark::State& state) {
  std::vector<uint8_t> staging(4 * kPayload), layout(1 << 16);
  const std::vector<uint8_t> payload = frames::Bytes(kPayload, 0x5a);
  for (auto _ : state) {
    std::memcpy(staging.data() + kPayload, payload.data(), kPayload);
    for (uint32_t b = 0; b < kPayload / 64; ++b) {
      std::memcpy(layout.data() + (16 + b) * 256,
                  staging.data() + kPayload + b * 64, 64);
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * kPayload);
}

void BM_ReduceInt64(benchmark::State& state) {
  HandlerInstance h =
      MakeOrSkip(state, "reduce",
                 {{"type", "int64"}, {"count", "512"}, {"contributors", "4"}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 4096);
  RunPayloadLoop(state, h, ectx, kMiddleOfStream);
}

void BM_ReduceFloat64(benchmark::State& state) {
  HandlerInstance h = MakeOrSkip(
      state, "reduce",
      {{"type", "float64"}, {"count", "512"}, {"contributors", "4"}});
  if (h.self() == nullptr) return;
  Ectx ectx(64, 4096);
  RunPayloadLoop(state, h, ectx, kMiddleOfStream);
}

// Without offload: the packet is stored (one contribution's buffer), then
// the host adds it into the sum.
void BM_Host_ReduceInt64(benchmark::State& state) {
  std::vector<uint64_t> staging(kPayload / 8), sum(512);
  const std::vector<uint8_t> payload = frames::Bytes(kPayload, 0x5a);
  for (auto _ : state) {
    std::memcpy(staging.data(), payload.data(), kPayload);
    for (uint32_t i = 0; i < kPayload / 8; ++i) sum[128 + i] += staging[i];
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * kPayload);
}

void BM_Agg(benchmark::State& state) {
  HandlerInstance h = MakeOrSkip(state, "agg",
                                 {{"offset", "0"},
                                  {"from", "payload"},
                                  {"width", "2"},
                                  {"buckets", "1024"}});
  if (h.self() == nullptr) return;
  Ectx ectx(32 + 16 * 1024, 0);
  TestPacket packet(UdpFrame(frames::Bytes(64, 0x5a)));
  HandlerContext ctx = ectx.Context();
  for (auto _ : state) {
    benchmark::DoNotOptimize(RunPayload(h, ctx, packet.view()));
  }
  state.SetItemsProcessed(state.iterations());
}

// A single-packet request through Header, Payload and Completion, as the
// engine runs a one-packet DiAD stream message.
void RunRequest(benchmark::State& state, const HandlerInstance& handler,
                Ectx& ectx, const std::vector<uint8_t>& request) {
  TestPacket packet(UdpFrame(request));
  const MessageInfo info{.transport = MessageTransport::kDiadStream,
                         .source = 1,
                         .length = request.size()};
  HandlerContext ctx = ectx.Context();
  for (auto _ : state) {
    packet.view().SetMessage(info);
    benchmark::DoNotOptimize(RunHeader(handler, ctx, packet.view()));
    benchmark::DoNotOptimize(RunPayload(handler, ctx, packet.view()));
    benchmark::DoNotOptimize(RunCompletion(handler, ctx));
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["actions/packet"] = benchmark::Counter(
      static_cast<double>(ectx.actions()) / state.iterations());
}

// op, key_len, value_len, request id, key, value (docs/handlers.md, kvs).
std::vector<uint8_t> KvRequest(uint8_t op, absl::string_view key,
                               size_t value_len) {
  std::vector<uint8_t> r(8 + key.size() + value_len, 0x61);
  const uint8_t header[8] = {op,
                             static_cast<uint8_t>(key.size()),
                             static_cast<uint8_t>(value_len),
                             static_cast<uint8_t>(value_len >> 8),
                             1,
                             0,
                             0,
                             0};
  std::memcpy(r.data(), header, sizeof header);
  std::memcpy(r.data() + 8, key.data(), key.size());
  return r;
}

void RunKvs(benchmark::State& state, uint8_t op) {
  HandlerInstance h = MakeOrSkip(
      state, "kvs",
      {{"key_max", "16"}, {"value_max", "64"}, {"reply_stream", "9"}});
  if (h.self() == nullptr) return;
  Ectx ectx(256, 1 << 16);
  {  // the key exists for GET
    TestPacket put(UdpFrame(KvRequest(2, "key-0001", 64)));
    put.view().SetMessage({.transport = MessageTransport::kDiadStream,
                           .source = 1,
                           .length = 8 + 8 + 64});
    HandlerContext ctx = ectx.Context();
    RunHeader(h, ctx, put.view());
    RunPayload(h, ctx, put.view());
    RunCompletion(h, ctx);
  }
  RunRequest(state, h, ectx, KvRequest(op, "key-0001", op == 2 ? 64 : 0));
}
void BM_KvsGet(benchmark::State& state) { RunKvs(state, 1); }
void BM_KvsPut(benchmark::State& state) { RunKvs(state, 2); }

// 64 bytes at offset 512 when the version word (offset 0) is 5.
void BM_CondRead(benchmark::State& state) {
  HandlerInstance h = MakeOrSkip(
      state, "cond_read", {{"version_offset", "0"}, {"reply_stream", "9"}});
  if (h.self() == nullptr) return;
  Ectx ectx(256, 4096);
  ectx.region()[0] = 5;
  std::vector<uint8_t> request(24, 0);
  request[4] = 64;  // length
  request[9] = 2;   // offset 512
  request[16] = 5;  // expected version
  RunRequest(state, h, ectx, request);
}

#define USECASE(name) BENCHMARK(name)->Apply(bench::FixedIterationsIfRequested)
USECASE(BM_Pingpong);
USECASE(BM_BcastRootOf8);
USECASE(BM_RaidData);
USECASE(BM_RaidParity);
USECASE(BM_DatatypeVector);
USECASE(BM_DatatypeIndexed);
USECASE(BM_Host_DatatypeVector);
USECASE(BM_KvsGet);
USECASE(BM_KvsPut);
USECASE(BM_CondRead);
USECASE(BM_ReduceInt64);
USECASE(BM_ReduceFloat64);
USECASE(BM_Host_ReduceInt64);
USECASE(BM_Agg);
USECASE(bench::BM_EmptyLoop);

}  // namespace
}  // namespace spinnic

BENCHMARK_MAIN();
