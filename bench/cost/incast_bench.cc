// RoCE incast through one bottleneck, congestion control off against on
// (issue 21, docs/congestion.md): N sender dataplanes, each with one RoCE
// requester QP writing to its own QP on one receiver dataplane, stepped by
// hand in one thread (bench/cost/rig.h). Every sender's wire TX ring goes
// into one ImpairStage in bottleneck mode (rate, bounded FIFO, RED-like ECN
// marking; docs/impair.md#bottleneck), whose output is the receiver's wire
// RX ring; the receiver's answers go straight back, routed by destination
// MAC. For N = 4 and 8 it reports, CC off and on in the same run:
//  - bottleneck utilisation: bits that left the bottleneck (with the 24
//    bytes of Ethernet overhead per frame) over rate x the run's time;
//  - goodput: the WRITEs' payload bits over rate x the run's time;
//  - tail drops (and per delivered packet);
//  - retransmissions per delivered packet;
//  - p50/p99 queue depth (the stage's histogram of depths met on arrival);
//  - Jain's fairness index over the senders' bytes through the bottleneck
//    until the first sender finished.
//
//   build-rel/bench/cost/incast_bench            # the table
//   build-rel/bench/cost/incast_bench --smoke    # CI: small, every figure
//
// A sender whose WRITEs fail (retries exhausted under heavy loss: with CC
// off, that is congestion collapse) is reported under its row; the bench
// fails (exit 1) only when that happens with CC on.
//
// Time is virtual by default (--virtual_tick_ns): every tick of the loop
// is that much network time for the links, the bottleneck, DCQCN, pacing
// and the requester's timers, so the figures measure the congestion
// control, not how much CPU a loaded machine gave the loop; with CC on they
// are the same from run to run. The run is from every sender's first frame
// at the bottleneck to the last frame out of it. --virtual_tick_ns=0 runs
// on the TSC (real time, as loss_bench): then the senders are CPU-bound
// loops, the bottleneck rate must be well below what they produce together
// (--rate_mbps), and the rows of one run are what compares.
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/cost/incast.h"
#include "bench/cost/rig.h"
#include "dataplane/dataplane.h"
#include "dataplane/impair/impair_stage.h"
#include "dataplane/roce/roce_config.h"
#include "dataplane/roce/roce_module.h"

ABSL_FLAG(uint32_t, ops, 64, "WRITEs per sender");
ABSL_FLAG(uint32_t, op_bytes, 65536, "Bytes each WRITE carries");
ABSL_FLAG(uint64_t, rate_mbps, 2000, "Bottleneck rate, Mb/s");
ABSL_FLAG(uint32_t, queue_frames, 512, "Bottleneck queue, frames");
ABSL_FLAG(uint32_t, ecn_min_frames, 16, "ECN marking starts at this depth");
ABSL_FLAG(uint32_t, ecn_max_frames, 64, "Every ECT frame marked from here");
ABSL_FLAG(double, ecn_max_probability, 0.2,
          "Marking probability just below ecn_max_frames");
ABSL_FLAG(bool, sender_links, true,
          "Each sender's link runs at the bottleneck's rate too (a NIC port: "
          "its frames wait in its TX ring); false: senders are limited only "
          "by the CPU");
// DCQCN as the senders and the receiver run it (roce.congestion). The
// defaults are the bench's tuning for its 2 Gb/s line rate and queue, not
// the published ones (docs/congestion.md#the-incast-benchcostincast_benchcc
// says why; --cnp_interval_us=50 --alpha_timer_us=55 --increase_timer_us=300
// --additive_increase_mbps=5 --initial_rate_fraction=0 --ecn_max_frames=128
// is the published start).
ABSL_FLAG(double, initial_rate_fraction, 0.125,
          "A new QP starts at this fraction of the line rate (0: line rate)");
ABSL_FLAG(uint32_t, cnp_interval_us, 200, "The receiver's CNP interval (N)");
ABSL_FLAG(uint32_t, alpha_timer_us, 200, "DCQCN alpha timer K, us");
ABSL_FLAG(uint32_t, increase_timer_us, 200, "DCQCN increase timer T, us");
ABSL_FLAG(int64_t, byte_counter_bytes, -1,
          "DCQCN byte counter B (-1: 10 MB; 0: off)");
ABSL_FLAG(uint32_t, fast_recovery_stages, 5, "DCQCN F");
ABSL_FLAG(double, additive_increase_mbps, 10, "DCQCN Rai, Mb/s");
ABSL_FLAG(double, hyper_increase_mbps, 50, "DCQCN Rhai, Mb/s");
ABSL_FLAG(double, min_rate_mbps, 1, "DCQCN min rate, Mb/s");
ABSL_FLAG(double, g, 1.0 / 256, "DCQCN g");
ABSL_FLAG(uint32_t, virtual_tick_ns, 1000,
          "The network's clock (the links, the bottleneck, DCQCN's timers, "
          "pacing and CNP interval, the requester's ACK timer) advances this "
          "much per tick of the loop; 0: the TSC (real time, as loss_bench: "
          "figures bound by how much "
          "CPU the loop gets)");
ABSL_FLAG(uint32_t, trace_us, 0,
          "Print the queue depth and every sender's DCQCN rate this often "
          "(0: never); for tuning");
ABSL_FLAG(bool, smoke, false, "CI form: 4 and 8 senders, 8 WRITEs of 16 KiB");

namespace spinnic::cost {
namespace {

using incast::Incast;
using incast::NetworkClock;

constexpr uint64_t kRunTimeoutSeconds = 120;
constexpr uint32_t kRegionBytes = 1u << 20;
constexpr uint32_t kPmtu = 1024;
constexpr uint8_t kSenderTag = 0x51;

std::unique_ptr<Incast> MakeIncast(uint32_t n, bool cc,
                                   const std::string& name) {
  std::unique_ptr<Incast> rig =
      incast::NewIncast(n, kSenderTag, absl::StrCat("i", name));
  const uint64_t rate_bps = absl::GetFlag(FLAGS_rate_mbps) * 1'000'000;
  auto configure = [&](roce::RoceConfig& rc) {
    rc.congestion.enabled = cc;
    rc.congestion.ecn = cc ? roce::kEcnEct0 : roce::kEcnNotEct;
    // Every link runs at the bottleneck's rate (N:1 incast of equal links).
    roce::DcqcnParams& d = rc.congestion.dcqcn;
    d.line_rate_bps = rate_bps;
    d.initial_rate_bps = static_cast<uint64_t>(
        absl::GetFlag(FLAGS_initial_rate_fraction) * rate_bps);
    rc.congestion.cnp_interval_ns =
        uint64_t{absl::GetFlag(FLAGS_cnp_interval_us)} * 1000;
    d.alpha_timer_ns = uint64_t{absl::GetFlag(FLAGS_alpha_timer_us)} * 1000;
    d.increase_timer_ns =
        uint64_t{absl::GetFlag(FLAGS_increase_timer_us)} * 1000;
    if (absl::GetFlag(FLAGS_byte_counter_bytes) >= 0) {
      d.byte_counter_bytes =
          static_cast<uint64_t>(absl::GetFlag(FLAGS_byte_counter_bytes));
    }
    d.fast_recovery_stages = absl::GetFlag(FLAGS_fast_recovery_stages);
    d.additive_increase_bps = static_cast<uint64_t>(
        absl::GetFlag(FLAGS_additive_increase_mbps) * 1e6);
    d.hyper_increase_bps =
        static_cast<uint64_t>(absl::GetFlag(FLAGS_hyper_increase_mbps) * 1e6);
    d.min_rate_bps =
        static_cast<uint64_t>(absl::GetFlag(FLAGS_min_rate_mbps) * 1e6);
    d.g = absl::GetFlag(FLAGS_g);
    Check(roce::ValidateDcqcnParams(d), "DCQCN flags");
    if (NetworkClock::IsVirtual()) {
      // The whole transport on the network's clock: DCQCN, pacing, the
      // CNP interval and the requester's ACK timer.
      rc.congestion.now_ns = &NetworkClock::NowNs;
      rc.requester_now_ns = &NetworkClock::NowNs;
    }
  };
  {
    DataplaneConfig config =
        PairConfig(rig->receiver, absl::StrCat("_", name, "r"), false);
    configure(config.transports.get<roce::RoceConfig>());
    config.transports.get<roce::RoceConfig>().max_qps = 16;
    CreateNode(rig->receiver, config);
  }
  for (uint32_t i = 0; i < n; ++i) {
    Node& s = rig->senders[i];
    DataplaneConfig config = PairConfig(s, absl::StrCat("_", name, i), true);
    roce::RoceConfig& rc = config.transports.get<roce::RoceConfig>();
    rc.mac = incast::SenderMac(kSenderTag, i);
    configure(rc);
    CreateNode(s, config);
  }
  const uint32_t access = kLocalRead | kLocalWrite | kRemoteRead | kRemoteWrite;
  rig->target = Register(*rig->receiver.dataplane, kRegionBytes, access);
  // Sender i's QP (its first, kFirstQpn) and the receiver's i-th name each
  // other; all senders share an address (the receiver checks the peer's
  // address per QP), their MACs route the answers.
  for (uint32_t i = 0; i < n; ++i) {
    rig->sources.push_back(
        Register(*rig->senders[i].dataplane, kRegionBytes, access));
    roce::QpSpec to_r;
    to_r.remote_qpn = roce::kFirstQpn + i;
    to_r.remote_ip = kIpB;
    to_r.local_ip = kIpA;
    to_r.remote_mac = kMacB;
    to_r.pmtu = kPmtu;
    to_r.send_psn = 0x100;
    to_r.expected_psn = 0x200;
    roce::QpSpec to_s = to_r;
    to_s.remote_qpn = roce::kFirstQpn;
    to_s.remote_ip = kIpA;
    to_s.local_ip = kIpB;
    to_s.remote_mac = incast::SenderMac(kSenderTag, i);
    to_s.send_psn = 0x200;
    to_s.expected_psn = 0x100;
    absl::StatusOr<uint32_t> qs =
        rig->senders[i].dataplane->transport<roce::RoceModule>()->CreateQp(
            to_r);
    Check(qs.status(), "sender QP");
    absl::StatusOr<uint32_t> qr =
        rig->receiver.dataplane->transport<roce::RoceModule>()->CreateQp(to_s);
    Check(qr.status(), "receiver QP");
    if (*qs != roce::kFirstQpn || *qr != roce::kFirstQpn + i) {
      Fail("QP numbers are not the ones the peers were told");
    }
  }
  incast::BottleneckOptions bottleneck;
  bottleneck.rate_bps = rate_bps;
  bottleneck.queue_frames = absl::GetFlag(FLAGS_queue_frames);
  bottleneck.ecn_min_frames = absl::GetFlag(FLAGS_ecn_min_frames);
  bottleneck.ecn_max_frames = absl::GetFlag(FLAGS_ecn_max_frames);
  bottleneck.ecn_max_probability = absl::GetFlag(FLAGS_ecn_max_probability);
  bottleneck.sender_links = absl::GetFlag(FLAGS_sender_links);
  incast::AddBottleneck(*rig, bottleneck, absl::StrCat("i", name));
  incast::Warm(*rig);
  return rig;
}

// --trace_us: the queue depth and every sender's DCQCN rate, this often.
void Trace(Incast& rig, uint64_t start, uint64_t& trace_at) {
  const uint64_t every =
      uint64_t{absl::GetFlag(FLAGS_trace_us)} * rte_get_tsc_hz() / 1'000'000;
  const uint64_t now = NetworkClock::NowTsc();
  if (every == 0) return;
  if (trace_at < start) trace_at = start;
  if (now < trace_at) return;
  trace_at += every;
  std::string line =
      absl::StrFormat("  t=%.2fms q=%u rates(Mb/s):",
                      static_cast<double>(now - start) * 1e3 / rte_get_tsc_hz(),
                      rig.bottleneck->queue_depth());
  for (Node& s : rig.senders) {
    for (const QpInfo& q :
         s.dataplane->transport<roce::RoceModule>()->ListQps()) {
      absl::StrAppendFormat(&line, " %.0f", q.rate_bps / 1e6);
    }
  }
  std::printf("%s\n", line.c_str());
}

incast::Figures Run(Incast& rig, uint32_t ops, uint32_t op_bytes) {
  const uint32_t n = static_cast<uint32_t>(rig.senders.size());
  const uint32_t slice = kRegionBytes / n;
  if (op_bytes > slice) Fail("--op_bytes above the region's share per sender");
  const Bytes bytes = Pattern(op_bytes, 7);
  std::vector<std::atomic<bool>> finished(n);
  std::vector<absl::Status> status(n);
  std::vector<std::thread> callers;
  for (uint32_t i = 0; i < n; ++i) {
    Check(rig.senders[i].dataplane->WriteRegion(rig.sources[i].id, 0, bytes),
          "source");
    std::vector<RoceOp> batch;
    for (uint32_t k = 0; k < ops; ++k) {
      RoceOp op;
      op.qpn = roce::kFirstQpn;
      op.kind = roce::WorkRequest::Kind::kWrite;
      op.region_id = rig.sources[i].id;
      op.length = op_bytes;
      op.remote_va = rig.target.base_address + uint64_t{i} * slice +
                     uint64_t{k % (slice / op_bytes)} * op_bytes;
      op.rkey = rig.target.rkey;
      batch.push_back(op);
    }
    callers.emplace_back([&rig, &finished, &status, i,
                          batch = std::move(batch)]() mutable {
      absl::StatusOr<RoceBatchResult> done =
          rig.senders[i].dataplane->transport<roce::RoceModule>()->ExecuteMany(
              std::move(batch), absl::Seconds(kRunTimeoutSeconds));
      status[i] = done.status();
      for (size_t k = 0; status[i].ok() && k < done->results.size(); ++k) {
        status[i] = done->results[k].status();
      }
      finished[i].store(true, std::memory_order_release);
    });
  }
  uint64_t trace_at = 0;
  const double seconds = incast::RunUntilDone(
      rig,
      [&] {
        uint32_t done = 0;
        for (uint32_t i = 0; i < n; ++i) {
          done += finished[i].load(std::memory_order_acquire) ? 1 : 0;
        }
        return done;
      },
      kRunTimeoutSeconds, [&](uint64_t start) { Trace(rig, start, trace_at); });
  for (std::thread& t : callers) t.join();
  uint32_t failed = 0;
  std::string failure;
  for (const absl::Status& s : status) {
    if (s.ok()) continue;
    ++failed;
    failure = std::string(s.message());
  }
  // What the senders that succeeded moved (a failed one's progress is lost).
  const uint64_t succeeded = uint64_t{n - failed} * ops;
  incast::Figures f =
      incast::Measure(rig, seconds, succeeded * op_bytes,
                      succeeded * ((op_bytes + kPmtu - 1) / kPmtu));
  f.failed = failed;
  f.failure = std::move(failure);
  uint64_t cnps = 0;
  for (Node& s : rig.senders) {
    f.retransmits += Counter(*s.dataplane, "roce", "retransmits");
    cnps += Counter(*s.dataplane, "roce", "cnp_received");
  }
  f.extra = absl::StrCat("| ", cnps, " ");
  return f;
}

int Main() {
  const bool smoke = absl::GetFlag(FLAGS_smoke);
  const uint32_t ops = smoke ? 8 : absl::GetFlag(FLAGS_ops);
  const uint32_t op_bytes = smoke ? 16384 : absl::GetFlag(FLAGS_op_bytes);
  if (ops == 0 || op_bytes == 0) Fail("--ops and --op_bytes must be positive");
  std::printf(
      "incast_bench: %u x %u-byte RoCE WRITEs per sender; bottleneck %lu "
      "Mb/s, queue %u frames, ECN %u..%u frames (p %.2f)\n",
      ops, op_bytes, static_cast<unsigned long>(absl::GetFlag(FLAGS_rate_mbps)),
      absl::GetFlag(FLAGS_queue_frames), absl::GetFlag(FLAGS_ecn_min_frames),
      absl::GetFlag(FLAGS_ecn_max_frames),
      absl::GetFlag(FLAGS_ecn_max_probability));
  std::printf(
      "DCQCN: initial rate %.3f x line, CNP interval %u us, K %u us, T %u us, "
      "B %ld bytes (-1: 10 MB), F %u, Rai %.1f Mb/s, Rhai %.1f Mb/s, min "
      "%.1f Mb/s, g %g\n",
      absl::GetFlag(FLAGS_initial_rate_fraction),
      absl::GetFlag(FLAGS_cnp_interval_us), absl::GetFlag(FLAGS_alpha_timer_us),
      absl::GetFlag(FLAGS_increase_timer_us),
      static_cast<long>(absl::GetFlag(FLAGS_byte_counter_bytes)),
      absl::GetFlag(FLAGS_fast_recovery_stages),
      absl::GetFlag(FLAGS_additive_increase_mbps),
      absl::GetFlag(FLAGS_hyper_increase_mbps),
      absl::GetFlag(FLAGS_min_rate_mbps), absl::GetFlag(FLAGS_g));
  return incast::RunTable("incast_bench", {"CNPs"}, "senders", MakeIncast,
                          [&](Incast& rig) { return Run(rig, ops, op_bytes); });
}

}  // namespace
}  // namespace spinnic::cost

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!spinnic::cost::InitBenchEal("incast_bench", 2048)) return 1;
  spinnic::cost::incast::NetworkClock::Use(
      absl::GetFlag(FLAGS_virtual_tick_ns));
  return spinnic::cost::Main();
}
