// What spinnic's paths cost per packet in CPU cycles, measured so that the
// figure does not depend on the scheduler: one process, one thread, the
// dataplanes' HPUs stepped by hand (Hpu::PollOnce, as hpu_loop_bench does),
// no other poller. A busy poller in another process only shows up as a
// preempted poll, which inflates a repetition; the README reports the
// minimum of three.
//
// Two dataplanes, A and B, have their wire ports on in-memory rings that
// cross: A's wire TX ring is B's wire RX ring and the other way round, so a
// frame A sends is the frame B receives, without a copy. Every path's cost
// is the TSC cycles spent inside the PollOnce calls that did something
// (received a frame or sent one), summed over both dataplanes, divided by
// the data packets (the packets that carry the operation's payload). A poll
// that found nothing to do is what a polling NIC spends waiting, not per
// packet: it is counted apart (idle_polls_per_op). Next to each figure,
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
#include <valgrind/callgrind.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/micro/bench_util.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/diad/diad_module.h"
#include "dataplane/diad/stream_ring.h"
#include "dataplane/memory_region.h"
#include "dataplane/roce/roce_config.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/stats.h"

namespace spinnic {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr uint16_t kBurst = 32;
constexpr uint32_t kOpBytes = 4096;     // DiAD and RoCE writes, reads, RPCs
constexpr uint32_t kDiadReadBytes = 8;  // the small read round trip
constexpr uint32_t kStreamId = 7;
// A wedged operation ends the run instead of hanging it.
constexpr uint64_t kMaxStepsPerOp = 2'000'000;

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

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "cost_bench: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Fail(absl::StrCat(what, ": ", status.ToString()));
}

Bytes Pattern(size_t length, uint32_t seed) {
  Bytes bytes(length);
  for (size_t i = 0; i < length; ++i) {
    bytes[i] = static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  }
  return bytes;
}

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
// median of 201 rounds of 64 copies, each round timed like a poll.
double MemcpyCycles(size_t bytes) {
  Bytes source = Pattern(bytes, 1);
  Bytes destination(bytes);
  constexpr int kCopies = 64;
  std::vector<double> rounds;
  for (int round = 0; round < 201; ++round) {
    const uint64_t start = rte_rdtsc();
    for (int i = 0; i < kCopies; ++i) {
      benchmark::DoNotOptimize(destination.data());
      std::memcpy(destination.data(), source.data(), bytes);
      benchmark::ClobberMemory();
    }
    const uint64_t cycles = rte_rdtsc() - start - TscOverhead();
    rounds.push_back(static_cast<double>(cycles) / kCopies);
  }
  std::nth_element(rounds.begin(), rounds.begin() + 100, rounds.end());
  return rounds[100];
}

// What the measured polls of one benchmark run took.
struct Tally {
  uint64_t cycles = 0;
  uint64_t busy_polls = 0;
  uint64_t idle_polls = 0;
};

// One timed PollOnce of `hpu`. It was busy when it received a frame or sent
// one into `out` (the ring its wire port transmits to): only then do its
// cycles count. Returns whether it was busy.
bool Step(Hpu& hpu, rte_ring* out, Tally& tally) {
  const unsigned before = rte_ring_count(out);
  const uint64_t start = rte_rdtsc();
  const uint32_t received = hpu.PollOnce();
  const uint64_t cycles = rte_rdtsc() - start;
  if (received == 0 && rte_ring_count(out) == before) {
    ++tally.idle_polls;
    return false;
  }
  tally.cycles += cycles > TscOverhead() ? cycles - TscOverhead() : 0;
  ++tally.busy_polls;
  return true;
}

// The counters every path reports, from the cycles of `ops` operations of
// `packets_per_op` data packets carrying `bytes_per_op` payload bytes.
void Report(benchmark::State& state, const Tally& tally, uint64_t ops,
            double packets_per_op, uint64_t bytes_per_op) {
  if (ops == 0) return;
  const double cycles_per_op =
      static_cast<double>(tally.cycles) / static_cast<double>(ops);
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
  state.counters["idle_polls_per_op"] =
      static_cast<double>(tally.idle_polls) / static_cast<double>(ops);
  state.SetItemsProcessed(static_cast<int64_t>(ops));
}

uint64_t Counter(Dataplane& dataplane, const std::string& transport,
                 const std::string& name) {
  for (const auto& [counter, value] :
       dataplane.Snapshot(Dataplane::StateCopy::kOmit)
           .transport(transport)
           .counters) {
    if (counter == name) return value;
  }
  Fail(absl::StrCat("no ", transport, " counter ", name));
}

// A ring ethdev on two rings (either may be shared with another port).
std::string RingPort(const std::string& name, rte_ring* rx, rte_ring* tx) {
  const int port = rte_eth_from_rings(name.c_str(), &rx, 1, &tx, 1, 0);
  char ethdev[RTE_ETH_NAME_MAX_LEN];
  if (port < 0 ||
      rte_eth_dev_get_name_by_port(static_cast<uint16_t>(port), ethdev) != 0) {
    Fail(absl::StrCat("cannot make the ring port ", name));
  }
  return ethdev;
}

rte_ring* NewRing(const std::string& name) {
  rte_ring* ring =
      rte_ring_create(name.c_str(), 1024, 0, RING_F_SP_ENQ | RING_F_SC_DEQ);
  if (ring == nullptr) Fail(absl::StrCat("cannot create ring ", name));
  return ring;
}

void DrainRing(rte_ring* ring) {
  void* m;
  while (rte_ring_dequeue(ring, &m) == 0) {
    rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
  }
}

// One dataplane's ports: the wire port (its rings possibly crossed with
// another dataplane's) and the host port paired with it.
struct Node {
  std::unique_ptr<Dataplane> dataplane;
  rte_ring* wire_rx = nullptr;
  rte_ring* wire_tx = nullptr;
  rte_ring* host_rx = nullptr;
  rte_ring* host_tx = nullptr;
  std::string suffix;

  Hpu& hpu() { return dataplane->hpu(0); }
  rte_mempool* pool() const {
    return rte_mempool_lookup(ResourceName("spinnic_pkts", suffix).c_str());
  }
};

// A DataplaneConfig for `node`'s ports with one HPU (never launched).
DataplaneConfig NodeConfig(Node& node, const std::string& suffix) {
  node.suffix = suffix;
  node.host_rx = NewRing(absl::StrCat("c", suffix, "hrx"));
  node.host_tx = NewRing(absl::StrCat("c", suffix, "htx"));
  DataplaneConfig config;
  config.instance_suffix = suffix;
  PortConfig wire;
  wire.name = "wire0";
  wire.existing =
      RingPort(absl::StrCat("c", suffix, "w"), node.wire_rx, node.wire_tx);
  wire.role = PortRole::kWire;
  wire.rx_descriptors = wire.tx_descriptors = 256;
  PortConfig host = wire;
  host.name = "host0";
  host.existing =
      RingPort(absl::StrCat("c", suffix, "h"), node.host_rx, node.host_tx);
  host.role = PortRole::kHost;
  config.ports = {wire, host};
  config.port_pairs = {{0, 1}};
  config.worker_cores = {1};
  config.mbufs = 8191;
  return config;
}

void CreateNode(Node& node, const DataplaneConfig& config) {
  absl::StatusOr<std::unique_ptr<Dataplane>> dataplane =
      Dataplane::Create(config);
  Check(dataplane.status(), absl::StrCat("dataplane ", node.suffix));
  node.dataplane = *std::move(dataplane);
}

// Frees what is in flight (mbufs of the node's pool) before the pool goes.
void DestroyNode(Node& node) {
  for (rte_ring* ring :
       {node.wire_rx, node.wire_tx, node.host_rx, node.host_tx}) {
    if (ring != nullptr) DrainRing(ring);
  }
  node.dataplane.reset();
  rte_ring_free(node.host_rx);
  rte_ring_free(node.host_tx);
  node.host_rx = node.host_tx = nullptr;
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

// A UDP/IPv4 frame of `length` bytes to 10.0.0.2:9000 (no transport's).
Bytes UdpFrame(size_t length) {
  Bytes f(length, 0);
  const uint16_t ip_length = static_cast<uint16_t>(length - 14);
  const uint16_t udp_length = static_cast<uint16_t>(length - 34);
  const uint8_t head[] = {0x02,
                          0,
                          0,
                          0,
                          0,
                          0x0b,
                          0x02,
                          0,
                          0,
                          0,
                          0,
                          0x0a,
                          0x08,
                          0x00,  // Ethernet
                          0x45,
                          0,
                          static_cast<uint8_t>(ip_length >> 8),
                          static_cast<uint8_t>(ip_length),
                          0,
                          0,
                          0x40,
                          0,
                          64,
                          17,
                          0,
                          0,  // IPv4
                          10,
                          0,
                          0,
                          1,
                          10,
                          0,
                          0,
                          2,  // addresses
                          0x0f,
                          0xa0,
                          0x23,
                          0x28,
                          static_cast<uint8_t>(udp_length >> 8),
                          static_cast<uint8_t>(udp_length),
                          0,
                          0};  // UDP
  std::memcpy(f.data(), head, sizeof head);
  for (size_t i = sizeof head; i < length; ++i) {
    f[i] = static_cast<uint8_t>(i);
  }
  return f;
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
  Tally tally;
  for (auto _ : state) {
    rte_ring_sp_enqueue_bulk(node.wire_rx, burst, kBurst, nullptr);
    const uint64_t start = rte_rdtsc();
    benchmark::DoNotOptimize(node.hpu().PollOnce());
    tally.cycles += rte_rdtsc() - start - TscOverhead();
    ++tally.busy_polls;
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
  Report(state, tally, static_cast<uint64_t>(state.iterations()) * kBurst, 1,
         frame_bytes);
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

const diad::NodeAddress kNodeA = {0xfd, 0, 0xd1, 0xad, 0, 0, 0, 0,
                                  0,    0, 0,    0,    0, 0, 0, 1};
const diad::NodeAddress kNodeB = {0xfd, 0, 0xd1, 0xad, 0, 0, 0, 0,
                                  0,    0, 0,    0,    0, 0, 0, 2};
const diad::MacAddress kMacA = {0x02, 0, 0, 0, 0, 0x0a};
const diad::MacAddress kMacB = {0x02, 0, 0, 0, 0, 0x0b};
const roce::Gid kIpA = {0, 0, 0,    0,    0,   0, 0, 0,
                        0, 0, 0xff, 0xff, 192, 0, 2, 10};
const roce::Gid kIpB = {0, 0, 0,    0,    0,   0, 0, 0,
                        0, 0, 0xff, 0xff, 192, 0, 2, 11};

struct PairRig {
  rte_ring* a_to_b = nullptr;
  rte_ring* b_to_a = nullptr;
  Node a, b;
  RegionInfo target;         // on B: DiAD and RoCE writes land, reads read
  RegionInfo stream_region;  // on B: stream kStreamId's ring
  RegionInfo local;          // on A: RoCE's source and destination bytes
  uint32_t qp_a = 0;         // A's QP (the requester), to B's
};

DataplaneConfig PairConfig(Node& node, const std::string& suffix, bool is_a) {
  DataplaneConfig config = NodeConfig(node, suffix);
  diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
  dc.enabled = true;
  dc.node = is_a ? kNodeA : kNodeB;
  dc.mac = is_a ? kMacA : kMacB;
  dc.channels = 1;
  // Nothing is lost between the rings: no timer may fire while the bench
  // steps (a preempted step must not turn into a retransmission).
  dc.channel.rto_ns = 10'000'000'000;
  dc.channel.rto_max_ns = 10'000'000'000;
  diad::PeerConfig peer;
  peer.name = is_a ? "b" : "a";
  peer.node = is_a ? kNodeB : kNodeA;
  peer.mac = is_a ? kMacB : kMacA;
  dc.peers = {peer};
  roce::RoceConfig& rc = config.transports.get<roce::RoceConfig>();
  rc.enabled = true;
  rc.mac = is_a ? kMacA : kMacB;
  rc.addresses = {is_a ? kIpA : kIpB};
  // The longest local ACK timeout (4.096 us * 2^31): no retry while a step
  // is preempted.
  rc.local_ack_timeout = 31;
  return config;
}

RegionInfo Register(Dataplane& dataplane, uint64_t length, uint32_t access,
                    uint32_t stream_id = 0) {
  RegionConfig config;
  config.length = length;
  config.access = access;
  config.stream_id = stream_id;
  absl::StatusOr<RegionInfo> region = dataplane.RegisterRegion(config);
  Check(region.status(), "region");
  return *region;
}

void StepPairUntil(PairRig& rig, Tally& tally,
                   const std::function<bool()>& done, const char* what) {
  for (uint64_t steps = 0; !done(); ++steps) {
    if (steps == kMaxStepsPerOp) {
      Fail(absl::StrCat(what, ": the operation did not complete"));
    }
    const bool a = Step(rig.a.hpu(), rig.a_to_b, tally);
    const bool b = Step(rig.b.hpu(), rig.b_to_a, tally);
    // Nothing moved: let a waiting thread (RoCE's Execute) run.
    if (!a && !b) std::this_thread::yield();
  }
}

std::unique_ptr<PairRig> MakePairRig() {
  auto rig = std::make_unique<PairRig>();
  rig->a_to_b = NewRing("cab");
  rig->b_to_a = NewRing("cba");
  rig->a.wire_rx = rig->b.wire_tx = rig->b_to_a;
  rig->a.wire_tx = rig->b.wire_rx = rig->a_to_b;
  CreateNode(rig->a, PairConfig(rig->a, "_a", true));
  CreateNode(rig->b, PairConfig(rig->b, "_b", false));
  rig->target = Register(*rig->b.dataplane, kTargetBytes,
                         kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite);
  rig->stream_region = Register(*rig->b.dataplane, kStreamRegionBytes,
                                kLocalRead | kLocalWrite, kStreamId);
  rig->local = Register(*rig->a.dataplane, kTargetBytes,
                        kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite);
  // QP numbers are kFirstQpn + slot: each side's first QP is kFirstQpn, so
  // each can name the other's before it exists.
  const uint32_t first = roce::kFirstQpn;
  roce::QpSpec to_b;
  to_b.remote_qpn = first;
  to_b.remote_ip = kIpB;
  to_b.local_ip = kIpA;
  to_b.remote_mac = kMacB;
  to_b.pmtu = 1024;
  to_b.send_psn = 0x100;
  to_b.expected_psn = 0x200;
  roce::QpSpec to_a = to_b;
  to_a.remote_ip = kIpA;
  to_a.local_ip = kIpB;
  to_a.remote_mac = kMacA;
  to_a.send_psn = 0x200;
  to_a.expected_psn = 0x100;
  absl::StatusOr<uint32_t> qp_a =
      rig->a.dataplane->transport<roce::RoceModule>()->CreateQp(to_b);
  Check(qp_a.status(), "QP on A");
  absl::StatusOr<uint32_t> qp_b =
      rig->b.dataplane->transport<roce::RoceModule>()->CreateQp(to_a);
  Check(qp_b.status(), "QP on B");
  if (*qp_a != first || *qp_b != first) {
    Fail("the first QPs are not kFirstQpn: the QPs do not name each other");
  }
  rig->qp_a = *qp_a;
  // The HPUs apply the QPs (and the peers) on their next polls.
  Tally setup;
  for (int i = 0; i < 4; ++i) {
    Step(rig->a.hpu(), rig->a_to_b, setup);
    Step(rig->b.hpu(), rig->b_to_a, setup);
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
void RunDiad(benchmark::State& state, diad::DiadOp::Kind kind) {
  PairRig& rig = Pair();
  diad::DiadModule* module = rig.a.dataplane->transport<diad::DiadModule>();
  const Bytes bytes = Pattern(kOpBytes, static_cast<uint32_t>(kind) + 3);
  std::string payload(bytes.begin(), bytes.end());
  const Bytes read_source = Pattern(kDiadReadBytes, 11);
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
  request.read_length = kDiadReadBytes;
  Tally tally;
  std::string last_read;
  for (auto _ : state) {
    diad::DiadOp* op = nullptr;
    {
      NotCounted not_counted;
      if (kind != diad::DiadOp::Kind::kRead) request.data = std::move(payload);
      absl::StatusOr<diad::DiadOp*> submitted = module->Submit(request);
      Check(submitted.status(), "DiAD submit");
      op = *submitted;
    }
    StepPairUntil(
        rig, tally, [op] { return op->done.load(std::memory_order_acquire); },
        "DiAD");
    {
      NotCounted not_counted;
      if (op->status != diad::Status::kOk) {
        Fail(absl::StrCat("DiAD operation failed: status ",
                          static_cast<int>(op->status)));
      }
      if (kind == diad::DiadOp::Kind::kRead) {
        last_read = std::move(op->data);
      } else {
        payload = std::move(op->data);
        if (payload.size() != kOpBytes)
          payload.assign(bytes.begin(), bytes.end());
      }
      op->Unref();
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
      kind == diad::DiadOp::Kind::kRead ? kDiadReadBytes : kOpBytes;
  const double packets =
      static_cast<double>((op_bytes + max_payload - 1) / max_payload);
  Report(state, tally, ops, packets, op_bytes);
}

void BM_DiadWrite(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kWrite);
}
BENCHMARK(BM_DiadWrite)->Apply(bench::FixedIterationsIfRequested);

void BM_DiadStream(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kStream);
}
BENCHMARK(BM_DiadStream)->Apply(bench::FixedIterationsIfRequested);

void BM_DiadRead(benchmark::State& state) {
  RunDiad(state, diad::DiadOp::Kind::kRead);
}
BENCHMARK(BM_DiadRead)->Apply(bench::FixedIterationsIfRequested);

// RoceModule::Execute waits for its operation; this thread makes that call,
// one operation per Post(), and otherwise sleeps on a mutex: it never polls
// an HPU, the bench's thread steps A and B meanwhile. Its instructions are
// left out of callgrind's count.
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

  void Post(const RoceOp& op) {
    done_.store(false, std::memory_order_relaxed);
    absl::MutexLock lock(&mu_);
    op_ = op;
    pending_ = true;
  }
  bool done() const { return done_.load(std::memory_order_acquire); }
  const absl::Status& status() const { return status_; }

 private:
  void Loop() {
    CALLGRIND_TOGGLE_COLLECT;
    for (;;) {
      RoceOp op;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](RoceCaller* c) { return c->pending_ || c->quit_; }, this));
        if (quit_) return;
        op = op_;
        pending_ = false;
      }
      status_ = module_->Execute(op, absl::Seconds(30)).status();
      done_.store(true, std::memory_order_release);
    }
  }

  roce::RoceModule* module_;
  absl::Mutex mu_;
  RoceOp op_ ABSL_GUARDED_BY(mu_);
  bool pending_ ABSL_GUARDED_BY(mu_) = false;
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_;  // written before done_ (release)
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// RoCE: one RDMA operation at a time, requester A (RoceModule::Execute on
// RoceCaller's thread), responder B.
void RunRoce(benchmark::State& state, roce::WorkRequest::Kind kind) {
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
  RoceCaller caller(module);
  Tally tally;
  for (auto _ : state) {
    {
      NotCounted not_counted;
      caller.Post(op);
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
  const uint32_t pmtu = 1024;
  Report(state, tally, ops, (kOpBytes + pmtu - 1) / pmtu, kOpBytes);
}

void BM_RoceWrite(benchmark::State& state) {
  RunRoce(state, roce::WorkRequest::Kind::kWrite);
}
BENCHMARK(BM_RoceWrite)->Apply(bench::FixedIterationsIfRequested);

void BM_RoceRead(benchmark::State& state) {
  RunRoce(state, roce::WorkRequest::Kind::kRead);
}
BENCHMARK(BM_RoceRead)->Apply(bench::FixedIterationsIfRequested);

BENCHMARK(bench::BM_EmptyLoop)->Apply(bench::FixedIterationsIfRequested);

void DestroyRigs() {
  for (std::unique_ptr<SingleRig>* rig : {&g_passthrough, &g_null}) {
    if (*rig != nullptr) DestroyNode((*rig)->node);
    rig->reset();
  }
  if (g_pair != nullptr) {
    DestroyNode(g_pair->a);
    DestroyNode(g_pair->b);
    rte_ring_free(g_pair->a_to_b);
    rte_ring_free(g_pair->b_to_a);
    g_pair.reset();
  }
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  const char* eal[] = {
      "cost_bench",  "--no-huge", "-m",      "1024",        "--no-pci",
      "--no-shconf", "--lcores",  "0@0,1@0", "--log-level", "3"};
  absl::Status status = spinnic::InitEal(
      std::vector<std::string>(std::begin(eal), std::end(eal)));
  if (!status.ok()) {
    std::fprintf(stderr, "cost_bench: %s\n",
                 std::string(status.message()).c_str());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  spinnic::DestroyRigs();
  return 0;
}
