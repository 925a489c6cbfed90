// The real dataplane (ports, HPU loop, classifier, sPIN engine, handlers) on
// in-process net_ring ports: frames go in through one ring and are checked
// byte for byte where they come out. The HPU is polled on the test thread
// (Hpu::PollOnce), so every expectation is exact and nothing is timed.
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/roce/roce_config.h"
#include "gtest/gtest.h"
#include "handlers/api/handler.h"
#include "tests/common/frames.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using Bytes = std::vector<uint8_t>;

// A handler that breaks the contract: PROCESS_DATA is a header-only code.
class ReturnsInvalidCode {
 public:
  static constexpr absl::string_view kName = "test_invalid_code";
  static constexpr absl::string_view kDescription = "returns a bad code";
  static constexpr uint32_t kMinStateSize = 0;
  static absl::StatusOr<std::unique_ptr<ReturnsInvalidCode>> Create(
      const HandlerParams&) {
    return std::make_unique<ReturnsInvalidCode>();
  }
  HandlerResult Payload(HandlerContext&, PacketView&) {
    return HandlerResult::kProcessData;
  }
};
SPINNIC_HANDLER(ReturnsInvalidCode);

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // Three lcores on one CPU: HPUs are never launched, the test polls them.
    absl::Status status =
        InitEal({"ring_dataplane_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0,2@0", "--log-level", "4"});
    ASSERT_TRUE(status.ok()) << status;
  }
};

// Two ring ethdevs ("wire" and "host") whose rings the test fills and drains.
class RingDataplaneTest : public ::testing::Test {
 protected:
  static constexpr unsigned kRingSize = 1024;

  void SetUp() override {
    static int instance = 0;
    ++instance;
    for (int side = 0; side < 2; ++side) {
      std::string base = absl::StrCat("t", instance, side ? "h" : "w");
      rx_[side] = rte_ring_create((base + "rx").c_str(), kRingSize, 0,
                                  RING_F_SP_ENQ | RING_F_SC_DEQ);
      tx_[side] = rte_ring_create((base + "tx").c_str(),
                                  side == 1 ? tx_ring_size_ : kRingSize, 0,
                                  RING_F_SP_ENQ | RING_F_SC_DEQ);
      ASSERT_NE(rx_[side], nullptr);
      ASSERT_NE(tx_[side], nullptr);
      int port_id =
          rte_eth_from_rings(base.c_str(), &rx_[side], 1, &tx_[side], 1, 0);
      ASSERT_GE(port_id, 0);
      char name[RTE_ETH_NAME_MAX_LEN];
      ASSERT_EQ(rte_eth_dev_get_name_by_port(port_id, name), 0);
      names_[side] = name;
    }
    // A private pool for frames the test injects, so that the dataplane's own
    // pool accounting stays exact.
    inject_pool_ =
        rte_pktmbuf_pool_create(absl::StrCat("inject", instance).c_str(), 2047,
                                0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
    ASSERT_NE(inject_pool_, nullptr);
  }

  void TearDown() override {
    dataplane_.reset();
    for (int side = 0; side < 2; ++side) {
      Drain(side);
      rte_ring_free(rx_[side]);
      rte_ring_free(tx_[side]);
    }
    EXPECT_EQ(rte_mempool_avail_count(inject_pool_), 2047u)
        << "an injected mbuf leaked";
    rte_mempool_free(inject_pool_);
  }

  void Start(std::vector<HandlerConfig> handlers = {}) {
    DataplaneConfig config;
    for (int side = 0; side < 2; ++side) {
      PortConfig port;
      port.name = side ? "host0" : "wire0";
      port.existing = names_[side];
      port.role = side ? PortRole::kHost : PortRole::kWire;
      port.rx_descriptors = 128;
      port.tx_descriptors = 128;
      port.forward_unchecked = side == 0 && wire_forward_unchecked_;
      config.ports.push_back(port);
    }
    config.port_pairs = {{0, 1}};
    config.worker_cores = std::vector<uint32_t>(hpus_, 0);
    config.handlers = std::move(handlers);
    config.mbufs = 8191;
    absl::StatusOr<std::unique_ptr<Dataplane>> dataplane =
        Dataplane::Create(config);
    ASSERT_TRUE(dataplane.ok()) << dataplane.status();
    dataplane_ = *std::move(dataplane);
  }

  rte_mbuf* MakeMbuf(const Bytes& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(inject_pool_);
    EXPECT_NE(m, nullptr);
    char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    EXPECT_NE(data, nullptr);
    std::memcpy(data, frame.data(), frame.size());
    return m;
  }

  void Inject(int side, const Bytes& frame) {
    ASSERT_EQ(testing_wire::PutOnWire(rx_[side], MakeMbuf(frame)), 0);
  }

  // Everything the dataplane sent out of `side`, freed.
  std::vector<Bytes> Drain(int side) {
    std::vector<Bytes> frames;
    void* object;
    while (testing_wire::TakeFromWire(tx_[side], &object) == 0) {
      rte_mbuf* m = static_cast<rte_mbuf*>(object);
      Bytes bytes(m->pkt_len);
      // Points into the mbuf when contiguous, else copies into `bytes`.
      const uint8_t* p = static_cast<const uint8_t*>(
          rte_pktmbuf_read(m, 0, m->pkt_len, bytes.data()));
      if (p != bytes.data()) std::memcpy(bytes.data(), p, m->pkt_len);
      frames.push_back(std::move(bytes));
      rte_pktmbuf_free(m);
    }
    return frames;
  }

  // Polls every HPU until a whole round moves nothing (twice: frames handed
  // between HPUs arrive one round later).
  void Poll() {
    for (int quiet = 0; quiet < 2;) {
      uint32_t moved = 0;
      for (size_t h = 0; h < dataplane_->hpu_count(); ++h) {
        moved += dataplane_->hpu(h).PollOnce();
      }
      quiet = moved == 0 ? quiet + 1 : 0;
    }
  }

  const PortStats& Port(const StatsSnapshot& s, int side) {
    return s.ports[side];
  }

  unsigned tx_ring_size_ = kRingSize;
  size_t hpus_ = 1;
  // wire0's PortConfig::forward_unchecked.
  bool wire_forward_unchecked_ = false;
  rte_ring* rx_[2];
  rte_ring* tx_[2];
  std::string names_[2];
  rte_mempool* inject_pool_ = nullptr;
  std::unique_ptr<Dataplane> dataplane_;
};

uint64_t Drops(const PortStats& port, DropReason reason) {
  return port.drops[static_cast<size_t>(reason)];
}

TEST_F(RingDataplaneTest, PassthroughKeepsEveryFrameByteIdenticalBothWays) {
  Start();
  std::vector<Bytes> to_host = {
      frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 1000,
                   2000, Bytes(18, 0xab)),
      frames::Tcp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 40000,
                   80, Bytes(1400, 0x5a)),
      frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1", "fd00::2", 1, 2,
                   Bytes(100, 0x11)),
      frames::WithVlan(
          frames::Icmp4Echo(frames::kMacA, frames::kMacB, "10.0.0.1",
                            "10.0.0.2", 7, 1, Bytes(56, 0x61)),
          100),
      frames::Raw(frames::kMacA, frames::kMacB, 0x88b5, Bytes(46, 0x42)),
      frames::Arp(frames::kMacA, "10.0.0.1", "10.0.0.2"),
  };
  for (const Bytes& frame : to_host) Inject(0, frame);
  Bytes reply = frames::Udp4(frames::kMacB, frames::kMacA, "10.0.0.2",
                             "10.0.0.1", 2000, 1000, Bytes(30, 0xcd));
  Inject(1, reply);
  Poll();
  EXPECT_EQ(Drain(1), to_host);
  EXPECT_EQ(Drain(0), std::vector<Bytes>{reply});

  StatsSnapshot stats = dataplane_->Snapshot();
  EXPECT_EQ(Port(stats, 0).rx_packets, to_host.size());
  EXPECT_EQ(Port(stats, 1).tx_packets, to_host.size());
  EXPECT_EQ(Port(stats, 1).rx_packets, 1u);
  EXPECT_EQ(Port(stats, 0).tx_packets, 1u);
  uint64_t bytes = 0;
  for (const Bytes& f : to_host) bytes += f.size();
  EXPECT_EQ(Port(stats, 0).rx_bytes, bytes);
  EXPECT_EQ(Port(stats, 1).tx_bytes, bytes);

  // After the stop the device's own counters are still reported.
  dataplane_->Stop();
  stats = dataplane_->Snapshot();
  EXPECT_EQ(Port(stats, 0).hw_ipackets, to_host.size());
  EXPECT_EQ(Port(stats, 1).hw_opackets, to_host.size());
  EXPECT_EQ(Port(stats, 1).tx_packets, to_host.size());
}

TEST_F(RingDataplaneTest, MalformedFramesAreDroppedAndCountedByReason) {
  Start();
  Inject(0, Bytes(10, 0xff));  // runt
  Bytes truncated = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                 "10.0.0.2", 1, 2, Bytes(64, 0));
  truncated.resize(14 + 20 + 4);  // IPv4 total length now beyond the frame
  Inject(0, truncated);
  Bytes good = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                            "10.0.0.2", 1, 2, Bytes(8, 1));
  Inject(0, good);
  Poll();
  EXPECT_EQ(Drain(1), std::vector<Bytes>{good});
  StatsSnapshot stats = dataplane_->Snapshot();
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kRunt), 1u);
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kTruncated), 1u);
  EXPECT_EQ(Port(stats, 0).rx_packets, 3u);
}

TEST_F(RingDataplaneTest, OversizeFrameIsDroppedNotForwarded) {
  Start();
  Bytes big = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                           1, 2, Bytes(1600, 7));
  Inject(0, big);
  Poll();
  EXPECT_TRUE(Drain(1).empty());
  EXPECT_EQ(Drops(Port(dataplane_->Snapshot(), 0), DropReason::kOversize), 1u);
}

class CongestedRingDataplaneTest : public RingDataplaneTest {
 protected:
  CongestedRingDataplaneTest() { tx_ring_size_ = 64; }  // holds 63 frames
};

TEST_F(CongestedRingDataplaneTest, EgressCountsTxFullAndLeaksNothing) {
  Start();
  Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                             "10.0.0.2", 1, 2, Bytes(18, 3));
  for (int i = 0; i < 100; ++i) Inject(0, frame);
  Poll();
  StatsSnapshot stats = dataplane_->Snapshot();
  EXPECT_EQ(Port(stats, 1).tx_packets, 63u);
  EXPECT_EQ(Drops(Port(stats, 1), DropReason::kTxFull), 37u);
  EXPECT_EQ(Drain(1).size(), 63u);
}

HandlerConfig Handler(
    std::string name, std::string kind, MatchRule match,
    absl::flat_hash_map<std::string, std::string> params = {}) {
  HandlerConfig config;
  config.name = std::move(name);
  config.kind = std::move(kind);
  config.match = match;
  config.params = std::move(params);
  return config;
}

MatchRule UdpToPort(uint16_t port) {
  MatchRule rule;
  rule.match_ip_proto = true;
  rule.ip_proto = 17;
  rule.dst_port_first = rule.dst_port_last = port;
  return rule;
}

TEST_F(RingDataplaneTest, CountHandlerCountsOnlyItsFlowAndForwardsIt) {
  Start({Handler("count-7777", "count", UdpToPort(7777))});
  Bytes match = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                             "10.0.0.2", 5, 7777, Bytes(20, 1));
  Bytes other = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                             "10.0.0.2", 5, 7778, Bytes(20, 1));
  for (int i = 0; i < 3; ++i) Inject(0, match);
  Inject(0, other);
  Poll();
  EXPECT_EQ(Drain(1), (std::vector<Bytes>{match, match, match, other}));
  StatsSnapshot stats = dataplane_->Snapshot();
  ASSERT_EQ(stats.ectxs.size(), 1u);
  const EctxStats& e = stats.ectxs[0];
  EXPECT_EQ(e.packets, 3u);
  EXPECT_EQ(e.messages, 3u);
  uint64_t state_packets, state_bytes;
  ASSERT_GE(e.state.size(), 16u);
  std::memcpy(&state_packets, e.state.data(), 8);
  std::memcpy(&state_bytes, e.state.data() + 8, 8);
  EXPECT_EQ(state_packets, 3u);
  EXPECT_EQ(state_bytes, 3 * match.size());
}

TEST_F(RingDataplaneTest, XorPayloadWritesInPlaceAndReachesTheWire) {
  Start({Handler("xor", "xor_payload", UdpToPort(9),
                 {{"key", "ff"}, {"fix_checksum", "true"}})});
  Bytes in = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                          5, 9, Bytes{0x00, 0x0f, 0xf0, 0xff});
  Bytes expected =
      frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 5, 9,
                   Bytes{0xff, 0xf0, 0x0f, 0x00});
  Inject(0, in);
  Poll();
  EXPECT_EQ(Drain(1), std::vector<Bytes>{expected});
}

TEST_F(RingDataplaneTest, ReflectSendsTheFrameBackOutOfItsIngressPort) {
  Start({Handler("reflect", "reflect", UdpToPort(7))});
  Bytes in = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                          5000, 7, Bytes(12, 0x33));
  Bytes expected = frames::Udp4(frames::kMacB, frames::kMacA, "10.0.0.2",
                                "10.0.0.1", 7, 5000, Bytes(12, 0x33));
  Inject(0, in);
  Poll();
  EXPECT_TRUE(Drain(1).empty());
  EXPECT_EQ(Drain(0), std::vector<Bytes>{expected});
}

// agg through the engine: packets by UDP destination port into buckets,
// every frame forwarded unchanged.
TEST_F(RingDataplaneTest, AggHistogramsPacketsByKeyAndForwardsThem) {
  Start({Handler("agg", "agg", MatchRule(),
                 {{"from", "l4"}, {"offset", "2"}, {"buckets", "16"}})});
  std::vector<Bytes> sent;
  for (uint16_t port : {3, 5, 5, 19, 3, 5}) {  // 19 % 16 == 3
    sent.push_back(frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                "10.0.0.2", 9, port, Bytes(10 + port, 1)));
    Inject(0, sent.back());
  }
  Poll();
  EXPECT_EQ(Drain(1), sent);
  const StatsSnapshot stats = dataplane_->Snapshot();
  const EctxStats& e = stats.ectxs.at(0);
  const auto word = [&](size_t offset) {
    uint64_t value = 0;
    if (offset + 8 <= e.state.size()) {
      std::memcpy(&value, e.state.data() + offset, 8);
    }
    return value;
  };
  EXPECT_EQ(word(0), 6u);            // packets
  EXPECT_EQ(word(32 + 16 * 3), 3u);  // ports 3, 3 and 19
  EXPECT_EQ(word(32 + 16 * 5), 3u);  // port 5
  EXPECT_EQ(word(40 + 16 * 5), 3 * sent[1].size());
  EXPECT_EQ(word(32 + 16 * 4), 0u);
}

// kvs over UDP through the engine: a PUT is stored in the bound region and
// answered, a GET is answered with the value out of the ingress port.
TEST_F(RingDataplaneTest, KvsAnswersUdpGetWithThePutValue) {
  Start();
  RegionConfig region_config;
  region_config.length = 4096;
  region_config.access = kLocalRead | kLocalWrite;
  absl::StatusOr<RegionInfo> region = dataplane_->RegisterRegion(region_config);
  ASSERT_TRUE(region.ok()) << region.status();
  HandlerConfig kvs = Handler("kvs", "kvs", UdpToPort(4000),
                              {{"key_max", "8"}, {"value_max", "16"}});
  kvs.bound_regions = {region->id};
  ASSERT_TRUE(dataplane_->InstallEctx(kvs).ok());
  // op, key_len, value_len (LE), request id (LE), key, value; the GET is
  // padded so that its frame can carry the value back.
  const Bytes put = {2,   3,   5,   0,   7,   0,   0,   0,
                     'k', 'e', 'y', 'v', 'a', 'l', 'u', 'e'};
  Bytes get = {1, 3, 0, 0, 8, 0, 0, 0, 'k', 'e', 'y'};
  get.resize(8 + 16, 0);
  const Bytes put_frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                       "10.0.0.2", 5000, 4000, put);
  const Bytes get_frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                       "10.0.0.2", 5000, 4000, get);
  Inject(0, put_frame);
  Inject(0, get_frame);
  Poll();
  EXPECT_TRUE(Drain(1).empty());
  // Status OK, op, value_len, request id (, value): from B's address and
  // port back to A's, in the request's frame (the rest zero padding).
  const auto reply = [](const Bytes& request, const Bytes& payload) {
    Bytes frame = frames::Udp4(frames::kMacB, frames::kMacA, "10.0.0.2",
                               "10.0.0.1", 4000, 5000, payload);
    frame.resize(request.size(), 0);
    return frame;
  };
  EXPECT_EQ(Drain(0),
            (std::vector<Bytes>{reply(put_frame, {0, 2, 0, 0, 7, 0, 0, 0}),
                                reply(get_frame, {0, 1, 5, 0, 8, 0, 0, 0, 'v',
                                                  'a', 'l', 'u', 'e'})}));
}

TEST_F(RingDataplaneTest, FilterDropsItsFlowAndCountsIt) {
  Start({Handler("filter", "filter", UdpToPort(53))});
  Bytes dropped = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                               "10.0.0.2", 5, 53, Bytes(10, 0));
  Bytes kept = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                            "10.0.0.2", 5, 54, Bytes(10, 0));
  Inject(0, dropped);
  Inject(0, kept);
  Poll();
  EXPECT_EQ(Drain(1), std::vector<Bytes>{kept});
  StatsSnapshot stats = dataplane_->Snapshot();
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kHandlerDrop), 1u);
  EXPECT_EQ(stats.ectxs[0].dropped, 1u);
}

TEST_F(RingDataplaneTest, InvalidHandlerCodeDropsAndCountsNotFatal) {
  Start({Handler("bad", "test_invalid_code", UdpToPort(5))});
  Bytes bad = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                           1, 5, Bytes(10, 0));
  Bytes good = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                            "10.0.0.2", 1, 6, Bytes(10, 0));
  Inject(0, bad);
  Inject(0, good);
  Poll();
  EXPECT_EQ(Drain(1), std::vector<Bytes>{good});
  StatsSnapshot stats = dataplane_->Snapshot();
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kHandlerInvalid), 1u);
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kHandlerDrop), 0u);
  EXPECT_EQ(stats.ectxs[0].invalid, 1u);
  std::vector<Event> events;
  dataplane_->DrainEvents(&events);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].code, kEventHandlerInvalid);
}

TEST_F(RingDataplaneTest, InstallAndRemoveTakeEffectBetweenBursts) {
  Start();
  Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                             "10.0.0.2", 5, 53, Bytes(10, 0));
  Inject(0, frame);
  Poll();
  ASSERT_TRUE(
      dataplane_->InstallEctx(Handler("filter", "filter", UdpToPort(53))).ok());
  EXPECT_EQ(
      dataplane_->InstallEctx(Handler("filter", "count", {})).status().code(),
      absl::StatusCode::kAlreadyExists);
  Inject(0, frame);
  Poll();
  ASSERT_TRUE(dataplane_->RemoveEctx("filter").ok());
  EXPECT_EQ(dataplane_->RemoveEctx("filter").code(),
            absl::StatusCode::kNotFound);
  Inject(0, frame);
  Poll();
  EXPECT_EQ(Drain(1), (std::vector<Bytes>{frame, frame}));
  EXPECT_EQ(Drops(Port(dataplane_->Snapshot(), 0), DropReason::kHandlerDrop),
            1u);
}

TEST_F(RingDataplaneTest, ReinstalledIdStartsFromZeroCounters) {
  Start({Handler("c", "count", UdpToPort(1))});
  Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                             "10.0.0.2", 5, 1, Bytes(10, 0));
  Inject(0, frame);
  Poll();
  ASSERT_TRUE(dataplane_->RemoveEctx("c").ok());
  ASSERT_TRUE(
      dataplane_->InstallEctx(Handler("c2", "count", UdpToPort(1))).ok());
  StatsSnapshot stats = dataplane_->Snapshot();
  ASSERT_EQ(stats.ectxs.size(), 1u);
  EXPECT_EQ(stats.ectxs[0].id, 0u);
  EXPECT_EQ(stats.ectxs[0].packets, 0u);
  Drain(1);
}

TEST_F(RingDataplaneTest, MultiSegmentFramePassesUnchanged) {
  Start();
  Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                             "10.0.0.2", 5, 6, Bytes(200, 9));
  rte_mbuf* head = MakeMbuf(Bytes(frame.begin(), frame.begin() + 60));
  rte_mbuf* tail = MakeMbuf(Bytes(frame.begin() + 60, frame.end()));
  ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
  ASSERT_EQ(testing_wire::PutOnWire(rx_[0], head), 0);
  Poll();
  EXPECT_EQ(Drain(1), std::vector<Bytes>{frame});
}

MatchRule FilterRule(std::string expression) {
  MatchRule rule;
  rule.pcap_filter = std::move(expression);
  return rule;
}

// A match rule with only a pcap_filter: the filter handler drops exactly
// the frames the expression passes, multi-segment ones included (the
// expression reads past the first segment), and forwards the rest.
TEST_F(RingDataplaneTest, PcapFilterRuleSelectsExactlyTheFramesItPasses) {
  Start({Handler("drop-roce6", "filter",
                 FilterRule("ip6 and udp dst port 4791"))});
  const Bytes roce6 = frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1",
                                   "fd00::2", 49152, 4791, Bytes(40, 7));
  const Bytes roce4 = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                   "10.0.0.2", 49152, 4791, Bytes(40, 7));
  const Bytes other6 = frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1",
                                    "fd00::2", 49152, 4792, Bytes(40, 7));
  const Bytes tagged6 = frames::WithVlan(roce6, 5);  // tcpdump: "vlan and"
  for (const Bytes& frame : {roce6, roce4, other6, tagged6, roce6}) {
    Inject(0, frame);
  }
  rte_mbuf* head = MakeMbuf(Bytes(roce6.begin(), roce6.begin() + 40));
  rte_mbuf* tail = MakeMbuf(Bytes(roce6.begin() + 40, roce6.end()));
  ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
  ASSERT_EQ(testing_wire::PutOnWire(rx_[0], head), 0);
  Poll();
  EXPECT_EQ(Drain(1), (std::vector<Bytes>{roce4, other6, tagged6}));
  StatsSnapshot stats = dataplane_->Snapshot();
  ASSERT_EQ(stats.ectxs.size(), 1u);
  EXPECT_EQ(stats.ectxs[0].packets, 3u);
  EXPECT_EQ(stats.ectxs[0].dropped, 3u);
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kHandlerDrop), 3u);
}

// Fields first, then the filter: the count handler sees only frames from
// wire0 that pass, in both directions of the pair.
TEST_F(RingDataplaneTest, PcapFilterComposesWithTheRuleFields) {
  MatchRule rule = FilterRule("udp dst port 4791");
  rule.in_port_mask = uint64_t{1} << 0;  // wire0
  rule.ethertype = 0x86dd;
  Start({Handler("count-roce6", "count", rule)});
  const Bytes roce6 = frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1",
                                   "fd00::2", 49152, 4791, Bytes(16, 1));
  const Bytes roce4 = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                   "10.0.0.2", 49152, 4791, Bytes(16, 1));
  Inject(0, roce6);
  Inject(0, roce4);  // passes the filter, fails the ethertype
  Inject(0, roce6);
  Inject(1, roce6);  // host0: fails in_ports
  Poll();
  EXPECT_EQ(Drain(1), (std::vector<Bytes>{roce6, roce4, roce6}));
  EXPECT_EQ(Drain(0), std::vector<Bytes>{roce6});
  StatsSnapshot stats = dataplane_->Snapshot();
  ASSERT_EQ(stats.ectxs.size(), 1u);
  EXPECT_EQ(stats.ectxs[0].packets, 2u);
  uint64_t state_packets;
  ASSERT_GE(stats.ectxs[0].state.size(), 8u);
  std::memcpy(&state_packets, stats.ectxs[0].state.data(), 8);
  EXPECT_EQ(state_packets, 2u);
}

TEST_F(RingDataplaneTest, BadPcapFilterIsRefusedAtInstall) {
  Start();
  absl::StatusOr<uint32_t> id = dataplane_->InstallEctx(
      Handler("bad", "count", FilterRule("udp dst port four")));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(id.status().message().find("\"udp dst port four\""),
            std::string::npos)
      << id.status();
  EXPECT_TRUE(dataplane_->Snapshot().ectxs.empty());
}

// Two HPUs on ports with one queue each: the software scheduler spreads
// flows over both HPUs and funnels their TX through HPU 0's queue; every
// frame arrives once, and each flow keeps its order.
class ScheduledRingDataplaneTest : public RingDataplaneTest {
 protected:
  ScheduledRingDataplaneTest() { hpus_ = 2; }
};

TEST_F(ScheduledRingDataplaneTest, SpreadsFlowsAndKeepsPerFlowOrder) {
  Start({Handler("count-all", "count", MatchRule())});
  std::vector<Bytes> sent;
  for (int seq = 0; seq < 20; ++seq) {
    for (uint16_t flow = 0; flow < 16; ++flow) {
      Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                 "10.0.0.2", static_cast<uint16_t>(1000 + flow),
                                 2000, Bytes{static_cast<uint8_t>(seq)});
      Inject(0, frame);
      sent.push_back(frame);
    }
  }
  Poll();
  std::vector<Bytes> received = Drain(1);
  ASSERT_EQ(received.size(), sent.size());
  // Per flow (source port), the sequence bytes arrive in order.
  std::map<uint16_t, int> next_seq;
  for (const Bytes& frame : received) {
    uint16_t flow = static_cast<uint16_t>(frame[34] << 8 | frame[35]);
    EXPECT_EQ(frame.back(), next_seq[flow]++) << "flow " << flow;
  }
  std::multiset<Bytes> a(sent.begin(), sent.end()),
      b(received.begin(), received.end());
  EXPECT_EQ(a, b);
  StatsSnapshot stats = dataplane_->Snapshot();
  EXPECT_EQ(Port(stats, 0).rx_packets, sent.size());
  EXPECT_EQ(Port(stats, 1).tx_packets, sent.size());
  EXPECT_EQ(stats.ectxs[0].packets, sent.size());
  // HPU 1 has no queue: whatever it handled came through the scheduler.
  EXPECT_GT(dataplane_->hpu(1).ectx_counters(0).Packets(), 0u);
  EXPECT_GT(dataplane_->hpu(0).ectx_counters(0).Packets(), 0u);
}

// Two ring ports and a Dataplane on them with DiAD and RoCE on and two HPUs
// (so that every named DPDK object exists: the packet and clone pools, the
// event, inbound and command rings), its objects named with `suffix`.
struct SuffixedDataplane {
  rte_ring* rx[2] = {nullptr, nullptr};
  rte_ring* tx[2] = {nullptr, nullptr};
  std::unique_ptr<Dataplane> dataplane;

  ~SuffixedDataplane() {
    dataplane.reset();
    for (int side = 0; side < 2; ++side) {
      for (rte_ring* ring : {rx[side], tx[side]}) {
        void* m;
        while (ring != nullptr && testing_wire::TakeFromWire(ring, &m) == 0) {
          rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
        }
        rte_ring_free(ring);
      }
    }
  }
};

std::unique_ptr<SuffixedDataplane> MakeSuffixed(const std::string& suffix,
                                                absl::Status* status) {
  static int instance = 0;
  ++instance;
  auto rig = std::make_unique<SuffixedDataplane>();
  DataplaneConfig config;
  for (int side = 0; side < 2; ++side) {
    const std::string base = absl::StrCat("sfx", instance, side ? "h" : "w");
    rig->rx[side] = rte_ring_create((base + "rx").c_str(), 256, 0,
                                    RING_F_SP_ENQ | RING_F_SC_DEQ);
    rig->tx[side] = rte_ring_create((base + "tx").c_str(), 256, 0,
                                    RING_F_SP_ENQ | RING_F_SC_DEQ);
    const int port_id = rte_eth_from_rings(base.c_str(), &rig->rx[side], 1,
                                           &rig->tx[side], 1, 0);
    char name[RTE_ETH_NAME_MAX_LEN];
    if (port_id < 0 || rte_eth_dev_get_name_by_port(
                           static_cast<uint16_t>(port_id), name) != 0) {
      *status = absl::InternalError("cannot make the ring ports");
      return nullptr;
    }
    PortConfig port;
    port.name = side ? "host0" : "wire0";
    port.existing = name;
    port.role = side ? PortRole::kHost : PortRole::kWire;
    port.rx_descriptors = port.tx_descriptors = 128;
    config.ports.push_back(port);
  }
  config.port_pairs = {{0, 1}};
  config.worker_cores = {0, 0};
  config.mbufs = 4095;
  config.instance_suffix = suffix;
  diad::DiadConfig& dc = config.transports.get<diad::DiadConfig>();
  dc.enabled = true;
  dc.node = {0xfd, 0, 0xd1, 0xad, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  dc.mac = {0x02, 0, 0, 0, 0, 0x0b};
  roce::RoceConfig& rc = config.transports.get<roce::RoceConfig>();
  rc.enabled = true;
  rc.mac = {0x02, 0, 0, 0, 0, 0x0b};
  rc.addresses = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 11}};
  absl::StatusOr<std::unique_ptr<Dataplane>> dataplane =
      Dataplane::Create(config);
  *status = dataplane.status();
  if (!dataplane.ok()) return nullptr;
  rig->dataplane = *std::move(dataplane);
  return rig;
}

TEST(InstanceSuffixTest, TwoDataplanesInOneProcessNameTheirObjectsApart) {
  absl::Status status;
  std::unique_ptr<SuffixedDataplane> a = MakeSuffixed("_a", &status);
  ASSERT_TRUE(status.ok()) << status;
  std::unique_ptr<SuffixedDataplane> b = MakeSuffixed("_b", &status);
  ASSERT_TRUE(status.ok()) << status;
  for (const char* suffix : {"_a", "_b"}) {
    for (const char* pool : {"spinnic_pkts", "spinnic_clones"}) {
      EXPECT_NE(rte_mempool_lookup(absl::StrCat(pool, suffix).c_str()), nullptr)
          << pool << suffix;
    }
    for (const char* ring :
         {"spinnic_ev0", "spinnic_ev1", "spinnic_in0", "spinnic_in1",
          "spinnic_cmd0", "spinnic_cmd1", "spinnic_dput0", "spinnic_dput1",
          "spinnic_roce_cmd0", "spinnic_roce_cmd1", "spinnic_roce_cmn"}) {
      EXPECT_NE(rte_ring_lookup(absl::StrCat(ring, suffix).c_str()), nullptr)
          << ring << suffix;
    }
  }
  // Neither took the plain names, which stay free for a third.
  EXPECT_EQ(rte_mempool_lookup("spinnic_pkts"), nullptr);
  EXPECT_EQ(rte_ring_lookup("spinnic_roce_cmd0"), nullptr);

  // Both carry frames, each from its own pool.
  const Bytes frame = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                   "10.0.0.2", 1000, 2000, Bytes(18, 0xab));
  for (SuffixedDataplane* rig : {a.get(), b.get()}) {
    rte_mempool* pool = rte_mempool_lookup(rig == a.get() ? "spinnic_pkts_a"
                                                          : "spinnic_pkts_b");
    ASSERT_NE(pool, nullptr);
    rte_mbuf* m = rte_pktmbuf_alloc(pool);
    ASSERT_NE(m, nullptr);
    std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())),
                frame.data(), frame.size());
    ASSERT_EQ(testing_wire::PutOnWire(rig->rx[0], m), 0);
    EXPECT_EQ(rig->dataplane->hpu(0).PollOnce(), 1u);
    void* out = nullptr;
    ASSERT_EQ(testing_wire::TakeFromWire(rig->tx[1], &out), 0);
    rte_mbuf* sent = static_cast<rte_mbuf*>(out);
    EXPECT_EQ(Bytes(rte_pktmbuf_mtod(sent, uint8_t*),
                    rte_pktmbuf_mtod(sent, uint8_t*) + sent->data_len),
              frame);
    rte_pktmbuf_free(sent);
  }

  a.reset();
  b.reset();
  EXPECT_EQ(rte_mempool_lookup("spinnic_pkts_a"), nullptr);
  EXPECT_EQ(rte_ring_lookup("spinnic_cmd0_b"), nullptr);
}

TEST(InstanceSuffixTest, SuffixThatDpdkCannotNameIsRefused) {
  for (const char* suffix : {"_toolong9", "a-b", "a b"}) {
    absl::Status status;
    EXPECT_EQ(MakeSuffixed(suffix, &status), nullptr);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
        << suffix << ": " << status;
  }
}

// Frames from a port that no rule, transport or scheduler wants take the
// HPU's forwarding burst (Hpu::ForwardBurst: the classifier's verdict, no
// layers); a port one payload-only handler takes whole takes the handler
// burst (Hpu::HandlerBurst: no match per frame); with any other rule on the
// port they take the whole way. All three must forward, drop and count
// exactly alike: the same frames out, byte-exact and in order, and the same
// drops by reason. A port that forwards unchecked passes the runts and
// truncated frames too.
enum class WireZeroRules {
  kNothingInstalled,
  kRuleOnThePort,
  kHandlerOnEveryFrame,
  kForwardUnchecked,
};

class ForwardingPathTest : public RingDataplaneTest,
                           public ::testing::WithParamInterface<WireZeroRules> {
};

TEST_P(ForwardingPathTest, ForwardsDropsAndCountsLikeTheFullPath) {
  wire_forward_unchecked_ = GetParam() == WireZeroRules::kForwardUnchecked;
  std::vector<HandlerConfig> handlers;
  if (GetParam() == WireZeroRules::kRuleOnThePort) {
    // It sends every frame from wire0 through the rules, and matches none.
    handlers.push_back(Handler("none", "count", UdpToPort(9)));
  } else if (GetParam() == WireZeroRules::kHandlerOnEveryFrame) {
    // Every frame the classifier keeps, counted by IP protocol: the handler
    // reads the layers the burst parsed.
    MatchRule wire0;
    wire0.in_port_mask = uint64_t{1} << 0;
    handlers.push_back(Handler("every", "count", wire0,
                               {{"by", "ip_proto"}, {"buckets", "32"}}));
  }
  Start(std::move(handlers));
  const uint32_t max_frame = dataplane_->port(1).max_frame();
  const Bytes udp4 = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                  "10.0.0.2", 1, 2, Bytes(18, 1));
  const Bytes udp6 = frames::Udp6(frames::kMacA, frames::kMacB, "fd00::1",
                                  "fd00::2", 1, 2, Bytes(30, 2));
  const Bytes raw = frames::Raw(frames::kMacA, frames::kMacB, 0, Bytes(46, 0));
  const Bytes arp = frames::Arp(frames::kMacA, "10.0.0.1", "10.0.0.2");
  const Bytes qinq = frames::WithVlan(frames::WithVlan(udp4, 7), 9, 0x88a8);
  // The largest frames the pair sends: without a tag and with one.
  const size_t udp4_overhead = 14 + 20 + 8;
  const Bytes full =
      frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 3, 4,
                   Bytes(max_frame - udp4_overhead, 3));
  const Bytes full_tagged = frames::WithVlan(full, 5);
  Bytes truncated4 = udp4;
  truncated4.resize(14 + 20 + 4);
  Bytes truncated6 = udp6;
  truncated6.resize(14 + 40 + 20);
  Bytes truncated_tag = frames::Raw(frames::kMacA, frames::kMacB, 0x8100, {});
  truncated_tag.resize(16);  // a TPID, and half a tag
  const Bytes oversize =
      frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 3, 4,
                   Bytes(max_frame - udp4_overhead + 1, 3));
  const Bytes oversize_tagged = frames::WithVlan(
      frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2", 3, 4,
                   Bytes(max_frame - udp4_overhead + 1, 3)),
      5);
  const Bytes chained = frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                     "10.0.0.2", 5, 6, Bytes(200, 9));

  const std::vector<Bytes> in = {
      udp4,     Bytes(10, 0xff), udp6,           truncated4,    raw,
      arp,      truncated6,      qinq,           truncated_tag, full,
      oversize, full_tagged,     oversize_tagged};
  for (const Bytes& frame : in) Inject(0, frame);
  rte_mbuf* head = MakeMbuf(Bytes(chained.begin(), chained.begin() + 60));
  rte_mbuf* tail = MakeMbuf(Bytes(chained.begin() + 60, chained.end()));
  ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
  ASSERT_EQ(testing_wire::PutOnWire(rx_[0], head), 0);
  Poll();

  const bool unchecked = GetParam() == WireZeroRules::kForwardUnchecked;
  // Chains and frames above the pair's frame size take the whole way, and
  // its checks, on every port.
  const std::vector<Bytes> out =
      unchecked ? std::vector<Bytes>{udp4,          Bytes(10, 0xff),
                                     udp6,          truncated4,
                                     raw,           arp,
                                     truncated6,    qinq,
                                     truncated_tag, full,
                                     full_tagged,   chained}
                : std::vector<Bytes>{udp4, udp6, raw,         arp,
                                     qinq, full, full_tagged, chained};
  EXPECT_EQ(Drain(1), out);
  const StatsSnapshot stats = dataplane_->Snapshot();
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kRunt), unchecked ? 0u : 1u);
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kTruncated), unchecked ? 0u : 3u);
  EXPECT_EQ(Drops(Port(stats, 0), DropReason::kOversize), 2u);
  EXPECT_EQ(Port(stats, 0).rx_packets, in.size() + 1);
  uint64_t in_bytes = chained.size();
  for (const Bytes& frame : in) in_bytes += frame.size();
  EXPECT_EQ(Port(stats, 0).rx_bytes, in_bytes);
  uint64_t out_bytes = 0;
  for (const Bytes& frame : out) out_bytes += frame.size();
  EXPECT_EQ(Port(stats, 1).tx_packets, out.size());
  EXPECT_EQ(Port(stats, 1).tx_bytes, out_bytes);
  if (GetParam() != WireZeroRules::kHandlerOnEveryFrame) return;
  // What the handler saw: every frame that went out, by protocol (UDP 17:
  // udp4, udp6, qinq, full, full_tagged, chained; none, 0: raw, arp).
  ASSERT_EQ(stats.ectxs.size(), 1u);
  EXPECT_EQ(stats.ectxs[0].packets, out.size());
  const std::vector<uint8_t>& state = stats.ectxs[0].state;
  ASSERT_GE(state.size(), 32u * 16);
  auto bucket_packets = [&](size_t bucket) {
    uint64_t packets;
    std::memcpy(&packets, state.data() + 16 * bucket, 8);
    return packets;
  };
  EXPECT_EQ(bucket_packets(17), 6u);
  EXPECT_EQ(bucket_packets(0), 2u);
}

INSTANTIATE_TEST_SUITE_P(WaysThroughTheHpu, ForwardingPathTest,
                         ::testing::Values(WireZeroRules::kNothingInstalled,
                                           WireZeroRules::kRuleOnThePort,
                                           WireZeroRules::kHandlerOnEveryFrame,
                                           WireZeroRules::kForwardUnchecked),
                         [](const auto& info) {
                           switch (info.param) {
                             case WireZeroRules::kNothingInstalled:
                               return "NothingInstalled";
                             case WireZeroRules::kRuleOnThePort:
                               return "RuleOnThePort";
                             case WireZeroRules::kHandlerOnEveryFrame:
                               return "HandlerOnEveryFrame";
                             case WireZeroRules::kForwardUnchecked:
                               return "ForwardUnchecked";
                           }
                           return "";
                         });

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment());
  return RUN_ALL_TESTS();
}
