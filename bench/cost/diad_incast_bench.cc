// DiAD incast through one bottleneck, congestion control off against on
// (issue 21, docs/congestion.md, "The DiAD incast"): N sender dataplanes,
// each a DiAD node writing to one receiver dataplane over one channel,
// stepped by hand in one thread (bench/cost/rig.h). Every sender's wire TX
// ring leaves through a link at the bottleneck's rate into one ImpairStage
// in bottleneck mode (rate, bounded FIFO, RED-like ECN marking;
// docs/impair.md#bottleneck), whose output is the receiver's wire RX ring;
// the receiver's ACKs and write responses go straight back, routed by
// destination MAC. The shape and the figures are incast_bench.cc's (RoCE):
// for N = 4 and 8, CC off and on in the same run,
//  - bottleneck utilisation: bits that left the bottleneck (with the 24
//    bytes of Ethernet overhead per frame) over rate x the run's time;
//  - goodput: the writes' payload bits over rate x the run's time;
//  - tail drops (and per delivered packet);
//  - retransmissions per delivered packet;
//  - p50/p99 queue depth (the stage's histogram of depths met on arrival);
//  - Jain's fairness index over the senders' bytes through the bottleneck
//    until the first sender finished.
//
//   build-rel/bench/cost/diad_incast_bench            # the table
//   build-rel/bench/cost/diad_incast_bench --smoke    # CI: every write lands
//
// A write that fails fails the bench (exit 1) with CC on; with CC off it is
// reported under its row (congestion collapse). Time is the TSC, as in
// incast_bench: compare the rows of one run.
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/cost/rig.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/diad/diad_module.h"
#include "dataplane/impair/impair_stage.h"

ABSL_FLAG(uint32_t, ops, 32, "Writes per sender");
ABSL_FLAG(uint32_t, op_bytes, 65536, "Bytes each write carries");
ABSL_FLAG(uint64_t, rate_mbps, 2000, "Bottleneck rate, Mb/s");
ABSL_FLAG(uint32_t, queue_frames, 512, "Bottleneck queue, frames");
ABSL_FLAG(uint32_t, ecn_min_frames, 16, "ECN marking starts at this depth");
ABSL_FLAG(uint32_t, ecn_max_frames, 128, "Every ECT frame marked from here");
ABSL_FLAG(double, ecn_max_probability, 0.2,
          "Marking probability just below ecn_max_frames");
ABSL_FLAG(uint32_t, target_rtt_us, 300,
          "diad.congestion.target_rtt_us with CC on (the loop's base RTT is "
          "tens of microseconds plus the receiver's ACK coalescing)");
ABSL_FLAG(double, initial_window, 16, "diad.congestion.initial_window");
ABSL_FLAG(uint32_t, window_packets, 256, "diad.window_packets");
ABSL_FLAG(bool, smoke, false, "CI form: 4 and 8 senders, 4 writes of 16 KiB");

namespace spinnic::cost {
namespace {

constexpr uint64_t kRunTimeoutSeconds = 120;
constexpr uint32_t kRegionBytes = 1u << 21;
constexpr uint64_t kWireOverheadBytes = 24;  // FCS, preamble, gap
constexpr uint8_t kSenderTag = 0x52;

diad::MacAddress SenderMac(uint32_t i) {
  return {0x02, 0, 0, 0, kSenderTag, static_cast<uint8_t>(i)};
}
diad::NodeAddress SenderNode(uint32_t i) {
  diad::NodeAddress node = kNodeA;
  node[13] = 0x5;
  node[15] = static_cast<uint8_t>(0x10 + i);
  return node;
}

struct Incast {
  std::vector<Node> senders;
  Node receiver;
  std::vector<rte_ring*> rings;
  std::unique_ptr<impair::ImpairStage> bottleneck;
  // Where the bottleneck copies a frame it marks: DiAD sends indirect
  // mbufs (clones of the held originals, whose pool has no data room).
  rte_mempool* copies = nullptr;
  RegionInfo target;
  uint64_t overflow = 0;
  uint64_t bits_out = 0;
  std::vector<uint64_t> bytes_by_sender;
  std::vector<uint64_t> link_free_at;
  double tsc_per_bit = 0;
  uint64_t link_slack = 0;
};

// DiAD only (no RoCE), one channel per peer.
DataplaneConfig DiadNodeConfig(Node& node, const std::string& suffix,
                               const diad::NodeAddress& address,
                               const diad::MacAddress& mac, bool cc) {
  DataplaneConfig config = NodeConfig(node, suffix);
  diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
  dc.enabled = true;
  dc.node = address;
  dc.mac = mac;
  dc.channels = 1;
  dc.max_peers = 16;
  dc.channel.window_packets = absl::GetFlag(FLAGS_window_packets);
  dc.congestion.enabled = cc;
  if (cc) {
    diad::DelayWindowParams& w = dc.congestion.window;
    w.target_delay_ns = int64_t{absl::GetFlag(FLAGS_target_rtt_us)} * 1000;
    w.max_window = dc.channel.window_packets;
    w.initial_window =
        std::min<double>(absl::GetFlag(FLAGS_initial_window), w.max_window);
    Check(diad::ValidateDelayWindowParams(w), "diad.congestion");
  }
  return config;
}

std::unique_ptr<Incast> MakeIncast(uint32_t n, bool cc,
                                   const std::string& name) {
  auto rig = std::make_unique<Incast>();
  rig->senders.resize(n);
  rig->bytes_by_sender.assign(n, 0);
  rig->link_free_at.assign(n, 0);
  auto ring = [&](const std::string& what, unsigned size) {
    rte_ring* r = NewRing(absl::StrCat("d", name, what), size);
    rig->rings.push_back(r);
    return r;
  };
  const uint64_t rate_bps = absl::GetFlag(FLAGS_rate_mbps) * 1'000'000;
  rig->tsc_per_bit = static_cast<double>(rte_get_tsc_hz()) / rate_bps;
  rig->link_slack = rte_get_tsc_hz() / 50'000;  // 20 us
  rig->receiver.wire_rx = ring("rr", 8192);
  rig->receiver.wire_tx = ring("rt", 8192);
  {
    DataplaneConfig config = DiadNodeConfig(
        rig->receiver, absl::StrCat("_d", name, "r"), kNodeB, kMacB, cc);
    diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
    for (uint32_t i = 0; i < n; ++i) {
      diad::PeerConfig peer;
      peer.name = absl::StrCat("s", i);
      peer.node = SenderNode(i);
      peer.mac = SenderMac(i);
      dc.peers.push_back(peer);
    }
    CreateNode(rig->receiver, config);
  }
  for (uint32_t i = 0; i < n; ++i) {
    Node& s = rig->senders[i];
    s.wire_rx = ring(absl::StrCat("s", i, "r"), 4096);
    s.wire_tx = ring(absl::StrCat("s", i, "t"), 16384);
    DataplaneConfig config = DiadNodeConfig(s, absl::StrCat("_d", name, i),
                                            SenderNode(i), SenderMac(i), cc);
    diad::PeerConfig peer;
    peer.name = "r";
    peer.node = kNodeB;
    peer.mac = kMacB;
    config.transports.get<diad::DiadConfig>().peers = {peer};
    CreateNode(s, config);
  }
  rig->target = Register(*rig->receiver.dataplane, kRegionBytes,
                         kLocalRead | kLocalWrite | kRemoteWrite);
  impair::ImpairConfig impairment;
  impairment.rate_bps = rate_bps;
  impairment.bottleneck_frames = absl::GetFlag(FLAGS_queue_frames);
  impairment.ecn_min_frames = absl::GetFlag(FLAGS_ecn_min_frames);
  impairment.ecn_max_frames = absl::GetFlag(FLAGS_ecn_max_frames);
  impairment.ecn_max_probability = absl::GetFlag(FLAGS_ecn_max_probability);
  rig->copies = rte_pktmbuf_pool_create(absl::StrCat("dc", name).c_str(), 16383,
                                        256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
  if (rig->copies == nullptr) Fail("no pool for the bottleneck's copies");
  impair::StageOptions options;
  options.copy_pool = rig->copies;
  rig->bottleneck =
      std::make_unique<impair::ImpairStage>(impairment, 0, options);
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
  rte_mempool_free(rig.copies);
}

void Deliver(Incast& rig, rte_mbuf** out, uint16_t emitted, bool count) {
  for (uint16_t k = 0; k < emitted; ++k) {
    const uint8_t* frame = rte_pktmbuf_mtod(out[k], const uint8_t*);
    rig.bits_out += (out[k]->pkt_len + kWireOverheadBytes) * 8;
    const uint32_t sender = frame[11];
    if (count && frame[10] == kSenderTag &&
        sender < rig.bytes_by_sender.size()) {
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

// One tick, as incast_bench's: every sender polls and its frames enter the
// bottleneck through its link; what left the bottleneck reaches the
// receiver, which polls; its answers go back by destination MAC.
void Tick(Incast& rig, bool count) {
  rte_mbuf* in[64];
  rte_mbuf* out[256];
  const uint64_t now = rte_rdtsc();
  for (size_t i = 0; i < rig.senders.size(); ++i) {
    Node& s = rig.senders[i];
    s.hpu().PollOnce();
    unsigned n = 0;
    uint64_t& free_at = rig.link_free_at[i];
    while (n < 64 && free_at <= now &&
           rte_ring_sc_dequeue(s.wire_tx, reinterpret_cast<void**>(&in[n])) ==
               0) {
      free_at = std::max(free_at, now - std::min(now, rig.link_slack)) +
                static_cast<uint64_t>((in[n]->pkt_len + kWireOverheadBytes) *
                                      8 * rig.tsc_per_bit);
      ++n;
    }
    if (n == 0) continue;
    const uint16_t emitted =
        rig.bottleneck->Process(in, static_cast<uint16_t>(n), now, out, 256);
    Deliver(rig, out, emitted, count);
  }
  Deliver(rig, out, rig.bottleneck->Poll(now, out, 256), count);
  rig.receiver.hpu().PollOnce();
  void* back[64];
  unsigned n;
  while ((n = rte_ring_sc_dequeue_burst(rig.receiver.wire_tx, back, 64,
                                        nullptr)) != 0) {
    for (unsigned k = 0; k < n; ++k) {
      rte_mbuf* m = static_cast<rte_mbuf*>(back[k]);
      const uint8_t* frame = rte_pktmbuf_mtod(m, const uint8_t*);
      const uint32_t sender = frame[5];
      if (frame[4] != kSenderTag || sender >= rig.senders.size() ||
          rte_ring_sp_enqueue(rig.senders[sender].wire_rx, m) != 0) {
        rte_pktmbuf_free(m);  // neighbour discovery and the like, or full
      }
    }
  }
  for (Node& s : rig.senders) DrainRing(s.host_tx);
  DrainRing(rig.receiver.host_tx);
}

double Jain(const std::vector<uint64_t>& values) {
  double sum = 0, squares = 0;
  for (uint64_t v : values) {
    sum += static_cast<double>(v);
    squares += static_cast<double>(v) * static_cast<double>(v);
  }
  return squares == 0 ? 0 : sum * sum / (values.size() * squares);
}

struct Result {
  double utilisation = 0;
  double goodput = 0;
  uint64_t delivered = 1;
  uint64_t tail_drops = 0;
  uint64_t retransmits = 0;
  uint32_t p50 = 0, p99 = 0;
  double jain = 0;
  uint64_t marked = 0, echoes = 0, ecn_decreases = 0, delay_decreases = 0;
  uint64_t ce_seen = 0, echoes_sent = 0;  // by the receiver
  uint64_t overflow = 0;
  uint32_t failed = 0;
  std::string failure;
  double seconds = 0;
};

Result Run(Incast& rig, uint32_t ops, uint32_t op_bytes) {
  const uint32_t n = static_cast<uint32_t>(rig.senders.size());
  const uint32_t slice = kRegionBytes / n;
  if (op_bytes > slice) Fail("--op_bytes above the region's share per sender");
  std::vector<std::vector<diad::DiadOp*>> ops_of(n);
  std::vector<Bytes> payloads;
  for (uint32_t k = 0; k < ops; ++k) payloads.push_back(Pattern(op_bytes, k));
  const uint64_t start = rte_rdtsc();
  for (uint32_t i = 0; i < n; ++i) {
    diad::DiadModule* module =
        rig.senders[i].dataplane->transport<diad::DiadModule>();
    for (uint32_t k = 0; k < ops; ++k) {
      DiadRequest request;
      request.kind = diad::DiadOp::Kind::kWrite;
      request.peer = "r";
      request.key = rig.target.rkey;
      request.address = rig.target.base_address + uint64_t{i} * slice +
                        uint64_t{k % (slice / op_bytes)} * op_bytes;
      request.data.assign(payloads[k].begin(), payloads[k].end());
      absl::StatusOr<diad::DiadOp*> op = module->Submit(std::move(request));
      Check(op.status(), "DiAD submit");
      ops_of[i].push_back(*op);
    }
  }
  const uint64_t deadline = start + kRunTimeoutSeconds * rte_get_tsc_hz();
  bool counting = true;
  uint64_t end = 0;
  std::vector<bool> finished(n, false);
  for (uint64_t tick = 1;; ++tick) {
    Tick(rig, counting);
    if ((tick & 15) != 0) continue;
    uint32_t done = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (!finished[i]) {
        finished[i] = std::all_of(
            ops_of[i].begin(), ops_of[i].end(), [](const diad::DiadOp* op) {
              return op->done.load(std::memory_order_acquire);
            });
      }
      done += finished[i] ? 1 : 0;
    }
    if (done != 0) counting = false;
    if (done == n) {
      end = rte_rdtsc();
      break;
    }
    if (rte_rdtsc() > deadline) Fail("the DiAD incast did not finish in time");
  }
  Result r;
  for (uint32_t i = 0; i < n; ++i) {
    for (diad::DiadOp* op : ops_of[i]) {
      if (op->status != diad::Status::kOk) {
        ++r.failed;
        r.failure = absl::StrCat("sender ", i, ": status ",
                                 diad::StatusName(op->status));
      }
      op->Unref();
    }
  }
  // Every slot holds its write (ops beyond the slots overwrite; check the
  // last round).
  const uint32_t slots = slice / op_bytes;
  for (uint32_t i = 0; r.failed == 0 && i < n; ++i) {
    for (uint32_t k = ops > slots ? ops - slots : 0; k < ops; ++k) {
      absl::StatusOr<std::string> landed = rig.receiver.dataplane->ReadRegion(
          rig.target.id, uint64_t{i} * slice + uint64_t{k % slots} * op_bytes,
          op_bytes, op_bytes);
      Check(landed.status(), "read back");
      if (*landed != std::string(payloads[k].begin(), payloads[k].end())) {
        Fail(absl::StrCat("sender ", i, "'s write ", k, " landed wrong"));
      }
    }
  }
  r.seconds =
      static_cast<double>(end - start) / static_cast<double>(rte_get_tsc_hz());
  const double capacity =
      static_cast<double>(absl::GetFlag(FLAGS_rate_mbps)) * 1e6 * r.seconds;
  r.utilisation = static_cast<double>(rig.bits_out) / capacity;
  const impair::ImpairCounters& c = rig.bottleneck->counters();
  r.tail_drops = c.tail_drops;
  r.marked = c.ecn_marked;
  r.p50 = rig.bottleneck->queue_depths().Percentile(0.5);
  r.p99 = rig.bottleneck->queue_depths().Percentile(0.99);
  for (Node& s : rig.senders) {
    r.retransmits += Counter(*s.dataplane, "diad", "retransmits");
    r.echoes += Counter(*s.dataplane, "diad", "ecn_echoes_received");
    r.ecn_decreases += Counter(*s.dataplane, "diad", "cc_ecn_decreases");
    r.delay_decreases += Counter(*s.dataplane, "diad", "cc_delay_decreases");
  }
  r.ce_seen = Counter(*rig.receiver.dataplane, "diad", "ce_marks_received");
  r.echoes_sent = Counter(*rig.receiver.dataplane, "diad", "ecn_echoes_sent");
  r.jain = Jain(rig.bytes_by_sender);
  r.overflow = rig.overflow;
  const uint32_t max_payload = rig.senders[0]
                                   .dataplane->transport<diad::DiadModule>()
                                   ->config()
                                   .max_payload();
  r.delivered = std::max<uint64_t>(
      uint64_t{n} * ops * ((op_bytes + max_payload - 1) / max_payload), 1);
  r.goodput = static_cast<double>(uint64_t{n} * ops * op_bytes) * 8 / capacity;
  return r;
}

int Main() {
  const bool smoke = absl::GetFlag(FLAGS_smoke);
  const uint32_t ops = smoke ? 4 : absl::GetFlag(FLAGS_ops);
  const uint32_t op_bytes = smoke ? 16384 : absl::GetFlag(FLAGS_op_bytes);
  if (ops == 0 || op_bytes == 0) Fail("--ops and --op_bytes must be positive");
  std::printf(
      "diad_incast_bench: %u x %u-byte DiAD writes per sender; bottleneck "
      "%lu Mb/s, queue %u frames, ECN %u..%u frames (p %.2f); CC on: target "
      "RTT %u us, initial window %.0f, window_packets %u\n",
      ops, op_bytes, static_cast<unsigned long>(absl::GetFlag(FLAGS_rate_mbps)),
      absl::GetFlag(FLAGS_queue_frames), absl::GetFlag(FLAGS_ecn_min_frames),
      absl::GetFlag(FLAGS_ecn_max_frames),
      absl::GetFlag(FLAGS_ecn_max_probability),
      absl::GetFlag(FLAGS_target_rtt_us), absl::GetFlag(FLAGS_initial_window),
      absl::GetFlag(FLAGS_window_packets));
  std::printf(
      "| senders | CC | utilisation | goodput | tail drops | drops/delivered | "
      "retx/delivered | queue p50 | queue p99 | Jain | CE marks | echoes | "
      "ECN/delay decreases | seconds |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int run = 0;
  bool failures = false;
  for (uint32_t n : {4u, 8u}) {
    for (bool cc : {false, true}) {
      std::unique_ptr<Incast> rig = MakeIncast(n, cc, absl::StrCat(run++));
      const Result r = Run(*rig, ops, op_bytes);
      std::printf(
          "| %u | %s | %.3f | %.3f | %lu | %.4f | %.4f | %u | %u | %.3f | %lu "
          "| %lu | %lu/%lu | %.3f |\n",
          n, cc ? "on" : "off", r.utilisation, r.goodput,
          static_cast<unsigned long>(r.tail_drops),
          static_cast<double>(r.tail_drops) / static_cast<double>(r.delivered),
          static_cast<double>(r.retransmits) / static_cast<double>(r.delivered),
          r.p50, r.p99, r.jain, static_cast<unsigned long>(r.marked),
          static_cast<unsigned long>(r.echoes),
          static_cast<unsigned long>(r.ecn_decreases),
          static_cast<unsigned long>(r.delay_decreases), r.seconds);
      if (r.failed != 0) {
        std::printf("  (%u writes failed: %s)\n", r.failed, r.failure.c_str());
        if (cc) failures = true;
      }
      if (cc) {
        std::printf("  (receiver: %lu CE marks seen, %lu ECN echoes sent)\n",
                    static_cast<unsigned long>(r.ce_seen),
                    static_cast<unsigned long>(r.echoes_sent));
      }
      if (r.overflow != 0) {
        std::printf("  (%lu frames found the receiver's RX ring full)\n",
                    static_cast<unsigned long>(r.overflow));
      }
      DestroyIncast(*rig);
    }
  }
  if (failures) {
    std::fprintf(stderr, "diad_incast_bench: a write failed with CC on\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace spinnic::cost

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!spinnic::cost::InitBenchEal("diad_incast_bench", 2048)) return 1;
  return spinnic::cost::Main();
}
