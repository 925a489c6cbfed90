// The ECTX table's flat lookup (tuple space search) must pick exactly the
// ECTX the reference first-match walk over the same rules picks, for every
// frame: checked differentially over random rule sets and random frames
// drawn from small pools, so that rules and frames collide often (shared
// keys, overlapping prefixes, ranges around exact ports, ingress masks,
// frames without the layers a rule names, dropped frames).
#include "dataplane/ectx_table.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

class TableTestHandler {
 public:
  static constexpr absl::string_view kName = "table_test";
  static constexpr absl::string_view kDescription = "does nothing";
  static constexpr uint32_t kMinStateSize = 0;
  static absl::StatusOr<std::unique_ptr<TableTestHandler>> Create(
      const HandlerParams&) {
    return std::make_unique<TableTestHandler>();
  }
  HandlerResult Payload(HandlerContext&, PacketView&) {
    return HandlerResult::kSuccess;
  }
};
SPINNIC_HANDLER(TableTestHandler);

constexpr uint16_t kEthertypes[] = {0x0800, 0x86dd, 0x0806};
constexpr uint8_t kProtos[] = {6, 17, 1, 58};
constexpr uint16_t kPorts[] = {0, 53, 80, 443, 4791, 7777};

std::array<uint8_t, 16> Address(int pick, bool ipv4) {
  std::array<uint8_t, 16> a{};
  if (ipv4) {
    a[10] = a[11] = 0xff;
    a[12] = 10;
    a[13] = static_cast<uint8_t>(pick & 1);
    a[14] = static_cast<uint8_t>((pick >> 1) & 1);
    a[15] = static_cast<uint8_t>(pick);
  } else {
    a[0] = 0xfd;
    a[7] = static_cast<uint8_t>(pick & 1);
    a[15] = static_cast<uint8_t>(pick);
  }
  return a;
}

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  bool Chance(int percent) { return Pick(100) < percent; }
  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  AddressPrefix Prefix() {
    AddressPrefix p;
    p.is_ipv4 = Chance(50);
    const uint8_t v4[] = {96, 104, 112, 120, 128};
    const uint8_t v6[] = {0, 8, 64, 127, 128};
    p.length = p.is_ipv4 ? v4[Pick(5)] : v6[Pick(5)];
    // Host bits may be set: Contains compares only the prefix.
    p.address = Address(Pick(6), p.is_ipv4);
    return p;
  }

  void Ports(uint16_t* first, uint16_t* last) {
    int kind = Pick(3);
    if (kind == 0) return;  // any
    uint16_t a = kPorts[Pick(6)];
    if (kind == 1) {
      *first = *last = a;  // exact
    } else {
      uint16_t b = kPorts[Pick(6)];
      *first = std::min(a, b);
      *last = std::max(a, b);
    }
  }

  MatchRule Rule() {
    MatchRule r;
    if (Chance(20)) r.in_port_mask = static_cast<uint64_t>(Pick(15) + 1);
    if (Chance(40)) r.ethertype = kEthertypes[Pick(3)];
    if (Chance(50)) {
      r.match_ip_proto = true;
      r.ip_proto = kProtos[Pick(4)];
    }
    if (Chance(40)) {
      r.match_src = true;
      r.src = Prefix();
    }
    if (Chance(40)) {
      r.match_dst = true;
      r.dst = Prefix();
    }
    if (Chance(50)) Ports(&r.src_port_first, &r.src_port_last);
    if (Chance(60)) Ports(&r.dst_port_first, &r.dst_port_last);
    return r;
  }

  ParsedFrame Frame() {
    ParsedFrame f;
    f.frame_class = Chance(3) ? FrameClass::kDrop : FrameClass::kPassthrough;
    f.layers.ethertype = kEthertypes[Pick(3)];
    int l3 = Pick(5);  // 0: none, 1-2: IPv4, 3-4: IPv6
    f.layers.is_ipv4 = l3 == 1 || l3 == 2;
    f.layers.is_ipv6 = l3 >= 3;
    if (l3 != 0) {
      f.layers.ip_proto = kProtos[Pick(4)];
      f.src_addr = Address(Pick(6), f.layers.is_ipv4);
      f.dst_addr = Address(Pick(6), f.layers.is_ipv4);
      if (Chance(80)) {
        f.has_l4_ports = true;
        f.src_port = kPorts[Pick(6)];
        f.dst_port = kPorts[Pick(6)];
      }
    }
    return f;
  }

 private:
  std::mt19937 rng_;
};

std::vector<std::shared_ptr<const Ectx>> MakeEctxs(
    const std::vector<MatchRule>& rules) {
  std::vector<std::shared_ptr<const Ectx>> ectxs;
  for (size_t i = 0; i < rules.size(); ++i) {
    HandlerConfig config;
    config.name = absl::StrCat("r", i);
    config.kind = "table_test";
    config.match = rules[i];
    absl::StatusOr<std::unique_ptr<Ectx>> ectx =
        Ectx::Create(static_cast<uint32_t>(i), config);
    EXPECT_TRUE(ectx.ok()) << ectx.status();
    ectxs.push_back(*std::move(ectx));
  }
  return ectxs;
}

const Ectx* Reference(const std::vector<std::shared_ptr<const Ectx>>& ectxs,
                      const ParsedFrame& frame, uint16_t in_port) {
  for (const auto& ectx : ectxs) {
    if (ectx->match().Matches(frame, in_port)) return ectx.get();
  }
  return nullptr;
}

TEST(EctxTableTest, FlatLookupAgreesWithFirstMatchWalk) {
  uint64_t matched = 0;
  uint64_t checked = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    Generator gen(seed);
    size_t count = EctxTable::kLinearMax + 1 + gen.Pick(300);
    std::vector<MatchRule> rules;
    for (size_t i = 0; i < count; ++i) rules.push_back(gen.Rule());
    std::vector<std::shared_ptr<const Ectx>> ectxs = MakeEctxs(rules);
    EctxTable table(ectxs);
    ASSERT_GT(table.shape_count(), 0u) << "above kLinearMax it must hash";
    for (int f = 0; f < 3000; ++f) {
      ParsedFrame frame = gen.Frame();
      uint16_t in_port = static_cast<uint16_t>(gen.Pick(5));
      const Ectx* expected = Reference(ectxs, frame, in_port);
      const Ectx* got = table.Match(frame, in_port, nullptr);
      ASSERT_EQ(got, expected)
          << "seed " << seed << " frame " << f << ": expected "
          << (expected ? expected->name() : "none") << ", got "
          << (got ? got->name() : "none");
      matched += expected != nullptr;
      ++checked;
    }
  }
  // The pools are small enough that many frames match something: the test
  // compares real choices, not only "no match".
  EXPECT_GT(matched, checked / 4);
}

// Up to kLinearMax rules the table walks them, checking a rule that names
// only ingress ports inline: it must still pick what the reference picks,
// dropped frames and ingress masks included.
TEST(EctxTableTest, LinearWalkAgreesWithFirstMatchWalk) {
  uint64_t matched = 0;
  uint64_t taken_whole = 0;
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    Generator gen(seed);
    size_t count = 1 + gen.Pick(EctxTable::kLinearMax);
    std::vector<MatchRule> rules;
    for (size_t i = 0; i < count; ++i) {
      if (gen.Chance(50)) {
        MatchRule ports_only;
        if (gen.Chance(50)) {
          ports_only.in_port_mask = static_cast<uint64_t>(gen.Pick(15) + 1);
        }
        rules.push_back(ports_only);
      } else {
        rules.push_back(gen.Rule());
      }
    }
    std::vector<std::shared_ptr<const Ectx>> ectxs = MakeEctxs(rules);
    EctxTable table(ectxs);
    ASSERT_EQ(table.shape_count(), 0u);
    for (int f = 0; f < 300; ++f) {
      ParsedFrame frame = gen.Frame();
      uint16_t in_port = static_cast<uint16_t>(gen.Pick(5));
      const Ectx* expected = Reference(ectxs, frame, in_port);
      ASSERT_EQ(table.Match(frame, in_port, nullptr), expected)
          << "seed " << seed << " frame " << f;
      matched += expected != nullptr;
      // The HPU's handler burst takes EveryFrameOn's ECTX for every frame
      // the classifier keeps, without Match.
      const Ectx* every = table.EveryFrameOn(in_port);
      if (every != nullptr && frame.frame_class != FrameClass::kDrop) {
        ASSERT_EQ(every, expected) << "seed " << seed << " frame " << f;
        ++taken_whole;
      }
    }
  }
  EXPECT_GT(matched, 0u);
  EXPECT_GT(taken_whole, 0u);
}

TEST(EctxTableTest, EveryFrameOnIsThePortsFirstRuleIfItNamesOnlyPorts) {
  std::vector<MatchRule> rules(3);
  rules[0].in_port_mask = 0b10;  // port 1: UDP to 53
  rules[0].match_ip_proto = true;
  rules[0].ip_proto = 17;
  rules[0].dst_port_first = rules[0].dst_port_last = 53;
  rules[1].in_port_mask = 0b11;  // ports 0 and 1, every frame
  // rules[2]: every port, every frame
  std::vector<std::shared_ptr<const Ectx>> ectxs = MakeEctxs(rules);
  EctxTable table(ectxs);
  EXPECT_EQ(table.EveryFrameOn(0), ectxs[1].get());
  EXPECT_EQ(table.EveryFrameOn(1), nullptr) << "rule 0 sees port 1 first";
  EXPECT_EQ(table.EveryFrameOn(2), ectxs[2].get());
  EXPECT_EQ(table.EveryFrameOn(63), ectxs[2].get());
  EXPECT_EQ(table.EveryFrameOn(64), nullptr);

  // Above kLinearMax the table hashes, and the HPU matches frame by frame.
  std::vector<MatchRule> many(EctxTable::kLinearMax + 1);
  std::vector<std::shared_ptr<const Ectx>> hashed = MakeEctxs(many);
  EXPECT_EQ(EctxTable(hashed).EveryFrameOn(0), nullptr);
}

TEST(EctxTableTest, ManyExactRulesShareOneShape) {
  // 4096 handlers on distinct UDP destination ports: one shape, one probe.
  std::vector<MatchRule> rules;
  for (uint16_t port = 1000; port < 1000 + 4096; ++port) {
    MatchRule r;
    r.match_ip_proto = true;
    r.ip_proto = 17;
    r.dst_port_first = r.dst_port_last = port;
    rules.push_back(r);
  }
  std::vector<std::shared_ptr<const Ectx>> ectxs = MakeEctxs(rules);
  EctxTable table(ectxs);
  EXPECT_EQ(table.shape_count(), 1u);
  ParsedFrame frame;
  frame.layers.is_ipv4 = true;
  frame.layers.ethertype = 0x0800;
  frame.layers.ip_proto = 17;
  frame.has_l4_ports = true;
  frame.dst_port = 1000 + 4095;
  ASSERT_NE(table.Match(frame, 0, nullptr), nullptr);
  EXPECT_EQ(table.Match(frame, 0, nullptr)->name(), "r4095");
  frame.dst_port = 999;
  EXPECT_EQ(table.Match(frame, 0, nullptr), nullptr);
}

TEST(EctxTableTest, EarlierRuleOfALaterShapeStillWins) {
  // Shapes are probed by their first rule; within the search an earlier
  // (higher-priority) rule must beat a later one whatever its shape.
  std::vector<MatchRule> rules(EctxTable::kLinearMax + 1);
  for (auto& r : rules) {
    r.match_ip_proto = true;
    r.ip_proto = 6;  // never matches the UDP frame below
  }
  rules[3] = MatchRule();  // wildcard: matches everything
  rules[3].ethertype = 0x0800;
  rules[5].ip_proto = 17;  // a later, more specific rule
  rules[5].dst_port_first = rules[5].dst_port_last = 53;
  std::vector<std::shared_ptr<const Ectx>> ectxs = MakeEctxs(rules);
  EctxTable table(ectxs);
  ParsedFrame frame;
  frame.layers.is_ipv4 = true;
  frame.layers.ethertype = 0x0800;
  frame.layers.ip_proto = 17;
  frame.has_l4_ports = true;
  frame.dst_port = 53;
  ASSERT_NE(table.Match(frame, 0, nullptr), nullptr);
  EXPECT_EQ(table.Match(frame, 0, nullptr)->name(), "r3");
}

}  // namespace
}  // namespace spinnic
