// What loss costs the transports, measured without scheduler noise: two
// dataplanes, A and B, stepped by hand in one thread (bench/cost/rig.h), with
// an impairment stage (the one spinnic-impair runs) and a link of fixed
// capacity between their wire ports, and host traffic crossing the pair
// beside the transport's. For each loss rate and path it reports:
//  - transmissions and retransmissions per delivered data packet;
//  - goodput (payload bytes A's operations moved per second of the run) and
//    its ratio to the same path's lossless run;
//  - the host traffic's loss across the pair, next to the link's own.
//
//   build-rel/bench/cost/loss_bench                # the full table
//   build-rel/bench/cost/loss_bench --smoke        # CI: every figure, fast
//
// The link: every tick (one PollOnce of A and one of B) it carries at most
// --link_frames frames each way out of the wire port's TX ring, which holds
// --tx_ring_slots frames; what the HPU cannot put in it is dropped as tx_full,
// as on a NIC whose TX queue is full. Timers run on the TSC (real time), so
// goodput is a wall-clock figure of a CPU-bound loop: compare rows of one run.
// bench/cost/README.md has the figures.
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "bench/cost/rig.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/diad/diad_module.h"
#include "dataplane/impair/impair_stage.h"
#include "dataplane/roce/roce_module.h"
#include "dataplane/stats.h"

ABSL_FLAG(std::string, loss, "0,0.001,0.01,0.05",
          "Loss rates of the link, each direction (comma-separated)");
ABSL_FLAG(uint32_t, ops, 128, "Operations of --op_bytes per run");
ABSL_FLAG(uint32_t, repetitions, 3,
          "Runs per path and loss rate (goodput: their median)");
ABSL_FLAG(uint32_t, op_bytes, 65536, "Bytes each operation writes");
ABSL_FLAG(uint32_t, link_frames, 32,
          "Frames the link carries per tick, each way");
ABSL_FLAG(uint32_t, tx_ring_slots, 1024,
          "Frames a wire port's TX ring holds (a power of two)");
ABSL_FLAG(uint32_t, host_every, 1,
          "A host frame enters A's host port every this many ticks");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the impairment");
ABSL_FLAG(int32_t, pacer_share, -1,
          "With 0..99: a transport pacer on both wire ports keeping this "
          "percent of a congested TX queue for passthrough (ports[]."
          "transport_pacer); -1: no pacer");
ABSL_FLAG(bool, smoke, false,
          "CI form: 16 operations of 16 KiB at loss 0 and 0.05, every path");

namespace spinnic::cost {
namespace {

constexpr uint64_t kRunTimeoutSeconds = 120;
constexpr size_t kHostFrameBytes = 512;
constexpr uint32_t kRegionBytes = 1u << 20;  // B's target: a ring of slots
constexpr uint32_t kRocePmtu = 1024;         // ConnectQps

// kDiadMixed: A asks for SELECTIVE, B stays GO_BACK_N; the channel must
// fall back to go-back-N (its figures are GO_BACK_N's).
enum class Path { kDiadGoBackN, kDiadSelective, kDiadMixed, kRoce };

const char* PathName(Path path) {
  switch (path) {
    case Path::kDiadGoBackN:
      return "DiAD GO_BACK_N";
    case Path::kDiadSelective:
      return "DiAD SELECTIVE";
    case Path::kDiadMixed:
      return "DiAD SELECTIVE vs GO_BACK_N";
    case Path::kRoce:
      return "RoCE RC WRITE";
  }
  return "?";
}

// A and B with the link between them: A's wire TX ring (a_out) goes
// through the stage a_to_b into B's wire RX ring (b_in), and back.
struct LossRig {
  rte_ring* a_out = nullptr;
  rte_ring* a_in = nullptr;
  rte_ring* b_out = nullptr;
  rte_ring* b_in = nullptr;
  Node a, b;
  RegionInfo target;  // on B
  RegionInfo source;  // on A (RoCE reads its payload from here)
  uint32_t qp_a = 0;
  std::unique_ptr<impair::ImpairStage> a_to_b, b_to_a;
  // Frames the far RX ring had no room for (a NIC's imissed): B polls at
  // most a burst of 32 a tick.
  uint64_t link_overflow = 0;
};

std::unique_ptr<LossRig> MakeRig(const std::string& name,
                                 diad::Recovery recovery_a,
                                 diad::Recovery recovery_b) {
  auto rig = std::make_unique<LossRig>();
  const unsigned tx_slots = absl::GetFlag(FLAGS_tx_ring_slots);
  rig->a_out = NewRing(absl::StrCat("l", name, "ao"), tx_slots);
  rig->b_out = NewRing(absl::StrCat("l", name, "bo"), tx_slots);
  rig->a_in = NewRing(absl::StrCat("l", name, "ai"));
  rig->b_in = NewRing(absl::StrCat("l", name, "bi"));
  rig->a.wire_rx = rig->a_in;
  rig->a.wire_tx = rig->a_out;
  rig->b.wire_rx = rig->b_in;
  rig->b.wire_tx = rig->b_out;
  for (bool is_a : {true, false}) {
    Node& node = is_a ? rig->a : rig->b;
    DataplaneConfig config =
        PairConfig(node, absl::StrCat("_", name, is_a ? "a" : "b"), is_a);
    config.transports.get<diad::DiadConfig>().peers[0].recovery =
        is_a ? recovery_a : recovery_b;
    if (const int32_t share = absl::GetFlag(FLAGS_pacer_share); share >= 0) {
      TxPacerConfig& pacer = config.ports[0].transport_pacer;
      pacer.enabled = true;
      pacer.passthrough_share_percent = static_cast<uint32_t>(share);
    }
    CreateNode(node, config);
  }
  const uint32_t access = kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite;
  rig->target = Register(*rig->b.dataplane, kRegionBytes, access);
  rig->source = Register(*rig->a.dataplane, kRegionBytes, access);
  rig->qp_a = ConnectQps(rig->a, rig->b);
  // The HPUs apply the QPs and the peers on their next polls.
  for (int i = 0; i < 4; ++i) {
    rig->a.hpu().PollOnce();
    rig->b.hpu().PollOnce();
  }
  return rig;
}

void DestroyRig(LossRig& rig) {
  rig.a_to_b.reset();
  rig.b_to_a.reset();
  DestroyNode(rig.a);
  DestroyNode(rig.b);
  for (rte_ring* ring : {rig.a_out, rig.a_in, rig.b_out, rig.b_in}) {
    DrainRing(ring);
    rte_ring_free(ring);
  }
}

// Up to `frames` frames from `from` through `stage` into `to`.
void Carry(LossRig& rig, rte_ring* from, impair::ImpairStage& stage,
           rte_ring* to, uint32_t frames, uint64_t now) {
  rte_mbuf* in[64];
  rte_mbuf* out[128];
  const unsigned n =
      rte_ring_sc_dequeue_burst(from, reinterpret_cast<void**>(in),
                                std::min<uint32_t>(frames, 64), nullptr);
  const uint16_t emitted =
      n == 0 ? stage.Poll(now, out, 128)
             : stage.Process(in, static_cast<uint16_t>(n), now, out, 128);
  const unsigned queued = rte_ring_sp_enqueue_burst(
      to, reinterpret_cast<void**>(out), emitted, nullptr);
  for (unsigned i = queued; i < emitted; ++i) {
    ++rig.link_overflow;
    rte_pktmbuf_free(out[i]);
  }
}

struct RunResult {
  uint64_t delivered_packets = 0;  // data packets the operations needed
  uint64_t transmissions = 0;      // data packets A sent, first or again
  uint64_t retransmissions = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  uint64_t host_sent = 0;
  uint64_t host_received = 0;
  uint64_t tx_full = 0;    // frames A's HPU could not queue on its wire port
  uint64_t rx_missed = 0;  // frames the link brought that found B's RX full
};

uint64_t WireTxFull(Dataplane& dataplane) {
  for (const PortStats& port :
       dataplane.Snapshot(Dataplane::StateCopy::kOmit).ports) {
    if (port.name == "wire0") {
      return port.drops[static_cast<size_t>(DropReason::kTxFull)];
    }
  }
  Fail("no port wire0");
}

// One tick: A polls, the link carries A's frames to B, B polls, the link
// carries B's back; the host frames that reached B's host port are counted
// (and freed, as is whatever reached A's: nothing is addressed to it).
void Tick(LossRig& rig, uint32_t link, RunResult& result) {
  rig.a.hpu().PollOnce();
  const uint64_t now = rte_rdtsc();
  Carry(rig, rig.a_out, *rig.a_to_b, rig.b_in, link, now);
  rig.b.hpu().PollOnce();
  Carry(rig, rig.b_out, *rig.b_to_a, rig.a_in, link, now);
  void* arrived[32];
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(rig.b.host_tx, arrived, 32, nullptr)) !=
         0) {
    for (unsigned i = 0; i < n; ++i) {
      rte_mbuf* m = static_cast<rte_mbuf*>(arrived[i]);
      if (m->pkt_len == kHostFrameBytes) ++result.host_received;
      rte_pktmbuf_free(m);
    }
  }
  DrainRing(rig.a.host_tx);
}

// Ticks the pair, with host traffic from A's host port to B's, until
// `done`; counts the host frames sent and received in `result`.
void TickUntil(LossRig& rig, const std::function<bool()>& done,
               RunResult& result, const char* what) {
  const uint32_t link = absl::GetFlag(FLAGS_link_frames);
  const uint32_t host_every =
      std::max<uint32_t>(absl::GetFlag(FLAGS_host_every), 1);
  const Bytes host_frame = UdpFrame(kHostFrameBytes);
  rte_mempool* host_pool = rig.a.pool();
  const uint64_t deadline = rte_rdtsc() + kRunTimeoutSeconds * rte_get_tsc_hz();
  for (uint64_t tick = 1;; ++tick) {
    if ((tick & 63) == 0) {
      if (done()) break;
      if (rte_rdtsc() > deadline) {
        Fail(
            absl::StrCat(what, ": not done within ", kRunTimeoutSeconds, " s"));
      }
    }
    if (tick % host_every == 0) {
      rte_mbuf* m = rte_pktmbuf_alloc(host_pool);
      if (m != nullptr) {
        std::memcpy(rte_pktmbuf_append(m, kHostFrameBytes), host_frame.data(),
                    kHostFrameBytes);
        if (rte_ring_sp_enqueue(rig.a.host_rx, m) == 0) {
          ++result.host_sent;
        } else {
          rte_pktmbuf_free(m);
        }
      }
    }
    Tick(rig, link, result);
  }
  // The last host frames still on their way are not lost: let them land.
  for (int i = 0; i < 64; ++i) Tick(rig, link, result);
}

uint32_t Slots(uint32_t op_bytes) { return kRegionBytes / op_bytes; }

RunResult RunDiad(LossRig& rig, uint32_t ops, uint32_t op_bytes) {
  diad::DiadModule* module = rig.a.dataplane->transport<diad::DiadModule>();
  Dataplane& a = *rig.a.dataplane;
  const uint64_t tx_before = Counter(a, "diad", "tx_data");
  const uint64_t re_before = Counter(a, "diad", "retransmits");
  const uint64_t full_before = WireTxFull(a);
  std::vector<diad::DiadOp*> submitted;
  std::vector<Bytes> payloads;
  const uint64_t start = rte_rdtsc();
  for (uint32_t i = 0; i < ops; ++i) {
    payloads.push_back(Pattern(op_bytes, i));
    DiadRequest request;
    request.kind = diad::DiadOp::Kind::kWrite;
    request.peer = "b";
    request.key = rig.target.rkey;
    request.address =
        rig.target.base_address + uint64_t{i % Slots(op_bytes)} * op_bytes;
    request.data.assign(payloads.back().begin(), payloads.back().end());
    absl::StatusOr<diad::DiadOp*> op = module->Submit(std::move(request));
    Check(op.status(), "DiAD submit");
    submitted.push_back(*op);
  }
  RunResult result;
  TickUntil(
      rig,
      [&submitted] {
        for (const diad::DiadOp* op : submitted) {
          if (!op->done.load(std::memory_order_acquire)) return false;
        }
        return true;
      },
      result, "DiAD");
  result.seconds = static_cast<double>(rte_rdtsc() - start) /
                   static_cast<double>(rte_get_tsc_hz());
  for (diad::DiadOp* op : submitted) {
    if (op->status != diad::Status::kOk) {
      Fail(absl::StrCat("DiAD write failed: status ",
                        static_cast<int>(op->status)));
    }
    op->Unref();
  }
  // Every slot holds the last write to it.
  for (uint32_t i = ops > Slots(op_bytes) ? ops - Slots(op_bytes) : 0; i < ops;
       ++i) {
    absl::StatusOr<std::string> landed = rig.b.dataplane->ReadRegion(
        rig.target.id, uint64_t{i % Slots(op_bytes)} * op_bytes, op_bytes,
        op_bytes);
    Check(landed.status(), "read back");
    if (*landed != std::string(payloads[i].begin(), payloads[i].end())) {
      Fail(absl::StrCat("DiAD: write ", i, " landed wrong in B's region"));
    }
  }
  const uint32_t max_payload = module->config().max_payload();
  result.delivered_packets =
      uint64_t{ops} * ((op_bytes + max_payload - 1) / max_payload);
  result.retransmissions = Counter(a, "diad", "retransmits") - re_before;
  result.transmissions =
      Counter(a, "diad", "tx_data") - tx_before + result.retransmissions;
  result.bytes = uint64_t{ops} * op_bytes;
  result.tx_full = WireTxFull(a) - full_before;
  return result;
}

RunResult RunRoce(LossRig& rig, uint32_t ops, uint32_t op_bytes) {
  roce::RoceModule* module = rig.a.dataplane->transport<roce::RoceModule>();
  Dataplane& a = *rig.a.dataplane;
  const Bytes bytes = Pattern(op_bytes, 99);
  Check(a.WriteRegion(rig.source.id, 0, bytes), "RoCE source");
  std::vector<RoceOp> batch;
  for (uint32_t i = 0; i < ops; ++i) {
    RoceOp op;
    op.qpn = rig.qp_a;
    op.kind = roce::WorkRequest::Kind::kWrite;
    op.region_id = rig.source.id;
    op.length = op_bytes;
    op.remote_va =
        rig.target.base_address + uint64_t{i % Slots(op_bytes)} * op_bytes;
    op.rkey = rig.target.rkey;
    batch.push_back(op);
  }
  const uint64_t tx_before = Counter(a, "roce", "tx_packets");
  const uint64_t re_before = Counter(a, "roce", "retransmits");
  const uint64_t full_before = WireTxFull(a);
  // ExecuteMany waits for its completions: on a thread of its own, which
  // never polls an HPU; this thread ticks the pair meanwhile.
  std::atomic<bool> finished{false};
  absl::Status status;
  const uint64_t start = rte_rdtsc();
  std::thread caller([&] {
    absl::StatusOr<RoceBatchResult> done = module->ExecuteMany(
        std::move(batch), absl::Seconds(kRunTimeoutSeconds));
    status = done.status();
    for (size_t i = 0; status.ok() && i < done->results.size(); ++i) {
      status = done->results[i].status();
    }
    finished.store(true, std::memory_order_release);
  });
  RunResult result;
  TickUntil(
      rig, [&finished] { return finished.load(std::memory_order_acquire); },
      result, "RoCE");
  result.seconds = static_cast<double>(rte_rdtsc() - start) /
                   static_cast<double>(rte_get_tsc_hz());
  caller.join();
  Check(status, "RoCE WRITE");
  for (uint32_t slot = 0; slot < std::min(ops, Slots(op_bytes)); ++slot) {
    absl::StatusOr<std::string> landed = rig.b.dataplane->ReadRegion(
        rig.target.id, uint64_t{slot} * op_bytes, op_bytes, op_bytes);
    Check(landed.status(), "read back");
    if (*landed != std::string(bytes.begin(), bytes.end())) {
      Fail(absl::StrCat("RoCE: slot ", slot, " landed wrong in B's region"));
    }
  }
  result.delivered_packets =
      uint64_t{ops} * ((op_bytes + kRocePmtu - 1) / kRocePmtu);
  result.retransmissions = Counter(a, "roce", "retransmits") - re_before;
  // A sends nothing but the WRITEs' packets (B answers with ACKs).
  result.transmissions = Counter(a, "roce", "tx_packets") - tx_before;
  result.bytes = uint64_t{ops} * op_bytes;
  result.tx_full = WireTxFull(a) - full_before;
  return result;
}

std::vector<double> LossRates() {
  if (absl::GetFlag(FLAGS_smoke)) return {0, 0.05};
  std::vector<double> rates;
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_loss), ',', absl::SkipEmpty())) {
    double rate;
    if (!absl::SimpleAtod(text, &rate) || rate < 0 || rate >= 1) {
      Fail(absl::StrCat("--loss: '", text, "' is not a rate in [0, 1)"));
    }
    rates.push_back(rate);
  }
  if (rates.empty() || rates[0] != 0) {
    Fail("--loss must start with 0: goodput is reported relative to it");
  }
  return rates;
}

RunResult Run(LossRig& rig, Path path, uint32_t ops, uint32_t op_bytes) {
  const uint64_t missed_before = rig.link_overflow;
  RunResult result = path == Path::kRoce ? RunRoce(rig, ops, op_bytes)
                                         : RunDiad(rig, ops, op_bytes);
  result.rx_missed = rig.link_overflow - missed_before;
  return result;
}

void SetLoss(LossRig& rig, double rate, uint64_t seed) {
  impair::ImpairConfig impairment;
  impairment.seed = seed;
  impairment.loss = rate;
  rig.a_to_b = std::make_unique<impair::ImpairStage>(impairment, 0);
  rig.b_to_a = std::make_unique<impair::ImpairStage>(impairment, 1);
}

// The sum of `runs`' counts; goodput is their median.
struct Row {
  RunResult sum;
  double goodput_mbps = 0;
};

Row Measure(LossRig& rig, Path path, double rate, uint32_t repetitions,
            uint32_t ops, uint32_t op_bytes) {
  Row row;
  std::vector<double> goodputs;
  for (uint32_t k = 0; k < repetitions; ++k) {
    SetLoss(rig, rate, absl::GetFlag(FLAGS_seed) + k);
    const RunResult r = Run(rig, path, ops, op_bytes);
    goodputs.push_back(static_cast<double>(r.bytes) / r.seconds / 1e6);
    row.sum.delivered_packets += r.delivered_packets;
    row.sum.transmissions += r.transmissions;
    row.sum.retransmissions += r.retransmissions;
    row.sum.host_sent += r.host_sent;
    row.sum.host_received += r.host_received;
    row.sum.tx_full += r.tx_full;
    row.sum.rx_missed += r.rx_missed;
  }
  std::sort(goodputs.begin(), goodputs.end());
  row.goodput_mbps = goodputs[goodputs.size() / 2];
  return row;
}

int Main() {
  const bool smoke = absl::GetFlag(FLAGS_smoke);
  const uint32_t ops = smoke ? 16 : absl::GetFlag(FLAGS_ops);
  const uint32_t op_bytes = smoke ? 16384 : absl::GetFlag(FLAGS_op_bytes);
  const uint32_t repetitions = smoke ? 1 : absl::GetFlag(FLAGS_repetitions);
  if (op_bytes == 0 || op_bytes > kRegionBytes || ops == 0 ||
      repetitions == 0) {
    Fail(
        "--ops, --op_bytes and --repetitions must be positive, --op_bytes at "
        "most 1 MiB");
  }
  const std::vector<double> rates = LossRates();
  std::printf(
      "loss_bench: %u x %u-byte writes per run, median goodput of %u runs; "
      "link %u frames/tick each way; TX ring %u; a %zu-byte host frame "
      "every %u ticks; %s\n",
      ops, op_bytes, repetitions, absl::GetFlag(FLAGS_link_frames),
      absl::GetFlag(FLAGS_tx_ring_slots), kHostFrameBytes,
      absl::GetFlag(FLAGS_host_every),
      absl::GetFlag(FLAGS_pacer_share) < 0
          ? "no pacer"
          : absl::StrCat("pacer keeping ", absl::GetFlag(FLAGS_pacer_share),
                         " % for passthrough")
                .c_str());
  std::printf(
      "| path | loss | tx/delivered | retx/delivered | goodput MB/s | "
      "vs lossless | host loss | tx_full | rx_missed |\n"
      "|---|---|---|---|---|---|---|---|---|\n");
  for (Path path : {Path::kDiadGoBackN, Path::kDiadSelective, Path::kDiadMixed,
                    Path::kRoce}) {
    const diad::Recovery selective = diad::Recovery::kSelective;
    const diad::Recovery go_back_n = diad::Recovery::kGoBackN;
    // Ring ports keep their names after they close: a name per rig.
    std::unique_ptr<LossRig> rig;
    switch (path) {
      case Path::kDiadGoBackN:
        rig = MakeRig("g", go_back_n, go_back_n);
        break;
      case Path::kDiadSelective:
        rig = MakeRig("s", selective, selective);
        break;
      case Path::kDiadMixed:
        rig = MakeRig("m", selective, go_back_n);
        break;
      case Path::kRoce:
        rig = MakeRig("r", go_back_n, go_back_n);
        break;
    }
    // A first lossless run, not reported: the channel's or QP's first
    // packets and cold caches would otherwise count against the baseline.
    SetLoss(*rig, 0, 0);
    Run(*rig, path, std::max<uint32_t>(ops / 4, 1), op_bytes);
    double lossless = 0;
    for (double rate : rates) {
      const Row row = Measure(*rig, path, rate, repetitions, ops, op_bytes);
      const RunResult& r = row.sum;
      if (rate == 0) lossless = row.goodput_mbps;
      const double delivered = static_cast<double>(r.delivered_packets);
      const double host_loss = r.host_sent == 0
                                   ? 0
                                   : 1 - static_cast<double>(r.host_received) /
                                             static_cast<double>(r.host_sent);
      const double figures[] = {
          static_cast<double>(r.transmissions) / delivered,
          static_cast<double>(r.retransmissions) / delivered, row.goodput_mbps,
          row.goodput_mbps / lossless, host_loss};
      for (double figure : figures) {
        if (!std::isfinite(figure) || figure < 0) {
          Fail(absl::StrCat(PathName(path), " at loss ", rate,
                            ": a figure is not a finite non-negative number"));
        }
      }
      std::printf(
          "| %s | %g %% | %.3f | %.3f | %.1f | %.2f | %.2f %% | %lu | %lu |\n",
          PathName(path), rate * 100, figures[0], figures[1], figures[2],
          figures[3], host_loss * 100, r.tx_full, r.rx_missed);
      std::fflush(stdout);
    }
    if (path == Path::kDiadMixed) {
      // A GO_BACK_N end never sees the extension: no SACK either way.
      for (Node* node : {&rig->a, &rig->b}) {
        for (const char* counter : {"sacks_sent", "sacks_received"}) {
          if (Counter(*node->dataplane, "diad", counter) != 0) {
            Fail(absl::StrCat("mixed pair: ", counter, " on ", node->suffix,
                              " is not 0"));
          }
        }
      }
    }
    DestroyRig(*rig);
  }
  return 0;
}

}  // namespace
}  // namespace spinnic::cost

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!spinnic::cost::InitBenchEal("loss_bench", 1024)) return 1;
  return spinnic::cost::Main();
}
