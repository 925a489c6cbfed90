// The incast both incast benches run (incast_bench.cc for RoCE,
// diad_incast_bench.cc for DiAD; docs/congestion.md): N sender dataplanes
// and one receiver, stepped by hand in one thread (rig.h). Every sender's
// wire TX ring leaves through a link of the bottleneck's rate into one
// ImpairStage in bottleneck mode (rate, bounded FIFO, RED-like ECN marking;
// docs/impair.md#bottleneck) whose output is the receiver's wire RX ring;
// the receiver's answers go straight back, routed by destination MAC.
//
// The network runs on a clock of its own (NetworkClock): virtual, some
// nanoseconds per tick of the loop, or the TSC. Virtual time measures the
// congestion control rather than how much CPU a loaded machine gave the
// loop; the transports read it through their clock hooks
// (roce.congestion.now_ns, RoceConfig::requester_now_ns,
// DiadConfig::now_ns).
//
// What is transport-neutral lives here: the clock, the links and the
// bottleneck, the loop that steps them until every sender is done, and the
// figures with their table (utilisation, goodput, tail drops, retx per
// delivered packet, p50/p99 queue depth, Jain's index over the senders).
#ifndef SPINNIC_BENCH_COST_INCAST_H_
#define SPINNIC_BENCH_COST_INCAST_H_

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/cost/rig.h"
#include "dataplane/impair/impair_stage.h"

namespace spinnic::cost::incast {

// The network's clock. Before the first Start it reads the TSC's start.
class NetworkClock {
 public:
  // `tick_ns` of network time per Advance; 0: real time (the TSC).
  static void Use(uint32_t tick_ns);
  static bool IsVirtual();
  static uint32_t tick_ns();
  // Nanoseconds (a hook for the transports' configs; virtual only).
  static uint64_t NowNs();
  // TSC cycles: the links' and the bottleneck's time.
  static uint64_t NowTsc();
  // One tick of virtual time (no-op on the TSC).
  static void Advance();
};

struct BottleneckOptions {
  uint64_t rate_bps = 2'000'000'000;
  uint32_t queue_frames = 512;
  uint32_t ecn_min_frames = 16;
  uint32_t ecn_max_frames = 64;
  double ecn_max_probability = 0.2;
  // Each sender's link runs at the bottleneck's rate (a NIC port: its
  // frames wait in its TX ring); false: only the CPU limits a sender.
  bool sender_links = true;
  // Give the bottleneck a pool to copy a frame it marks into: needed when
  // the senders send indirect mbufs (DiAD's clones of held originals).
  bool copy_pool = false;
};

struct Incast {
  std::vector<Node> senders;
  Node receiver;
  // Byte 4 of every sender's MAC (02:00:00:00:tag:index): how the figures
  // and the way back tell the senders apart.
  uint8_t sender_tag = 0;
  std::vector<rte_ring*> rings;  // every ring, to free
  std::unique_ptr<impair::ImpairStage> bottleneck;
  rte_mempool* copies = nullptr;
  bool sender_links = true;
  uint64_t rate_bps = 0;
  double tsc_per_bit = 0;
  uint64_t link_slack = 0;  // TSC
  // Filled as it runs.
  uint64_t overflow = 0;  // frames the receiver's RX ring refused
  uint64_t bits_out = 0;  // through the bottleneck, with overhead
  uint64_t last_out = 0;  // TSC: when a frame last left the bottleneck
  uint32_t senders_started = 0;
  std::vector<bool> started;
  std::vector<uint64_t> bytes_by_sender;
  std::vector<uint64_t> link_free_at;  // TSC, per sender's link
  // The bench's regions: the receiver's target, the senders' sources.
  RegionInfo target;
  std::vector<RegionInfo> sources;
};

// Sender `index`'s MAC in an incast whose senders carry `tag`.
std::array<uint8_t, 6> SenderMac(uint8_t tag, uint32_t index);

// An incast of `senders` senders: the rings (receiver: wire RX 8192, TX
// 4096; senders: RX 4096, TX 16384), no dataplanes yet (the bench creates
// them on these rings) and no bottleneck (AddBottleneck).
std::unique_ptr<Incast> NewIncast(uint32_t senders, uint8_t tag,
                                  const std::string& name);
void AddBottleneck(Incast& rig, const BottleneckOptions& options,
                   const std::string& name);
// A few polls of everyone (neighbour discovery, QP setup).
void Warm(Incast& rig);
void DestroyIncast(Incast& rig);

// Steps the incast until `finished()` returns the number of senders, at
// most `timeout_seconds` of real time (then the bench fails). `count`
// (Jain's index) stops at the first finished sender. On the virtual
// clock, time stands still until every sender's first frame reached the
// bottleneck and the run ends with the last frame out of it. `each_tick`
// (may be empty) runs after every tick with the run's start (TSC).
// Returns the run's seconds of network time.
double RunUntilDone(Incast& rig, const std::function<uint32_t()>& finished,
                    uint64_t timeout_seconds,
                    const std::function<void(uint64_t start)>& each_tick = {});

// What one run gives; the bench fills the transport's part.
struct Figures {
  double seconds = 0;
  double utilisation = 0;
  double goodput = 0;
  uint64_t delivered = 1;  // data packets the operations needed (>= 1)
  uint64_t tail_drops = 0;
  uint64_t retransmits = 0;
  uint32_t p50 = 0, p99 = 0;
  double jain = 0;
  uint64_t marked = 0;
  uint64_t overflow = 0;
  // Operations (or senders) that failed, and one reason.
  uint32_t failed = 0;
  std::string failure;
  // The transport's own columns, already formatted ("| a | b "), and a
  // line to print under the row (may be empty).
  std::string extra;
  std::string note;
};

// The bottleneck's figures for a run of `seconds` that delivered
// `payload_bytes` in `delivered` data packets (retransmits and the extra
// columns are the bench's).
Figures Measure(const Incast& rig, double seconds, uint64_t payload_bytes,
                uint64_t delivered);
double Jain(const std::vector<uint64_t>& values);

// The table: first the clock it runs on, then for 4 and 8 senders, CC off
// then on, one incast from `make(senders, cc, name)` (its resources' names
// unique by `name`), run by `run`, destroyed, its figures a row of a table
// with the transport's `extra_columns` ({"CNPs"}). Failures (of
// `what_failed`, "writes") are printed under their row: with CC off that
// is congestion collapse, a figure; with CC on it fails the bench. Returns
// the exit status: 1 (with a line on stderr from `program`) when a run
// with CC on had failures.
int RunTable(const char* program, const std::vector<std::string>& extra_columns,
             const char* what_failed,
             const std::function<std::unique_ptr<Incast>(
                 uint32_t senders, bool cc, const std::string& name)>& make,
             const std::function<Figures(Incast& rig)>& run);

}  // namespace spinnic::cost::incast

#endif  // SPINNIC_BENCH_COST_INCAST_H_
