// The address-translation path of a remote access (APEnet+'s TLB lesson:
// it must not slow down as regions grow): RegionTable::FindByRkey, then
// MemoryRegion::Translate, with 1 .. 65536 registered regions of 64 bytes
// each under random rkeys, looked up by random present rkeys so that the
// hash table's cache behaviour shows. Items/s reads as lookups/s.
//
// Regions live in EAL memory (rte_zmalloc), so main() initialises the EAL
// once: --no-huge, one lcore, no PCI, no shared config.
// Run: build/bench/micro/region_lookup_bench (see bench/micro/README.md).
#include <benchmark/benchmark.h>
#include <rte_eal.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "bench/micro/bench_util.h"
#include "dataplane/dataplane.h"
#include "dataplane/memory_region.h"
#include "dataplane/region_table.h"

namespace spinnic {
namespace {

constexpr int kMaxRegions = 65536;
constexpr uint64_t kRegionBytes = 64;
// Lookups cycle through this many pre-drawn rkeys (a power of two).
constexpr size_t kLookups = size_t{1} << 16;

// Every region the benchmarks use, registered once: a table of n regions
// is the first n of them.
std::vector<std::shared_ptr<const MemoryRegion>>& Pool() {
  static auto* pool = new std::vector<std::shared_ptr<const MemoryRegion>>();
  return *pool;
}

bool FillPool() {
  std::mt19937_64 random(42);
  std::unordered_set<uint32_t> rkeys;
  RegionConfig config;
  config.length = kRegionBytes;
  config.access = kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite;
  for (int i = 0; i < kMaxRegions; ++i) {
    uint32_t rkey;
    do {
      rkey = static_cast<uint32_t>(random());
    } while (rkey == 0 || !rkeys.insert(rkey).second);
    // A random 4 KiB-aligned base in the 47-bit network address space, as
    // the dataplane assigns them.
    const uint64_t base = (random() & ((uint64_t{1} << 47) - 1)) & ~0xfffull;
    auto region =
        MemoryRegion::Create(static_cast<uint64_t>(i), config, rkey, base);
    if (!region.ok()) {
      std::fprintf(stderr, "region %d: %s\n", i,
                   std::string(region.status().message()).c_str());
      return false;
    }
    Pool().push_back(std::move(*region));
  }
  return true;
}

struct Fixture {
  RegionTable table;
  std::vector<uint32_t> rkeys;  // kLookups random present rkeys
};

Fixture MakeFixture(int n) {
  std::vector<std::shared_ptr<const MemoryRegion>> regions(Pool().begin(),
                                                           Pool().begin() + n);
  Fixture fixture{RegionTable(std::move(regions)), {}};
  std::mt19937 random(7);
  std::uniform_int_distribution<int> pick(0, n - 1);
  fixture.rkeys.reserve(kLookups);
  for (size_t i = 0; i < kLookups; ++i) {
    fixture.rkeys.push_back(Pool()[pick(random)]->rkey());
  }
  return fixture;
}

// The hash probe alone.
void BM_RegionFindByRkey(benchmark::State& state) {
  Fixture fixture = MakeFixture(static_cast<int>(state.range(0)));
  size_t i = 0;
  for (auto _ : state) {
    const MemoryRegion* region =
        fixture.table.FindByRkey(fixture.rkeys[i++ & (kLookups - 1)]);
    benchmark::DoNotOptimize(region);
  }
  state.SetItemsProcessed(state.iterations());
}

// What a remote write pays before copying: find the region by rkey, then
// translate [base + 16, base + 48) with remote-write access.
void BM_RegionLookupTranslate(benchmark::State& state) {
  Fixture fixture = MakeFixture(static_cast<int>(state.range(0)));
  size_t i = 0;
  size_t misses = 0;
  for (auto _ : state) {
    const MemoryRegion* region =
        fixture.table.FindByRkey(fixture.rkeys[i++ & (kLookups - 1)]);
    if (region == nullptr) {
      ++misses;
      continue;
    }
    std::span<uint8_t> bytes =
        region->Translate(region->base_address() + 16, 32, kRemoteWrite);
    benchmark::DoNotOptimize(bytes.data());
  }
  if (misses != 0) state.SkipWithError("a present rkey was not found");
  state.SetItemsProcessed(state.iterations());
}

// The same, one lookup after another: the next rkey's index depends on the
// previous translation (an always-zero bit of its address the compiler
// cannot see through), so the CPU cannot overlap lookups and every cache
// miss costs its full latency. An upper bound; a burst of independent
// packets lets the CPU overlap them, as above.
void BM_RegionLookupTranslateChained(benchmark::State& state) {
  Fixture fixture = MakeFixture(static_cast<int>(state.range(0)));
  size_t i = 0;
  size_t misses = 0;
  for (auto _ : state) {
    const MemoryRegion* region =
        fixture.table.FindByRkey(fixture.rkeys[i & (kLookups - 1)]);
    if (region == nullptr) {
      ++misses;
      ++i;
      continue;
    }
    std::span<uint8_t> bytes =
        region->Translate(region->base_address() + 16, 32, kRemoteWrite);
    // EAL allocations are cache-line aligned: data() + 16 has bit 0 clear.
    i += 1 + (reinterpret_cast<uintptr_t>(bytes.data()) & 1);
  }
  if (misses != 0) state.SkipWithError("a present rkey was not found");
  state.SetItemsProcessed(state.iterations());
}

void RegionCounts(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(16)->Arg(256)->Arg(4096)->Arg(65536);
  bench::FixedIterationsIfRequested(b);
}
BENCHMARK(BM_RegionFindByRkey)->Apply(RegionCounts);
BENCHMARK(BM_RegionLookupTranslate)->Apply(RegionCounts);
BENCHMARK(BM_RegionLookupTranslateChained)->Apply(RegionCounts);
BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // 65536 regions of 64 bytes take about 12 MiB of EAL heap with the
  // allocator's headers and cache-line alignment; 256 MiB leaves room.
  absl::Status eal = spinnic::InitEal(
      {"region_lookup_bench", "--no-huge", "-m", "256", "--no-pci",
       "--no-shconf", "--no-telemetry", "-l", "0", "--log-level", "4"});
  if (!eal.ok()) {
    std::fprintf(stderr, "%s\n", std::string(eal.message()).c_str());
    return 1;
  }
  if (!spinnic::FillPool()) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  spinnic::Pool().clear();
  rte_eal_cleanup();
  return 0;
}
