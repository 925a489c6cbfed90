// DiAD incast through one bottleneck, congestion control off against on
// (issue 21, docs/congestion.md, "The DiAD incast"): N sender dataplanes,
// each a DiAD node writing to one receiver dataplane over one channel,
// through the incast of incast.h (links at the bottleneck's rate, one
// bottleneck, the receiver's ACKs and write responses straight back). The
// shape and the figures are incast_bench.cc's (RoCE): for N = 4 and 8, CC
// off and on in the same run,
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
// reported under its row (congestion collapse). Time is virtual by default
// (--virtual_tick_ns, as incast_bench): the links, the bottleneck and the
// DiAD engines (RTT samples, the window, pacing, ACK and retransmission
// timers) read the network's clock, so the figures are the congestion
// control's, the same from run to run. --virtual_tick_ns=0 runs on the
// TSC: then compare the rows of one run.
#include <rte_cycles.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/cost/incast.h"
#include "bench/cost/rig.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/diad/diad_module.h"

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
ABSL_FLAG(uint32_t, virtual_tick_ns, 1000,
          "The network's clock (the links, the bottleneck, the DiAD engines' "
          "RTT, window, pacing and timers) advances this much per tick of "
          "the loop; 0: the TSC (real time)");
ABSL_FLAG(bool, smoke, false, "CI form: 4 and 8 senders, 4 writes of 16 KiB");

namespace spinnic::cost {
namespace {

using incast::Incast;
using incast::NetworkClock;

constexpr uint64_t kRunTimeoutSeconds = 120;
constexpr uint32_t kRegionBytes = 1u << 21;
constexpr uint8_t kSenderTag = 0x52;

diad::NodeAddress SenderNode(uint32_t i) {
  diad::NodeAddress node = kNodeA;
  node[13] = 0x5;
  node[15] = static_cast<uint8_t>(0x10 + i);
  return node;
}

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
  if (NetworkClock::IsVirtual()) dc.now_ns = &NetworkClock::NowNs;
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
  std::unique_ptr<Incast> rig =
      incast::NewIncast(n, kSenderTag, absl::StrCat("d", name));
  {
    DataplaneConfig config = DiadNodeConfig(
        rig->receiver, absl::StrCat("_d", name, "r"), kNodeB, kMacB, cc);
    diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
    for (uint32_t i = 0; i < n; ++i) {
      diad::PeerConfig peer;
      peer.name = absl::StrCat("s", i);
      peer.node = SenderNode(i);
      peer.mac = incast::SenderMac(kSenderTag, i);
      dc.peers.push_back(peer);
    }
    CreateNode(rig->receiver, config);
  }
  for (uint32_t i = 0; i < n; ++i) {
    Node& s = rig->senders[i];
    DataplaneConfig config =
        DiadNodeConfig(s, absl::StrCat("_d", name, i), SenderNode(i),
                       incast::SenderMac(kSenderTag, i), cc);
    diad::PeerConfig peer;
    peer.name = "r";
    peer.node = kNodeB;
    peer.mac = kMacB;
    config.transports.get<diad::DiadConfig>().peers = {peer};
    CreateNode(s, config);
  }
  rig->target = Register(*rig->receiver.dataplane, kRegionBytes,
                         kLocalRead | kLocalWrite | kRemoteWrite);
  incast::BottleneckOptions bottleneck;
  bottleneck.rate_bps = absl::GetFlag(FLAGS_rate_mbps) * 1'000'000;
  bottleneck.queue_frames = absl::GetFlag(FLAGS_queue_frames);
  bottleneck.ecn_min_frames = absl::GetFlag(FLAGS_ecn_min_frames);
  bottleneck.ecn_max_frames = absl::GetFlag(FLAGS_ecn_max_frames);
  bottleneck.ecn_max_probability = absl::GetFlag(FLAGS_ecn_max_probability);
  // DiAD sends indirect mbufs (clones of the held originals, whose pool has
  // no data room): the bottleneck copies a frame it marks.
  bottleneck.copy_pool = true;
  incast::AddBottleneck(*rig, bottleneck, absl::StrCat("d", name));
  incast::Warm(*rig);
  return rig;
}

incast::Figures Run(Incast& rig, uint32_t ops, uint32_t op_bytes) {
  const uint32_t n = static_cast<uint32_t>(rig.senders.size());
  const uint32_t slice = kRegionBytes / n;
  if (op_bytes > slice) Fail("--op_bytes above the region's share per sender");
  std::vector<std::vector<diad::DiadOp*>> ops_of(n);
  std::vector<Bytes> payloads;
  for (uint32_t k = 0; k < ops; ++k) payloads.push_back(Pattern(op_bytes, k));
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
  std::vector<bool> finished(n, false);
  const double seconds = incast::RunUntilDone(
      rig,
      [&] {
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
        return done;
      },
      kRunTimeoutSeconds);
  uint32_t failed = 0;
  std::string failure;
  for (uint32_t i = 0; i < n; ++i) {
    for (diad::DiadOp* op : ops_of[i]) {
      if (op->status != diad::Status::kOk) {
        ++failed;
        failure = absl::StrCat("sender ", i, ": status ",
                               diad::StatusName(op->status));
      }
      op->Unref();
    }
  }
  // Every slot holds its write (ops beyond the slots overwrite; check the
  // last round).
  const uint32_t slots = slice / op_bytes;
  for (uint32_t i = 0; failed == 0 && i < n; ++i) {
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
  const uint32_t max_payload = rig.senders[0]
                                   .dataplane->transport<diad::DiadModule>()
                                   ->config()
                                   .max_payload();
  incast::Figures f = incast::Measure(
      rig, seconds, uint64_t{n} * ops * op_bytes,
      uint64_t{n} * ops * ((op_bytes + max_payload - 1) / max_payload));
  f.failed = failed;
  f.failure = std::move(failure);
  uint64_t echoes = 0, ecn_decreases = 0, delay_decreases = 0;
  for (Node& s : rig.senders) {
    f.retransmits += Counter(*s.dataplane, "diad", "retransmits");
    echoes += Counter(*s.dataplane, "diad", "ecn_echoes_received");
    ecn_decreases += Counter(*s.dataplane, "diad", "cc_ecn_decreases");
    delay_decreases += Counter(*s.dataplane, "diad", "cc_delay_decreases");
  }
  f.extra = absl::StrCat("| ", echoes, " | ", ecn_decreases, "/",
                         delay_decreases, " ");
  f.note = absl::StrCat(
      "receiver: ",
      Counter(*rig.receiver.dataplane, "diad", "ce_marks_received"),
      " CE marks seen, ",
      Counter(*rig.receiver.dataplane, "diad", "ecn_echoes_sent"),
      " ECN echoes sent");
  return f;
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
  return incast::RunTable(
      "diad_incast_bench", {"echoes", "ECN/delay decreases"}, "writes",
      MakeIncast, [&](Incast& rig) { return Run(rig, ops, op_bytes); });
}

}  // namespace
}  // namespace spinnic::cost

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!spinnic::cost::InitBenchEal("diad_incast_bench", 2048)) return 1;
  spinnic::cost::incast::NetworkClock::Use(
      absl::GetFlag(FLAGS_virtual_tick_ns));
  return spinnic::cost::Main();
}
