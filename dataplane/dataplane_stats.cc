// The Dataplane's counters (dataplane.h, stats.h): a snapshot summed over
// HPUs with the devices' own counters and the transports' sections, and the
// events the HPUs raised.
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <sys/random.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "dataplane/dataplane.h"

namespace spinnic {

void Dataplane::ReadDevice(size_t index, PortStats* stats) const {
  if (stopped_) {
    const PortStats& last = final_device_[index];
    stats->link_up = last.link_up;
    stats->link_speed_mbps = last.link_speed_mbps;
    stats->hw_ipackets = last.hw_ipackets;
    stats->hw_opackets = last.hw_opackets;
    stats->hw_imissed = last.hw_imissed;
    stats->hw_ierrors = last.hw_ierrors;
    stats->hw_oerrors = last.hw_oerrors;
    stats->hw_rx_nombuf = last.hw_rx_nombuf;
    return;
  }
  const Port& port = ports_[index];
  stats->link_up = port.link_up();
  stats->link_speed_mbps = port.link_speed_mbps();
  rte_eth_stats hw;
  if (rte_eth_stats_get(port.port_id(), &hw) == 0) {
    stats->hw_ipackets = hw.ipackets;
    stats->hw_opackets = hw.opackets;
    stats->hw_imissed = hw.imissed;
    stats->hw_ierrors = hw.ierrors;
    stats->hw_oerrors = hw.oerrors;
    stats->hw_rx_nombuf = hw.rx_nombuf;
  }
}

StatsSnapshot Dataplane::Snapshot(StateCopy state_copy) const {
  absl::MutexLock lock(&mu_);
  StatsSnapshot snapshot;
  for (size_t p = 0; p < ports_.size(); ++p) {
    const Port& port = ports_[p];
    PortStats stats;
    stats.name = port.name();
    stats.port_id = port.port_id();
    stats.queues = port.queues();
    for (size_t w = 0; w < hpus_.size(); ++w) {
      const PortCounters& c = hpus_[w]->port_counters(static_cast<uint16_t>(p));
      PortHpuStats share;
      share.port = static_cast<uint16_t>(p);
      share.hpu = static_cast<uint32_t>(w);
      const HpuPort& queues = hpus_[w]->port(static_cast<uint16_t>(p));
      if (queues.rx_queue != kNoPort) share.rx_queue = queues.rx_queue;
      if (queues.tx_queue != kNoPort) share.tx_queue = queues.tx_queue;
      share.rx_packets = c.rx_packets.Get();
      share.rx_bytes = c.rx_bytes.Get();
      share.tx_packets = c.tx_packets.Get();
      share.tx_bytes = c.tx_bytes.Get();
      snapshot.port_hpus.push_back(share);
      stats.rx_packets += share.rx_packets;
      stats.rx_bytes += share.rx_bytes;
      stats.tx_packets += share.tx_packets;
      stats.tx_bytes += share.tx_bytes;
      for (size_t r = 0; r < stats.drops.size(); ++r) {
        stats.drops[r] += c.drops[r].Get();
      }
      // Read in the opposite order of the HPU's writes (enqueued before
      // paced or discarded), so that the difference never goes negative.
      const uint64_t paced = c.transport_paced.Get();
      const uint64_t discarded = c.transport_discarded.Get();
      const uint64_t enqueued = c.transport_enqueued.Get();
      stats.transport_paced += paced;
      stats.transport_held += enqueued - std::min(enqueued, paced + discarded);
      stats.transport_refused += c.transport_refused.Get();
    }
    ReadDevice(p, &stats);
    snapshot.ports.push_back(std::move(stats));
  }
  for (size_t w = 0; w < hpus_.size(); ++w) {
    const Hpu& hpu = *hpus_[w];
    HpuStats stats;
    stats.index = static_cast<uint32_t>(w);
    stats.lcore = hpu_lcores_[w];
    stats.loops = hpu.counters().loops.Get();
    stats.busy_loops = hpu.counters().busy_loops.Get();
    stats.events = hpu.counters().events.Get();
    stats.event_overflow = hpu.counters().event_overflow.Get();
    stats.emitted = hpu.counters().emitted.Get();
    stats.emit_failed = hpu.counters().emit_failed.Get();
    for (size_t p = 0; p < ports_.size(); ++p) {
      const PortCounters& c = hpu.port_counters(static_cast<uint16_t>(p));
      stats.rx_packets += c.rx_packets.Get();
      stats.tx_packets += c.tx_packets.Get();
    }
    snapshot.hpus.push_back(stats);
  }
  for (const auto& ectx : current_table_->ectxs()) {
    EctxStats stats;
    stats.id = ectx->id();
    stats.name = ectx->name();
    stats.kind = std::string(ectx->kind().name);
    stats.disabled = ectx->disabled();
    stats.runtime = ectx->instance().Describe();
    stats.Accumulate(SumEctxCounters(ectx->id()), +1);
    stats.Accumulate(ectx_baseline_[ectx->id()], -1);
    if (state_copy == StateCopy::kInclude) {
      // Handlers may be writing concurrently; a copy is what a NIC's state
      // read would give too: each word as of some moment.
      auto state = ectx->state();
      stats.state.assign(state.begin(), state.end());
    }
    snapshot.ectxs.push_back(std::move(stats));
  }
  for (const TransportModule* module : transport_list_) {
    module->Snapshot(snapshot);
  }
  return snapshot;
}

EctxStats Dataplane::SumEctxCounters(uint32_t id) const {
  EctxStats sum;
  for (const auto& hpu : hpus_) {
    const EctxCounters& c = hpu->ectx_counters(id);
    sum.messages += c.Messages();
    sum.packets += c.Packets();
    sum.bytes += c.bytes.Get();
    sum.invocations += c.Invocations();
    sum.cycles += c.cycles.Get();
    sum.over_budget += c.over_budget.Get();
    sum.dropped += c.dropped.Get();
    sum.failed += c.failed.Get();
    sum.invalid += c.invalid.Get();
    sum.bypassed += c.bypassed.Get();
    sum.call_cycles.Add(c.call_cycles);
  }
  return sum;
}

size_t Dataplane::DrainEvents(std::vector<Event>* out) {
  size_t drained = 0;
  Event events[32];
  for (rte_ring* ring : event_rings_) {
    unsigned n;
    while ((n = rte_ring_sc_dequeue_burst_elem(ring, events, sizeof(Event), 32,
                                               nullptr)) > 0) {
      out->insert(out->end(), events, events + n);
      drained += n;
    }
  }
  return drained;
}

}  // namespace spinnic
