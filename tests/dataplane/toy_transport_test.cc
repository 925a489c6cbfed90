// The transport seam (dataplane/transport.h), proven from outside: a toy
// third transport registered at run time — no dataplane/ file knows it —
// takes the frames addressed to it through the real HPU loop, while every
// other frame keeps its way (passthrough), and the HPU polls and shuts it
// down like the built-in ones.
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/status/status.h"
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

constexpr uint16_t kToyPort = 7777;

// What the toy saw; one HPU per test, so plain counters would do, but the
// shutdown test reads them from the main thread after the HPU stopped.
struct ToyCounts {
  std::atomic<uint64_t> engines{0};
  std::atomic<uint64_t> received{0};
  std::atomic<uint64_t> polls{0};
  std::atomic<uint64_t> shutdowns{0};
  std::atomic<uint64_t> closes{0};
};
ToyCounts counts;

// Echo: a UDP frame to kToyPort goes back out of the port it came in on,
// MACs swapped.
class ToyEngine final : public TransportEngine {
 public:
  explicit ToyEngine(Hpu& hpu) : hpu_(hpu) {}
  bool ForUs(const ParsedFrame& frame) const override {
    return frame.layers.ip_proto == 17 && frame.has_l4_ports &&
           frame.dst_port == kToyPort;
  }
  void Receive(rte_mbuf* packet, const ParsedFrame&, uint16_t in_port,
               const EctxTable&) override {
    uint8_t* eth = rte_pktmbuf_mtod(packet, uint8_t*);
    uint8_t mac[6];
    std::memcpy(mac, eth, 6);
    std::memcpy(eth, eth + 6, 6);
    std::memcpy(eth + 6, mac, 6);
    counts.received.fetch_add(1);
    hpu_.Transmit(in_port, packet);
  }
  void Poll(const EctxTable&) override { counts.polls.fetch_add(1); }
  void Shutdown() override { counts.shutdowns.fetch_add(1); }

 private:
  Hpu& hpu_;
};

class ToyModule final : public TransportModule {
 public:
  static absl::StatusOr<std::unique_ptr<TransportModule>> Make(
      const DataplaneConfig&) {
    return std::unique_ptr<TransportModule>(new ToyModule());
  }
  std::string_view name() const override { return "toy"; }
  absl::Status Open(const TransportEnv& env) override {
    return env.ports.size() == 2
               ? absl::OkStatus()
               : absl::InvalidArgumentError("toy: expected two ports");
  }
  std::unique_ptr<TransportEngine> CreateEngine(uint32_t, Hpu& hpu,
                                                SpinEngine&) override {
    counts.engines.fetch_add(1);
    return std::make_unique<ToyEngine>(hpu);
  }
  void Close() override { counts.closes.fetch_add(1); }
};

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    absl::Status status =
        InitEal({"toy_transport_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0", "--log-level", "4"});
    ASSERT_TRUE(status.ok()) << status;
    RegisterTransport(&ToyModule::Make);
  }
};

class ToyTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int instance = 0;
    absl::StatusOr<std::unique_ptr<testing_rings::RingDataplane>> rings =
        testing_rings::RingDataplane::Create(absl::StrCat("toy", ++instance));
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    pool_ = rte_mempool_lookup("spinnic_pkts");
    ASSERT_NE(pool_, nullptr);
  }

  void Inject(int side, const Bytes& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(m, nullptr);
    char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    ASSERT_NE(data, nullptr);
    std::memcpy(data, frame.data(), frame.size());
    ASSERT_EQ(testing_wire::PutOnWire(rings_->rx(side), m), 0);
  }

  // The frames the dataplane sent out of `side`, in order.
  std::vector<Bytes> Sent(int side) {
    std::vector<Bytes> frames;
    void* object;
    while (testing_wire::TakeFromWire(rings_->tx(side), &object) == 0) {
      auto* m = static_cast<rte_mbuf*>(object);
      const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
      frames.emplace_back(data, data + m->data_len);
      rte_pktmbuf_free(m);
    }
    return frames;
  }

  std::unique_ptr<testing_rings::RingDataplane> rings_;
  rte_mempool* pool_ = nullptr;
};

TEST_F(ToyTransportTest, TakesItsFramesThroughTheHpuAndLeavesTheRest) {
  const uint64_t received = counts.received.load();
  const uint64_t polls = counts.polls.load();
  EXPECT_GE(counts.engines.load(), 1u);

  const Bytes toy = frames::Udp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 4000,
                                 kToyPort, Bytes(20, 0x5a));
  const Bytes other = frames::Udp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 4000,
                                   53, Bytes(20, 1));
  Inject(0, toy);
  Inject(0, other);
  Hpu& hpu = rings_->dataplane().hpu(0);
  EXPECT_EQ(hpu.PollOnce(), 2u);

  // The toy's frame went back out of wire0, MACs swapped, otherwise
  // byte for byte what came in.
  Bytes echoed = toy;
  std::swap_ranges(echoed.begin(), echoed.begin() + 6, echoed.begin() + 6);
  const std::vector<Bytes> wire = Sent(0);
  ASSERT_EQ(wire.size(), 1u);
  EXPECT_EQ(wire[0], echoed);
  // The other one passed through to host0 untouched.
  const std::vector<Bytes> host = Sent(1);
  ASSERT_EQ(host.size(), 1u);
  EXPECT_EQ(host[0], other);

  EXPECT_EQ(counts.received.load() - received, 1u);
  EXPECT_EQ(counts.polls.load() - polls, 1u);
}

TEST_F(ToyTransportTest, HpuShutsItDownAndTheDataplaneClosesIt) {
  const uint64_t shutdowns = counts.shutdowns.load();
  const uint64_t closes = counts.closes.load();
  ASSERT_TRUE(rings_->dataplane().Start().ok());
  rings_->dataplane().Stop();
  EXPECT_EQ(counts.shutdowns.load() - shutdowns, 1u);
  rings_.reset();
  EXPECT_EQ(counts.closes.load() - closes, 1u);
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment());
  return RUN_ALL_TESTS();
}
