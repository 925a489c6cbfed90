// What spinnic's paths cost per packet in CPU cycles, measured so that the
// figure does not depend on the scheduler: one process, one thread, the
// dataplanes' HPUs stepped by hand (Hpu::PollOnce, as hpu_loop_bench does),
// no other poller.
//
// Two dataplanes, A and B, have their wire ports on in-memory rings that
// cross: A's wire TX ring is B's wire RX ring and the other way round, so a
// frame A sends is the frame B receives, without a copy. A path's cost is
// the TSC cycles spent inside the PollOnce calls that did something
// (received a frame or sent one), summed over both dataplanes per
// operation; the median over the run's operations (an operation during
// which another process had the CPU is an outlier), divided by its data
// packets (those that carry the operation's payload). Next to each figure,
// one memcpy of the operation's payload, timed the same way in this binary:
// the floor of a NIC that copies in software.
//
//   build-rel/bench/cost/cost_bench --benchmark_repetitions=3
//   bench/micro/callgrind.sh -n 200 build-rel/bench/cost/cost_bench
//
// Work the bench does for itself inside an iteration (submitting an
// operation, building the NAAICE host's frames, checking) is left out of
// callgrind's count (CALLGRIND_TOGGLE_COLLECT, a few no-op instructions
// when not under valgrind), as it is out of the cycles. bench/cost/README.md
// has the figures and what each means.
#include <benchmark/benchmark.h>
#include <rte_cycles.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#if SPINNIC_HAVE_CALLGRIND_H
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_TOGGLE_COLLECT
#endif

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/cost/rig.h"
#include "bench/micro/bench_util.h"
#include "dataplane/classifier.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/diad/diad_module.h"
#include "dataplane/diad/stream_ring.h"
#include "dataplane/memory_region.h"
#include "dataplane/roce/cm_messages.h"
#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/mrsp.h"
#include "dataplane/roce/roce_config.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/roce/wire.h"
#include "dataplane/stats.h"
#include "handlers/naaice/function.h"

namespace spinnic {
namespace {

using cost::Bytes;
using cost::Check;
using cost::ConnectQps;
using cost::Counter;
using cost::CreateNode;
using cost::DestroyNode;
using cost::DrainRing;
using cost::Fail;
using cost::kIpA;
using cost::kIpB;
using cost::kMacA;
using cost::kMacB;
using cost::NewRing;
using cost::Node;
using cost::NodeConfig;
using cost::PairConfig;
using cost::Pattern;
using cost::Register;
using cost::UdpFrame;

constexpr uint16_t kBurst = 32;
constexpr uint32_t kOpBytes = 4096;     // DiAD and RoCE writes, reads, RPCs
constexpr uint32_t kDiadReadBytes = 8;  // the small read round trip
constexpr uint32_t kStreamId = 7;
// A wedged operation ends the run instead of hanging it: steps of B alone
// (NAAICE), or seconds of stepping A and B.
constexpr uint64_t kMaxStepsPerOp = 2'000'000;
constexpr uint64_t kOpTimeoutSeconds = 20;

// Offsets in B's target region: each path its own bytes.
constexpr uint64_t kDiadWriteAt = 0;
constexpr uint64_t kDiadReadAt = 8192;
constexpr uint64_t kRoceWriteAt = 16384;
constexpr uint64_t kRoceReadAt = 24576;
constexpr uint64_t kTargetBytes = 32768;
// Offsets in A's RoCE source and destination region.
constexpr uint64_t kRoceSourceAt = 0;
constexpr uint64_t kRoceLandAt = 8192;
// A stream ring of records that never straddle its end (4096 + 8 bytes
// each), so that the last message can be checked in one piece.
constexpr uint64_t kStreamRecords = 64;
constexpr uint64_t kStreamRegionBytes =
    diad::StreamRing::kHeaderBytes +
    kStreamRecords * (diad::StreamRing::kRecordHeaderBytes + kOpBytes);

// Bench work between the measured polls: left out of callgrind's count too.
class NotCounted {
 public:
  NotCounted() { CALLGRIND_TOGGLE_COLLECT; }
  ~NotCounted() { CALLGRIND_TOGGLE_COLLECT; }
  NotCounted(const NotCounted&) = delete;
  NotCounted& operator=(const NotCounted&) = delete;
};

// The cycles two back-to-back TSC reads take, removed from every timed
// poll so that short polls are not overstated.
uint64_t TscOverhead() {
  static const uint64_t overhead = [] {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 1000; ++i) {
      const uint64_t start = rte_rdtsc();
      best = std::min(best, rte_rdtsc() - start);
    }
    return best;
  }();
  return overhead;
}

// One memcpy of `bytes` between two cache-hot buffers, in TSC cycles: the
// median of 201 rounds of 64 copies, each round timed like a poll. The
// destination sits 2 KiB past a page boundary from the source: buffers
// whose distance is a multiple of 4 KiB make the CPU stall on false
// store-to-load dependencies (4K aliasing), which would make the floor
// depend on where malloc put them.
double MemcpyCycles(size_t bytes) {
  const size_t span = (bytes + 4095) / 4096 * 4096;
  std::unique_ptr<uint8_t[], decltype(&std::free)> buffer(
      static_cast<uint8_t*>(std::aligned_alloc(4096, 2 * span + 4096)),
      &std::free);
  uint8_t* source = buffer.get();
  uint8_t* destination = buffer.get() + span + 2048;
  const Bytes pattern = Pattern(bytes, 1);
  std::memcpy(source, pattern.data(), bytes);
  std::memset(destination, 0, bytes);
  constexpr int kCopies = 64;
  std::vector<double> rounds;
  for (int round = 0; round < 201; ++round) {
    const uint64_t start = rte_rdtsc();
    for (int i = 0; i < kCopies; ++i) {
      benchmark::DoNotOptimize(destination);
      std::memcpy(destination, source, bytes);
      benchmark::ClobberMemory();
    }
    const uint64_t cycles = rte_rdtsc() - start - TscOverhead();
    rounds.push_back(static_cast<double>(cycles) / kCopies);
  }
  std::nth_element(rounds.begin(), rounds.begin() + 100, rounds.end());
  if (std::memcmp(destination, source, bytes) != 0) Fail("memcpy: wrong bytes");
  return rounds[100];
}

// What the measured polls of one benchmark run took. Each operation's
// cycles are kept apart: the figure is their median, so that the few
// operations during which this thread was preempted (the TSC runs on while
// another process has the CPU) do not count; the mean is reported beside.
class Tally {
 public:
  Tally() = default;  // set-up polls, not reported
  explicit Tally(const benchmark::State& state) {
    // Reserved up front: no allocation between the timed polls.
    per_op_.reserve(static_cast<size_t>(state.max_iterations));
    for (std::vector<uint64_t>& end : per_op_end_) {
      end.reserve(static_cast<size_t>(state.max_iterations));
    }
  }

  // A busy poll's cycles, spent by end `end` of a pair (0: A, 1: B; a
  // single dataplane is end 0).
  void AddBusy(uint64_t cycles, int end = 0) {
    AddCycles(cycles, end);
    ++busy_polls_;
  }
  // CPU work outside a poll that a NIC's driver would do on that end's core
  // (freeing transmitted mbufs).
  void AddCycles(uint64_t cycles, int end) {
    const uint64_t net = cycles > TscOverhead() ? cycles - TscOverhead() : 0;
    op_cycles_ += net;
    op_end_cycles_[end] += net;
  }
  void AddIdle() { ++idle_polls_; }
  // The operation in progress is complete.
  void EndOp() {
    per_op_.push_back(op_cycles_);
    for (int end = 0; end < 2; ++end) {
      per_op_end_[end].push_back(op_end_cycles_[end]);
      op_end_cycles_[end] = 0;
    }
    total_ += op_cycles_;
    op_cycles_ = 0;
  }

  uint64_t ops() const { return per_op_.size(); }
  uint64_t idle_polls() const { return idle_polls_; }
  uint64_t busy_polls() const { return busy_polls_; }
  double mean() const {
    return per_op_.empty() ? 0
                           : static_cast<double>(total_) /
                                 static_cast<double>(per_op_.size());
  }
  double median() { return Median(per_op_); }
  // One end's share: the median of its cycles per operation.
  double median(int end) { return Median(per_op_end_[end]); }

 private:
  static double Median(std::vector<uint64_t>& values) {
    if (values.empty()) return 0;
    auto middle = values.begin() + static_cast<ptrdiff_t>(values.size() / 2);
    std::nth_element(values.begin(), middle, values.end());
    return static_cast<double>(*middle);
  }

  std::vector<uint64_t> per_op_;
  std::vector<uint64_t> per_op_end_[2];
  uint64_t op_cycles_ = 0;
  uint64_t op_end_cycles_[2] = {0, 0};
  uint64_t total_ = 0;
  uint64_t busy_polls_ = 0;
  uint64_t idle_polls_ = 0;
};

// One timed PollOnce of `hpu`. It was busy when it received a frame or sent
// one into `out` (the ring its wire port transmits to): only then do its
// cycles count. Returns whether it was busy.
bool Step(Hpu& hpu, rte_ring* out, Tally& tally, int end = 0) {
  const unsigned before = rte_ring_count(out);
  const uint64_t start = rte_rdtsc();
  const uint32_t received = hpu.PollOnce();
  const uint64_t cycles = rte_rdtsc() - start;
  if (received == 0 && rte_ring_count(out) == before) {
    tally.AddIdle();
    return false;
  }
  tally.AddBusy(cycles, end);
  return true;
}

// The counters every path reports, per operation of `packets_per_op` data
// packets carrying `bytes_per_op` payload bytes (`packets_per_op` frames of
// `bytes_per_op / packets_per_op` bytes each for the wire-to-host paths,
// whose operation is one packet).
void Report(benchmark::State& state, Tally& tally, double packets_per_op,
            uint64_t bytes_per_op, double ops_per_item = 1) {
  const uint64_t ops = tally.ops();
  if (ops == 0) return;
  const double cycles_per_op = tally.median() / ops_per_item;
  const double memcpy_cycles = MemcpyCycles(bytes_per_op);
  const double tsc_hz = static_cast<double>(rte_get_tsc_hz());
  state.counters["cycles_per_packet"] = cycles_per_op / packets_per_op;
  state.counters["cycles_per_byte"] =
      cycles_per_op / static_cast<double>(bytes_per_op);
  state.counters["packets_per_op"] = packets_per_op;
  state.counters["memcpy_cycles"] = memcpy_cycles;
  state.counters["ratio_to_memcpy"] = cycles_per_op / memcpy_cycles;
  state.counters["gbps_per_core"] =
      static_cast<double>(bytes_per_op) * 8 * tsc_hz / cycles_per_op / 1e9;
  state.counters["cycles_per_op"] = cycles_per_op;
  state.counters["mean_cycles_per_op"] = tally.mean() / ops_per_item;
  // A pair's ends apart: each appliance has a core of its own, so the
  // busier end bounds one core's rate.
  const double b_cycles = tally.median(1) / ops_per_item;
  if (b_cycles > 0) {
    const double a_cycles = tally.median(0) / ops_per_item;
    state.counters["a_cycles_per_op"] = a_cycles;
    state.counters["b_cycles_per_op"] = b_cycles;
    state.counters["gbps_per_core_busier_end"] =
        static_cast<double>(bytes_per_op) * 8 * tsc_hz /
        std::max(a_cycles, b_cycles) / 1e9;
  }
  state.counters["busy_polls_per_op"] =
      static_cast<double>(tally.busy_polls()) /
      (static_cast<double>(ops) * ops_per_item);
  state.counters["idle_polls_per_op"] =
      static_cast<double>(tally.idle_polls()) /
      (static_cast<double>(ops) * ops_per_item);
  state.SetItemsProcessed(static_cast<int64_t>(ops * ops_per_item));
}

// ---------------------------------------------------------------------------
// One dataplane, frames from wire to host (passthrough, null handler).

struct SingleRig {
  Node node;
};

std::unique_ptr<SingleRig> MakeSingleRig(const std::string& suffix,
                                         bool null_handler) {
  auto rig = std::make_unique<SingleRig>();
  rig->node.wire_rx = NewRing(absl::StrCat("c", suffix, "wrx"));
  rig->node.wire_tx = NewRing(absl::StrCat("c", suffix, "wtx"));
  DataplaneConfig config = NodeConfig(rig->node, suffix);
  if (null_handler) {
    HandlerConfig handler;
    handler.name = "every-frame";
    handler.kind = "null";
    handler.state_size = 16;
    config.handlers.push_back(handler);
  }
  CreateNode(rig->node, config);
  return rig;
}

// A burst of `frame_bytes`-byte frames goes round: into the wire port's RX
// ring, through PollOnce (parse, transport dispatch, match, TX batch), out
// of the host port's TX ring and back in: no allocation is timed.
void RunWireToHost(benchmark::State& state, SingleRig& rig,
                   size_t frame_bytes) {
  Node& node = rig.node;
  const Bytes frame = UdpFrame(frame_bytes);
  void* burst[kBurst];
  for (uint16_t i = 0; i < kBurst; ++i) {
    rte_mbuf* m = rte_pktmbuf_alloc(node.pool());
    if (m == nullptr) Fail("no mbuf for the burst");
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())),
                frame.data(), frame.size());
    burst[i] = m;
  }
  Tally tally(state);
  for (auto _ : state) {
    rte_ring_sp_enqueue_bulk(node.wire_rx, burst, kBurst, nullptr);
    const uint64_t start = rte_rdtsc();
    benchmark::DoNotOptimize(node.hpu().PollOnce());
    tally.AddBusy(rte_rdtsc() - start);
    tally.EndOp();
    if (rte_ring_sc_dequeue_bulk(node.host_tx, burst, kBurst, nullptr) !=
        kBurst) {
      Fail("passthrough: the burst did not come out of the host port");
    }
  }
  for (uint16_t i = 0; i < kBurst; ++i) {
    rte_mbuf* m = static_cast<rte_mbuf*>(burst[i]);
    if (m->data_len != frame.size() ||
        std::memcmp(rte_pktmbuf_mtod(m, const void*), frame.data(),
                    frame.size()) != 0) {
      Fail("passthrough: a frame changed on its way");
    }
    rte_pktmbuf_free(m);
  }
  // An iteration is a burst: per packet, one 32nd of it.
  Report(state, tally, 1, frame_bytes, kBurst);
}

// Each rig is made once and kept for every run of its benchmarks (Google
// Benchmark calls a benchmark several times): ring ethdevs keep their
// names and port slots after they close, so a rig per run would run out of
// ports. main() destroys them at the end.
std::unique_ptr<SingleRig> g_passthrough, g_null;

SingleRig& PassthroughRig() {
  if (g_passthrough == nullptr) g_passthrough = MakeSingleRig("_p", false);
  return *g_passthrough;
}
SingleRig& NullRig() {
  if (g_null == nullptr) g_null = MakeSingleRig("_n", true);
  return *g_null;
}

void BM_Passthrough(benchmark::State& state) {
  RunWireToHost(state, PassthroughRig(), static_cast<size_t>(state.range(0)));
}
BENCHMARK(BM_Passthrough)
    ->Arg(64)
    ->Arg(1500)
    ->ArgName("bytes")
    ->Apply(bench::FixedIterationsIfRequested);

void BM_NullHandler(benchmark::State& state) {
  RunWireToHost(state, NullRig(), 64);
}
BENCHMARK(BM_NullHandler)->Apply(bench::FixedIterationsIfRequested);

// ---------------------------------------------------------------------------
// Two dataplanes, A and B, wire to wire: DiAD and RoCE between them.

// Each end transmits into a ring of its own and receives from another; the
// bench carries frames across (CarryAcross) as two NICs and a wire would.
struct PairRig {
  rte_ring* a_out = nullptr;
  rte_ring* b_in = nullptr;
  rte_ring* b_out = nullptr;
  rte_ring* a_in = nullptr;
  rte_mempool* a_pool = nullptr;
  rte_mempool* b_pool = nullptr;
  Node a, b;
  RegionInfo target;         // on B: DiAD and RoCE writes land, reads read
  RegionInfo stream_region;  // on B: stream kStreamId's ring
  RegionInfo local;          // on A: RoCE's source and destination bytes
  uint32_t qp_a = 0;         // A's QP (the requester), to B's
};

// --zero_copy_min_bytes=N (main() takes it out of argv): the DiAD and RoCE
// zero-copy threshold of both ends; -1 keeps the default.
int64_t g_zero_copy_min_bytes = -1;

// --packet_bytes=N (main() takes it out of argv): the payload bytes of one
// DiAD and one RoCE packet (DiAD's path MTU N + its headers, RoCE's path MTU N,
// the wire ports' MTU raised to fit); 0 keeps the transports' defaults (1404
// and 1024). 4096 is the DiAD FPGA's configuration (4 KiB packets).
uint32_t g_packet_bytes = 0;
constexpr uint32_t kDefaultRocePmtu = 1024;
uint32_t RocePmtu() {
  return g_packet_bytes != 0 ? g_packet_bytes : kDefaultRocePmtu;
}

// --dma_wire=0 (main() takes it out of argv) hands a zero-copy chain to the
// receiver as it is, by pointer, which then copies it into one mbuf itself.
bool g_dma_wire = true;

// A pair whose timers never fire while the bench steps: nothing is lost
// between the rings, and a preempted step must not turn into a
// retransmission.
DataplaneConfig QuietPairConfig(Node& node, const std::string& suffix,
                                bool is_a) {
  DataplaneConfig config = PairConfig(node, suffix, is_a);
  diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
  dc.channel.rto_ns = 10'000'000'000;
  dc.channel.rto_max_ns = 10'000'000'000;
  // The longest local ACK timeout (4.096 us * 2^31).
  config.transports.get<roce::RoceConfig>().local_ack_timeout = 31;
  if (g_packet_bytes != 0) {
    dc.path_mtu = static_cast<uint16_t>(g_packet_bytes +
                                        (dc.path_mtu - dc.max_payload()));
    config.ports[0].mtu = dc.path_mtu;
  }
  if (g_zero_copy_min_bytes >= 0) {
    dc.zero_copy_min_bytes = static_cast<uint32_t>(g_zero_copy_min_bytes);
    config.transports.get<roce::RoceConfig>().zero_copy_min_bytes =
        static_cast<uint32_t>(g_zero_copy_min_bytes);
  }
  return config;
}

// Moves what `from_end` transmitted (`from`) into the other end's RX ring
// (`to`). A zero-copy frame is a chain (headers, then region bytes): a NIC
// gathers it by DMA and the receiving NIC writes it into one mbuf, work of
// neither end's CPU, so that copy is left out of the cycles (and of
// callgrind's count). Freeing the chain once it is sent is the sending
// end's driver's work: timed, and counted to that end. With --dma_wire=0
// the chain goes over as it is (the receiver copies it into one mbuf).
void CarryAcross(rte_ring* from, rte_ring* to, rte_mempool* to_pool,
                 Tally& tally, int from_end) {
  void* frames[kBurst];
  unsigned count;
  while ((count = rte_ring_sc_dequeue_burst(from, frames, kBurst, nullptr)) !=
         0) {
    for (unsigned i = 0; g_dma_wire && i < count; ++i) {
      rte_mbuf* chain = static_cast<rte_mbuf*>(frames[i]);
      if (chain->nb_segs == 1) continue;
      rte_mbuf* flat;
      {
        NotCounted not_counted;
        flat = rte_pktmbuf_alloc(to_pool);
        if (flat == nullptr) Fail("wire: no mbuf for a gathered frame");
        uint8_t* bytes = reinterpret_cast<uint8_t*>(
            rte_pktmbuf_append(flat, static_cast<uint16_t>(chain->pkt_len)));
        if (bytes == nullptr) Fail("wire: a gathered frame exceeds an mbuf");
        if (rte_pktmbuf_read(chain, 0, chain->pkt_len, bytes) != bytes) {
          std::memcpy(bytes, rte_pktmbuf_mtod(chain, const void*),
                      chain->pkt_len);
        }
      }
      const uint64_t start = rte_rdtsc();
      rte_pktmbuf_free(chain);
      tally.AddCycles(rte_rdtsc() - start, from_end);
      frames[i] = flat;
    }
    if (rte_ring_sp_enqueue_bulk(to, frames, count, nullptr) != count) {
      Fail("wire: the receiver's RX ring is full");
    }
  }
}

// One timed poll of A (B), then what it sent crosses to B (A).
bool StepA(PairRig& rig, Tally& tally) {
  const bool busy = Step(rig.a.hpu(), rig.a_out, tally, 0);
  CarryAcross(rig.a_out, rig.b_in, rig.b_pool, tally, 0);
  return busy;
}
bool StepB(PairRig& rig, Tally& tally) {
  const bool busy = Step(rig.b.hpu(), rig.b_out, tally, 1);
  CarryAcross(rig.b_out, rig.a_in, rig.a_pool, tally, 1);
  return busy;
}

// Steps A and B, each in turn, until `done`: one operation. A dataplane is
// polled only when it has work (Node::HasWork), so that an operation's
// count of polls, and of instructions under callgrind, does not depend on
// when RoCE's caller thread submits or notices completion; while neither
// has work the thread yields to that caller. Every 64th such round polls
// both anyway, for work a timer starts.
void StepPairUntil(PairRig& rig, Tally& tally,
                   const std::function<bool()>& done, const char* what) {
  uint64_t quiet = 0;
  const uint64_t deadline = rte_rdtsc() + kOpTimeoutSeconds * rte_get_tsc_hz();
  for (uint64_t steps = 1; !done(); ++steps) {
    if (steps % 1024 == 0 && rte_rdtsc() > deadline) {
      Fail(absl::StrCat(what, ": the operation did not complete within ",
                        kOpTimeoutSeconds, " s"));
    }
    const bool poll_all = ++quiet % 64 == 0;
    bool moved = false;
    if (poll_all || rig.a.HasWork()) moved |= StepA(rig, tally);
    if (poll_all || rig.b.HasWork()) moved |= StepB(rig, tally);
    if (moved) {
      quiet = 0;
    } else {
      std::this_thread::yield();
    }
  }
  tally.EndOp();
}

std::unique_ptr<PairRig> MakePairRig() {
  auto rig = std::make_unique<PairRig>();
  rig->a.wire_tx = rig->a_out = NewRing("caout");
  rig->b.wire_rx = rig->b_in = NewRing("cbin");
  rig->b.wire_tx = rig->b_out = NewRing("cbout");
  rig->a.wire_rx = rig->a_in = NewRing("cain");
  CreateNode(rig->a, QuietPairConfig(rig->a, "_a", true));
  CreateNode(rig->b, QuietPairConfig(rig->b, "_b", false));
  rig->a_pool = rig->a.pool();
  rig->b_pool = rig->b.pool();
  rig->target = Register(*rig->b.dataplane, kTargetBytes,
                         kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite);
  rig->stream_region = Register(*rig->b.dataplane, kStreamRegionBytes,
                                kLocalRead | kLocalWrite, kStreamId);
  rig->local = Register(*rig->a.dataplane, kTargetBytes,
                        kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite);
  rig->qp_a = ConnectQps(rig->a, rig->b, RocePmtu());
  // The HPUs apply the QPs (and the peers) on their next polls.
  Tally setup;
  for (int i = 0; i < 4; ++i) {
    StepA(*rig, setup);
    StepB(*rig, setup);
  }
  return rig;
}

std::unique_ptr<PairRig> g_pair;

PairRig& Pair() {
  if (g_pair == nullptr) g_pair = MakePairRig();
  return *g_pair;
}

// No timer may have fired: a retransmission would be a cost of this
// machine's scheduling, not of the path.
void CheckNoRetransmissions(PairRig& rig) {
  for (Node* node : {&rig.a, &rig.b}) {
    if (Counter(*node->dataplane, "diad", "retransmits") != 0 ||
        Counter(*node->dataplane, "roce", "retransmits") != 0) {
      Fail(absl::StrCat("dataplane ", node->suffix,
                        " retransmitted: a timer fired while stepping"));
    }
  }
}

// DiAD: one operation at a time from A to B; the bench submits it
// (DiadModule::Submit, not waited for) and steps A and B until A completes
// it. The payload string travels into the operation and back, so that no
// 4 KiB copy is made per operation.
// `window` operations are submitted at once and the iteration ends when
// all are done: with more than one in flight, ACKs and responses coalesce
// as they do under sustained load. Figures are per operation.
void RunDiad(benchmark::State& state, diad::DiadOp::Kind kind,
             uint32_t read_bytes = kDiadReadBytes, uint32_t window = 1) {
  PairRig& rig = Pair();
  diad::DiadModule* module = rig.a.dataplane->transport<diad::DiadModule>();
  const Bytes bytes = Pattern(kOpBytes, static_cast<uint32_t>(kind) + 3);
  std::string payload(bytes.begin(), bytes.end());
  const Bytes read_source = Pattern(read_bytes, 11);
  Check(rig.b.dataplane->WriteRegion(rig.target.id, kDiadReadAt, read_source),
        "read source");
  const Bytes zeros(kOpBytes, 0);
  Check(rig.b.dataplane->WriteRegion(rig.target.id, kDiadWriteAt, zeros),
        "write target");
  absl::StatusOr<std::string> before = rig.b.dataplane->ReadRegion(
      rig.stream_region.id, 0, diad::StreamRing::kHeaderBytes,
      diad::StreamRing::kHeaderBytes);
  Check(before.status(), "stream header");
  uint64_t committed_before;
  std::memcpy(&committed_before, before->data() + 8, 8);

  DiadRequest request;
  request.kind = kind;
  request.peer = "b";
  if (kind == diad::DiadOp::Kind::kStream) {
    request.key = kStreamId;
  } else {
    request.key = rig.target.rkey;
    request.address =
        rig.target.base_address +
        (kind == diad::DiadOp::Kind::kRead ? kDiadReadAt : kDiadWriteAt);
  }
  request.read_length = read_bytes;
  Tally tally(state);
  std::string last_read;
  std::vector<diad::DiadOp*> ops_in_flight(window);
  for (auto _ : state) {
    {
      NotCounted not_counted;
      for (diad::DiadOp*& op : ops_in_flight) {
        if (kind != diad::DiadOp::Kind::kRead) request.data = payload;
        absl::StatusOr<diad::DiadOp*> submitted = module->Submit(request);
        Check(submitted.status(), "DiAD submit");
        op = *submitted;
      }
    }
    StepPairUntil(
        rig, tally,
        [&ops_in_flight] {
          return std::all_of(ops_in_flight.begin(), ops_in_flight.end(),
                             [](const diad::DiadOp* op) {
                               return op->done.load(std::memory_order_acquire);
                             });
        },
        "DiAD");
    {
      NotCounted not_counted;
      for (diad::DiadOp* op : ops_in_flight) {
        if (op->status != diad::Status::kOk) {
          Fail(absl::StrCat("DiAD operation failed: status ",
                            static_cast<int>(op->status)));
        }
        if (kind == diad::DiadOp::Kind::kRead) last_read = std::move(op->data);
        op->Unref();
      }
    }
  }
  // The bench is a correctness check too: the bytes where they must be.
  const uint64_t ops = static_cast<uint64_t>(state.iterations());
  if (kind == diad::DiadOp::Kind::kRead) {
    if (ops != 0 &&
        last_read != std::string(read_source.begin(), read_source.end())) {
      Fail("DiAD read: wrong bytes");
    }
  } else if (kind == diad::DiadOp::Kind::kWrite) {
    absl::StatusOr<std::string> landed = rig.b.dataplane->ReadRegion(
        rig.target.id, kDiadWriteAt, kOpBytes, kOpBytes);
    Check(landed.status(), "read back");
    if (ops != 0 && *landed != std::string(bytes.begin(), bytes.end())) {
      Fail("DiAD write: wrong bytes in B's region");
    }
  } else {
    absl::StatusOr<std::string> header = rig.b.dataplane->ReadRegion(
        rig.stream_region.id, 0, diad::StreamRing::kHeaderBytes,
        diad::StreamRing::kHeaderBytes);
    Check(header.status(), "stream header");
    uint64_t committed;
    std::memcpy(&committed, header->data() + 8, 8);
    const uint64_t record = diad::StreamRing::kRecordHeaderBytes + kOpBytes;
    if (committed - committed_before != ops * record) {
      Fail(
          absl::StrCat("DiAD stream: ", (committed - committed_before) / record,
                       " messages committed, want ", ops));
    }
    if (ops != 0) {
      const uint64_t at =
          diad::StreamRing::kHeaderBytes +
          (committed - record) %
              (kStreamRegionBytes - diad::StreamRing::kHeaderBytes);
      absl::StatusOr<std::string> last =
          rig.b.dataplane->ReadRegion(rig.stream_region.id, at, record, record);
      Check(last.status(), "stream record");
      uint32_t length, stream;
      std::memcpy(&length, last->data(), 4);
      std::memcpy(&stream, last->data() + 4, 4);
      if (length != kOpBytes || stream != kStreamId ||
          last->substr(8) != std::string(bytes.begin(), bytes.end())) {
        Fail("DiAD stream: the last message is not what was sent");
      }
    }
  }
  CheckNoRetransmissions(rig);
  const uint32_t max_payload = module->config().max_payload();
  const uint64_t op_bytes =
      kind == diad::DiadOp::Kind::kRead ? read_bytes : kOpBytes;
  const double packets =
      static_cast<double>((op_bytes + max_payload - 1) / max_payload);
  Report(state, tally, packets, op_bytes, window);
}

void BM_DiadWrite(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kWrite);
}
BENCHMARK(BM_DiadWrite)->Apply(bench::FixedIterationsIfRequested);

// Sustained writes: kWindow 4 KiB writes in flight per iteration.
constexpr uint32_t kWindow = 16;
void BM_DiadWriteWindow(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kWrite, kDiadReadBytes, kWindow);
}
BENCHMARK(BM_DiadWriteWindow)->Apply(bench::FixedIterationsIfRequested);

void BM_DiadStream(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kStream);
}
BENCHMARK(BM_DiadStream)->Apply(bench::FixedIterationsIfRequested);

void BM_DiadRead(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kRead);
}
BENCHMARK(BM_DiadRead)->Apply(bench::FixedIterationsIfRequested);

// A 4 KiB read: B's responses go out zero-copy from its region (docs/diad.md,
// "Zero-copy READ responses") unless --zero_copy_min_bytes=0.
void BM_DiadRead4k(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kRead, kOpBytes);
}
BENCHMARK(BM_DiadRead4k)->Apply(bench::FixedIterationsIfRequested);

// RoceModule::ExecuteMany waits for its operations; this thread makes that
// call, once per Post(), and otherwise sleeps on a mutex: it never polls an
// HPU, the bench's thread steps A and B meanwhile. Its instructions are left
// out of callgrind's count.
class RoceCaller {
 public:
  explicit RoceCaller(roce::RoceModule* module)
      : module_(module), thread_([this] { Loop(); }) {}
  ~RoceCaller() {
    {
      absl::MutexLock lock(&mu_);
      quit_ = true;
    }
    thread_.join();
  }

  // The ops go to ExecuteMany together (its window keeps them in flight).
  void Post(const std::vector<RoceOp>& ops) {
    done_.store(false, std::memory_order_relaxed);
    absl::MutexLock lock(&mu_);
    ops_ = ops;
    pending_ = true;
  }
  bool done() const { return done_.load(std::memory_order_acquire); }
  const absl::Status& status() const { return status_; }

 private:
  void Loop() {
    CALLGRIND_TOGGLE_COLLECT;
    for (;;) {
      std::vector<RoceOp> ops;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](RoceCaller* c) { return c->pending_ || c->quit_; }, this));
        if (quit_) return;
        ops = ops_;
        pending_ = false;
      }
      absl::StatusOr<RoceBatchResult> batch =
          module_->ExecuteMany(std::move(ops), absl::Seconds(30));
      status_ = batch.status();
      for (size_t i = 0;
           status_.ok() && batch.ok() && i < batch->results.size(); ++i) {
        status_ = batch->results[i].status();
      }
      done_.store(true, std::memory_order_release);
    }
  }

  roce::RoceModule* module_;
  absl::Mutex mu_;
  std::vector<RoceOp> ops_ ABSL_GUARDED_BY(mu_);
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_;  // written before done_ (release)
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// RoCE: `window` RDMA operations per iteration (RoceModule::ExecuteMany on
// RoceCaller's thread), requester A, responder B.
void RunRoce(benchmark::State& state, roce::WorkRequest::Kind kind,
             uint32_t window = 1) {
  PairRig& rig = Pair();
  roce::RoceModule* module = rig.a.dataplane->transport<roce::RoceModule>();
  const bool write = kind == roce::WorkRequest::Kind::kWrite;
  const Bytes bytes = Pattern(kOpBytes, write ? 21 : 22);
  const Bytes zeros(kOpBytes, 0);
  if (write) {
    Check(rig.a.dataplane->WriteRegion(rig.local.id, kRoceSourceAt, bytes),
          "RoCE source");
    Check(rig.b.dataplane->WriteRegion(rig.target.id, kRoceWriteAt, zeros),
          "RoCE target");
  } else {
    Check(rig.b.dataplane->WriteRegion(rig.target.id, kRoceReadAt, bytes),
          "RoCE read source");
    Check(rig.a.dataplane->WriteRegion(rig.local.id, kRoceLandAt, zeros),
          "RoCE read destination");
  }
  RoceOp op;
  op.qpn = rig.qp_a;
  op.kind = kind;
  op.region_id = rig.local.id;
  op.offset = write ? kRoceSourceAt : kRoceLandAt;
  op.length = kOpBytes;
  op.remote_va = rig.target.base_address + (write ? kRoceWriteAt : kRoceReadAt);
  op.rkey = rig.target.rkey;
  const std::vector<RoceOp> batch(window, op);
  RoceCaller caller(module);
  Tally tally(state);
  for (auto _ : state) {
    {
      NotCounted not_counted;
      caller.Post(batch);
    }
    StepPairUntil(
        rig, tally, [&caller] { return caller.done(); }, "RoCE");
    NotCounted not_counted;
    Check(caller.status(), write ? "RoCE WRITE" : "RoCE READ");
  }
  const uint64_t ops = static_cast<uint64_t>(state.iterations());
  absl::StatusOr<std::string> landed =
      write ? rig.b.dataplane->ReadRegion(rig.target.id, kRoceWriteAt, kOpBytes,
                                          kOpBytes)
            : rig.a.dataplane->ReadRegion(rig.local.id, kRoceLandAt, kOpBytes,
                                          kOpBytes);
  Check(landed.status(), "read back");
  if (ops != 0 && *landed != std::string(bytes.begin(), bytes.end())) {
    Fail(write ? "RoCE WRITE: wrong bytes in B's region"
               : "RoCE READ: wrong bytes in A's region");
  }
  CheckNoRetransmissions(rig);
  const uint32_t pmtu = RocePmtu();
  Report(state, tally, (kOpBytes + pmtu - 1) / pmtu, kOpBytes, window);
}

void BM_RoceWrite(benchmark::State& state) {
  RunRoce(state, roce::WorkRequest::Kind::kWrite);
}
BENCHMARK(BM_RoceWrite)->Apply(bench::FixedIterationsIfRequested);

// Sustained WRITEs: kWindow 4 KiB WRITEs in flight per iteration.
void BM_RoceWriteWindow(benchmark::State& state) {
  RunRoce(state, roce::WorkRequest::Kind::kWrite, kWindow);
}
BENCHMARK(BM_RoceWriteWindow)->Apply(bench::FixedIterationsIfRequested);

void BM_RoceRead(benchmark::State& state) {
  RunRoce(state, roce::WorkRequest::Kind::kRead);
}
BENCHMARK(BM_RoceRead)->Apply(bench::FixedIterationsIfRequested);

// ---------------------------------------------------------------------------
// NAAICE: spinnic has no NAAICE client, so the bench is the host. It
// connects to B's NAAICE port through the CM, runs MRSP (one 4 KiB input
// and one 4 KiB output region), then per RPC injects the host's 4 KiB WRITE
// (the last packet WITH IMMEDIATE naming VectorSum) into B's wire port and
// ACKs B's write-back of the output. Only B's polls are timed: the
// responder, the function, and the requester of the result.

constexpr uint16_t kNaaicePort = 12345;
constexpr uint32_t kHostQpn = 0x55;
constexpr uint32_t kHostPsn = 0x100;
constexpr uint32_t kPmtu = 1024;
constexpr uint64_t kHostOutputAddress = 0x9000;
constexpr uint32_t kHostOutputRkey = 0x22;

struct NaaiceRig {
  Node b;
  rte_mempool* host_pool = nullptr;  // the host's frames
  uint32_t naa_qpn = 0;
  uint32_t host_psn = 0;  // the host's next request PSN
  uint32_t host_msn = 0;  // messages of B's the host completed
  roce::mrsp::RegionAdvert input;
};

roce::FrameParams HostFrameParams() {
  roce::FrameParams params;
  params.src_mac = kMacA;
  params.dst_mac = kMacB;
  params.ip_version = 4;
  params.src_ip = kIpA;
  params.dst_ip = kIpB;
  return params;
}

// A host frame into B's wire port: `payload` after the headers, the ICRC
// computed (roce::FinishFrame).
void Inject(NaaiceRig& rig, const roce::FrameParams& params,
            const roce::Bth& bth, const roce::ExtHeaders& ext,
            std::span<const uint8_t> payload) {
  const uint32_t length = static_cast<uint32_t>(payload.size());
  const uint32_t size = roce::FrameBytes(4, bth.opcode, length);
  rte_mbuf* m = rte_pktmbuf_alloc(rig.host_pool);
  if (m == nullptr) Fail("NAAICE: no mbuf for the host's frame");
  uint8_t* frame = reinterpret_cast<uint8_t*>(
      rte_pktmbuf_append(m, static_cast<uint16_t>(size)));
  const uint32_t headers =
      roce::WriteHeaders(params, bth, ext, length, frame, size);
  if (frame == nullptr || headers == 0) Fail("NAAICE: cannot build a frame");
  std::memcpy(frame + headers, payload.data(), length);
  if (roce::FinishFrame(params, frame, size) != size) {
    Fail("NAAICE: cannot finish a frame");
  }
  if (rte_ring_enqueue(rig.b.wire_rx, m) != 0) Fail("NAAICE: wire RX full");
}

// A host request on the connected QP.
void HostRequest(NaaiceRig& rig, roce::Opcode opcode,
                 const roce::ExtHeaders& ext, std::span<const uint8_t> payload,
                 bool ack_req) {
  roce::FrameParams params = HostFrameParams();
  params.udp_src_port = roce::UdpSourcePort(kHostQpn, rig.naa_qpn);
  roce::Bth bth;
  bth.opcode = static_cast<uint8_t>(opcode);
  bth.dest_qp = rig.naa_qpn;
  bth.psn = rig.host_psn;
  bth.ack_req = ack_req;
  rig.host_psn = roce::PsnAdd(rig.host_psn, 1);
  Inject(rig, params, bth, ext, payload);
}

void HostAck(NaaiceRig& rig, uint32_t psn) {
  roce::FrameParams params = HostFrameParams();
  params.udp_src_port = roce::UdpSourcePort(kHostQpn, rig.naa_qpn);
  roce::Bth bth;
  bth.opcode = static_cast<uint8_t>(roce::Opcode::kRcAck);
  bth.dest_qp = rig.naa_qpn;
  bth.psn = psn;
  roce::ExtHeaders ext;
  ext.aeth = {roce::AethAck(), ++rig.host_msn};
  Inject(rig, params, bth, ext, {});
}

void HostMad(NaaiceRig& rig, const roce::CmMad& mad) {
  std::array<uint8_t, roce::kMadBytes> bytes{};
  roce::BuildCmMad(mad, bytes);
  roce::Bth bth;
  bth.opcode = static_cast<uint8_t>(roce::Opcode::kUdSendOnly);
  bth.dest_qp = roce::kGsiQp;
  roce::ExtHeaders ext;
  ext.deth.qkey = roce::kGsiQkey;
  ext.deth.src_qp = roce::kGsiQp;
  Inject(rig, HostFrameParams(), bth, ext, bytes);
}

// A frame B sent, parsed and its ICRC checked.
struct Sent {
  Bytes frame;
  roce::Packet packet;
  std::span<const uint8_t> payload() const {
    return {frame.data() + packet.payload_offset, packet.payload_length};
  }
};

// Everything B sent out of its wire port since the last call (each must be
// a valid RoCE frame).
std::vector<Sent> TakeSent(NaaiceRig& rig) {
  std::vector<Sent> sent;
  void* object;
  while (rte_ring_dequeue(rig.b.wire_tx, &object) == 0) {
    rte_mbuf* m = static_cast<rte_mbuf*>(object);
    Sent& s = sent.emplace_back();
    s.frame.assign(rte_pktmbuf_mtod(m, uint8_t*),
                   rte_pktmbuf_mtod(m, uint8_t*) + m->data_len);
    rte_pktmbuf_free(m);
    ParsedFrame parsed;
    ParseFrame(s.frame.data(), static_cast<uint32_t>(s.frame.size()), &parsed);
    Bytes copy = s.frame;
    if (roce::ParseFrame(copy.data(), static_cast<uint32_t>(copy.size()),
                         parsed.layers.l3_offset, parsed.layers.l4_offset,
                         &s.packet) != roce::ParseError::kNone) {
      Fail("NAAICE: B sent a frame that is not valid RoCE");
    }
  }
  return sent;
}

// Steps B (untimed: set-up) until it has sent `count` frames.
std::vector<Sent> AwaitSent(NaaiceRig& rig, size_t count, const char* what) {
  std::vector<Sent> all;
  Tally untimed;
  for (uint64_t steps = 0; all.size() < count; ++steps) {
    if (steps == kMaxStepsPerOp) Fail(absl::StrCat("NAAICE: no ", what));
    Step(rig.b.hpu(), rig.b.wire_tx, untimed);
    for (Sent& s : TakeSent(rig)) all.push_back(std::move(s));
  }
  return all;
}

std::unique_ptr<NaaiceRig> MakeNaaiceRig() {
  auto rig = std::make_unique<NaaiceRig>();
  rig->b.wire_rx = NewRing("cxwrx");
  rig->b.wire_tx = NewRing("cxwtx");
  DataplaneConfig config = NodeConfig(rig->b, "_x");
  roce::RoceConfig& rc = config.transports.get<roce::RoceConfig>();
  rc.enabled = true;
  rc.mac = kMacB;
  rc.addresses = {kIpB};
  rc.listen_ports = {kNaaicePort};
  rc.naaice_port = kNaaicePort;
  rc.local_ack_timeout = 31;
  CreateNode(rig->b, config);
  rig->host_pool = rte_pktmbuf_pool_create("cost_host", 1023, 0, 0,
                                           RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  if (rig->host_pool == nullptr) Fail("NAAICE: no host pool");

  // The CM: REQ, REP, RTU.
  roce::RdmaCmConnectParams params;
  params.transaction_id = 77;
  params.local_comm_id = 0x1001;
  params.local_qpn = kHostQpn;
  params.starting_psn = kHostPsn;
  params.port = kNaaicePort;
  params.rdma_cm.ip_version = 4;
  params.local_gid = kIpA;
  params.remote_gid = kIpB;
  params.local_ack_timeout = 31;
  HostMad(*rig, roce::BuildRdmaCmReq(params));
  std::vector<Sent> sent = AwaitSent(*rig, 1, "CM REP");
  roce::CmMad rep_mad;
  if (roce::ParseCmMad(sent[0].payload(), &rep_mad) !=
      roce::CmParseError::kNone) {
    Fail("NAAICE: B's CM answer does not parse");
  }
  const auto* rep = std::get_if<roce::CmRep>(&rep_mad.message);
  if (rep == nullptr) Fail("NAAICE: B did not accept the connection");
  rig->naa_qpn = rep->local_qpn;
  rig->host_psn = rep->starting_psn;
  HostMad(*rig, roce::BuildRtuFor(rep_mad.header, *rep));

  // MRSP: one input and one output region of 4 KiB.
  std::vector<roce::mrsp::RegionRequest> regions(2);
  regions[0].flags = roce::mrsp::kFlagInput;
  regions[0].host_address = 0x7000;
  regions[0].rkey = 0x20;
  regions[0].size = kOpBytes;
  regions[1].flags = roce::mrsp::kFlagOutput;
  regions[1].host_address = kHostOutputAddress;
  regions[1].rkey = kHostOutputRkey;
  regions[1].size = kOpBytes;
  Bytes request(roce::mrsp::kMaxMessageBytes);
  request.resize(roce::mrsp::BuildAdvertiseRequest(regions, request.data(),
                                                   request.size()));
  HostRequest(*rig, roce::Opcode::kRcSendOnly, {}, request, true);
  sent = AwaitSent(*rig, 2, "MRSP advertisement");
  roce::mrsp::Advertise advert;
  if (roce::mrsp::ParseAdvertise(sent[1].payload(), &advert) !=
          roce::mrsp::ParseError::kNone ||
      advert.count != 2) {
    Fail("NAAICE: B's MRSP advertisement is not two regions");
  }
  rig->input = advert.regions[0];
  HostAck(*rig, sent[1].packet.bth.psn);
  AwaitSent(*rig, 0, "");
  return rig;
}

std::unique_ptr<NaaiceRig> g_naaice;

NaaiceRig& Naaice() {
  if (g_naaice == nullptr) g_naaice = MakeNaaiceRig();
  return *g_naaice;
}

// Doubles 0.5, 1.5, ... (VectorSum of one input returns them unchanged).
Bytes NaaiceInput() {
  Bytes bytes(kOpBytes);
  for (uint32_t j = 0; j < kOpBytes / 8; ++j) {
    const double v = j + 0.5;
    std::memcpy(bytes.data() + 8 * j, &v, 8);
  }
  return bytes;
}

void BM_NaaiceRpc(benchmark::State& state) {
  NaaiceRig& rig = Naaice();
  const Bytes input = NaaiceInput();
  const uint32_t immediate =
      roce::mrsp::MakeRequestImmediate(naaice::kCodeVectorSum, 0);
  const uint64_t errors_before =
      Counter(*rig.b.dataplane, "roce", "naaice_errors");
  Bytes result(kOpBytes);
  Tally tally(state);
  uint64_t result_bytes = 0;
  for (auto _ : state) {
    {
      NotCounted not_counted;
      result_bytes = 0;
      const uint32_t packets = kOpBytes / kPmtu;
      for (uint32_t p = 0; p < packets; ++p) {
        roce::ExtHeaders ext;
        roce::Opcode opcode = roce::Opcode::kRcWriteMiddle;
        if (p == 0) {
          opcode = roce::Opcode::kRcWriteFirst;
          ext.reth = {rig.input.address, rig.input.rkey, kOpBytes};
        } else if (p + 1 == packets) {
          opcode = roce::Opcode::kRcWriteLastImm;
          ext.imm_data = immediate;
        }
        HostRequest(rig, opcode, ext,
                    std::span<const uint8_t>(input).subspan(p * kPmtu, kPmtu),
                    p + 1 == packets);
      }
    }
    // B: ACK the input, run VectorSum, write the output back.
    bool written_back = false;
    uint32_t last_psn = 0;
    for (uint64_t steps = 0; !written_back; ++steps) {
      if (steps == kMaxStepsPerOp) Fail("NAAICE: no result");
      Step(rig.b.hpu(), rig.b.wire_tx, tally);
      NotCounted not_counted;
      for (const Sent& s : TakeSent(rig)) {
        const auto opcode = static_cast<roce::Opcode>(s.packet.bth.opcode);
        if (opcode == roce::Opcode::kRcAck) continue;
        if (opcode != roce::Opcode::kRcWriteFirst &&
            opcode != roce::Opcode::kRcWriteMiddle &&
            opcode != roce::Opcode::kRcWriteLastImm) {
          Fail(absl::StrCat("NAAICE: unexpected opcode ", s.packet.bth.opcode));
        }
        if (result_bytes + s.packet.payload_length > kOpBytes) {
          Fail("NAAICE: the result is longer than the output region");
        }
        std::memcpy(result.data() + result_bytes, s.payload().data(),
                    s.packet.payload_length);
        result_bytes += s.packet.payload_length;
        if (opcode == roce::Opcode::kRcWriteLastImm) {
          if (s.packet.ext.imm_data != 0) Fail("NAAICE: the function failed");
          written_back = true;
          last_psn = s.packet.bth.psn;
        }
      }
    }
    {
      NotCounted not_counted;
      HostAck(rig, last_psn);
    }
    // B completes its write-back on the host's ACK.
    if (!Step(rig.b.hpu(), rig.b.wire_tx, tally)) {
      Fail("NAAICE: B did not take the host's ACK");
    }
    tally.EndOp();
  }
  const uint64_t ops = static_cast<uint64_t>(state.iterations());
  if (ops != 0 && (result_bytes != kOpBytes || result != input)) {
    Fail("NAAICE: the written-back output is not VectorSum of the input");
  }
  if (Counter(*rig.b.dataplane, "roce", "naaice_errors") != errors_before ||
      Counter(*rig.b.dataplane, "roce", "retransmits") != 0) {
    Fail("NAAICE: errors or retransmissions on B");
  }
  // Data packets: the input's and the output's; bytes: both ways.
  Report(state, tally, 2.0 * kOpBytes / kPmtu, 2 * kOpBytes);
}
BENCHMARK(BM_NaaiceRpc)->Apply(bench::FixedIterationsIfRequested);

BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

void DestroyRigs() {
  for (std::unique_ptr<SingleRig>* rig : {&g_passthrough, &g_null}) {
    if (*rig == nullptr) continue;
    DestroyNode((*rig)->node);
    rte_ring_free((*rig)->node.wire_rx);
    rte_ring_free((*rig)->node.wire_tx);
    rig->reset();
  }
  if (g_pair != nullptr) {
    DestroyNode(g_pair->a);
    DestroyNode(g_pair->b);
    for (rte_ring* ring :
         {g_pair->a_out, g_pair->b_in, g_pair->b_out, g_pair->a_in}) {
      rte_ring_free(ring);
    }
    g_pair.reset();
  }
  if (g_naaice != nullptr) {
    DestroyNode(g_naaice->b);
    rte_ring_free(g_naaice->b.wire_rx);
    rte_ring_free(g_naaice->b.wire_tx);
    rte_mempool_free(g_naaice->host_pool);
    g_naaice.reset();
  }
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  if (!spinnic::cost::InitBenchEal("cost_bench", 1024)) return 1;
  // Our own flag, taken out before Google Benchmark sees the rest.
  constexpr std::string_view kZeroCopyFlag = "--zero_copy_min_bytes=";
  constexpr std::string_view kPacketBytesFlag = "--packet_bytes=";
  constexpr std::string_view kDmaWireFlag = "--dma_wire=";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg.starts_with(kZeroCopyFlag)) {
      spinnic::g_zero_copy_min_bytes =
          std::atoll(argv[i] + kZeroCopyFlag.size());
    } else if (arg.starts_with(kPacketBytesFlag)) {
      const long long bytes = std::atoll(argv[i] + kPacketBytesFlag.size());
      if (bytes != 0 &&
          (bytes > 4096 ||
           spinnic::roce::PathMtuCode(static_cast<uint32_t>(bytes)) == 0)) {
        std::fprintf(stderr,
                     "cost_bench: --packet_bytes must be 0 (the defaults) or a "
                     "RoCE path MTU (256, 512, 1024, 2048, 4096), not %s\n",
                     argv[i] + kPacketBytesFlag.size());
        return 2;
      }
      spinnic::g_packet_bytes = static_cast<uint32_t>(bytes);
    } else if (arg.starts_with(kDmaWireFlag)) {
      spinnic::g_dma_wire = std::atoi(argv[i] + kDmaWireFlag.size()) != 0;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  // Cycles are TSC cycles: this is the rate gbps_per_core is derived at.
  benchmark::AddCustomContext("tsc_hz", std::to_string(rte_get_tsc_hz()));
  benchmark::RunSpecifiedBenchmarks();
  spinnic::DestroyRigs();
  return 0;
}
