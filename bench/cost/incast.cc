#include "bench/cost/incast.h"

#include <rte_cycles.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace spinnic::cost::incast {
namespace {

constexpr uint64_t kWireOverheadBytes = 24;  // FCS, preamble, gap
// Network time starts at 1 s: a transport may take 0 for "never".
constexpr uint64_t kVirtualEpochNs = 1'000'000'000;

uint32_t clock_tick_ns = 0;
std::atomic<uint64_t> virtual_ns{0};
uint64_t virtual_base_tsc = 0;

// The bottleneck's output into the receiver's RX ring, counted per sender
// (by source MAC).
void Deliver(Incast& rig, rte_mbuf** out, uint16_t emitted, bool count,
             uint64_t now) {
  if (emitted != 0) rig.last_out = now;
  for (uint16_t k = 0; k < emitted; ++k) {
    const uint8_t* frame = rte_pktmbuf_mtod(out[k], const uint8_t*);
    rig.bits_out += (out[k]->pkt_len + kWireOverheadBytes) * 8;
    const uint32_t sender = frame[11];
    if (count && frame[10] == rig.sender_tag &&
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

// One tick: every sender polls and its frames enter the bottleneck through
// its link; what left the bottleneck by now reaches the receiver, which
// polls; its answers go back by destination MAC.
void Tick(Incast& rig, bool count) {
  rte_mbuf* in[64];
  rte_mbuf* out[256];
  const uint64_t now = NetworkClock::NowTsc();
  for (size_t i = 0; i < rig.senders.size(); ++i) {
    Node& s = rig.senders[i];
    s.hpu().PollOnce();
    unsigned n = 0;
    if (!rig.sender_links) {
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
      if (frame[4] != rig.sender_tag || sender >= rig.senders.size() ||
          rte_ring_sp_enqueue(rig.senders[sender].wire_rx, m) != 0) {
        rte_pktmbuf_free(m);  // neighbour discovery and the like, or full
      }
    }
  }
  for (Node& s : rig.senders) DrainRing(s.host_tx);
  DrainRing(rig.receiver.host_tx);
}

void PrintHeader(const std::vector<std::string>& extra_columns) {
  std::string names, rule;
  for (const std::string& column : extra_columns) {
    absl::StrAppend(&names, " ", column, " |");
    absl::StrAppend(&rule, "---|");
  }
  std::printf(
      "| senders | CC | utilisation | goodput | tail drops | drops/delivered | "
      "retx/delivered | queue p50 | queue p99 | Jain | CE marks |%s seconds "
      "|\n|---|---|---|---|---|---|---|---|---|---|---|%s---|\n",
      names.c_str(), rule.c_str());
}

void PrintRow(uint32_t senders, bool cc, const Figures& f) {
  std::printf(
      "| %u | %s | %.3f | %.3f | %lu | %.4f | %.4f | %u | %u | %.3f | %lu %s| "
      "%.3f |\n",
      senders, cc ? "on" : "off", f.utilisation, f.goodput,
      static_cast<unsigned long>(f.tail_drops),
      static_cast<double>(f.tail_drops) / static_cast<double>(f.delivered),
      static_cast<double>(f.retransmits) / static_cast<double>(f.delivered),
      f.p50, f.p99, f.jain, static_cast<unsigned long>(f.marked),
      f.extra.c_str(), f.seconds);
}

}  // namespace

void NetworkClock::Use(uint32_t tick_ns) {
  clock_tick_ns = tick_ns;
  virtual_ns.store(0, std::memory_order_relaxed);
  virtual_base_tsc = rte_rdtsc();
}
bool NetworkClock::IsVirtual() { return clock_tick_ns != 0; }
uint32_t NetworkClock::tick_ns() { return clock_tick_ns; }
uint64_t NetworkClock::NowNs() {
  return kVirtualEpochNs + virtual_ns.load(std::memory_order_relaxed);
}
uint64_t NetworkClock::NowTsc() {
  if (!IsVirtual()) return rte_rdtsc();
  return virtual_base_tsc +
         static_cast<uint64_t>(static_cast<__uint128_t>(
                                   virtual_ns.load(std::memory_order_relaxed)) *
                               rte_get_tsc_hz() / 1'000'000'000);
}
void NetworkClock::Advance() {
  if (clock_tick_ns != 0) {
    virtual_ns.fetch_add(clock_tick_ns, std::memory_order_relaxed);
  }
}

std::array<uint8_t, 6> SenderMac(uint8_t tag, uint32_t index) {
  return {0x02, 0, 0, 0, tag, static_cast<uint8_t>(index)};
}

std::unique_ptr<Incast> NewIncast(uint32_t senders, uint8_t tag,
                                  const std::string& name) {
  auto rig = std::make_unique<Incast>();
  rig->sender_tag = tag;
  rig->senders.resize(senders);
  rig->bytes_by_sender.assign(senders, 0);
  rig->link_free_at.assign(senders, 0);
  rig->started.assign(senders, false);
  auto ring = [&](const std::string& what, unsigned size) {
    rte_ring* r = NewRing(absl::StrCat(name, what), size);
    rig->rings.push_back(r);
    return r;
  };
  rig->receiver.wire_rx = ring("rr", 8192);
  rig->receiver.wire_tx = ring("rt", 4096);
  for (uint32_t i = 0; i < senders; ++i) {
    rig->senders[i].wire_rx = ring(absl::StrCat("s", i, "r"), 4096);
    rig->senders[i].wire_tx = ring(absl::StrCat("s", i, "t"), 16384);
  }
  return rig;
}

void AddBottleneck(Incast& rig, const BottleneckOptions& options,
                   const std::string& name) {
  rig.rate_bps = options.rate_bps;
  rig.sender_links = options.sender_links;
  rig.tsc_per_bit = static_cast<double>(rte_get_tsc_hz()) / options.rate_bps;
  rig.link_slack = rte_get_tsc_hz() / 50'000;  // 20 us
  impair::ImpairConfig impairment;
  impairment.rate_bps = options.rate_bps;
  impairment.bottleneck_frames = options.queue_frames;
  impairment.ecn_min_frames = options.ecn_min_frames;
  impairment.ecn_max_frames = options.ecn_max_frames;
  impairment.ecn_max_probability = options.ecn_max_probability;
  impair::StageOptions stage;
  if (options.copy_pool) {
    rig.copies =
        rte_pktmbuf_pool_create(absl::StrCat(name, "copies").c_str(), 16383,
                                256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
    if (rig.copies == nullptr) Fail("no pool for the bottleneck's copies");
    stage.copy_pool = rig.copies;
  }
  rig.bottleneck = std::make_unique<impair::ImpairStage>(impairment, 0, stage);
}

void Warm(Incast& rig) {
  for (int k = 0; k < 4; ++k) {
    for (Node& s : rig.senders) s.hpu().PollOnce();
    rig.receiver.hpu().PollOnce();
  }
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

double RunUntilDone(Incast& rig, const std::function<uint32_t()>& finished,
                    uint64_t timeout_seconds,
                    const std::function<void(uint64_t start)>& each_tick) {
  const uint32_t n = static_cast<uint32_t>(rig.senders.size());
  const bool virtual_time = NetworkClock::IsVirtual();
  uint64_t start = NetworkClock::NowTsc();
  const uint64_t deadline = rte_rdtsc() + timeout_seconds * rte_get_tsc_hz();
  bool started = !virtual_time;
  bool counting = true;
  for (uint64_t tick = 1;; ++tick) {
    Tick(rig, counting);
    if (!started && rig.senders_started == n) {
      started = true;
      start = NetworkClock::NowTsc();
    }
    if (started) NetworkClock::Advance();
    if (each_tick && started) each_tick(start);
    if ((tick & 15) != 0) continue;
    const uint32_t done = finished();
    if (done != 0) counting = false;
    if (done == n) {
      // Virtual time: the run ends with the last frame out of the
      // bottleneck, not when a caller's thread happens to notice.
      const uint64_t end = virtual_time ? rig.last_out : NetworkClock::NowTsc();
      return static_cast<double>(end - std::min(end, start)) /
             static_cast<double>(rte_get_tsc_hz());
    }
    if (rte_rdtsc() > deadline) Fail("the incast did not finish in time");
  }
}

double Jain(const std::vector<uint64_t>& values) {
  double sum = 0, squares = 0;
  for (uint64_t v : values) {
    sum += static_cast<double>(v);
    squares += static_cast<double>(v) * static_cast<double>(v);
  }
  return squares == 0 ? 0 : sum * sum / (values.size() * squares);
}

Figures Measure(const Incast& rig, double seconds, uint64_t payload_bytes,
                uint64_t delivered) {
  Figures f;
  f.seconds = seconds;
  const double capacity = static_cast<double>(rig.rate_bps) * seconds;
  f.utilisation = static_cast<double>(rig.bits_out) / capacity;
  f.goodput = static_cast<double>(payload_bytes) * 8 / capacity;
  f.delivered = std::max<uint64_t>(delivered, 1);
  const impair::ImpairCounters& c = rig.bottleneck->counters();
  f.tail_drops = c.tail_drops;
  f.marked = c.ecn_marked;
  f.p50 = rig.bottleneck->queue_depths().Percentile(0.5);
  f.p99 = rig.bottleneck->queue_depths().Percentile(0.99);
  f.jain = Jain(rig.bytes_by_sender);
  f.overflow = rig.overflow;
  return f;
}

int RunTable(const char* program, const std::vector<std::string>& extra_columns,
             const char* what_failed,
             const std::function<std::unique_ptr<Incast>(
                 uint32_t senders, bool cc, const std::string& name)>& make,
             const std::function<Figures(Incast& rig)>& run) {
  if (NetworkClock::IsVirtual()) {
    std::printf(
        "clock: virtual, %u ns per tick (the links, the bottleneck and the "
        "transports' timers, pacing and RTTs)\n",
        NetworkClock::tick_ns());
  } else {
    std::printf("clock: the TSC (real time)\n");
  }
  PrintHeader(extra_columns);
  int index = 0;
  bool failures = false;
  for (uint32_t senders : {4u, 8u}) {
    for (bool cc : {false, true}) {
      std::unique_ptr<Incast> rig = make(senders, cc, absl::StrCat(index++));
      const Figures f = run(*rig);
      DestroyIncast(*rig);
      PrintRow(senders, cc, f);
      if (f.failed != 0) {
        std::printf("  (%u %s failed: %s)\n", f.failed, what_failed,
                    f.failure.c_str());
        if (cc) failures = true;
      }
      if (!f.note.empty()) std::printf("  (%s)\n", f.note.c_str());
      if (f.overflow != 0) {
        std::printf("  (%lu frames found the receiver's RX ring full)\n",
                    static_cast<unsigned long>(f.overflow));
      }
      std::fflush(stdout);
    }
  }
  if (failures) {
    std::fprintf(stderr, "%s: %s failed with CC on\n", program, what_failed);
    return 1;
  }
  return 0;
}

}  // namespace spinnic::cost::incast
