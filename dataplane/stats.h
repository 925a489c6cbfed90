// A point-in-time copy of every dataplane counter, summed over HPUs, for the
// control side to print, serve or write as JSON.
#ifndef SPINNIC_DATAPLANE_STATS_H_
#define SPINNIC_DATAPLANE_STATS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dataplane/classifier.h"
#include "dataplane/log2_histogram.h"

namespace spinnic {

struct PortStats {
  std::string name;
  uint16_t port_id = 0;
  uint16_t queues = 0;
  bool link_up = false;
  uint32_t link_speed_mbps = 0;
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  std::array<uint64_t, static_cast<size_t>(DropReason::kCount)> drops{};
  // The transport pacer (dataplane/tx_pacer.h; zero without one): frames
  // handed to the TX queues, waiting now, refused because its queue was
  // full. Paced frames are in tx_packets too.
  uint64_t transport_paced = 0, transport_held = 0, transport_refused = 0;
  // What the device itself reports (rte_eth_stats).
  uint64_t hw_ipackets = 0, hw_opackets = 0, hw_imissed = 0, hw_ierrors = 0,
           hw_oerrors = 0, hw_rx_nombuf = 0;
};

struct HpuStats {
  uint32_t index = 0;
  uint32_t lcore = 0;
  uint64_t loops = 0, busy_loops = 0, rx_packets = 0, tx_packets = 0;
  uint64_t events = 0, event_overflow = 0, emitted = 0, emit_failed = 0;
};

struct EctxStats {
  uint32_t id = 0;
  std::string name;
  std::string kind;
  bool disabled = false;
  // How the handler runs, in its own words (HandlerInstance::Describe; the
  // bpf kind: "jit: payload 10 insns"); empty for most kinds.
  std::string runtime;
  uint64_t messages = 0, packets = 0, bytes = 0, invocations = 0, cycles = 0,
           over_budget = 0, dropped = 0, failed = 0, invalid = 0, bypassed = 0;
  // The timed calls' cycles (EctxCounters::call_cycles).
  CycleHistogramStats call_cycles;
  std::vector<uint8_t> state;  // a copy of the ECTX state memory

  // Adds (sign +1) or subtracts (-1) the counter fields of `other`.
  void Accumulate(const EctxStats& other, int sign) {
    uint64_t s = static_cast<uint64_t>(static_cast<int64_t>(sign));
    messages += s * other.messages;
    packets += s * other.packets;
    bytes += s * other.bytes;
    invocations += s * other.invocations;
    cycles += s * other.cycles;
    over_budget += s * other.over_budget;
    dropped += s * other.dropped;
    failed += s * other.failed;
    invalid += s * other.invalid;
    bypassed += s * other.bypassed;
    for (size_t b = 0; b < CycleHistogram::kBuckets; ++b) {
      call_cycles.counts[b] += s * other.call_cycles.counts[b];
    }
    call_cycles.sum += s * other.call_cycles.sum;
  }
};

// One transport's counters summed over HPUs, by name (docs/diad.md and
// docs/roce.md list them); drops by reason with the "drop_" prefix. Every
// registered transport adds its section (TransportModule::Snapshot), with
// no counters when the config leaves it off.
struct TransportStats {
  std::string name;  // TransportModule::name(): "diad", "roce"
  bool enabled = false;
  std::vector<std::pair<std::string, uint64_t>> counters;
  // Latency distributions by name ("rtt": the round-trip samples the
  // transport's timers learn from), summed over HPUs.
  std::vector<std::pair<std::string, RttHistogramStats>> histograms;
};

// One HPU's share of a port's counters: per RX/TX queue when the port has
// a queue per HPU (each HPU polls its own), per HPU otherwise.
struct PortHpuStats {
  uint16_t port = 0;  // index into StatsSnapshot::ports
  uint32_t hpu = 0;
  // The device queues this HPU polls and sends on; -1: none of its own
  // (fewer queues than HPUs: frames reach it through the scheduler's rings).
  int32_t rx_queue = -1, tx_queue = -1;
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
};

struct StatsSnapshot {
  std::vector<PortStats> ports;
  std::vector<HpuStats> hpus;
  // Port x HPU, the ports' counters before summing (metrics only).
  std::vector<PortHpuStats> port_hpus;
  std::vector<EctxStats> ectxs;
  std::vector<TransportStats> transports;

  // A copy of the section of transport `name`, or an empty, disabled one.
  // A copy, so that `Snapshot().transport("roce").counters` stays valid
  // for a whole range-for.
  TransportStats transport(std::string_view name) const {
    for (const TransportStats& t : transports) {
      if (t.name == name) return t;
    }
    return {};
  }
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_STATS_H_
