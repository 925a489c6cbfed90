// The transport TX pacer (dataplane/tx_pacer.h) in the real HPU loop: host
// traffic crossing the appliance (host0 -> wire0) shares wire0's TX queue, a
// net_ring whose ring holds 63 frames and which the test, as the link,
// empties by a fixed number of frames after each loop, with a flood of
// transport frames. The flood comes from a toy transport registered at run
// time that answers each trigger frame received on wire0 with a burst of
// frames out of wire0, from Receive, as a go-back-N sender answers a NACK:
// before the host port's RX burst of the same loop. One HPU, polled on the
// test thread: every number is exact.
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dataplane.h"
#include "dataplane/hpu.h"
#include "dataplane/transport.h"
#include "gtest/gtest.h"
#include "tests/common/frames.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using frames::Bytes;
using frames::kMacA;
using frames::kMacB;

constexpr uint16_t kTriggerPort = 7778;    // UDP: "send a burst now"
constexpr uint16_t kTransportPort = 9999;  // UDP: the flood's frames
constexpr uint16_t kHostPort = 5001;       // UDP: host traffic
// Where a frame's UDP destination port is (Ethernet + IPv4 without options).
constexpr size_t kUdpDstAt = 14 + 20 + 2;

// The flood transport's knobs and what it saw; the test thread is the only
// thread (the HPU is polled by hand).
struct Flood {
  uint32_t frames_per_trigger = 64;
  uint64_t sent = 0;
  uint64_t refused = 0;  // Transmit said no (the pacer's queue was full)
  rte_mempool* pool = nullptr;
  // A burst of `poll_frames` out of port 0 from HPU `poll_hpu`'s next Poll.
  uint32_t poll_hpu = UINT32_MAX;
  uint32_t poll_frames = 0;
};
Flood flood;

class FloodEngine final : public TransportEngine {
 public:
  FloodEngine(uint32_t index, Hpu& hpu)
      : index_(index),
        hpu_(hpu),
        frame_(frames::Udp4(kMacB, kMacA, "10.9.0.1", "10.9.0.2", 4000,
                            kTransportPort, Bytes(100, 0x7e))) {}
  bool ForUs(const ParsedFrame& frame) const override {
    return frame.layers.ip_proto == 17 && frame.has_l4_ports &&
           frame.dst_port == kTriggerPort;
  }
  void Receive(rte_mbuf* packet, const ParsedFrame&, uint16_t in_port,
               const EctxTable&) override {
    rte_pktmbuf_free(packet);
    Burst(in_port, flood.frames_per_trigger);
  }
  void Poll(const EctxTable&) override {
    if (index_ != flood.poll_hpu || flood.poll_frames == 0) return;
    Burst(0, flood.poll_frames);
    flood.poll_frames = 0;
  }
  void Shutdown() override {}

 private:
  // Frames numbered in their last payload byte, so that order shows.
  void Burst(uint16_t port, uint32_t frames) {
    for (uint32_t i = 0; i < frames; ++i) {
      rte_mbuf* m = rte_pktmbuf_alloc(flood.pool);
      if (m == nullptr) return;
      char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame_.size()));
      std::memcpy(data, frame_.data(), frame_.size());
      data[frame_.size() - 1] = static_cast<char>(i);
      ++flood.sent;
      if (!hpu_.Transmit(port, m)) ++flood.refused;
    }
  }

  uint32_t index_;
  Hpu& hpu_;
  Bytes frame_;
};

class FloodModule final : public TransportModule {
 public:
  static absl::StatusOr<std::unique_ptr<TransportModule>> Make(
      const DataplaneConfig&) {
    return std::unique_ptr<TransportModule>(new FloodModule());
  }
  std::string_view name() const override { return "flood"; }
  absl::Status Open(const TransportEnv& env) override {
    flood.pool = env.pool;
    return absl::OkStatus();
  }
  std::unique_ptr<TransportEngine> CreateEngine(uint32_t index, Hpu& hpu,
                                                SpinEngine&) override {
    return std::make_unique<FloodEngine>(index, hpu);
  }
};

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    absl::Status status =
        InitEal({"pacer_dataplane_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0,2@0", "--log-level", "4"});
    ASSERT_TRUE(status.ok()) << status;
    RegisterTransport(&FloodModule::Make);
  }
};

struct Scenario {
  bool pacer = false;
  uint32_t share = 0;           // passthrough_share_percent
  uint32_t queue = 128;         // queue_frames
  uint32_t host_per_loop = 12;  // host frames offered per loop
  uint32_t link_per_loop = 16;  // frames the link takes from the ring
  uint32_t burst_every = 1;     // loops between two transport bursts
  uint32_t loops = 500;
};

struct Outcome {
  uint64_t host_offered = 0, host_delivered = 0, transport_delivered = 0;
  uint64_t flood_sent = 0, flood_refused = 0;
  PortStats wire;
  int64_t mbufs_in_use = 0;  // after the link emptied the ring

  double host_loss() const {
    return 1.0 - static_cast<double>(host_delivered) /
                     static_cast<double>(host_offered);
  }
  // Host traffic's share of what the link carried.
  double host_share() const {
    return static_cast<double>(host_delivered) /
           static_cast<double>(host_delivered + transport_delivered);
  }
};

void Inject(rte_mempool* pool, rte_ring* ring, const Bytes& frame) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool);
  ASSERT_NE(m, nullptr);
  char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
  std::memcpy(data, frame.data(), frame.size());
  ASSERT_EQ(testing_wire::PutOnWire(ring, m), 0);
}

// The link: takes up to `count` frames from wire0's TX ring, by kind.
void Link(rte_ring* ring, uint32_t count, Outcome* out) {
  void* object;
  for (uint32_t i = 0;
       i < count && testing_wire::TakeFromWire(ring, &object) == 0; ++i) {
    auto* m = static_cast<rte_mbuf*>(object);
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    const uint16_t port =
        static_cast<uint16_t>(data[kUdpDstAt] << 8 | data[kUdpDstAt + 1]);
    if (port == kHostPort) ++out->host_delivered;
    if (port == kTransportPort) ++out->transport_delivered;
    rte_pktmbuf_free(m);
  }
}

Outcome RunScenario(const Scenario& s) {
  static int instance = 0;
  Outcome out;
  testing_rings::RingDataplaneOptions options;
  options.ring_size = 1024;
  options.mbufs = 8191;
  options.wire_tx_ring_size = 64;  // 63 frames: the congested TX queue
  options.wire_pacer.enabled = s.pacer;
  options.wire_pacer.passthrough_share_percent = s.share;
  options.wire_pacer.queue_frames = s.queue;
  absl::StatusOr<std::unique_ptr<testing_rings::RingDataplane>> made =
      testing_rings::RingDataplane::Create(absl::StrCat("pc", ++instance),
                                           options);
  EXPECT_TRUE(made.ok()) << made.status();
  if (!made.ok()) return out;
  testing_rings::RingDataplane& rings = **made;
  rte_mempool* pool = flood.pool;
  flood.sent = flood.refused = 0;
  const Bytes trigger = frames::Udp4(kMacA, kMacB, "10.9.0.2", "10.9.0.1", 4000,
                                     kTriggerPort, Bytes(20, 1));
  const Bytes host = frames::Udp4(kMacB, kMacA, "10.0.0.1", "10.0.0.2", 4000,
                                  kHostPort, Bytes(100, 2));
  Hpu& hpu = rings.dataplane().hpu(0);
  for (uint32_t loop = 0; loop < s.loops; ++loop) {
    if (loop % s.burst_every == 0) Inject(pool, rings.rx(0), trigger);
    for (uint32_t i = 0; i < s.host_per_loop; ++i) {
      Inject(pool, rings.rx(1), host);
    }
    out.host_offered += s.host_per_loop;
    hpu.PollOnce();
    Link(rings.tx(0), s.link_per_loop, &out);
  }
  Link(rings.tx(0), UINT32_MAX, &out);  // the link carries what is queued
  out.flood_sent = flood.sent;
  out.flood_refused = flood.refused;
  out.wire = rings.dataplane().Snapshot().ports[0];
  out.mbufs_in_use = static_cast<int64_t>(rte_mempool_in_use_count(pool));
  return out;
}

uint64_t TxFull(const PortStats& port) {
  return port.drops[static_cast<size_t>(DropReason::kTxFull)];
}

TEST(PacerDataplaneTest, WithoutPacerTransportBurstsStarveHostTraffic) {
  // The counterfactual the pacer tests below are measured against: the
  // burst from Receive takes the free descriptors before host traffic.
  const Outcome out = RunScenario({.pacer = false});
  EXPECT_GT(out.host_loss(), 0.5);
  EXPECT_LT(out.host_share(), 0.5);
  EXPECT_GT(TxFull(out.wire), 0u);
  EXPECT_EQ(out.wire.transport_paced, 0u);
}

TEST(PacerDataplaneTest, PacerKeepsHostTrafficAndCountsWhatItRefuses) {
  const Outcome out = RunScenario({.pacer = true, .share = 50});
  // Host traffic asks for 12 of the 16 frames a loop carries: none lost.
  EXPECT_EQ(out.host_delivered, out.host_offered);
  EXPECT_GE(out.host_share(), 0.5);
  EXPECT_EQ(TxFull(out.wire), 0u);
  // The transport still gets the rest of the link.
  EXPECT_GE(out.transport_delivered, 4u * (500 - 1));
  // Every flood frame is accounted for: sent on, refused (and counted on
  // the port as the toy saw it), or waiting in the pacer.
  EXPECT_GT(out.flood_refused, 0u);
  EXPECT_EQ(out.wire.transport_refused, out.flood_refused);
  EXPECT_EQ(out.wire.transport_paced, out.transport_delivered);
  EXPECT_EQ(out.flood_sent, out.wire.transport_paced +
                                out.wire.transport_refused +
                                out.wire.transport_held);
  EXPECT_LE(out.wire.transport_held, 128u);  // bounded by queue_frames
  EXPECT_EQ(out.wire.tx_packets, out.host_delivered + out.transport_delivered);
  // Nothing leaked: the only mbufs out of the pool are the held frames.
  EXPECT_EQ(out.mbufs_in_use, static_cast<int64_t>(out.wire.transport_held));
}

TEST(PacerDataplaneTest, HostKeepsItsShareWhenItOverloadsTheLink) {
  // Host traffic alone asks for 24 frames a loop where the link takes 16.
  const Outcome paced =
      RunScenario({.pacer = true, .share = 75, .host_per_loop = 24});
  EXPECT_GE(paced.host_share(), 0.75);
  const Outcome unpaced = RunScenario({.pacer = false, .host_per_loop = 24});
  EXPECT_LT(unpaced.host_share(), 0.75);
}

// Two HPUs on ports of one queue each: the software scheduler's layout,
// where HPU 1 has no TX queue on wire0. Its pacer hands its transport
// frames to wire0's TX ring, which HPU 0 sends: all arrive, in order.
TEST(PacerDataplaneTest, HpuWithoutATxQueuePacesIntoThePortsTxRing) {
  testing_rings::RingDataplaneOptions options;
  options.workers = 2;
  options.wire_pacer.enabled = true;
  options.wire_pacer.passthrough_share_percent = 50;
  options.wire_pacer.queue_frames = 64;
  absl::StatusOr<std::unique_ptr<testing_rings::RingDataplane>> made =
      testing_rings::RingDataplane::Create("pcs", options);
  ASSERT_TRUE(made.ok()) << made.status();
  testing_rings::RingDataplane& rings = **made;
  flood.sent = flood.refused = 0;
  flood.poll_hpu = 1;
  flood.poll_frames = 40;
  rings.dataplane().hpu(1).PollOnce();  // 32 (a burst) into the TX ring
  rings.dataplane().hpu(0).PollOnce();  // HPU 0 sends them
  rings.dataplane().hpu(1).PollOnce();  // the other 8
  rings.dataplane().hpu(0).PollOnce();
  flood.poll_hpu = UINT32_MAX;
  std::vector<uint8_t> order;
  void* object;
  while (testing_wire::TakeFromWire(rings.tx(0), &object) == 0) {
    auto* m = static_cast<rte_mbuf*>(object);
    order.push_back(rte_pktmbuf_mtod(m, const uint8_t*)[m->data_len - 1]);
    rte_pktmbuf_free(m);
  }
  ASSERT_EQ(order.size(), 40u);
  for (uint8_t i = 0; i < 40; ++i) EXPECT_EQ(order[i], i);
  const PortStats wire = rings.dataplane().Snapshot().ports[0];
  ASSERT_EQ(wire.queues, 1u);  // so HPU 1 has no TX queue on it
  EXPECT_EQ(wire.transport_paced, 40u);
  EXPECT_EQ(wire.transport_held, 0u);
  EXPECT_EQ(wire.tx_packets, 40u);  // counted once, by HPU 0
  EXPECT_EQ(flood.refused, 0u);
}

// The figure of the report: host traffic's loss through the congested TX
// queue, with and without the pacer (share 50), against its offered load
// in percent of the link (a 64-frame transport burst every loop), then
// against how often the transport bursts (host traffic at half the link):
// a burst every 16 loops is a path that loses now and then. Printed; the
// assertions are above.
TEST(PacerDataplaneTest, Figure) {
  std::printf("%-12s %-12s %-8s %12s %12s %12s\n", "host_load_%", "burst_every",
              "pacer", "host_loss_%", "host_share_%", "refused");
  auto row = [](uint32_t host, uint32_t every, bool pacer) {
    const Outcome out = RunScenario({.pacer = pacer,
                                     .share = 50,
                                     .host_per_loop = host,
                                     .burst_every = every});
    std::printf("%-12u %-12u %-8s %12.1f %12.1f %12llu\n", host * 100 / 16,
                every, pacer ? "share50" : "off", 100 * out.host_loss(),
                100 * out.host_share(),
                static_cast<unsigned long long>(out.wire.transport_refused));
  };
  for (uint32_t host : {4u, 8u, 12u, 16u}) {
    for (bool pacer : {false, true}) row(host, 1, pacer);
  }
  for (uint32_t every : {2u, 4u, 8u, 16u, 32u}) {
    for (bool pacer : {false, true}) row(8, every, pacer);
  }
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment);
  return RUN_ALL_TESTS();
}
