// The reload plan (control/config_diff.h): each kind of live change with its
// exact line, the order they are applied in, restart-only fields refused by
// name with both values, and no change for the same file.
#include "control/config_diff.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace spinnic {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr char kBase[] = R"pb(
  ports { name: "wire0" vdev: "net_ring0" role: PORT_ROLE_WIRE mtu: 1500 }
  ports { name: "host0" vdev: "net_ring1" role: PORT_ROLE_HOST mtu: 1500 }
  port_pairs { a: "wire0" b: "host0" }
  workers: 1
  addresses { diad_node: "fd00::a" mac: "02:00:00:00:00:0a" }
  diad { peers { name: "b" node: "fd00::b" mac: "02:00:00:00:00:0b" } }
  handlers {
    name: "count-udp"
    kind: "count"
    params { key: "by" value: "dst_port" }
    params { key: "buckets" value: "16" }
    match { ip_proto: 17 }
  }
  handlers {
    name: "drop-tcp"
    kind: "null"
    match { ip_proto: 6 }
  }
)pb";

v1::Config Parse(const std::string& text) {
  v1::Config config;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config))
      << text;
  return config;
}

v1::Config Base() { return Parse(kBase); }

std::vector<std::string> Lines(const std::vector<v1::ConfigChange>& changes) {
  std::vector<std::string> lines;
  for (const v1::ConfigChange& change : changes) lines.push_back(change.line());
  return lines;
}

TEST(ConfigDiffTest, TheSameConfigChangesNothing) {
  absl::StatusOr<std::vector<v1::ConfigChange>> plan =
      PlanConfigChanges(Base(), Base());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(*plan, IsEmpty());
}

TEST(ConfigDiffTest, ParamsInAnotherOrderAreTheSame) {
  v1::Config wanted = Base();
  v1::HandlerInstall* h = wanted.mutable_handlers(0);
  h->mutable_params()->clear();
  (*h->mutable_params())["buckets"] = "16";
  (*h->mutable_params())["by"] = "dst_port";
  EXPECT_THAT(LiveChanges(Base(), wanted), IsEmpty());
}

TEST(ConfigDiffTest, AddedHandler) {
  v1::Config wanted = Base();
  v1::HandlerInstall* h = wanted.add_handlers();
  h->set_name("new-one");
  h->set_kind("count");
  std::vector<v1::ConfigChange> changes = LiveChanges(Base(), wanted);
  EXPECT_THAT(Lines(changes), ElementsAre("+ handler new-one (kind count)"));
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].action(), v1::ConfigChange::CONFIG_CHANGE_ADD);
  EXPECT_EQ(changes[0].object(), "handler");
  EXPECT_EQ(changes[0].name(), "new-one");
}

TEST(ConfigDiffTest, ChangedHandlerNamesItsFields) {
  v1::Config wanted = Base();
  (*wanted.mutable_handlers(0)->mutable_params())["buckets"] = "32";
  wanted.mutable_handlers(0)->set_priority(5);
  wanted.mutable_handlers(1)->mutable_match()->set_ip_proto(1);
  std::vector<v1::ConfigChange> changes = LiveChanges(Base(), wanted);
  EXPECT_THAT(Lines(changes),
              ElementsAre("~ handler count-udp: params, priority changed",
                          "~ handler drop-tcp: match changed"));
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].action(), v1::ConfigChange::CONFIG_CHANGE_MODIFY);
  EXPECT_THAT(changes[0].fields(), ElementsAre("params", "priority"));
}

TEST(ConfigDiffTest, RemovedHandler) {
  v1::Config wanted = Base();
  wanted.mutable_handlers()->RemoveLast();
  EXPECT_THAT(Lines(LiveChanges(Base(), wanted)),
              ElementsAre("- handler drop-tcp"));
}

TEST(ConfigDiffTest, PeersAddedChangedRemoved) {
  v1::Config wanted = Base();
  wanted.mutable_diad()->mutable_peers(0)->set_mac("02:00:00:00:00:bb");
  v1::DiadPeer* c = wanted.mutable_diad()->add_peers();
  c->set_name("c");
  c->set_node("fd00::c");
  c->set_mac("02:00:00:00:00:0c");
  EXPECT_THAT(Lines(LiveChanges(Base(), wanted)),
              ElementsAre("~ peer b: mac changed",
                          "+ peer c (node fd00::c, mac 02:00:00:00:00:0c)"));
  EXPECT_THAT(Lines(LiveChanges(wanted, Base())),
              ElementsAre("~ peer b: mac changed", "- peer c"));
}

TEST(ConfigDiffTest, PeerAddressesCompareAsAddressesNotText) {
  v1::Config wanted = Base();
  wanted.mutable_diad()->mutable_peers(0)->set_node("fd00:0::000b");
  wanted.mutable_diad()->mutable_peers(0)->set_mac("02:00:00:00:00:0B");
  EXPECT_THAT(LiveChanges(Base(), wanted), IsEmpty());
}

TEST(ConfigDiffTest, ChangesComeInTheOrderTheyAreApplied) {
  v1::Config wanted = Base();
  wanted.mutable_handlers()->RemoveLast();           // -
  wanted.mutable_handlers(0)->set_state_size(4096);  // ~
  wanted.add_handlers()->set_name("z");              // +
  wanted.mutable_handlers(1)->set_kind("count");
  wanted.mutable_diad()->mutable_peers()->Clear();       // - peer
  v1::DiadPeer* c = wanted.mutable_diad()->add_peers();  // + peer
  c->set_name("c");
  c->set_node("fd00::c");
  c->set_mac("02:00:00:00:00:0c");
  EXPECT_THAT(Lines(LiveChanges(Base(), wanted)),
              ElementsAre("- handler drop-tcp",
                          "+ peer c (node fd00::c, mac 02:00:00:00:00:0c)",
                          "~ handler count-udp: state_size changed",
                          "+ handler z (kind count)", "- peer b"));
}

TEST(ConfigDiffTest, RestartOnlyFieldsAreRefusedByName) {
  v1::Config wanted = Base();
  wanted.mutable_ports(1)->set_mtu(9000);
  wanted.add_workers(2);
  wanted.mutable_runtime()->set_mbufs(8191);
  wanted.mutable_addresses()->set_diad_node("fd00::aa");
  // A live change in the same file: refused with the rest.
  wanted.mutable_handlers()->RemoveLast();
  EXPECT_THAT(
      RestartOnlyDifferences(Base(), wanted),
      ElementsAre("ports[1].mtu: 1500 -> 9000", "workers: [1] -> [1, 2]",
                  "addresses.diad_node: \"fd00::a\" -> \"fd00::aa\"",
                  "runtime: (unset) -> {mbufs: 8191}"));
  absl::StatusOr<std::vector<v1::ConfigChange>> plan =
      PlanConfigChanges(Base(), wanted);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(plan.status().message(),
            "nothing applied: ports[1].mtu: 1500 -> 9000 needs a restart of "
            "spinnicd; workers: [1] -> [1, 2] needs a restart of spinnicd; "
            "addresses.diad_node: \"fd00::a\" -> \"fd00::aa\" needs a restart "
            "of spinnicd; runtime: (unset) -> {mbufs: 8191} needs a restart "
            "of spinnicd; keep the running values in the file, or restart "
            "spinnicd with it (spinctl config show prints them)");
}

TEST(ConfigDiffTest, PortsAddedOrRemovedAndOptionalFields) {
  v1::Config wanted = Base();
  wanted.mutable_ports(0)->set_promiscuous(false);
  v1::Port* port = wanted.add_ports();
  port->set_name("wire1");
  port->set_vdev("net_ring2");
  EXPECT_THAT(RestartOnlyDifferences(Base(), wanted),
              ElementsAre("ports[0].promiscuous: (unset) -> false",
                          "ports[2]: (none) -> {name: \"wire1\" vdev: "
                          "\"net_ring2\"}"));
  EXPECT_THAT(RestartOnlyDifferences(wanted, Base()),
              ElementsAre("ports[0].promiscuous: false -> (unset)",
                          "ports[2]: {name: \"wire1\" vdev: \"net_ring2\"} -> "
                          "(none)"));
}

TEST(ConfigDiffTest, TransportSectionsAreRestartOnlyApartFromPeers) {
  v1::Config wanted = Base();
  wanted.mutable_diad()->set_window_packets(64);
  wanted.mutable_roce()->set_rping_port(7174);
  EXPECT_THAT(RestartOnlyDifferences(Base(), wanted),
              ElementsAre("diad.window_packets: 0 -> 64",
                          "roce: (unset) -> {rping_port: 7174}"));
  // A diad section that holds only peers is no section: removing every
  // peer, or the section with them, is a live change.
  v1::Config no_diad = Base();
  no_diad.clear_diad();
  EXPECT_THAT(RestartOnlyDifferences(Base(), no_diad), IsEmpty());
  EXPECT_THAT(Lines(LiveChanges(Base(), no_diad)), ElementsAre("- peer b"));
}

}  // namespace
}  // namespace spinnic
