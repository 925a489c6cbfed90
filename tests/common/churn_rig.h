// The control-plane churn rig: a real dataplane on two net_ring ports with
// its HPU launched on its own lcore, the real gRPC server on a Unix socket,
// the client library, and a traffic thread that keeps the wire port busy
// with numbered UDP frames and checks every one that leaves the host port:
// each sequence number exactly once, in order, bytes unchanged. While the
// traffic runs, Churn() installs, replaces and removes handlers (and binds
// and frees regions) over gRPC. Used by tests/control/churn_test.cc (which
// asserts) and bench/control/churn_bench.cc (which reports).
//
// The traffic keeps at most `window` frames in flight, so the rings never
// overflow: any frame missing at the end was lost by the dataplane.
#ifndef SPINNIC_TESTS_COMMON_CHURN_RIG_H_
#define SPINNIC_TESTS_COMMON_CHURN_RIG_H_

#include <malloc.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "control/client/control_client.h"
#include "control/grpc/control_server.h"
#include "dataplane/dataplane.h"
#include "tests/common/frames.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic::churn {

// What one process has allocated, by allocator.
struct Memory {
  uint64_t malloc_in_use = 0;  // libc heap (mallinfo2)
  uint64_t eal_in_use = 0;     // rte_malloc heaps
  uint64_t rss = 0;            // resident set, bytes

  static Memory Now() {
    Memory m;
    m.malloc_in_use = mallinfo2().uordblks;
    rte_malloc_socket_stats stats;
    if (rte_malloc_get_socket_stats(0, &stats) == 0) {
      m.eal_in_use = stats.heap_allocsz_bytes;
    }
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages >> pages;
    m.rss = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    return m;
  }
};

struct TrafficCounts {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t out_of_order = 0;
  uint64_t corrupted = 0;
};

// Numbered frames in, checked frames out, from one thread.
class Traffic {
 public:
  Traffic(rte_ring* wire_rx, rte_ring* host_tx, rte_mempool* pool,
          uint32_t window)
      : wire_rx_(wire_rx), host_tx_(host_tx), pool_(pool), window_(window) {
    template_ = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                             "10.0.0.2", 4000, 4001, frames::Bytes(64, 0x5a));
    seq_at_ = template_.size() - 64;
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }

  // Stops sending; returns once every frame sent came out, or after
  // `drain_for` (then the counts show what is missing).
  TrafficCounts Stop(absl::Duration drain_for = absl::Seconds(5)) {
    drain_deadline_ = absl::Now() + drain_for;
    stop_.store(true);
    thread_.join();
    return counts_;
  }

  uint64_t sent() const { return sent_.load(std::memory_order_relaxed); }

 private:
  void Run() {
    constexpr unsigned kBurst = 32;
    rte_mbuf* burst[kBurst];
    void* out[kBurst];
    for (;;) {
      unsigned n = testing_wire::TakeBurstFromWire(host_tx_, out, kBurst);
      for (unsigned i = 0; i < n; ++i) Check(static_cast<rte_mbuf*>(out[i]));
      bool stopping = stop_.load();
      if (stopping &&
          (counts_.received == counts_.sent || absl::Now() > drain_deadline_)) {
        return;
      }
      uint64_t in_flight = counts_.sent - counts_.received;
      if (stopping || in_flight >= window_) {
        if (n == 0) std::this_thread::yield();
        continue;
      }
      unsigned want = static_cast<unsigned>(
          std::min<uint64_t>(kBurst, window_ - in_flight));
      if (rte_pktmbuf_alloc_bulk(pool_, burst, want) != 0) continue;
      for (unsigned i = 0; i < want; ++i) {
        uint8_t* data = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(
            burst[i], static_cast<uint16_t>(template_.size())));
        std::memcpy(data, template_.data(), template_.size());
        uint64_t seq = counts_.sent + i;
        std::memcpy(data + seq_at_, &seq, sizeof(seq));
      }
      unsigned queued = testing_wire::PutBurstOnWire(wire_rx_, burst, want);
      for (unsigned i = queued; i < want; ++i) rte_pktmbuf_free(burst[i]);
      counts_.sent += queued;
      sent_.store(counts_.sent, std::memory_order_relaxed);
    }
  }

  void Check(rte_mbuf* m) {
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    uint64_t seq = 0;
    bool intact = m->pkt_len == template_.size() && m->nb_segs == 1;
    if (intact) {
      std::memcpy(&seq, data + seq_at_, sizeof(seq));
      intact = std::memcmp(data, template_.data(), seq_at_) == 0 &&
               std::memcmp(data + seq_at_ + 8, template_.data() + seq_at_ + 8,
                           template_.size() - seq_at_ - 8) == 0;
    }
    if (!intact) {
      ++counts_.corrupted;
    } else if (seq != next_expected_) {
      ++counts_.out_of_order;
    }
    next_expected_ = seq + 1;
    ++counts_.received;
    rte_pktmbuf_free(m);
  }

  rte_ring* wire_rx_;
  rte_ring* host_tx_;
  rte_mempool* pool_;
  uint32_t window_;
  frames::Bytes template_;
  size_t seq_at_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
  absl::Time drain_deadline_;
  TrafficCounts counts_;
  uint64_t next_expected_ = 0;
};

struct ChurnResult {
  uint64_t cycles = 0;
  uint64_t control_calls = 0;
  absl::Duration elapsed;
  TrafficCounts traffic;
  uint64_t port_drops = 0;  // all reasons, both ports
  uint64_t wire_rx = 0;
  uint64_t host_tx = 0;
  uint64_t handled_packets = 0;  // by the churned handlers, summed
  Memory before;
  Memory after;
};

// Owns everything; Create() once per process (it initialises the EAL).
class Rig {
 public:
  static absl::StatusOr<std::unique_ptr<Rig>> Create(const std::string& name) {
    std::unique_ptr<Rig> rig(new Rig());
    absl::Status eal =
        InitEal({name, "--no-huge", "-m", "256", "--no-pci", "--no-shconf",
                 "--lcores", "0@0,1@1", "--log-level", "4"});
    if (!eal.ok()) return eal;
    absl::StatusOr<std::unique_ptr<testing_rings::RingDataplane>> rings =
        testing_rings::RingDataplane::Create(
            name, {.ring_size = kRingSize, .descriptors = 512, .mbufs = 0});
    if (!rings.ok()) return rings.status();
    rig->rings_ = *std::move(rings);
    rig->pool_ = rte_pktmbuf_pool_create((name + "pool").c_str(), 8191, 256, 0,
                                         RTE_MBUF_DEFAULT_BUF_SIZE, 0);
    if (rig->pool_ == nullptr) {
      return absl::ResourceExhaustedError("cannot create the traffic pool");
    }
    rig->socket_ = absl::StrCat("/tmp/spinnic-", name, "-", getpid(), ".sock");
    absl::StatusOr<std::unique_ptr<ControlServer>> server =
        ControlServer::Start({.unix_socket = rig->socket_},
                             rig->rings_->config(), &rig->dataplane());
    if (!server.ok()) return server.status();
    rig->server_ = *std::move(server);
    absl::StatusOr<std::unique_ptr<ControlClient>> client =
        ControlClient::Connect({.target = "unix:" + rig->socket_});
    if (!client.ok()) return client.status();
    rig->client_ = *std::move(client);
    absl::Status started = rig->dataplane().Start();
    if (!started.ok()) return started;
    return rig;
  }

  ~Rig() {
    client_.reset();
    server_.reset();
    rings_.reset();
    rte_mempool_free(pool_);
  }

  // `cycles` times, while traffic flows: install `count` on the traffic's
  // flow, replace it with `null`, remove it; every tenth cycle also register
  // a region, bind `capture` to it, remove the handler and deregister the
  // region. Stops at the first failed call.
  absl::StatusOr<ChurnResult> Churn(int cycles) {
    ChurnResult result;
    // One cycle before measuring, so that allocations that are made once
    // (gRPC, absl, the allocator's arenas) are not counted as growth.
    absl::Status warm = Cycle(0, &result);
    if (!warm.ok()) return warm;
    result = ChurnResult();
    Traffic traffic(rings_->rx(0), rings_->tx(1), pool_, kWindow);
    traffic.Start();
    // Some traffic before the first change.
    for (int i = 0; i < 1000 && traffic.sent() < 10 * kWindow; ++i) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    result.before = Memory::Now();
    absl::Time start = absl::Now();
    absl::Status status;
    for (int c = 1; c <= cycles && status.ok(); ++c) {
      status = Cycle(c, &result);
      result.cycles += status.ok();
    }
    result.elapsed = absl::Now() - start;
    result.after = Memory::Now();
    result.traffic = traffic.Stop();
    if (!status.ok()) return status;
    StatsSnapshot stats = dataplane().Snapshot();
    for (const PortStats& port : stats.ports) {
      for (uint64_t drops : port.drops) result.port_drops += drops;
    }
    result.wire_rx = stats.ports[0].rx_packets;
    result.host_tx = stats.ports[1].tx_packets;
    return result;
  }

  Dataplane& dataplane() { return rings_->dataplane(); }
  ControlClient& client() { return *client_; }
  // Traffic through the rig's ports (wire0 in, host0 out), not started;
  // one at a time.
  std::unique_ptr<Traffic> MakeTraffic() {
    return std::make_unique<Traffic>(rings_->rx(0), rings_->tx(1), pool_,
                                     kWindow);
  }

 private:
  static constexpr unsigned kRingSize = 4096;
  static constexpr uint32_t kWindow = 1024;

  Rig() = default;

  absl::Status Cycle(int c, ChurnResult* result) {
    v1::InstallHandlerRequest install;
    install.mutable_handler()->set_name("churn");
    install.mutable_handler()->set_kind("count");
    install.mutable_handler()->mutable_match()->set_ip_proto(17);
    absl::StatusOr<uint32_t> id = client_->InstallHandler(install);
    if (!id.ok()) return id.status();
    // Long enough for the handler to see some frames.
    absl::SleepFor(absl::Microseconds(200));
    absl::StatusOr<v1::ListHandlersResponse> listed = client_->ListHandlers();
    if (!listed.ok()) return listed.status();
    for (const v1::HandlerStats& stats : listed->stats()) {
      result->handled_packets += stats.packets();
    }
    install.set_replace(true);
    install.mutable_handler()->set_kind("null");
    id = client_->InstallHandler(install);
    if (!id.ok()) return id.status();
    absl::Status removed = client_->RemoveHandler("churn");
    if (!removed.ok()) return removed;
    result->control_calls += 4;
    if (c % 10 != 0) return absl::OkStatus();

    v1::RegisterRegionRequest region;
    region.set_length(64 << 10);
    region.mutable_access()->set_local_write(true);
    absl::StatusOr<v1::RegisterRegionResponse> registered =
        client_->RegisterRegion(region);
    if (!registered.ok()) return registered.status();
    v1::InstallHandlerRequest capture;
    capture.mutable_handler()->set_name("churn-capture");
    capture.mutable_handler()->set_kind("capture");
    capture.mutable_handler()->mutable_match()->set_ip_proto(17);
    capture.add_bound_regions(registered->id());
    id = client_->InstallHandler(capture);
    if (!id.ok()) return id.status();
    absl::SleepFor(absl::Microseconds(200));
    removed = client_->RemoveHandler("churn-capture");
    if (!removed.ok()) return removed;
    absl::Status deregistered = client_->DeregisterRegion(registered->id());
    if (!deregistered.ok()) return deregistered;
    result->control_calls += 4;
    return absl::OkStatus();
  }

  std::unique_ptr<testing_rings::RingDataplane> rings_;
  rte_mempool* pool_ = nullptr;
  std::string socket_;
  std::unique_ptr<ControlServer> server_;
  std::unique_ptr<ControlClient> client_;
};

}  // namespace spinnic::churn

#endif  // SPINNIC_TESTS_COMMON_CHURN_RIG_H_
