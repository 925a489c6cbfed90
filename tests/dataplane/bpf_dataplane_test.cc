// eBPF handlers (kind bpf, docs/bpf.md) in the real dataplane on net_ring
// ports (tests/common/ring_dataplane.h), the HPU polled on the test thread:
// a handler installed, replaced (by another bpf program, then by a native
// one) and removed between two bursts of one ring's worth of frames loses
// and duplicates nothing, and its counters account for every frame; a
// program that reaches outside its memory is refused at install (the
// context) or FAILs each packet, counted (state, packet); each example
// (filter, reflect) sends the same bytes out of each port, and drops the
// same, as its native twin.
#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "dataplane/dataplane.h"
#include "dataplane/spin_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/frames.h"
#include "tests/common/ring_dataplane.h"
#include "tests/common/wire_ring.h"

namespace spinnic {
namespace {

using Bytes = std::vector<uint8_t>;
using ::testing::HasSubstr;
using testing_rings::RingDataplane;

constexpr uint16_t kPort = 7777;
constexpr uint32_t kBurst = 32;  // DataplaneConfig::burst

class EalEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    // The HPU (lcore 1) is never launched: the test polls it.
    absl::Status status =
        InitEal({"bpf_dataplane_test", "--no-huge", "-m", "256", "--no-pci",
                 "--no-shconf", "--lcores", "0@0,1@0", "--log-level", "4"});
    ASSERT_TRUE(status.ok()) << status;
  }
};

std::string Example(const std::string& name) {
  return absl::StrCat(SPINNIC_BPF_EXAMPLES_DIR, "/", name, ".o");
}
std::string TestProgram(const std::string& name) {
  return absl::StrCat(SPINNIC_BPF_TEST_DIR, "/", name, ".o");
}

MatchRule UdpToPort(uint16_t port) {
  MatchRule rule;
  rule.match_ip_proto = true;
  rule.ip_proto = 17;
  rule.dst_port_first = rule.dst_port_last = port;
  return rule;
}

HandlerConfig BpfHandler(const std::string& name, const std::string& file,
                         uint32_t state_size, uint16_t port,
                         const std::string& arg = "0") {
  HandlerConfig config;
  config.name = name;
  config.kind = "bpf";
  config.params = {{"program_file", file}, {"arg", arg}};
  config.state_size = state_size;
  config.match = UdpToPort(port);
  return config;
}

uint64_t Word(const EctxStats& e, size_t offset) {
  uint64_t v = 0;
  if (e.state.size() >= offset + 8) std::memcpy(&v, e.state.data() + offset, 8);
  return v;
}

class BpfDataplaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static int instance = 0;
    ++instance;
    absl::StatusOr<std::unique_ptr<RingDataplane>> rings =
        // Rings that hold every frame of a test (a ring of N holds N - 1).
        RingDataplane::Create(absl::StrCat("bpf", instance),
                              {.ring_size = 1024});
    ASSERT_TRUE(rings.ok()) << rings.status();
    rings_ = *std::move(rings);
    pool_ = rte_pktmbuf_pool_create(absl::StrCat("bpfinj", instance).c_str(),
                                    1023, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
    ASSERT_NE(pool_, nullptr);
  }

  void TearDown() override {
    rings_.reset();  // frees what is left in the rings
    EXPECT_EQ(rte_mempool_avail_count(pool_), 1023u)
        << "an injected mbuf leaked";
    rte_mempool_free(pool_);
  }

  Dataplane& dp() { return rings_->dataplane(); }

  // Frame `seq` on the wire: UDP to kPort, except every fourth one (to
  // kPort + 1, which no handler matches); the payload carries `seq`, so
  // each frame is unique.
  static Bytes Frame(uint32_t seq) {
    Bytes payload(16, 0);
    std::memcpy(payload.data(), &seq, sizeof seq);
    return frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1", "10.0.0.2",
                        5000, seq % 4 == 3 ? kPort + 1 : kPort, payload);
  }
  static bool Matches(uint32_t seq) { return seq % 4 != 3; }

  void Inject(const Bytes& frame) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    ASSERT_NE(m, nullptr);
    char* data = rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size()));
    ASSERT_NE(data, nullptr);
    std::memcpy(data, frame.data(), frame.size());
    ASSERT_EQ(testing_wire::PutOnWire(rings_->rx(0), m), 0);
  }

  // What the dataplane sent out of host0 (side 1), freed.
  std::vector<Bytes> DrainHost() { return Drain(1); }
  // What the dataplane sent out of wire0 (side 0), freed.
  std::vector<Bytes> DrainWire() { return Drain(0); }

  std::vector<Bytes> Drain(int side) {
    std::vector<Bytes> out;
    void* object;
    while (testing_wire::TakeFromWire(rings_->tx(side), &object) == 0) {
      rte_mbuf* m = static_cast<rte_mbuf*>(object);
      const uint8_t* p = rte_pktmbuf_mtod(m, const uint8_t*);
      out.emplace_back(p, p + rte_pktmbuf_data_len(m));
      rte_pktmbuf_free(m);
    }
    return out;
  }

  void PollUntilQuiet() {
    while (dp().hpu(0).PollOnce() != 0) {
    }
  }

  std::unique_ptr<RingDataplane> rings_;
  rte_mempool* pool_ = nullptr;
};

// Each change lands between the two bursts of one injection: the first
// burst is in the HPU's hands before it, the second is still in the RX ring.
TEST_F(BpfDataplaneTest, InstallReplaceRemoveBetweenBurstsLoseNothing) {
  std::vector<Bytes> sent;
  uint32_t seq = 0;
  // The frames each handler generation saw: [first, last) of `sent`.
  struct Generation {
    std::string what;
    uint32_t first, last;
    EctxStats stats;
  };
  std::vector<Generation> generations;

  // Injects two bursts, polls one, runs `change` and polls the rest.
  auto two_bursts = [&](auto change) {
    for (uint32_t i = 0; i < 2 * kBurst; ++i) {
      sent.push_back(Frame(seq++));
      Inject(sent.back());
    }
    ASSERT_EQ(dp().hpu(0).PollOnce(), kBurst);
    const uint32_t boundary = seq - kBurst;
    if (!generations.empty()) {
      // The outgoing handler's counters, read before it goes.
      StatsSnapshot before = dp().Snapshot();
      ASSERT_EQ(before.ectxs.size(), 1u);
      generations.back().last = boundary;
      generations.back().stats = before.ectxs[0];
    }
    change(boundary);
    PollUntilQuiet();
  };

  two_bursts([&](uint32_t boundary) {
    ASSERT_TRUE(
        dp().InstallEctx(BpfHandler("c", Example("count"), 16, kPort)).ok());
    generations.push_back({"bpf count", boundary, 0, {}});
  });
  StatsSnapshot installed = dp().Snapshot();
  ASSERT_EQ(installed.ectxs.size(), 1u);
  EXPECT_EQ(installed.ectxs[0].kind, "bpf");
  EXPECT_EQ(installed.ectxs[0].runtime, "jit: payload 13 insns");

  two_bursts([&](uint32_t boundary) {
    absl::StatusOr<uint32_t> id = dp().InstallEctx(
        BpfHandler("c", Example("count"), 16, kPort, "7"), /*replace=*/true);
    ASSERT_TRUE(id.ok()) << id.status();
    generations.push_back({"bpf count arg=7", boundary, 0, {}});
  });
  two_bursts([&](uint32_t boundary) {
    HandlerConfig native;
    native.name = "c";
    native.kind = "count";
    native.state_size = 16;
    native.match = UdpToPort(kPort);
    ASSERT_TRUE(dp().InstallEctx(native, /*replace=*/true).ok());
    generations.push_back({"native count", boundary, 0, {}});
  });
  StatsSnapshot native = dp().Snapshot();
  ASSERT_EQ(native.ectxs.size(), 1u);
  EXPECT_EQ(native.ectxs[0].runtime, "");  // native kinds have nothing to say
  two_bursts([&](uint32_t) { ASSERT_TRUE(dp().RemoveEctx("c").ok()); });
  ASSERT_EQ(generations.size(), 3u);

  // Every frame came out exactly once, unchanged and in order.
  std::vector<Bytes> received = DrainHost();
  ASSERT_EQ(received.size(), sent.size());
  EXPECT_TRUE(received == sent);
  StatsSnapshot stats = dp().Snapshot();
  EXPECT_TRUE(stats.ectxs.empty());
  EXPECT_EQ(stats.ports[0].rx_packets, sent.size());
  EXPECT_EQ(stats.ports[1].tx_packets, sent.size());
  for (size_t r = 0; r < static_cast<size_t>(DropReason::kCount); ++r) {
    EXPECT_EQ(stats.ports[0].drops[r], 0u) << DropReasonName(DropReason(r));
    EXPECT_EQ(stats.ports[1].drops[r], 0u) << DropReasonName(DropReason(r));
  }

  // Each generation counted exactly the matching frames it saw, in its
  // counters and in its state ({packets, bytes}).
  uint64_t counted = 0, matching = 0;
  for (uint32_t s = 0; s < seq; ++s) matching += Matches(s);
  for (const Generation& g : generations) {
    uint64_t packets = 0, bytes = 0;
    for (uint32_t s = g.first; s < g.last; ++s) {
      if (!Matches(s)) continue;
      ++packets;
      bytes += sent[s].size();
    }
    EXPECT_EQ(g.stats.packets, packets) << g.what;
    EXPECT_EQ(g.stats.messages, packets) << g.what;
    EXPECT_EQ(g.stats.failed + g.stats.invalid + g.stats.dropped, 0u) << g.what;
    EXPECT_EQ(Word(g.stats, 0), packets) << g.what;
    EXPECT_EQ(Word(g.stats, 8), bytes) << g.what;
    counted += g.stats.packets;
  }
  // The first burst ran with no handler and the last one after the remove.
  uint64_t unhandled = 0;
  for (uint32_t s = 0; s < seq; ++s) {
    if (s < generations.front().first || s >= generations.back().last) {
      unhandled += Matches(s);
    }
  }
  EXPECT_EQ(counted + unhandled, matching);
  EXPECT_EQ(unhandled, 2 * (kBurst * 3 / 4));
}

TEST_F(BpfDataplaneTest, ContextOverrunIsRefusedAtInstallAndChangesNothing) {
  absl::StatusOr<uint32_t> id = dp().InstallEctx(
      BpfHandler("oob", TestProgram("ctx_out_of_bounds"), 16, kPort));
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(id.status().message()),
      HasSubstr(
          "spin/payload, instruction 0: context access at offset 256 outside "
          "its 88 bytes"));
  EXPECT_TRUE(dp().Snapshot().ectxs.empty());
  Bytes frame = Frame(0);
  Inject(frame);
  PollUntilQuiet();
  EXPECT_EQ(DrainHost(), std::vector<Bytes>{frame});
}

// The loader cannot know a helper's offset; the helper checks it, and the
// invocation FAILs: the packet is dropped, and the ECTX counts it and raises
// an event, every time.
TEST_F(BpfDataplaneTest, StateAndPacketOverrunsFailEachPacketAndAreCounted) {
  ASSERT_TRUE(dp().InstallEctx(BpfHandler("state", TestProgram("state_overrun"),
                                          8, kPort))
                  .ok());
  ASSERT_TRUE(
      dp().InstallEctx(
              BpfHandler("packet", TestProgram("packet_overrun"), 0, kPort + 1))
          .ok());
  constexpr uint32_t kFrames = 12;  // 9 to kPort, 3 to kPort + 1
  for (uint32_t s = 0; s < kFrames; ++s) Inject(Frame(s));
  PollUntilQuiet();
  EXPECT_TRUE(DrainHost().empty());
  StatsSnapshot stats = dp().Snapshot();
  ASSERT_EQ(stats.ectxs.size(), 2u);
  for (const EctxStats& e : stats.ectxs) {
    const uint64_t expected = e.name == "state" ? 9 : 3;
    EXPECT_EQ(e.packets, expected) << e.name;
    EXPECT_EQ(e.failed, expected) << e.name;
    EXPECT_EQ(e.invalid, 0u) << e.name;
    EXPECT_FALSE(e.disabled) << e.name;
    EXPECT_EQ(e.runtime, e.name == "state" ? "jit: payload 10 insns"
                                           : "jit: payload 6 insns");
  }
  // The add before the refused one happened, once per packet.
  const EctxStats& state =
      stats.ectxs[0].name == "state" ? stats.ectxs[0] : stats.ectxs[1];
  EXPECT_EQ(Word(state, 0), 9u);
  EXPECT_EQ(stats.ports[0].drops[static_cast<size_t>(DropReason::kHandlerDrop)],
            kFrames);
  std::vector<Event> events;
  dp().DrainEvents(&events);
  EXPECT_EQ(events.size(), kFrames);
  for (const Event& e : events) EXPECT_EQ(e.code, kEventHandlerFailed);
}

// A refused access is a fault: FAIL, and an overrun toward
// disable_after_overruns. The third disables the ECTX with an event; the
// frames after it pass through untouched (bypassed).
TEST_F(BpfDataplaneTest, FaultsCountTowardDisableAfterOverruns) {
  HandlerConfig config =
      BpfHandler("state", TestProgram("state_overrun"), 8, kPort);
  config.cycle_budget = uint64_t{1} << 40;  // never over budget
  config.disable_after_overruns = 3;
  ASSERT_TRUE(dp().InstallEctx(config).ok());
  std::vector<Bytes> sent;
  for (uint32_t seq : {0, 1, 2, 4, 5}) {  // all to kPort (Matches)
    sent.push_back(Frame(seq));
    Inject(sent.back());
  }
  PollUntilQuiet();
  // The first three were dropped; the ECTX was off for the last two.
  EXPECT_EQ(DrainHost(), std::vector<Bytes>(sent.begin() + 3, sent.end()));
  StatsSnapshot stats = dp().Snapshot();
  ASSERT_EQ(stats.ectxs.size(), 1u);
  const EctxStats& e = stats.ectxs[0];
  EXPECT_TRUE(e.disabled);
  EXPECT_EQ(e.failed, 3u);
  EXPECT_EQ(e.bypassed, 2u);
  EXPECT_EQ(e.over_budget, 0u);
  std::vector<Event> events;
  dp().DrainEvents(&events);
  std::vector<uint32_t> codes;
  for (const Event& event : events) codes.push_back(event.code);
  EXPECT_EQ(codes,
            (std::vector<uint32_t>{kEventHandlerFailed, kEventHandlerFailed,
                                   kEventHandlerFailed, kEventEctxDisabled}));
}

// What one handler did to a set of frames injected on wire0.
struct Outcome {
  std::vector<Bytes> host, wire;
  std::array<uint64_t, static_cast<size_t>(DropReason::kCount)> drops{};
  uint64_t packets = 0, dropped = 0, failed = 0;
};

// Frames every example sees: UDP over IPv4 and IPv6 with and without a
// "GET" payload (and one shorter than it), TCP, ICMP and ICMPv6 echo
// requests, a non-IP frame and a broadcast one.
std::vector<Bytes> TwinFrames() {
  using namespace frames;  // NOLINT(build/namespaces)
  auto text = [](const std::string& s) { return Bytes(s.begin(), s.end()); };
  return {
      Udp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 5000, kPort, text("GET /a")),
      Udp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 5001, kPort, text("PUT /a")),
      Udp4(kMacA, kMacB, "10.0.0.3", "10.0.0.2", 5002, 53, text("GE")),
      Udp6(kMacA, kMacB, "fd00::1", "fd00::2", 5003, kPort, text("GET /b")),
      Udp6(kMacA, kMacB, "fd00::1", "fd00::2", 5004, kPort, text("HEAD /b")),
      Tcp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 40000, 80,
           text("GET / HTTP/1.1\r\n")),
      Tcp4(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 40001, 80, text("POST /")),
      Icmp4Echo(kMacA, kMacB, "10.0.0.1", "10.0.0.2", 7, 1, text("GETping")),
      Icmp6Echo(kMacA, kMacB, "fd00::1", "fd00::2", 8, 2, text("ping6")),
      Raw(kMacA, kMacB, 0x88b5, Bytes(46, 0x47)),
      Udp4(kMacA, Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "10.0.0.1",
           "10.255.255.255", 5005, kPort, text("GET bcast")),
  };
}

// Each example and its native twin, given the same frames on wire0 in the
// real dataplane, send the same bytes out of each port and drop the same.
TEST_F(BpfDataplaneTest, ExamplesMatchTheirNativeTwinsThroughTheEngine) {
  const std::vector<Bytes> sent = TwinFrames();
  auto run = [&](HandlerConfig config) {
    config.match = MatchRule{};  // every frame, whatever its protocol
    Outcome out;
    StatsSnapshot before = dp().Snapshot();
    absl::StatusOr<uint32_t> id = dp().InstallEctx(config);
    EXPECT_TRUE(id.ok()) << config.name << ": " << id.status();
    if (!id.ok()) return out;
    for (const Bytes& frame : sent) Inject(frame);
    PollUntilQuiet();
    out.host = DrainHost();
    out.wire = DrainWire();
    StatsSnapshot after = dp().Snapshot();
    for (size_t r = 0; r < out.drops.size(); ++r) {
      for (size_t p = 0; p < after.ports.size(); ++p) {
        out.drops[r] += after.ports[p].drops[r] - before.ports[p].drops[r];
      }
    }
    EXPECT_EQ(after.ectxs.size(), 1u);
    if (after.ectxs.size() == 1) {
      out.packets = after.ectxs[0].packets;
      out.dropped = after.ectxs[0].dropped;
      out.failed = after.ectxs[0].failed;
    }
    EXPECT_TRUE(dp().RemoveEctx(config.name).ok());
    return out;
  };
  auto native = [](const std::string& kind,
                   absl::flat_hash_map<std::string, std::string> params) {
    HandlerConfig config;
    config.name = "native";
    config.kind = kind;
    config.params = std::move(params);
    return config;
  };
  struct Twin {
    std::string what;
    HandlerConfig native, bpf;
  };
  const std::vector<Twin> twins = {
      {"filter GET", native("filter", {{"payload_prefix", "474554"}}),
       BpfHandler("bpf", Example("filter"), 0, kPort, "0x474554")},
      {"filter all", native("filter", {}),
       BpfHandler("bpf", Example("filter"), 0, kPort, "0")},
      {"reflect", native("reflect", {}),
       BpfHandler("bpf", Example("reflect"), 0, kPort)},
  };
  for (const Twin& twin : twins) {
    SCOPED_TRACE(twin.what);
    const Outcome n = run(twin.native);
    const Outcome b = run(twin.bpf);
    EXPECT_EQ(n.host, b.host);
    EXPECT_EQ(n.wire, b.wire);
    EXPECT_EQ(n.drops, b.drops);
    EXPECT_EQ(n.packets, sent.size());
    EXPECT_EQ(b.packets, sent.size());
    EXPECT_EQ(n.dropped, b.dropped);
    EXPECT_EQ(n.failed + b.failed, 0u);
    // Every frame is accounted for, and the handler did something: it
    // dropped a frame or changed one (so this comparison can fail).
    const uint64_t dropped =
        n.drops[static_cast<size_t>(DropReason::kHandlerDrop)];
    EXPECT_EQ(n.host.size() + n.wire.size() + dropped, sent.size());
    bool changed = dropped > 0;
    for (const std::vector<Bytes>* port : {&n.host, &n.wire}) {
      for (const Bytes& out : *port) {
        changed |= std::find(sent.begin(), sent.end(), out) == sent.end();
      }
    }
    EXPECT_TRUE(changed);
  }
}

}  // namespace
}  // namespace spinnic

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new spinnic::EalEnvironment());
  return RUN_ALL_TESTS();
}
