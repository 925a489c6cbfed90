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

constexpr uint64_t kRunTimeoutSeconds = 120;
constexpr uint32_t kRegionBytes = 1u << 20;
constexpr uint32_t kPmtu = 1024;
constexpr uint64_t kWireOverheadBytes = 24;  // FCS, preamble, gap

// --virtual_tick_ns: the network's time, nanoseconds since the bench
// started; Tick reads it as TSC cycles (NowTsc), roce.congestion as
// nanoseconds (VirtualNowNs).
std::atomic<uint64_t> virtual_ns{0};
uint64_t virtual_base_tsc = 0;
bool IsVirtual() { return absl::GetFlag(FLAGS_virtual_tick_ns) != 0; }
uint64_t VirtualNowNs() {
  return 1'000'000'000 + virtual_ns.load(std::memory_order_relaxed);
}
uint64_t NowTsc() {
  if (!IsVirtual()) return rte_rdtsc();
  return virtual_base_tsc +
         static_cast<uint64_t>(static_cast<__uint128_t>(
                                   virtual_ns.load(std::memory_order_relaxed)) *
                               rte_get_tsc_hz() / 1'000'000'000);
}

roce::Mac SenderMac(uint32_t i) {
  return {0x02, 0, 0, 0, 0x51, static_cast<uint8_t>(i)};
}

struct Incast {
  std::vector<Node> senders;
  Node receiver;
  std::vector<rte_ring*> rings;  // every ring, to free
  std::unique_ptr<impair::ImpairStage> bottleneck;
  RegionInfo target;                // on the receiver
  std::vector<RegionInfo> sources;  // per sender
  uint64_t overflow = 0;            // frames the receiver's RX ring refused
  uint64_t bits_out = 0;            // through the bottleneck, with overhead
  uint64_t frames_out = 0;
  uint64_t last_out = 0;         // TSC: when a frame last left the bottleneck
  uint32_t senders_started = 0;  // senders with a frame into the bottleneck
  std::vector<bool> started;
  std::vector<uint64_t> bytes_by_sender;
  // --sender_links: when each sender's link is free again (TSC).
  std::vector<uint64_t> link_free_at;
  double tsc_per_bit = 0;
  uint64_t link_slack = 0;  // TSC
};

std::unique_ptr<Incast> MakeIncast(uint32_t n, bool cc,
                                   const std::string& name) {
  auto rig = std::make_unique<Incast>();
  rig->senders.resize(n);
  rig->bytes_by_sender.assign(n, 0);
  rig->link_free_at.assign(n, 0);
  rig->started.assign(n, false);
  auto ring = [&](const std::string& what, unsigned size) {
    rte_ring* r = NewRing(absl::StrCat("i", name, what), size);
    rig->rings.push_back(r);
    return r;
  };
  const uint64_t rate_bps = absl::GetFlag(FLAGS_rate_mbps) * 1'000'000;
  rig->tsc_per_bit = static_cast<double>(rte_get_tsc_hz()) / rate_bps;
  rig->link_slack = rte_get_tsc_hz() / 50'000;  // 20 us
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
    if (IsVirtual()) {
      // The whole transport on the network's clock: DCQCN, pacing, the
      // CNP interval and the requester's ACK timer.
      rc.congestion.now_ns = &VirtualNowNs;
      rc.requester_now_ns = &VirtualNowNs;
    }
  };
  rig->receiver.wire_rx = ring("rr", 8192);
  rig->receiver.wire_tx = ring("rt", 4096);
  {
    DataplaneConfig config =
        PairConfig(rig->receiver, absl::StrCat("_", name, "r"), false);
    configure(config.transports.get<roce::RoceConfig>());
    config.transports.get<roce::RoceConfig>().max_qps = 16;
    CreateNode(rig->receiver, config);
  }
  for (uint32_t i = 0; i < n; ++i) {
    Node& s = rig->senders[i];
    s.wire_rx = ring(absl::StrCat("s", i, "r"), 4096);
    s.wire_tx = ring(absl::StrCat("s", i, "t"), 16384);
    DataplaneConfig config = PairConfig(s, absl::StrCat("_", name, i), true);
    roce::RoceConfig& rc = config.transports.get<roce::RoceConfig>();
    rc.mac = SenderMac(i);
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
    to_s.remote_mac = SenderMac(i);
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
  impair::ImpairConfig impairment;
  impairment.rate_bps = rate_bps;
  impairment.bottleneck_frames = absl::GetFlag(FLAGS_queue_frames);
  impairment.ecn_min_frames = absl::GetFlag(FLAGS_ecn_min_frames);
  impairment.ecn_max_frames = absl::GetFlag(FLAGS_ecn_max_frames);
  impairment.ecn_max_probability = absl::GetFlag(FLAGS_ecn_max_probability);
  rig->bottleneck = std::make_unique<impair::ImpairStage>(impairment, 0);
  for (int k = 0; k < 4; ++k) {
    for (Node& s : rig->senders) s.hpu().PollOnce();
    rig->receiver.hpu().PollOnce();
  }
  return rig;
}

void DestroyIncast(Incast& rig) {
  rig.bottleneck.reset();
  for (Node& s : rig.senders) DestroyNode(s);
  DestroyNode(rig.receiver);
  for (rte_ring* r : rig.rings) {
    DrainRing(r);
    rte_ring_free(r);
  }
}

// The bottleneck's output into the receiver's RX ring, counted per sender
// (by source MAC).
void Deliver(Incast& rig, rte_mbuf** out, uint16_t emitted, bool count,
             uint64_t now) {
  if (emitted != 0) rig.last_out = now;
  for (uint16_t k = 0; k < emitted; ++k) {
    const uint8_t* frame = rte_pktmbuf_mtod(out[k], const uint8_t*);
    rig.bits_out += (out[k]->pkt_len + kWireOverheadBytes) * 8;
    ++rig.frames_out;
    const uint32_t sender = frame[11];  // SenderMac's last byte
    if (count && frame[10] == 0x51 && sender < rig.bytes_by_sender.size()) {
      rig.bytes_by_sender[sender] += out[k]->pkt_len;
    }
  }
  const unsigned queued = rte_ring_sp_enqueue_burst(
      rig.receiver.wire_rx, reinterpret_cast<void**>(out), emitted, nullptr);
  for (unsigned k = queued; k < emitted; ++k) {
    ++rig.overflow;
    rte_pktmbuf_free(out[k]);
  }
}

// One tick: every sender polls and its frames enter the bottleneck; what
// left it by now reaches the receiver, which polls; its answers go back.
void Tick(Incast& rig, bool count) {
  rte_mbuf* in[64];
  rte_mbuf* out[256];
  const uint64_t now = NowTsc();
  const bool links = absl::GetFlag(FLAGS_sender_links);
  for (size_t i = 0; i < rig.senders.size(); ++i) {
    Node& s = rig.senders[i];
    s.hpu().PollOnce();
    unsigned n = 0;
    if (!links) {
      n = rte_ring_sc_dequeue_burst(s.wire_tx, reinterpret_cast<void**>(in), 64,
                                    nullptr);
    } else {
      // The sender's port: a frame leaves once the previous one is out.
      uint64_t& free_at = rig.link_free_at[i];
      while (n < 64 && free_at <= now &&
             rte_ring_sc_dequeue(s.wire_tx, reinterpret_cast<void**>(&in[n])) ==
                 0) {
        // Idle time before the last 20 us is lost (work-conserving within
        // a tick's slack, never a burst above the rate for longer).
        free_at = std::max(free_at, now - std::min(now, rig.link_slack)) +
                  static_cast<uint64_t>((in[n]->pkt_len + kWireOverheadBytes) *
                                        8 * rig.tsc_per_bit);
        ++n;
      }
    }
    if (n == 0) continue;
    if (!rig.started[i]) {
      rig.started[i] = true;
      ++rig.senders_started;
    }
    const uint16_t emitted =
        rig.bottleneck->Process(in, static_cast<uint16_t>(n), now, out, 256);
    Deliver(rig, out, emitted, count, now);
  }
  Deliver(rig, out, rig.bottleneck->Poll(now, out, 256), count, now);
  rig.receiver.hpu().PollOnce();
  void* back[64];
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(rig.receiver.wire_tx, back, 64,
                                        nullptr)) != 0) {
    for (unsigned k = 0; k < n; ++k) {
      rte_mbuf* m = static_cast<rte_mbuf*>(back[k]);
      const uint8_t* frame = rte_pktmbuf_mtod(m, const uint8_t*);
      const uint32_t sender = frame[5];
      if (frame[4] != 0x51 || sender >= rig.senders.size() ||
          rte_ring_sp_enqueue(rig.senders[sender].wire_rx, m) != 0) {
        rte_pktmbuf_free(m);  // ARP and the like, or a full ring
      }
    }
  }
  for (Node& s : rig.senders) DrainRing(s.host_tx);
  DrainRing(rig.receiver.host_tx);
}

struct Result {
  double utilisation = 0;
  double goodput = 0;
  uint64_t delivered = 0;  // data packets the WRITEs needed
  uint64_t tail_drops = 0;
  uint64_t retransmits = 0;
  uint32_t p50 = 0, p99 = 0;
  double jain = 0;
  uint64_t marked = 0, cnps = 0, overflow = 0;
  // Senders whose WRITEs failed (retries exhausted: the QP is in error);
  // the other figures still count what went through.
  uint32_t failed = 0;
  std::string failure;
  double seconds = 0;
};

Result Run(Incast& rig, uint32_t ops, uint32_t op_bytes) {
  const uint32_t n = static_cast<uint32_t>(rig.senders.size());
  const uint32_t slice = kRegionBytes / n;
  if (op_bytes > slice) Fail("--op_bytes above the region's share per sender");
  const Bytes bytes = Pattern(op_bytes, 7);
  std::vector<std::atomic<bool>> finished(n);
  std::vector<absl::Status> status(n);
  std::vector<std::thread> callers;
  // Real time: from before the WRITEs are posted. Virtual time stands
  // still until every sender's first frame reached the bottleneck (so that
  // when the callers' threads happen to run does not count) and starts
  // there.
  uint64_t start = NowTsc();
  const uint64_t real_start = rte_rdtsc();
  bool started = !IsVirtual();
  const uint64_t tick_ns = absl::GetFlag(FLAGS_virtual_tick_ns);
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
  const uint64_t deadline = real_start + kRunTimeoutSeconds * rte_get_tsc_hz();
  bool counting = true;  // until the first sender is done (Jain's index)
  uint64_t end = 0;
  const uint64_t trace_every =
      uint64_t{absl::GetFlag(FLAGS_trace_us)} * rte_get_tsc_hz() / 1'000'000;
  uint64_t trace_at = start;
  for (uint64_t tick = 1;; ++tick) {
    Tick(rig, counting);
    if (!started && rig.senders_started == n) {
      started = true;
      start = NowTsc();
      trace_at = start;
    }
    if (started && tick_ns != 0) {
      virtual_ns.fetch_add(tick_ns, std::memory_order_relaxed);
    }
    if (trace_every != 0 && started && NowTsc() >= trace_at) {
      trace_at += trace_every;
      std::string line = absl::StrFormat(
          "  t=%.2fms q=%u rates(Mb/s):",
          static_cast<double>(NowTsc() - start) * 1e3 / rte_get_tsc_hz(),
          rig.bottleneck->queue_depth());
      for (Node& s : rig.senders) {
        for (const QpInfo& q :
             s.dataplane->transport<roce::RoceModule>()->ListQps()) {
          absl::StrAppendFormat(&line, " %.0f", q.rate_bps / 1e6);
        }
      }
      std::printf("%s\n", line.c_str());
    }
    if ((tick & 15) != 0) continue;
    uint32_t done = 0;
    for (uint32_t i = 0; i < n; ++i) {
      done += finished[i].load(std::memory_order_acquire) ? 1 : 0;
    }
    if (done != 0) counting = false;
    if (done == n) {
      // Virtual time: the run ends with the last frame out of the
      // bottleneck, not when the callers' threads happen to notice.
      end = IsVirtual() ? rig.last_out : NowTsc();
      break;
    }
    if (rte_rdtsc() > deadline) Fail("the incast did not finish in time");
  }
  for (std::thread& t : callers) t.join();
  Result r;
  r.seconds =
      static_cast<double>(end - start) / static_cast<double>(rte_get_tsc_hz());
  r.utilisation =
      static_cast<double>(rig.bits_out) /
      (static_cast<double>(absl::GetFlag(FLAGS_rate_mbps)) * 1e6 * r.seconds);
  const impair::ImpairCounters& c = rig.bottleneck->counters();
  r.tail_drops = c.tail_drops;
  r.marked = c.ecn_marked;
  r.p50 = rig.bottleneck->queue_depths().Percentile(0.5);
  r.p99 = rig.bottleneck->queue_depths().Percentile(0.99);
  for (Node& s : rig.senders) {
    r.retransmits += Counter(*s.dataplane, "roce", "retransmits");
    r.cnps += Counter(*s.dataplane, "roce", "cnp_received");
  }
  double sum = 0, squares = 0;
  for (uint64_t b : rig.bytes_by_sender) {
    sum += static_cast<double>(b);
    squares += static_cast<double>(b) * static_cast<double>(b);
  }
  r.jain = squares == 0 ? 0 : sum * sum / (n * squares);
  r.overflow = rig.overflow;
  for (const absl::Status& s : status) {
    if (s.ok()) continue;
    ++r.failed;
    r.failure = std::string(s.message());
  }
  // What the senders that succeeded moved (a failed one's progress is lost).
  // At least 1: the ratios stay finite when every sender failed.
  r.delivered = std::max<uint64_t>(
      uint64_t{n - r.failed} * ops * ((op_bytes + kPmtu - 1) / kPmtu), 1);
  r.goodput =
      static_cast<double>(uint64_t{n - r.failed} * ops * op_bytes) * 8 /
      (static_cast<double>(absl::GetFlag(FLAGS_rate_mbps)) * 1e6 * r.seconds);

  return r;
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
  if (IsVirtual()) {
    std::printf(
        "clock: virtual, %u ns per tick (the links, the bottleneck, DCQCN "
        "and the requester's timers)\n",
        absl::GetFlag(FLAGS_virtual_tick_ns));
  } else {
    std::printf("clock: the TSC (real time)\n");
  }
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
  std::printf(
      "| senders | CC | utilisation | goodput | tail drops | drops/delivered | "
      "retx/delivered | queue p50 | queue p99 | Jain | CE marks | CNPs | "
      "seconds |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int run = 0;
  bool failures = false;
  for (uint32_t n : {4u, 8u}) {
    for (bool cc : {false, true}) {
      std::unique_ptr<Incast> rig = MakeIncast(n, cc, absl::StrCat(run++));
      const Result r = Run(*rig, ops, op_bytes);
      std::printf(
          "| %u | %s | %.3f | %.3f | %lu | %.4f | %.4f | %u | %u | %.3f | %lu "
          "| %lu "
          "| %.3f |\n",
          n, cc ? "on" : "off", r.utilisation, r.goodput,
          static_cast<unsigned long>(r.tail_drops),
          static_cast<double>(r.tail_drops) / static_cast<double>(r.delivered),
          static_cast<double>(r.retransmits) / static_cast<double>(r.delivered),
          r.p50, r.p99, r.jain, static_cast<unsigned long>(r.marked),
          static_cast<unsigned long>(r.cnps), r.seconds);
      if (r.failed != 0) {
        std::printf("  (%u of %u senders failed: %s)\n", r.failed, n,
                    r.failure.c_str());
        // Congestion collapse is a figure with CC off; with CC on a
        // sender must never fail.
        if (cc) failures = true;
      }
      if (r.overflow != 0) {
        std::printf("  (%lu frames found the receiver's RX ring full)\n",
                    static_cast<unsigned long>(r.overflow));
      }
      DestroyIncast(*rig);
    }
  }
  if (failures) {
    std::fprintf(stderr, "incast_bench: a sender failed with CC on\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace spinnic::cost

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!spinnic::cost::InitBenchEal("incast_bench", 2048)) return 1;
  spinnic::cost::virtual_base_tsc = rte_rdtsc();
  return spinnic::cost::Main();
}
