// One HPU's whole loop on the calling thread, per frame: rx_burst from a
// net_ring port, parse, transport dispatch, (no) match, TX batch, tx_burst
// to the paired ring port, the poll of each transport, the RCU quiescent
// report. The bench recycles the transmitted mbufs into the RX ring, so no
// allocation is timed. Three dataplanes: no transport on, DiAD and RoCE on
// but the frames addressed to neither (what a bump in the wire pays for
// carrying them), and the same with a handler matched on every frame: `null`,
// the native `count`, and the eBPF example count.o (JIT-compiled): what a
// user's own handler costs per frame against its native twin, whole loop.
//
//   build/bench/micro/hpu_loop_bench
//   bench/micro/callgrind.sh -n 2000 build/bench/micro/hpu_loop_bench
#include <benchmark/benchmark.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/micro/bench_util.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/roce/roce_config.h"

namespace spinnic {
namespace {

constexpr uint16_t kBurst = 32;

// 64-byte UDP/IPv4 frame, to 10.0.0.2:9000: addressed to no transport.
std::vector<uint8_t> UdpFrame() {
  std::vector<uint8_t> f(64, 0);
  const uint8_t head[] = {
      0x02, 0,    0,    0,    0,  0x0b, 0x02, 0, 0,  0,  0, 0x0a,
      0x08, 0x00,                                               // Ethernet
      0x45, 0,    0,    50,   0,  0,    0x40, 0, 64, 17, 0, 0,  // IPv4
      10,   0,    0,    1,    10, 0,    0,    2,                // addresses
      0x0f, 0xa0, 0x23, 0x28, 0,  30,   0,    0};               // UDP
  std::memcpy(f.data(), head, sizeof head);
  return f;
}

struct Rig {
  rte_ring* rx[2] = {nullptr, nullptr};
  rte_ring* tx[2] = {nullptr, nullptr};
  std::unique_ptr<Dataplane> dataplane;
  std::vector<rte_mbuf*> frames;
};

// `mode`: 0 no transport, 1 DiAD and RoCE on, 2 also a matched handler on
// every frame: null; 3 the native count; 4 the eBPF count.o.
std::unique_ptr<Rig> MakeRig(int mode) {
  static int instance = 0;
  auto rig = std::make_unique<Rig>();
  DataplaneConfig config;
  for (int side = 0; side < 2; ++side) {
    const std::string base = absl::StrCat("hl", ++instance, side ? "h" : "w");
    rig->rx[side] = rte_ring_create((base + "rx").c_str(), 1024, 0,
                                    RING_F_SP_ENQ | RING_F_SC_DEQ);
    rig->tx[side] = rte_ring_create((base + "tx").c_str(), 1024, 0,
                                    RING_F_SP_ENQ | RING_F_SC_DEQ);
    const int port = rte_eth_from_rings(base.c_str(), &rig->rx[side], 1,
                                        &rig->tx[side], 1, 0);
    char name[RTE_ETH_NAME_MAX_LEN];
    if (port < 0 ||
        rte_eth_dev_get_name_by_port(static_cast<uint16_t>(port), name) != 0) {
      std::fprintf(stderr, "hpu_loop_bench: cannot make ring ports\n");
      std::exit(1);
    }
    PortConfig p;
    p.name = side ? "host0" : "wire0";
    p.existing = name;
    p.role = side ? PortRole::kHost : PortRole::kWire;
    p.rx_descriptors = p.tx_descriptors = 256;
    config.ports.push_back(p);
  }
  config.port_pairs = {{0, 1}};
  config.worker_cores = {1};
  config.mbufs = 8191;
  if (mode >= 1) {
    diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
    roce::RoceConfig& rc = config.transports.get<roce::RoceConfig>();
    dc.enabled = true;
    dc.port = 0;
    dc.node = {0xfd, 0, 0xd1, 0xad, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    dc.mac = {0x02, 0, 0, 0, 0, 0x0b};
    rc.enabled = true;
    rc.port = 0;
    rc.mac = {0x02, 0, 0, 0, 0, 0x0b};
    rc.addresses = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 11}};
  }
  if (mode >= 2) {
    HandlerConfig handler;
    handler.name = "every-frame";
    handler.kind = mode == 2 ? "null" : mode == 3 ? "count" : "bpf";
    handler.state_size = 16;
    if (mode == 4) {
      handler.params["program_file"] =
          std::string(SPINNIC_BPF_EXAMPLES_DIR) + "/count.o";
    }
    config.handlers.push_back(handler);
  }
  absl::StatusOr<std::unique_ptr<Dataplane>> dataplane =
      Dataplane::Create(config);
  if (!dataplane.ok()) {
    std::fprintf(stderr, "hpu_loop_bench: %s\n",
                 std::string(dataplane.status().message()).c_str());
    std::exit(1);
  }
  rig->dataplane = *std::move(dataplane);
  rte_mempool* pool = rte_mempool_lookup("spinnic_pkts");
  const std::vector<uint8_t> frame = UdpFrame();
  for (uint16_t i = 0; i < kBurst; ++i) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())),
                frame.data(), frame.size());
    rig->frames.push_back(m);
  }
  return rig;
}

void BM_HpuLoop(benchmark::State& state) {
  std::unique_ptr<Rig> rig = MakeRig(static_cast<int>(state.range(0)));
  Hpu& hpu = rig->dataplane->hpu(0);
  // PollOnce outside Run: the HPU is this thread (no RCU reports needed;
  // the table does not change while it runs).
  void* burst[kBurst];
  for (uint16_t i = 0; i < kBurst; ++i) burst[i] = rig->frames[i];
  for (auto _ : state) {
    rte_ring_sp_enqueue_bulk(rig->rx[0], burst, kBurst, nullptr);
    benchmark::DoNotOptimize(hpu.PollOnce());
    // Passthrough: wire0 -> host0. Back into the RX ring next iteration.
    rte_ring_sc_dequeue_bulk(rig->tx[1], burst, kBurst, nullptr);
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  for (uint16_t i = 0; i < kBurst; ++i) {
    rte_pktmbuf_free(static_cast<rte_mbuf*>(burst[i]));
  }
  rig->dataplane.reset();
  for (int side = 0; side < 2; ++side) {
    rte_ring_free(rig->rx[side]);
    rte_ring_free(rig->tx[side]);
  }
}
// Items are frames: read "items_per_second" as frames per second, and
// callgrind.sh's per-iteration figure divided by 32 as instructions per frame.
BENCHMARK(BM_HpuLoop)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Arg(3)
    ->Arg(4)
    ->ArgName("mode")
    ->Apply(bench::FixedIterationsIfRequested);
BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  const char* eal[] = {
      "hpu_loop_bench", "--no-huge", "-m",      "512",         "--no-pci",
      "--no-shconf",    "--lcores",  "0@0,1@0", "--log-level", "3"};
  absl::Status status = spinnic::InitEal(
      std::vector<std::string>(std::begin(eal), std::end(eal)));
  if (!status.ok()) {
    std::fprintf(stderr, "hpu_loop_bench: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
