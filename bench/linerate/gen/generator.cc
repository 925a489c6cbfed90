#include "bench/linerate/gen/generator.h"

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/linerate/gen/accounting.h"
#include "bench/linerate/gen/probe.h"

namespace spinnic::gen {
namespace {

constexpr uint16_t kRxDescriptors = 1024;
constexpr uint16_t kTxDescriptors = 1024;
constexpr unsigned kPoolCache = 256;
constexpr double kCheckIntervalS = 0.1;  // links, peer silence, signals

std::atomic<int> g_stop_signal{0};

std::string PortName(uint16_t port) {
  char name[RTE_ETH_NAME_MAX_LEN] = {};
  if (rte_eth_dev_get_name_by_port(port, name) != 0) return "?";
  return name;
}

std::string PortLabel(uint16_t port) {
  return absl::StrCat("port ", port, " (", PortName(port), ")");
}

std::string KnownPorts() {
  std::vector<std::string> names;
  uint16_t port;
  RTE_ETH_FOREACH_DEV(port) {
    names.push_back(absl::StrCat(port, ": ", PortName(port)));
  }
  if (names.empty()) return "none";
  return absl::StrJoin(names, ", ");
}

// The largest MTU the device takes, by ethdev's own rule: the frame (MTU +
// the device's L2 overhead, 18 B unless it says otherwise) must fit
// max_rx_pktlen, and the MTU max_mtu.
uint32_t LargestMtu(const rte_eth_dev_info& info) {
  uint32_t overhead = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;
  if (info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu) {
    overhead = info.max_rx_pktlen - info.max_mtu;
  }
  const uint32_t by_frame =
      info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 0;
  return std::min<uint32_t>(info.max_mtu, by_frame);
}

void WriteTemplate(rte_mempool*, void* opaque, void* obj, unsigned) {
  const auto* frame = static_cast<const std::vector<uint8_t>*>(opaque);
  auto* m = static_cast<rte_mbuf*>(obj);
  std::memcpy(rte_pktmbuf_mtod(m, uint8_t*), frame->data(), frame->size());
}

}  // namespace

struct Generator::State {
  Options o;
  FrameSpec spec;
  std::vector<uint8_t> frame;      // the whole template frame
  std::vector<uint16_t> ports;     // distinct ports: tx first
  std::vector<uint16_t> started;   // ports to stop and close
  rte_mempool* tx_pool = nullptr;  // every mbuf pre-filled with `frame`
  rte_mempool* rx_pool = nullptr;
  bool split = false;
  unsigned tx_lcore = 0;

  // Times in TSC cycles, fixed when Run starts.
  uint64_t hz = 0;
  uint64_t start_tsc = 0;
  uint64_t measure_start_tsc = 0;
  uint64_t tx_end_tsc = 0;
  uint64_t drain_cycles = 0;
  uint64_t peer_timeout_cycles = 0;
  uint64_t check_cycles = 0;
  // How far a probe's TX TSC may lie ahead of the RX lcore's TSC and still
  // be ours: the TSCs of two cores of a VM need not agree exactly.
  uint64_t tsc_slack = 0;
  double frames_per_cycle = 0;  // pacing; 0 = flat out
  double ns_per_cycle = 0;

  alignas(64) std::atomic<bool> stop{false};
  std::atomic<uint64_t> tx_done_tsc{0};  // 0 until the TX side is done

  // Owned by the TX loop until it is done.
  struct alignas(64) Tx {
    std::vector<uint64_t> next_seq;       // per stream, current phase
    std::vector<uint64_t> sent_measured;  // per stream
    std::array<rte_mbuf*, kMaxBurst> pending = {};
    std::array<uint16_t, kMaxBurst> pending_stream = {};
    std::array<bool, kMaxBurst> pending_measured = {};
    uint32_t pending_n = 0;
    uint32_t cursor = 0;
    bool measured = false;
    bool done = false;
    uint64_t pace_origin_tsc = 0;  // start_tsc, then measure_start_tsc
    uint64_t built = 0;            // since pace_origin_tsc
    uint64_t sent = 0;
    uint64_t tx_bytes = 0;
    uint64_t warmup_sent = 0;
    uint64_t end_tsc = 0;
  } tx;

  // Owned by the RX loop (the main lcore).
  struct alignas(64) Rx {
    std::vector<SequenceTracker> trackers;  // per stream
    LatencyHistogram latency_ns;
    std::array<rte_mbuf*, kMaxBurst> burst = {};
    std::array<uint8_t, kMaxProbeHeadBytes> scratch = {};
    uint64_t frames = 0;  // anything at all
    uint64_t last_tsc = 0;
    uint64_t rx_bytes = 0;
    uint64_t warmup_received = 0;
    uint64_t not_ours = 0;
    uint64_t next_check_tsc = 0;
    std::string error;
  } rx;

  // Setup's steps: the ports exist and the lcores suffice; the probe frame
  // and the mbuf pools; one port configured and started; the links up.
  absl::Status CheckPortsAndLcores();
  absl::Status CreateFrameAndPools();
  absl::Status StartPort(uint16_t port);
  absl::Status WaitForLinks();
  void TxStep(uint64_t now);
  void RxStep();
  // Links, peer silence, signals; sets `stop` and rx.error on failure.
  void Check(uint64_t now);
  void Fail(std::string message) {
    if (rx.error.empty()) rx.error = std::move(message);
    stop.store(true, std::memory_order_relaxed);
  }
};

void Generator::RequestStop(int signal) {
  g_stop_signal.store(signal, std::memory_order_relaxed);
}

Generator::Generator(const Options& options)
    : state_(std::make_unique<State>()) {
  state_->o = options;
}

Generator::~Generator() {
  State& s = *state_;
  for (uint16_t port : s.started) {
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);
  }
  rte_mempool_free(s.tx_pool);
  rte_mempool_free(s.rx_pool);
}

absl::StatusOr<std::unique_ptr<Generator>> Generator::Create(
    const Options& options) {
  std::unique_ptr<Generator> gen(new Generator(options));
  if (absl::Status status = gen->Setup(); !status.ok()) return status;
  return gen;
}

absl::Status Generator::Setup() {
  State& s = *state_;
  if (absl::Status st = s.CheckPortsAndLcores(); !st.ok()) return st;
  if (absl::Status st = s.CreateFrameAndPools(); !st.ok()) return st;
  for (uint16_t port : s.ports) {
    if (absl::Status st = s.StartPort(port); !st.ok()) return st;
  }
  return s.WaitForLinks();
}

absl::Status Generator::State::CheckPortsAndLcores() {
  // Ports.
  for (uint16_t port : {o.tx_port, o.rx_port}) {
    if (!rte_eth_dev_is_valid_port(port)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "port ", port, " does not exist; DPDK has ",
          rte_eth_dev_count_avail(), " port(s): ", KnownPorts(),
          ". Pass a --vdev (e.g. net_memif0,role=client,socket=PATH) or a "
          "PCI device (-a) per port, or use another --tx_port/--rx_port"));
    }
  }
  ports = {o.tx_port};
  if (o.rx_port != o.tx_port) ports.push_back(o.rx_port);

  // Lcores.
  const unsigned lcores = rte_lcore_count();
  split = o.threads == Threads::kSplit ||
          (o.threads == Threads::kAuto && lcores >= 2);
  if (split) {
    if (lcores < 2) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--threads=split needs 2 EAL lcores and the EAL has ", lcores,
          ": pass -l with two cores (this machine has ",
          sysconf(_SC_NPROCESSORS_ONLN), " online) or use --threads=single"));
    }
    tx_lcore = rte_get_next_lcore(-1, 1, 0);
  }
  return absl::OkStatus();
}

absl::Status Generator::State::CreateFrameAndPools() {
  // Frames and pools.
  spec.size = o.size;
  spec.src_port = o.src_port;
  spec.dst_port = o.dst_port;
  rte_ether_addr mac;
  if (rte_eth_macaddr_get(o.tx_port, &mac) == 0) {
    std::copy_n(mac.addr_bytes, 6, spec.src_mac.begin());
  }
  if (rte_eth_macaddr_get(o.rx_port, &mac) == 0) {
    std::copy_n(mac.addr_bytes, 6, spec.dst_mac.begin());
  }
  frame.resize(o.size);
  if (absl::Status st = BuildProbeFrame(spec, absl::MakeSpan(frame));
      !st.ok()) {
    return st;
  }
  // One mbuf holds the largest frame the MTU admits (not only --size),
  // with 64 B to spare: virtio refuses an RX queue whose buffers cannot take
  // MTU + 14 + a VLAN tag + its 12-byte header without scattering.
  const uint32_t largest = std::max<uint32_t>(
      o.size, o.mtu != 0 ? static_cast<uint32_t>(o.mtu + kEthHeaderBytes) : 0);
  const uint32_t room =
      std::max<uint32_t>(RTE_MBUF_DEFAULT_DATAROOM, largest + 64);
  const unsigned mbufs = o.size <= RTE_MBUF_DEFAULT_DATAROOM ? 8191 : 4095;
  tx_pool =
      rte_pktmbuf_pool_create("gen_tx", mbufs, kPoolCache, 0,
                              RTE_PKTMBUF_HEADROOM + room, rte_socket_id());
  rx_pool =
      rte_pktmbuf_pool_create("gen_rx", mbufs, kPoolCache, 0,
                              RTE_PKTMBUF_HEADROOM + room, rte_socket_id());
  if (tx_pool == nullptr || rx_pool == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create 2 x ", mbufs, " mbufs of ", room,
        " B: ", rte_strerror(rte_errno), "; give the EAL more memory (-m)"));
  }
  rte_mempool_obj_iter(tx_pool, WriteTemplate, &frame);
  return absl::OkStatus();
}

absl::Status Generator::State::StartPort(uint16_t port) {
  const std::string label = PortLabel(port);
  rte_eth_dev_info info;
  if (int rc = rte_eth_dev_info_get(port, &info); rc != 0) {
    return absl::InternalError(
        absl::StrCat(label, ": cannot read device info: ", rte_strerror(-rc)));
  }
  rte_eth_conf conf = {};
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;
  }
  // The MTU goes in at configure time: some drivers (memif) have no
  // way to change it later. 0 is the device's default (1500).
  const uint32_t max_mtu = LargestMtu(info);
  if (o.mtu != 0 && (o.mtu < info.min_mtu || o.mtu > max_mtu)) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, " cannot take --mtu=", o.mtu, ": the device allows MTU ",
        info.min_mtu, "..", max_mtu, " (frames of at most ", info.max_rx_pktlen,
        " B with FCS)"));
  }
  conf.rxmode.mtu = o.mtu;
  if (int rc = rte_eth_dev_configure(port, 1, 1, &conf); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": cannot configure 1 RX and 1 TX queue",
        o.mtu != 0 ? absl::StrCat(" with MTU ", o.mtu) : "", ": ",
        rte_strerror(-rc), " (is the port in use by another process?)"));
  }
  uint16_t mtu = 0;
  if (int rc = rte_eth_dev_get_mtu(port, &mtu); rc != 0) {
    return absl::InternalError(
        absl::StrCat(label, ": cannot read the MTU: ", rte_strerror(-rc)));
  }
  if (o.size > uint32_t{mtu} + kEthHeaderBytes) {
    const uint32_t need = o.size - kEthHeaderBytes;
    return absl::InvalidArgumentError(absl::StrCat(
        "--size=", o.size, " is larger than ", label, " allows: MTU ", mtu,
        " + 14 B Ethernet header = ", mtu + kEthHeaderBytes, " B. ",
        need <= max_mtu
            ? absl::StrCat("Raise the MTU with --mtu=", need,
                           " (the DUT's ports must allow it too) or use "
                           "--size=",
                           mtu + kEthHeaderBytes, " or less")
            : absl::StrCat(
                  "The device's largest MTU is ", max_mtu,
                  ", so use --size=", max_mtu + kEthHeaderBytes, " or less",
                  max_mtu > mtu ? absl::StrCat(" with --mtu=", max_mtu) : "")));
  }
  uint16_t rxd = kRxDescriptors;
  uint16_t txd = kTxDescriptors;
  rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
  const int socket = rte_eth_dev_socket_id(port);
  if (int rc = rte_eth_rx_queue_setup(port, 0, rxd, socket, nullptr, rx_pool);
      rc != 0) {
    return absl::InternalError(absl::StrCat(
        label, ": cannot set up the RX queue: ", rte_strerror(-rc)));
  }
  if (int rc = rte_eth_tx_queue_setup(port, 0, txd, socket, nullptr); rc != 0) {
    return absl::InternalError(absl::StrCat(
        label, ": cannot set up the TX queue: ", rte_strerror(-rc)));
  }
  if (int rc = rte_eth_dev_start(port); rc != 0) {
    return absl::UnavailableError(
        absl::StrCat(label, ": cannot start: ", rte_strerror(-rc)));
  }
  started.push_back(port);
  // Probes are addressed to the RX port's MAC; a DUT that rewrites
  // addresses still gets them through. Not every device has the mode.
  rte_eth_promiscuous_enable(port);
  return absl::OkStatus();
}

absl::Status Generator::State::WaitForLinks() {
  // Links.
  const uint64_t tsc_hz = rte_get_tsc_hz();
  const uint64_t deadline =
      rte_rdtsc() + static_cast<uint64_t>(o.link_timeout_s * tsc_hz);
  for (uint16_t port : ports) {
    rte_eth_link link = {};
    while (true) {
      if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status) break;
      if (g_stop_signal.load(std::memory_order_relaxed) != 0) {
        return absl::CancelledError("interrupted while waiting for the links");
      }
      if (rte_rdtsc() >= deadline) {
        return absl::UnavailableError(absl::StrCat(
            PortLabel(port), " did not come up within ", o.link_timeout_s,
            " s: is the peer (spinnicd/testpmd) running on the socket? (a "
            "memif client needs the server's socket; a NIC needs a cable "
            "and a peer that is up)"));
      }
      rte_delay_ms(50);
    }
  }
  return absl::OkStatus();
}

void Generator::State::TxStep(uint64_t now) {
  if (tx.done) return;
  if (now >= tx_end_tsc || stop.load(std::memory_order_relaxed)) {
    // Frames built but never taken by the queue were not sent: their
    // numbers are past every stream's sent count.
    if (tx.pending_n > 0) {
      rte_pktmbuf_free_bulk(tx.pending.data(), tx.pending_n);
    }
    tx.pending_n = 0;
    tx.done = true;
    tx.end_tsc = std::min(now, tx_end_tsc);
    tx_done_tsc.store(now, std::memory_order_release);
    return;
  }
  if (!tx.measured && now >= measure_start_tsc) {
    tx.measured = true;
    std::fill(tx.next_seq.begin(), tx.next_seq.end(), 0);
    // Pace the measured phase from its own start: a backlog the warmup
    // left (a stall, a full queue) is dropped, not sent on top of the rate.
    tx.pace_origin_tsc = measure_start_tsc;
    tx.built = 0;
  }

  uint32_t want = o.burst - tx.pending_n;
  if (frames_per_cycle > 0) {
    const auto due = static_cast<uint64_t>(
        static_cast<double>(now - tx.pace_origin_tsc) * frames_per_cycle);
    const uint64_t backlog = due > tx.built ? due - tx.built : 0;
    want = static_cast<uint32_t>(std::min<uint64_t>(want, backlog));
  }
  if (want > 0 &&
      rte_pktmbuf_alloc_bulk(tx_pool, &tx.pending[tx.pending_n], want) == 0) {
    const uint32_t flows = o.flows;
    for (uint32_t i = tx.pending_n; i < tx.pending_n + want; ++i) {
      rte_mbuf* m = tx.pending[i];
      const uint32_t stream = tx.cursor;
      if (++tx.cursor == flows) tx.cursor = 0;
      Probe probe;
      probe.stream = static_cast<uint16_t>(stream);
      probe.seq = tx.next_seq[stream]++;
      probe.tx_tsc = now;
      // Headers and magic again (the padding stays from the pool's init).
      uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
      std::memcpy(data, frame.data(), kProbeOffset + kProbeMagic.size());
      StampProbe(data, o.src_port, probe);
      m->data_len = static_cast<uint16_t>(o.size);
      m->pkt_len = o.size;
      tx.pending_stream[i] = static_cast<uint16_t>(stream);
      tx.pending_measured[i] = tx.measured;
    }
    tx.pending_n += want;
    tx.built += want;
  }
  if (tx.pending_n == 0) return;

  const uint16_t taken = rte_eth_tx_burst(o.tx_port, 0, tx.pending.data(),
                                          static_cast<uint16_t>(tx.pending_n));
  for (uint16_t i = 0; i < taken; ++i) {
    if (tx.pending_measured[i]) {
      ++tx.sent_measured[tx.pending_stream[i]];
      ++tx.sent;
    } else {
      ++tx.warmup_sent;
    }
  }
  if (taken > 0 && taken < tx.pending_n) {
    // The queue was full: keep the rest, in order, for the next try.
    const uint32_t rest = tx.pending_n - taken;
    std::memmove(&tx.pending[0], &tx.pending[taken], rest * sizeof(rte_mbuf*));
    std::memmove(&tx.pending_stream[0], &tx.pending_stream[taken],
                 rest * sizeof(uint16_t));
    std::memmove(&tx.pending_measured[0], &tx.pending_measured[taken],
                 rest * sizeof(bool));
  }
  tx.pending_n -= taken;
}

void Generator::State::RxStep() {
  const uint16_t n = rte_eth_rx_burst(o.rx_port, 0, rx.burst.data(),
                                      static_cast<uint16_t>(o.burst));
  if (n == 0) return;
  const uint64_t now = rte_rdtsc();
  rx.frames += n;
  rx.last_tsc = now;
  for (uint16_t i = 0; i < n; ++i) {
    const rte_mbuf* m = rx.burst[i];
    const uint8_t* head = rte_pktmbuf_mtod(m, const uint8_t*);
    size_t head_len = m->data_len;
    if (head_len < m->pkt_len && head_len < kMaxProbeHeadBytes) {
      // A segmented frame with a short first segment.
      head_len = std::min<size_t>(m->pkt_len, kMaxProbeHeadBytes);
      head = static_cast<const uint8_t*>(rte_pktmbuf_read(
          m, 0, static_cast<uint32_t>(head_len), rx.scratch.data()));
      if (head == nullptr) head_len = 0;
    }
    Probe probe;
    if (ParseProbe(head, head_len, m->pkt_len, &probe) != ProbeParse::kOk ||
        probe.tx_tsc < start_tsc || probe.tx_tsc > now + tsc_slack ||
        probe.stream >= o.flows) {
      ++rx.not_ours;
      continue;
    }
    if (probe.tx_tsc < measure_start_tsc) {
      ++rx.warmup_received;
      continue;
    }
    const SequenceTracker::Arrival arrival =
        rx.trackers[probe.stream].Record(probe.seq);
    if (arrival == SequenceTracker::Arrival::kDuplicate ||
        arrival == SequenceTracker::Arrival::kLate) {
      continue;
    }
    rx.rx_bytes += m->pkt_len;
    // A TX lcore's TSC may run a little ahead of ours (VMs): count 0.
    const uint64_t cycles = now > probe.tx_tsc ? now - probe.tx_tsc : 0;
    rx.latency_ns.Record(
        static_cast<uint64_t>(static_cast<double>(cycles) * ns_per_cycle));
  }
  rte_pktmbuf_free_bulk(rx.burst.data(), n);
}

void Generator::State::Check(uint64_t now) {
  rx.next_check_tsc = now + check_cycles;
  if (const int sig = g_stop_signal.load(std::memory_order_relaxed); sig) {
    Fail(absl::StrCat("interrupted by signal ", sig, " after ",
                      static_cast<double>(now - start_tsc) / hz,
                      " s: partial results"));
    return;
  }
  for (uint16_t port : ports) {
    rte_eth_link link = {};
    if (rte_eth_link_get_nowait(port, &link) == 0 && !link.link_status) {
      Fail(absl::StrCat(PortLabel(port),
                        " went down during the run: did the peer "
                        "(spinnicd/testpmd) stop? Partial results"));
      return;
    }
  }
  if (rx.frames > 0 && now - rx.last_tsc > peer_timeout_cycles) {
    Fail(absl::StrCat("nothing received on ", PortLabel(o.rx_port), " for ",
                      static_cast<double>(peer_timeout_cycles) / hz,
                      " s after ", rx.frames,
                      " frames: the peer stopped forwarding. Partial results"));
  }
}

void Generator::Run(RunResult* result) {
  State& s = *state_;
  const Options& o = s.o;
  s.hz = rte_get_tsc_hz();
  const double hz = static_cast<double>(s.hz);
  s.ns_per_cycle = 1e9 / hz;
  s.frames_per_cycle = static_cast<double>(o.rate_pps) / hz;
  s.check_cycles = static_cast<uint64_t>(kCheckIntervalS * hz);
  s.tsc_slack = s.hz / 1000;  // 1 ms
  s.drain_cycles = static_cast<uint64_t>(o.drain_ms * 1e-3 * hz);
  double peer_timeout_s = o.peer_timeout_s;
  if (o.rate_pps > 0) {
    peer_timeout_s =
        std::max(peer_timeout_s, 3.0 / static_cast<double>(o.rate_pps));
  }
  s.peer_timeout_cycles = static_cast<uint64_t>(peer_timeout_s * hz);
  s.tx.next_seq.assign(o.flows, 0);
  s.tx.sent_measured.assign(o.flows, 0);
  s.rx.trackers.assign(o.flows, SequenceTracker());

  s.start_tsc = rte_rdtsc();
  s.measure_start_tsc = s.start_tsc + static_cast<uint64_t>(o.warmup_s * hz);
  s.tx_end_tsc = s.measure_start_tsc + static_cast<uint64_t>(o.duration_s * hz);
  s.rx.next_check_tsc = s.start_tsc + s.check_cycles;
  s.tx.pace_origin_tsc = s.start_tsc;

  if (s.split) {
    rte_eal_remote_launch(
        [](void* arg) {
          auto* st = static_cast<State*>(arg);
          while (!st->tx.done) st->TxStep(rte_rdtsc());
          return 0;
        },
        &s, s.tx_lcore);
  }
  while (true) {
    uint64_t now = rte_rdtsc();
    if (!s.split) s.TxStep(now);
    s.RxStep();
    now = rte_rdtsc();
    if (now >= s.rx.next_check_tsc) s.Check(now);
    if (s.stop.load(std::memory_order_relaxed)) break;
    const uint64_t done = s.tx_done_tsc.load(std::memory_order_acquire);
    if (done != 0 && now - done >= s.drain_cycles) break;
  }
  s.stop.store(true, std::memory_order_relaxed);
  if (s.split) {
    rte_eal_wait_lcore(s.tx_lcore);
  } else {
    s.TxStep(rte_rdtsc());  // frees what is pending, if stopped early
  }

  RunResult& r = *result;
  r.size = o.size;
  r.flows = o.flows;
  r.rate_pps = o.rate_pps;
  r.tx_port = o.tx_port;
  r.rx_port = o.rx_port;
  r.threads = s.split ? "split" : "single";
  r.tsc_hz = s.hz;
  r.duration_s =
      s.tx.end_tsc > s.measure_start_tsc
          ? static_cast<double>(s.tx.end_tsc - s.measure_start_tsc) / hz
          : 0.0;
  r.sent = s.tx.sent;
  r.tx_bytes = s.tx.sent * o.size;
  r.seq = SequenceCounts();
  for (uint32_t i = 0; i < o.flows; ++i) {
    r.seq += s.rx.trackers[i].Finish(s.tx.sent_measured[i]);
  }
  r.rx_bytes = s.rx.rx_bytes;
  r.latency_ns = s.rx.latency_ns;
  r.warmup_sent = s.tx.warmup_sent;
  r.warmup_received = s.rx.warmup_received;
  r.not_ours = s.rx.not_ours;
  if (!s.rx.error.empty()) {
    r.error = s.rx.error;
  } else if (s.rx.frames == 0) {
    r.error = absl::StrCat(
        "nothing came back: ", s.tx.sent + s.tx.warmup_sent, " frames sent on ",
        PortLabel(o.tx_port), ", none received on ", PortLabel(o.rx_port),
        ": is the DUT forwarding between them (testpmd started, spinnicd "
        "pairing the two ports)?");
  }
}

}  // namespace spinnic::gen
