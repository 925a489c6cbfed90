#include "control/config_loader.h"

#include <rte_config.h>

#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "control/diad/diad_config.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/ectx.h"
#include "dataplane/roce/roce_config.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace spinnic {
namespace {

constexpr absl::string_view kSource = "t.textproto";

// A config whose line N is lines[N-1].
std::string Lines(std::initializer_list<absl::string_view> lines) {
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

// Valid building blocks; each is one line.
constexpr absl::string_view kWire =
    R"(ports { name: "wire0" vdev: "net_ring0" role: PORT_ROLE_WIRE })";
constexpr absl::string_view kHost =
    R"(ports { name: "host0" vdev: "net_ring1" role: PORT_ROLE_HOST })";
constexpr absl::string_view kPair = R"(port_pairs { a: "wire0" b: "host0" })";
constexpr absl::string_view kWorker = "workers: 1";

// Parse + validate, as the daemon does.
absl::Status Check(absl::string_view text) {
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(text, kSource);
  if (!parsed.ok()) return parsed.status();
  return ValidateConfig(parsed->config, &parsed->locations);
}

// The error starts with `where` ("t.textproto:3:3: ports[0].mtu: "), contains
// `hint`, is INVALID_ARGUMENT and one line.
testing::AssertionResult ErrorIs(const absl::Status& status,
                                 absl::string_view where,
                                 absl::string_view hint = "") {
  if (status.ok()) {
    return testing::AssertionFailure()
           << "expected an error at '" << where << "', got OK";
  }
  std::string message(status.message());
  if (status.code() != absl::StatusCode::kInvalidArgument) {
    return testing::AssertionFailure() << "not INVALID_ARGUMENT: " << status;
  }
  if (!absl::StartsWith(message, where)) {
    return testing::AssertionFailure()
           << "message: " << message << "\nexpected to start with: " << where;
  }
  if (!absl::StrContains(message, hint)) {
    return testing::AssertionFailure()
           << "message: " << message << "\nexpected to contain: " << hint;
  }
  if (absl::StrContains(message, '\n')) {
    return testing::AssertionFailure() << "not one line: " << message;
  }
  return testing::AssertionSuccess();
}

TEST(ConfigLoaderTest, MinimalConfigIsValid) {
  EXPECT_TRUE(Check(Lines({kWire, kWorker})).ok())
      << Check(Lines({kWire, kWorker}));
  EXPECT_TRUE(Check(Lines({kWire, kHost, kPair, kWorker})).ok());
}

// --- Syntax errors: protobuf's position, 1-based, plus what would be right.

TEST(SyntaxTest, UnknownFieldListsTheFields) {
  absl::Status s = Check(Lines({kWire, R"(ports { nme: "x" })"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:2:9: ", "no field named \"nme\""));
  EXPECT_TRUE(ErrorIs(
      s, "t.textproto:2:9: ", "The fields of Port are: name, pci, vdev, role"));
}

TEST(SyntaxTest, WrongValueType) {
  absl::Status s = Check(Lines({"ports {", "  name: 3", "}"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:2:9: ", "Expected string"));
}

TEST(SyntaxTest, UnknownEnumNameListsTheValues) {
  absl::Status s = Check(Lines({"ports {", "  role: WIRE", "}"}));
  EXPECT_TRUE(ErrorIs(
      s, "t.textproto:2:9: ", "Write one of: PORT_ROLE_WIRE, PORT_ROLE_HOST"));
}

TEST(SyntaxTest, OneofSetTwice) {
  absl::Status s = Check(Lines(
      {"ports {", "  vdev: \"net_ring0\"", "  pci: \"0000:03:00.0\"", "}"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:3:3: ", "Keep only one of them"));
}

TEST(SyntaxTest, UnclosedBlock) {
  absl::Status s = Check(Lines({kWire, "runtime {"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:3:1: ", "end of file"));
}

TEST(SyntaxTest, SingularFieldTwice) {
  absl::Status s = Check(Lines({"main_lcore: 1", "main_lcore: 2"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:2:1: ", "Write it once"));
}

TEST(SyntaxTest, ParamGivenTwice) {
  absl::Status s = Check(Lines({
      kWire,
      kWorker,                                         // 1-2
      "handlers {",                                    // 3
      "  name: \"c\" kind: \"count\"",                 // 4
      "  params { key: \"by\" value: \"none\" }",      // 5
      "  params { key: \"by\" value: \"ip_proto\" }",  // 6
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:6:3: handlers[0].params[\"by\"]: ",
                      "given twice (first on line 5); keep one"));
}

// --- Ports.

TEST(PortsTest, NoPorts) {
  EXPECT_TRUE(ErrorIs(Check(Lines({kWorker})),
                      "t.textproto: ports: ", "add at least one"));
}

TEST(PortsTest, TooManyPorts) {
  std::string text(kWorker);
  for (int i = 0; i <= RTE_MAX_ETHPORTS; ++i) {
    absl::StrAppend(&text, "\nports { name: \"p", i, "\" vdev: \"net_ring", i,
                    "\" role: PORT_ROLE_WIRE }");
  }
  EXPECT_TRUE(ErrorIs(Check(text),
                      absl::StrCat("t.textproto:", RTE_MAX_ETHPORTS + 2,
                                   ":1: ports[", RTE_MAX_ETHPORTS, "]: "),
                      "RTE_MAX_ETHPORTS"));
}

TEST(PortsTest, NameMissing) {
  absl::Status s = Check(Lines({
      kWire,
      kWorker,
      "ports {",  // 3
      "  vdev: \"net_ring1\"",
      "  role: PORT_ROLE_HOST",
      "}",
  }));
  // The field is absent: the error points at its block.
  EXPECT_TRUE(ErrorIs(s, "t.textproto:3:1: ports[1].name: ",
                      "give the port a short unique name"));
}

TEST(PortsTest, NameWithBadCharacter) {
  absl::Status s = Check(Lines({
      kWorker,
      "ports {",
      "  name: \"wire 0\"",  // 3
      "  vdev: \"net_ring1\"",
      "  role: PORT_ROLE_HOST",
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:3:3: ports[0].name: ",
                      "use only letters, digits, '_' and '-'"));
}

TEST(PortsTest, NameTooLong) {
  std::string name(33, 'a');
  std::string line = absl::StrCat("  name: \"", name, "\"");
  absl::Status s = Check(Lines({
      kWorker,
      "ports {",
      line,  // 3
      "  vdev: \"net_ring1\"",
      "  role: PORT_ROLE_HOST",
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:3:3: ports[0].name: ",
                      "is 33 characters long; use at most 32"));
  // 32 is fine.
  std::string ok_line = absl::StrCat("  name: \"", std::string(32, 'a'), "\"");
  EXPECT_TRUE(Check(Lines({kWorker, "ports {", ok_line, "  vdev: \"net_ring1\"",
                           "  role: PORT_ROLE_HOST", "}"}))
                  .ok());
}

TEST(PortsTest, NameDuplicate) {
  absl::Status s = Check(Lines({
      kWire,
      kWorker,
      "ports {",
      "  name: \"wire0\"",  // 4
      "  vdev: \"net_ring1\"",
      "  role: PORT_ROLE_HOST",
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:4:3: ports[1].name: ",
                      "is already the name of ports[0] on line 1"));
}

TEST(PortsTest, NoDevice) {
  absl::Status s = Check(Lines({
      kWorker,
      "ports {",  // 2
      "  name: \"wire0\"",
      "  role: PORT_ROLE_WIRE",
      "}",
  }));
  EXPECT_TRUE(
      ErrorIs(s, "t.textproto:2:1: ports[0]: ", "set exactly one of pci:"));
}

TEST(PortsTest, EmptyVdev) {
  absl::Status s = Check(Lines({
      kWorker,
      "ports {",
      "  name: \"wire0\"",
      "  vdev: \"\"",  // 4
      "  role: PORT_ROLE_WIRE",
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:4:3: ports[0].vdev: ",
                      "empty; write a DPDK virtual device"));
}

TEST(PortsTest, VdevWithSpaces) {
  absl::Status s = Check(Lines({
      kWorker,
      "ports {",
      "  name: \"wire0\"",
      "  vdev: \"net_af_packet0, iface=veth0\"",  // 4
      "  role: PORT_ROLE_WIRE",
      "}",
  }));
  EXPECT_TRUE(
      ErrorIs(s, "t.textproto:4:3: ports[0].vdev: ", "contains white space"));
}

TEST(PortsTest, VdevWithoutDeviceName) {
  absl::Status s = Check(Lines({
      kWorker,
      R"(ports { name: "wire0" vdev: ",iface=x" role: PORT_ROLE_WIRE })",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:2:23: ports[0].vdev: ",
                      "does not start with a device name"));
}

TEST(PortsTest, BadPciAddress) {
  for (absl::string_view pci :
       {"03:00", "0000:3:00.0", "0000:03:20.0", "0000:03:00.8", "eth0",
        "0000:03:00.0.1", "0000:0g:00.0"}) {
    std::string line = absl::StrCat("  pci: \"", pci, "\"");
    absl::Status s = Check(Lines({
        kWorker,
        "ports {",
        "  name: \"wire0\"",
        line,  // 4
        "  role: PORT_ROLE_WIRE",
        "}",
    }));
    EXPECT_TRUE(ErrorIs(s, "t.textproto:4:3: ports[0].pci: ",
                        "is not a PCI address; write domain:bus:device"))
        << pci;
  }
}

TEST(PortsTest, GoodPciAddresses) {
  for (absl::string_view pci :
       {"0000:03:00.0", "03:00.1", "0000:af:1f.7", "10000:03:00.0",
        "0000:03:00.0,txq_inline_max=128"}) {
    std::string line = absl::StrCat("ports { name: \"w\" pci: \"", pci,
                                    "\" role: PORT_ROLE_WIRE }");
    EXPECT_TRUE(Check(Lines({kWorker, line})).ok())
        << pci << ": " << Check(Lines({kWorker, line}));
  }
}

TEST(PortsTest, DuplicateDevice) {
  absl::Status s = Check(Lines({
      kWire,
      kWorker,
      "ports {",
      "  name: \"host0\"",
      "  vdev: \"net_ring0,foo=1\"",  // 5
      "  role: PORT_ROLE_HOST",
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:5:3: ports[1].vdev: ",
                      "device \"net_ring0\" is already ports[0] on line 1"));
  // The same PCI device written with and without its domain.
  s = Check(Lines({
      kWorker,
      R"(ports { name: "a" pci: "0000:03:00.0" role: PORT_ROLE_WIRE })",
      R"(ports { name: "b" pci: "03:00.0" role: PORT_ROLE_HOST })",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:3:19: ports[1].pci: ",
                      "device \"0000:03:00.0\" is already ports[0]"));
}

TEST(PortsTest, RoleUnset) {
  absl::Status s = Check(Lines({
      kWorker,
      "ports {",  // 2
      "  name: \"wire0\"",
      "  vdev: \"net_ring0\"",
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:2:1: ports[0].role: ",
                      "not set; write role: PORT_ROLE_WIRE"));
}

TEST(PortsTest, RoleUnknownNumber) {
  absl::Status s = Check(Lines({
      kWorker,
      "ports {",
      "  name: \"wire0\"",
      "  vdev: \"net_ring0\"",
      "  role: 7",  // 5
      "}",
  }));
  EXPECT_TRUE(
      ErrorIs(s, "t.textproto:5:3: ports[0].role: ", "7 is not a port role"));
}

// A port with one extra field on its own line (line 3 of the config).
std::string PortWith(absl::string_view field) {
  return Lines({
      kWorker,
      R"(ports { name: "wire0" vdev: "net_ring0" role: PORT_ROLE_WIRE)",
      absl::StrCat("  ", field),  // 3
      "}",
  });
}

TEST(PortsTest, Queues) {
  EXPECT_TRUE(
      ErrorIs(Check(PortWith("queues: 65")),
              "t.textproto:3:3: ports[0].queues: ", "65 is more than 64"));
  EXPECT_TRUE(Check(PortWith("queues: 64")).ok());
  EXPECT_TRUE(Check(PortWith("queues: 0")).ok());
}

TEST(PortsTest, Mtu) {
  for (absl::string_view bad : {"mtu: 67", "mtu: 9601", "mtu: 1"}) {
    EXPECT_TRUE(ErrorIs(Check(PortWith(bad)), "t.textproto:3:3: ports[0].mtu: ",
                        "is outside 68..9600 bytes"))
        << bad;
  }
  for (absl::string_view good : {"mtu: 0", "mtu: 68", "mtu: 9600"}) {
    EXPECT_TRUE(Check(PortWith(good)).ok()) << good;
  }
}

TEST(PortsTest, Descriptors) {
  for (absl::string_view bad :
       {"rx_descriptors: 1000", "rx_descriptors: 32", "rx_descriptors: 8192"}) {
    EXPECT_TRUE(ErrorIs(Check(PortWith(bad)),
                        "t.textproto:3:3: ports[0].rx_descriptors: ",
                        "is not a power of two in 64..4096"))
        << bad;
  }
  EXPECT_TRUE(
      ErrorIs(Check(PortWith("tx_descriptors: 100")),
              "t.textproto:3:3: ports[0].tx_descriptors: ", "or 0 for 1024"));
  for (absl::string_view good :
       {"rx_descriptors: 0", "rx_descriptors: 64", "tx_descriptors: 4096"}) {
    EXPECT_TRUE(Check(PortWith(good)).ok()) << good;
  }
}

TEST(PortsTest, TransportPacerChecked) {
  // Line 3 is "  transport_pacer { <field> }": the field starts at column 21.
  auto pacer = [](absl::string_view field) {
    return PortWith(absl::StrCat("transport_pacer { ", field, " }"));
  };
  EXPECT_TRUE(ErrorIs(Check(pacer("passthrough_share_percent: 100")),
                      "t.textproto:3:21: "
                      "ports[0].transport_pacer.passthrough_share_percent: ",
                      "100 is more than 99; use 0..99"));
  EXPECT_TRUE(
      ErrorIs(Check(pacer("queue_frames: 16385")),
              "t.textproto:3:21: ports[0].transport_pacer.queue_frames: ",
              "use 1..16384 transport frames waiting per HPU, or 0 "
              "for 512"));
  EXPECT_TRUE(
      ErrorIs(Check(pacer("max_rate_mbps: 400001")),
              "t.textproto:3:21: ports[0].transport_pacer.max_rate_mbps: ",
              "or 0 for no ceiling"));
  for (absl::string_view good :
       {"", "passthrough_share_percent: 0", "passthrough_share_percent: 99",
        "queue_frames: 1", "queue_frames: 16384", "max_rate_mbps: 400000"}) {
    EXPECT_TRUE(Check(pacer(good)).ok()) << good;
  }
}

TEST(PortsTest, TransportPacerConverted) {
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
      Lines({kWorker,
             R"(ports { name: "wire0" vdev: "net_ring0" role: PORT_ROLE_WIRE)",
             "  transport_pacer { passthrough_share_percent: 60 "
             "max_rate_mbps: 2500 }",
             "}", kHost, kPair}),
      kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(ValidateConfig(parsed->config, &parsed->locations).ok());
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  const TxPacerConfig& wire = dp->ports[0].transport_pacer;
  EXPECT_TRUE(wire.enabled);
  EXPECT_EQ(wire.passthrough_share_percent, 60u);
  EXPECT_EQ(wire.queue_frames, 512u);                  // 0: the default
  EXPECT_EQ(wire.rate_bytes_per_s, 312'500'000u);      // 2500 Mbit/s
  EXPECT_FALSE(dp->ports[1].transport_pacer.enabled);  // no block: no pacer
}

TEST(PortsTest, ForwardUncheckedConverted) {
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
      Lines({kWorker,
             R"(ports { name: "wire0" vdev: "net_ring0" role: PORT_ROLE_WIRE)",
             "  forward_unchecked: true", "}", kHost, kPair}),
      kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(ValidateConfig(parsed->config, &parsed->locations).ok());
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  EXPECT_TRUE(dp->ports[0].forward_unchecked);
  EXPECT_FALSE(dp->ports[1].forward_unchecked);  // unset: checked
}

// --- Port pairs.

TEST(PortPairsTest, UnknownPort) {
  absl::Status s = Check(Lines({
      kWire,
      kHost,
      kWorker,
      "port_pairs {",
      "  a: \"wire0\"",
      "  b: \"host1\"",  // 6
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:6:3: port_pairs[0].b: ",
                      "no port is named \"host1\"; ports are: wire0, host0"));
}

TEST(PortPairsTest, MissingSide) {
  absl::Status s =
      Check(Lines({kWire, kHost, kWorker, "port_pairs { a: \"wire0\" }"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:4:1: port_pairs[0].b: ", "missing"));
}

TEST(PortPairsTest, SamePortTwice) {
  absl::Status s = Check(Lines({
      kWire,
      kHost,
      kWorker,
      "port_pairs {",
      "  a: \"wire0\"",
      "  b: \"wire0\"",  // 6
      "}",
  }));
  EXPECT_TRUE(
      ErrorIs(s, "t.textproto:6:3: port_pairs[0].b: ", "two different ports"));
}

TEST(PortPairsTest, PortInTwoPairs) {
  absl::Status s = Check(Lines({
      kWire,
      kHost,
      R"(ports { name: "host1" vdev: "net_ring2" role: PORT_ROLE_HOST })",
      kWorker,
      kPair,  // 5
      "port_pairs {",
      "  a: \"host1\"",
      "  b: \"wire0\"",  // 8
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:8:3: port_pairs[1].b: ",
                      "port \"wire0\" is already in port_pairs[0] on line 5"));
}

// --- Workers and the main lcore.

TEST(WorkersTest, NoWorkers) {
  EXPECT_TRUE(
      ErrorIs(Check(Lines({kWire})), "t.textproto: workers: ", "workers: [1]"));
}

TEST(WorkersTest, CoreOutOfRange) {
  EXPECT_TRUE(ErrorIs(Check(Lines({kWire, "workers: 1", "workers: 1024"})),
                      "t.textproto:3:1: workers[1]: ",
                      "core 1024 is out of range; cores are 0..1023"));
  EXPECT_TRUE(Check(Lines({kWire, "workers: 1023"})).ok());
}

TEST(WorkersTest, WorkerOnMainLcore) {
  EXPECT_TRUE(ErrorIs(
      Check(Lines({kWire, "main_lcore: 2", "workers: 1", "workers: 2"})),
      "t.textproto:4:1: workers[1]: ", "core 2 is also main_lcore"));
  EXPECT_TRUE(
      ErrorIs(Check(Lines({kWire, "workers: 0"})),
              "t.textproto:2:1: workers[0]: ", "core 0 is also main_lcore"));
}

TEST(WorkersTest, DuplicateCore) {
  EXPECT_TRUE(
      ErrorIs(Check(Lines({kWire, "workers: 1", "workers: 2", "workers: 1"})),
              "t.textproto:4:1: workers[2]: ", "core 1 is already workers[0]"));
}

TEST(WorkersTest, ListSyntaxPointsAtTheList) {
  EXPECT_TRUE(
      ErrorIs(Check(Lines({kWire, "", "workers: [1, 2, 1]"})),
              "t.textproto:3:1: workers[2]: ", "core 1 is already workers[0]"));
}

TEST(WorkersTest, MainLcoreOutOfRange) {
  EXPECT_TRUE(
      ErrorIs(Check(Lines({kWire, kWorker, "main_lcore: 5000"})),
              "t.textproto:3:1: main_lcore: ", "core 5000 is out of range"));
}

TEST(WorkersTest, TooManyWorkers) {
  std::string text(kWire);
  for (int i = 1; i <= RTE_MAX_LCORE; ++i) {
    absl::StrAppend(&text, "\nworkers: ", i);
  }
  EXPECT_TRUE(ErrorIs(Check(text),
                      absl::StrCat("t.textproto:", RTE_MAX_LCORE + 1,
                                   ":1: workers[", RTE_MAX_LCORE - 1, "]: "),
                      "RTE_MAX_LCORE"));
}

// --- Addresses.

std::string AddressesWith(absl::string_view field) {
  return Lines({
      kWire,
      kWorker,
      "addresses {",
      absl::StrCat("  ", field),  // 4
      "}",
  });
}

TEST(AddressesTest, Mac) {
  EXPECT_TRUE(ErrorIs(Check(AddressesWith("mac: \"02:00:00:00:01\"")),
                      "t.textproto:4:3: addresses.mac: ",
                      "is not a MAC address; write six hex bytes"));
  EXPECT_TRUE(ErrorIs(Check(AddressesWith("mac: \"01:00:5e:00:00:01\"")),
                      "t.textproto:4:3: addresses.mac: ", "not a unicast MAC"));
  EXPECT_TRUE(ErrorIs(Check(AddressesWith("mac: \"00:00:00:00:00:00\"")),
                      "t.textproto:4:3: addresses.mac: ", "not a unicast MAC"));
  EXPECT_TRUE(Check(AddressesWith("mac: \"02:00:00:00:00:01\"")).ok());
  EXPECT_TRUE(Check(AddressesWith("mac: \"02:AB:cd:00:00:01\"")).ok());
}

TEST(AddressesTest, Ipv4) {
  EXPECT_TRUE(ErrorIs(Check(AddressesWith("ipv4: \"192.0.2.10/24\"")),
                      "t.textproto:4:3: addresses.ipv4[0]: ",
                      "has a prefix length; write the address alone"));
  EXPECT_TRUE(ErrorIs(
      Check(AddressesWith("ipv4: \"192.0.2\"")),
      "t.textproto:4:3: addresses.ipv4[0]: ", "is not an IPv4 address"));
  EXPECT_TRUE(ErrorIs(
      Check(AddressesWith("ipv4: \"fd00::1\"")),
      "t.textproto:4:3: addresses.ipv4[0]: ", "is not an IPv4 address"));
  EXPECT_TRUE(ErrorIs(
      Check(AddressesWith("ipv4: \"224.0.0.1\"")),
      "t.textproto:4:3: addresses.ipv4[0]: ", "is not a unicast address"));
  EXPECT_TRUE(
      ErrorIs(Check(AddressesWith("ipv4: \"192.0.2.1\" ipv4: \"192.0.2.2\" "
                                  "ipv4: \"192.0.2.1\"")),
              "t.textproto:4:39: addresses.ipv4[2]: ",
              "is listed twice (addresses.ipv4[0] on line 4)"));
  EXPECT_TRUE(
      Check(AddressesWith("ipv4: [\"192.0.2.10\", \"10.0.0.1\"]")).ok());
}

TEST(AddressesTest, Ipv6) {
  EXPECT_TRUE(
      ErrorIs(Check(AddressesWith("ipv6: \"fd00::1/64\"")),
              "t.textproto:4:3: addresses.ipv6[0]: ", "has a prefix length"));
  EXPECT_TRUE(ErrorIs(
      Check(AddressesWith("ipv6: \"fd00:::1\"")),
      "t.textproto:4:3: addresses.ipv6[0]: ", "is not an IPv6 address"));
  EXPECT_TRUE(ErrorIs(
      Check(AddressesWith("ipv6: \"ff02::1\"")),
      "t.textproto:4:3: addresses.ipv6[0]: ", "is not a unicast address"));
  EXPECT_TRUE(Check(AddressesWith("ipv6: \"fd00:1::10\"")).ok());
}

TEST(AddressesTest, DiadNode) {
  EXPECT_TRUE(
      ErrorIs(Check(AddressesWith("diad_node: \"2001:db8::1\"")),
              "t.textproto:4:3: addresses.diad_node: ", "is not in fc00::/7"));
  EXPECT_TRUE(ErrorIs(
      Check(AddressesWith("diad_node: \"10.0.0.1\"")),
      "t.textproto:4:3: addresses.diad_node: ", "is not an IPv6 address"));
  EXPECT_TRUE(ErrorIs(
      Check(AddressesWith("diad_node: \"fd00::/64\"")),
      "t.textproto:4:3: addresses.diad_node: ", "without prefix length"));
  EXPECT_TRUE(Check(AddressesWith("diad_node: \"fd00:d1ad::1\"")).ok());
  // Without a wire port, and no diad.port: the check says so, as the
  // conversion would (the config fuzz target found them disagreeing).
  const std::string host_only = Lines({
      kHost,
      kWorker,
      "addresses {",
      "  diad_node: \"fd00:d1ad::1\"",  // 4
      "}",
  });
  EXPECT_TRUE(ErrorIs(Check(host_only),
                      "t.textproto:4:3: addresses.diad_node: ",
                      "DiAD has no wire port to reach peers through"));
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(host_only, kSource);
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(ToDataplaneConfig(parsed->config).ok());
  EXPECT_TRUE(
      Check(absl::StrCat(host_only, "diad { port: \"host0\" }\n")).ok());
  EXPECT_TRUE(Check(AddressesWith("diad_node: \"fc00::2\"")).ok());
}

// --- Handlers.

// A handler block starting on line 3; `fields` go on lines 4, 5, ...
std::string HandlerWith(std::initializer_list<absl::string_view> fields) {
  std::vector<std::string> lines = {std::string(kWire), std::string(kWorker),
                                    "handlers {"};
  for (absl::string_view field : fields) {
    lines.push_back(absl::StrCat("  ", field));
  }
  lines.push_back("}");
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

TEST(HandlersTest, NameMissing) {
  EXPECT_TRUE(ErrorIs(
      Check(HandlerWith({"kind: \"count\""})),
      "t.textproto:3:1: handlers[0].name: ", "give the handler a unique name"));
}

TEST(HandlersTest, NameBad) {
  EXPECT_TRUE(ErrorIs(Check(HandlerWith({"name: \"a b\"", "kind: \"count\""})),
                      "t.textproto:4:3: handlers[0].name: ", "use only"));
}

TEST(HandlersTest, NameDuplicate) {
  absl::Status s = Check(Lines({
      kWire,
      kWorker,
      R"(handlers { name: "c" kind: "count" })",  // 3
      "handlers {",
      "  name: \"c\"",  // 5
      "  kind: \"count\"",
      "}",
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:5:3: handlers[1].name: ",
                      "is already the name of handlers[0] on line 3"));
}

TEST(HandlersTest, KindMissing) {
  EXPECT_TRUE(ErrorIs(Check(HandlerWith({"name: \"c\""})),
                      "t.textproto:3:1: handlers[0].kind: ",
                      "missing; set the handler kind, one of: "));
}

TEST(HandlersTest, UnknownKindListsTheKnownOnes) {
  absl::Status s = Check(HandlerWith({"name: \"c\"", "kind: \"cnt\""}));
  EXPECT_TRUE(
      ErrorIs(s, "t.textproto:5:3: handlers[0].kind: ",
              "\"cnt\" is not a compiled-in handler kind; use one of:"));
  EXPECT_TRUE(absl::StrContains(s.message(), "count"));
  EXPECT_TRUE(absl::StrContains(s.message(), "filter"));
  EXPECT_TRUE(absl::StrContains(s.message(), "xor_payload"));
}

TEST(HandlersTest, UnknownParamPointsAtItsEntry) {
  absl::Status s = Check(HandlerWith({
      "name: \"c\"", "kind: \"count\"",
      "params { key: \"by\" value: \"none\" }",
      "params { key: \"bogus\" value: \"1\" }",  // 7
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:7:3: handlers[0].params[\"bogus\"]: ",
                      "kind \"count\": unknown parameter 'bogus'; this "
                      "handler takes: by, buckets"));
}

TEST(HandlersTest, MalformedParamValue) {
  absl::Status s = Check(HandlerWith({
      "name: \"c\"", "kind: \"count\"",
      "params { key: \"buckets\" value: \"many\" }",  // 6
  }));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:6:3: handlers[0].params[\"buckets\"]: ",
                      "parameter 'buckets' = 'many': not an unsigned integer"));
  s = Check(HandlerWith({
      "name: \"c\"",
      "kind: \"count\"",
      "params { key: \"buckets\" value: \"0\" }",
  }));
  EXPECT_TRUE(ErrorIs(
      s, "t.textproto:6:3: handlers[0].params[\"buckets\"]: ", "out of range"));
}

TEST(HandlersTest, MissingRequiredParam) {
  absl::Status s = Check(HandlerWith({"name: \"x\"", "kind: \"xor_payload\""}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:3:1: handlers[0].params: ",
                      "missing required parameter 'key'"));
}

TEST(HandlersTest, ParamRejectedByTheKind) {
  // The schema takes any string for `by`; the kind's factory does not.
  absl::Status s = Check(HandlerWith({
      "name: \"c\"", "kind: \"count\"",
      "params { key: \"by\" value: \"colour\" }",  // 6
  }));
  EXPECT_TRUE(ErrorIs(
      s, "t.textproto:6:3: handlers[0].params[\"by\"]: ", "kind \"count\": "));
  EXPECT_TRUE(absl::StrContains(s.message(), "colour"));
}

TEST(HandlersTest, StateSize) {
  EXPECT_TRUE(ErrorIs(
      Check(
          HandlerWith({"name: \"c\"", "kind: \"count\"",
                       absl::StrCat("state_size: ", Ectx::kMaxStateSize + 1)})),
      "t.textproto:6:3: handlers[0].state_size: ",
      absl::StrCat("over the limit of ", Ectx::kMaxStateSize)));
  EXPECT_TRUE(ErrorIs(
      Check(HandlerWith({"name: \"c\"", "kind: \"count\"", "state_size: 8"})),
      "t.textproto:6:3: handlers[0].state_size: ",
      "8 bytes is below the 16 bytes kind \"count\" needs"));
  EXPECT_TRUE(
      Check(HandlerWith({"name: \"c\"", "kind: \"count\"",
                         absl::StrCat("state_size: ", Ectx::kMaxStateSize)}))
          .ok());
}

TEST(HandlersTest, InitialStateLargerThanState) {
  EXPECT_TRUE(ErrorIs(
      Check(HandlerWith({"name: \"c\"", "kind: \"count\"", "state_size: 16",
                         "initial_state: \"0123456789abcdefg\""})),
      "t.textproto:7:3: handlers[0].initial_state: ",
      "17 bytes do not fit in the 16-byte state"));
  // The kind's minimum (16 for count) counts when state_size is 0.
  EXPECT_TRUE(
      ErrorIs(Check(HandlerWith({"name: \"c\"", "kind: \"count\"",
                                 "initial_state: \"0123456789abcdefg\""})),
              "t.textproto:6:3: handlers[0].initial_state: ", "16-byte state"));
  EXPECT_TRUE(Check(HandlerWith({"name: \"c\"", "kind: \"count\"",
                                 "initial_state: \"0123456789abcdef\""}))
                  .ok());
}

TEST(HandlersTest, OverrunLimitWithoutBudget) {
  EXPECT_TRUE(ErrorIs(Check(HandlerWith({"name: \"c\"", "kind: \"count\"",
                                         "disable_after_overruns: 3"})),
                      "t.textproto:6:3: handlers[0].disable_after_overruns: ",
                      "set cycle_budget"));
  EXPECT_TRUE(
      Check(HandlerWith({"name: \"c\"", "kind: \"count\"", "cycle_budget: 1000",
                         "disable_after_overruns: 3"}))
          .ok());
}

// A count handler whose match block starts on line 5; `fields` go on lines
// 6, 7, ...
std::string MatchWith(std::initializer_list<absl::string_view> fields) {
  std::vector<std::string> lines = {
      std::string(kWire), std::string(kHost), std::string(kWorker),
      R"(handlers { name: "c" kind: "count")", "  match {"};
  for (absl::string_view field : fields) {
    lines.push_back(absl::StrCat("    ", field));
  }
  lines.push_back("  }");
  lines.push_back("}");
  return absl::StrCat(absl::StrJoin(lines, "\n"), "\n");
}

TEST(MatchTest, InPortsMustExist) {
  EXPECT_TRUE(
      ErrorIs(Check(MatchWith({"in_ports: \"wire0\"", "in_ports: \"wire9\""})),
              "t.textproto:7:5: handlers[0].match.in_ports[1]: ",
              "no port is named \"wire9\"; ports are: wire0, host0"));
  EXPECT_TRUE(Check(MatchWith({"in_ports: [\"wire0\", \"host0\"]"})).ok());
}

TEST(MatchTest, Ethertype) {
  EXPECT_TRUE(ErrorIs(Check(MatchWith({"ethertype: 0x10000"})),
                      "t.textproto:6:5: handlers[0].match.ethertype: ",
                      "0x10000 does not fit in 16 bits"));
  EXPECT_TRUE(ErrorIs(
      Check(MatchWith({"ethertype: 0x05dc"})),
      "t.textproto:6:5: handlers[0].match.ethertype: ", "is an 802.3 length"));
  EXPECT_TRUE(Check(MatchWith({"ethertype: 0x0806"})).ok());
  EXPECT_TRUE(Check(MatchWith({"ethertype: 0xffff"})).ok());
}

TEST(MatchTest, IpProto) {
  EXPECT_TRUE(ErrorIs(Check(MatchWith({"ip_proto: 256"})),
                      "t.textproto:6:5: handlers[0].match.ip_proto: ",
                      "256 is not an IP protocol number; use 0..255"));
  EXPECT_TRUE(ErrorIs(
      Check(MatchWith({"ethertype: 0x0806", "ip_proto: 6"})),
      "t.textproto:7:5: handlers[0].match.ip_proto: ", "would never match"));
  EXPECT_TRUE(Check(MatchWith({"ip_proto: 255"})).ok());
  EXPECT_TRUE(Check(MatchWith({"ip_proto: 0"})).ok());
}

TEST(MatchTest, Prefixes) {
  absl::Status s = Check(MatchWith({"src_prefix: \"10.0.0.1/8\""}));
  EXPECT_TRUE(ErrorIs(
      s, "t.textproto:6:5: handlers[0].match.src_prefix: ", "host bits set"));
  EXPECT_TRUE(ErrorIs(Check(MatchWith({"dst_prefix: \"10.0.0.0/33\""})),
                      "t.textproto:6:5: handlers[0].match.dst_prefix: ",
                      "is too long for IPv4; use 0..32"));
  EXPECT_TRUE(ErrorIs(Check(MatchWith({"src_prefix: \"10.0.0.0/8\"",
                                       "dst_prefix: \"fd00::/64\""})),
                      "t.textproto:7:5: handlers[0].match.dst_prefix: ",
                      "is IPv6 but src_prefix is IPv4"));
  EXPECT_TRUE(ErrorIs(
      Check(MatchWith({"ethertype: 0x0800", "dst_prefix: \"fd00::/64\""})),
      "t.textproto:7:5: handlers[0].match.dst_prefix: ",
      "but ethertype is 0x0800"));
  EXPECT_TRUE(Check(MatchWith({"src_prefix: \"10.0.0.0/8\"",
                               "dst_prefix: \"192.0.2.1\""}))
                  .ok());
}

// The config check runs libpcap (no EAL): a bad expression is a located
// error quoting it and libpcap's reason; a good one reaches the dataplane
// config as text, next to the fields.
TEST(MatchTest, PcapFilter) {
  EXPECT_TRUE(ErrorIs(Check(MatchWith({"pcap_filter: \"ip6 and (udp\""})),
                      "t.textproto:6:5: handlers[0].match.pcap_filter: ",
                      "\"ip6 and (udp\" does not compile: "));
  EXPECT_TRUE(ErrorIs(
      Check(
          MatchWith({"ethertype: 0x86dd", "pcap_filter: \"udp port 70000\""})),
      "t.textproto:7:5: handlers[0].match.pcap_filter: ", "man pcap-filter"));
  const std::string good = MatchWith(
      {"ethertype: 0x86dd", "pcap_filter: \"ip6 and udp dst port 4791\""});
  EXPECT_TRUE(Check(good).ok());
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(good, kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  ASSERT_EQ(dp->handlers.size(), 1u);
  EXPECT_EQ(dp->handlers[0].match.pcap_filter, "ip6 and udp dst port 4791");
  EXPECT_EQ(dp->handlers[0].match.ethertype, 0x86dd);
}

// AddressPrefix::Parse already quotes the text and (mostly) says what to
// write: the loader adds the field path, and an example only where Parse
// gives no hint, so that nothing is said twice.
TEST(MatchTest, PrefixErrorsSayItOnce) {
  constexpr absl::string_view kExample =
      "; write e.g. \"10.0.0.0/24\", \"fd00::/64\" or a host address";
  const struct {
    absl::string_view prefix;
    std::string message;
  } kCases[] = {
      // No prefix length: the address is the whole text, quoted once.
      {"1.2.3.4.5", absl::StrCat("\"1.2.3.4.5\" is not an IPv4 address "
                                 "(dotted quad, decimal)",
                                 kExample)},
      {"fd00:::1",
       absl::StrCat("\"fd00:::1\" is not an IPv6 address", kExample)},
      // With one, the address part is named within the text.
      {"1.2.3.4.5/8", absl::StrCat("\"1.2.3.4.5\" in \"1.2.3.4.5/8\" is not "
                                   "an IPv4 address (dotted quad, decimal)",
                                   kExample)},
      // Parse's own hint is the only one.
      {"10.0.0.0/33",
       "prefix length 33 in \"10.0.0.0/33\" is too long for "
       "IPv4; use 0..32"},
      {"fd00::g",
       "\"fd00::g\" is not an address prefix; write e.g. "
       "\"10.0.0.0/8\", \"10.1.2.3\", \"fd00::/64\" or \"fd00::1\""},
      {"10.0.0.1/8",
       "\"10.0.0.1/8\" has host bits set beyond /8; write "
       "\"10.0.0.0/8\" for the network, or \"10.0.0.1\" for "
       "the single host"},
      // Words in the user's text are not a hint.
      {"1.2.3.4.5/; use 8", absl::StrCat("\"1.2.3.4.5\" in \"1.2.3.4.5/; use "
                                         "8\" is not an IPv4 address (dotted "
                                         "quad, decimal)",
                                         kExample)},
  };
  for (const auto& c : kCases) {
    absl::Status s =
        Check(MatchWith({absl::StrCat("src_prefix: \"", c.prefix, "\"")}));
    EXPECT_EQ(std::string(s.message()),
              absl::StrCat("t.textproto:6:5: handlers[0].match.src_prefix: ",
                           c.message))
        << c.prefix;
  }
}

TEST(MatchTest, PortRanges) {
  EXPECT_TRUE(ErrorIs(Check(MatchWith({"src_port {", "  first: 65536", "}"})),
                      "t.textproto:7:7: handlers[0].match.src_port.first: ",
                      "65536 is not a TCP/UDP port"));
  EXPECT_TRUE(ErrorIs(
      Check(MatchWith({"dst_port {", "  first: 1", "  last: 70000", "}"})),
      "t.textproto:8:7: handlers[0].match.dst_port.last: ",
      "70000 is not a TCP/UDP port"));
  EXPECT_TRUE(ErrorIs(
      Check(MatchWith({"dst_port {", "  first: 100", "  last: 50", "}"})),
      "t.textproto:8:7: handlers[0].match.dst_port.last: ",
      "50 is below first (100)"));
  EXPECT_TRUE(
      ErrorIs(Check(MatchWith({"ip_proto: 1", "dst_port { first: 7 }"})),
              "t.textproto:7:5: handlers[0].match.dst_port: ",
              "L4 ports match only TCP and UDP"));
  EXPECT_TRUE(Check(MatchWith({"ip_proto: 17", "dst_port { first: 53 }",
                               "src_port { first: 1024 last: 65535 }"}))
                  .ok());
}

// --- EAL arguments and runtime.

TEST(EalArgsTest, LcoreOptionsConflict) {
  for (absl::string_view arg :
       {"-l", "-l1-3", "-c", "-c0x3", "--lcores", "--lcores=0@1",
        "--main-lcore", "--master-lcore=0"}) {
    std::string line = absl::StrCat("eal_args: \"", arg, "\"");
    EXPECT_TRUE(ErrorIs(
        Check(Lines({kWire, kWorker, "eal_args: \"-m\"", line})),
        "t.textproto:4:1: eal_args[1]: ", "conflicts with the lcore layout"))
        << arg;
  }
  EXPECT_TRUE(Check(Lines({kWire, kWorker,
                           "eal_args: [\"--log-level\", \"lib.eal:debug\"]"}))
                  .ok());
}

TEST(EalArgsTest, NoHugeWithInMemory) {
  EXPECT_TRUE(ErrorIs(
      Check(Lines({kWire, kWorker, "eal_args: \"--in-memory\"",
                   "eal_args: [\"-m\", \"64\"]", "eal_args: \"--no-huge\""})),
      "t.textproto:5:1: eal_args[3]: ",
      "replace --in-memory with --file-prefix"));
  EXPECT_TRUE(
      Check(Lines({kWire, kWorker, "eal_args: [\"--in-memory\"]"})).ok());
}

TEST(EalArgsTest, EmptyArgument) {
  EXPECT_TRUE(ErrorIs(Check(Lines({kWire, kWorker, "eal_args: \"\""})),
                      "t.textproto:3:1: eal_args[0]: ", "empty argument"));
}

TEST(RuntimeTest, Burst) {
  EXPECT_TRUE(
      ErrorIs(Check(Lines({kWire, kWorker, "runtime {", "  burst: 513", "}"})),
              "t.textproto:4:3: runtime.burst: ",
              "513 is over 512; use 1..512, or 0 for 32"));
  EXPECT_TRUE(Check(Lines({kWire, kWorker, "runtime { burst: 512 }"})).ok());
}

// --- Error format details.

TEST(ErrorFormatTest, WithoutLocationsThePathLeads) {
  v1::Config config;
  v1::Port* port = config.add_ports();
  port->set_vdev("net_ring0");
  port->set_role(v1::PORT_ROLE_WIRE);
  config.add_workers(1);
  absl::Status s = ValidateConfig(config);
  EXPECT_TRUE(ErrorIs(s, "ports[0].name: missing"));
}

TEST(ErrorFormatTest, ValuesAreEscapedOntoOneLine) {
  absl::Status s =
      Check(Lines({kWorker, R"(ports { name: "a\nb" vdev: "net_ring0" )"
                            R"(role: PORT_ROLE_WIRE })"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:2:9: ports[0].name: ", "\"a\\nb\""));
}

TEST(ErrorFormatTest, TabsAdvanceColumnsLikeProtobufSays) {
  // Protobuf counts a tab as advancing to the next multiple of 8.
  absl::Status s =
      Check(Lines({kWire, kWorker, "runtime {", "\tburst: 513", "}"}));
  EXPECT_TRUE(ErrorIs(s, "t.textproto:4:9: runtime.burst: "));
}

// --- Files.

TEST(ParseConfigFileTest, MissingFile) {
  absl::StatusOr<ParsedConfig> parsed =
      ParseConfigFile("/nonexistent/spinnic.textproto");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(absl::StartsWith(parsed.status().message(),
                               "/nonexistent/spinnic.textproto: cannot read"))
      << parsed.status();
}

TEST(ParseConfigFileTest, DirectoryIsNotAConfig) {
  absl::StatusOr<ParsedConfig> parsed = ParseConfigFile("/");
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(absl::StrContains(parsed.status().message(), "cannot read"))
      << parsed.status();
}

TEST(ParseConfigFileTest, ErrorsNameTheFile) {
  std::string path = testing::TempDir() + "/bad.textproto";
  std::FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("workers: 1\nports { name: \"w\" role: PORT_ROLE_WIRE }\n", file);
  std::fclose(file);
  absl::StatusOr<v1::Config> loaded = LoadConfig(path);
  EXPECT_TRUE(ErrorIs(loaded.status(), absl::StrCat(path, ":2:1: ports[0]: "),
                      "no device"));
  std::remove(path.c_str());
}

std::string DeployConfig(absl::string_view name) {
  return absl::StrCat(SPINNIC_SOURCE_DIR, "/deploy/configs/", name);
}

TEST(DeployConfigsTest, EveryExampleValidates) {
  int count = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(DeployConfig(""))) {
    if (entry.path().extension() != ".textproto") continue;
    ++count;
    absl::StatusOr<v1::Config> loaded = LoadConfig(entry.path().string());
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) continue;
    absl::StatusOr<DataplaneConfig> converted = ToDataplaneConfig(*loaded);
    EXPECT_TRUE(converted.ok()) << converted.status();
  }
  EXPECT_GE(count, 3);
}

// --- RoCE.

std::string RoceWith(absl::string_view addresses, absl::string_view field) {
  return Lines({
      kWire, kWorker, addresses, absl::StrCat("roce { ", field, " }"),  // 4
  });
}
constexpr absl::string_view kRoceAddress =
    R"(addresses { ipv4: "192.0.2.10" ipv6: "fd00:1::10" })";

TEST(RoceConfigTest, NeedsAnAddress) {
  EXPECT_TRUE(ErrorIs(
      Check(RoceWith("", "path_mtu: 1024")),
      "t.textproto:4:1: roce: ", "add addresses { ipv4: \"192.0.2.10\" }"));
  EXPECT_TRUE(Check(RoceWith(kRoceAddress, "path_mtu: 1024")).ok());
}

TEST(RoceConfigTest, Fields) {
  EXPECT_TRUE(ErrorIs(
      Check(RoceWith(kRoceAddress, "path_mtu: 1500")),
      "t.textproto:4:8: roce.path_mtu: ", "use 256, 512, 1024, 2048 or 4096"));
  EXPECT_TRUE(ErrorIs(Check(RoceWith(kRoceAddress, "port: \"nope\"")),
                      "t.textproto:4:8: roce.port: ", "is not a port"));
  EXPECT_TRUE(
      ErrorIs(Check(RoceWith(kRoceAddress, "listen_ports: [7471, 7471]")),
              "t.textproto:4:", "is listed twice"));
  EXPECT_TRUE(ErrorIs(Check(RoceWith(kRoceAddress, "listen_ports: 70000")),
                      "t.textproto:4:", "use 1..65535"));
  EXPECT_TRUE(ErrorIs(Check(RoceWith(kRoceAddress, "retry_count: 8")),
                      "t.textproto:4:8: roce.retry_count: ", "use 0..7"));
  EXPECT_TRUE(ErrorIs(Check(RoceWith(kRoceAddress, "max_rd_atomic: 17")),
                      "t.textproto:4:8: roce.max_rd_atomic: ", "1..16"));
  EXPECT_TRUE(ErrorIs(Check(RoceWith(kRoceAddress, "local_ack_timeout: 32")),
                      "t.textproto:4:8: roce.local_ack_timeout: ", "1..31"));
}

TEST(RoceConfigTest, Converted) {
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
      RoceWith(kRoceAddress, "listen_ports: 7471 retry_count: 0"), kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  const roce::RoceConfig& rc = dp->transports.get<roce::RoceConfig>();
  EXPECT_TRUE(rc.enabled);
  ASSERT_EQ(rc.addresses.size(), 2u);
  const std::array<uint8_t, 16> mapped = {0, 0, 0,    0,    0,   0, 0, 0,
                                          0, 0, 0xff, 0xff, 192, 0, 2, 10};
  EXPECT_EQ(rc.addresses[0], mapped);
  EXPECT_EQ(rc.addresses[1][0], 0xfd);
  EXPECT_EQ(rc.addresses[1][15], 0x10);
  EXPECT_EQ(rc.path_mtu, 0u);  // resolved against the port later
  EXPECT_EQ(rc.listen_ports, std::vector<uint16_t>{7471});
  EXPECT_EQ(rc.retry_count, 0);  // given, though zero
  EXPECT_EQ(rc.rnr_retry, 7);    // default
  EXPECT_EQ(rc.max_rd_atomic, 16);
  EXPECT_EQ(rc.port, 0);
}

// roce.min_ack_timeout_us and fixed_ack_timeout (issue 17 item 2).
TEST(RoceConfigTest, AdaptiveAckTimeout) {
  {
    absl::StatusOr<ParsedConfig> parsed =
        ParseConfigText(RoceWith(kRoceAddress, "path_mtu: 1024"), kSource);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
    ASSERT_TRUE(dp.ok()) << dp.status();
    const roce::RoceConfig& rc = dp->transports.get<roce::RoceConfig>();
    EXPECT_TRUE(rc.adaptive_ack_timeout);
    EXPECT_EQ(rc.min_ack_timeout_ns, 100'000u);
  }
  {
    absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
        RoceWith(kRoceAddress, "min_ack_timeout_us: 40"), kSource);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
    ASSERT_TRUE(dp.ok()) << dp.status();
    EXPECT_EQ(dp->transports.get<roce::RoceConfig>().min_ack_timeout_ns,
              40'000u);
  }
  {
    absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
        RoceWith(kRoceAddress, "fixed_ack_timeout: true"), kSource);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
    ASSERT_TRUE(dp.ok()) << dp.status();
    EXPECT_FALSE(dp->transports.get<roce::RoceConfig>().adaptive_ack_timeout);
  }
  // Code 4: 65 us; a 100 us floor lies above the ceiling.
  EXPECT_TRUE(
      ErrorIs(Check(RoceWith(kRoceAddress,
                             "local_ack_timeout: 4 min_ack_timeout_us: 100")),
              "t.textproto:4:29: roce.min_ack_timeout_us: ",
              "100 is above the local ACK timeout (code 4, 65 us), the timer's "
              "ceiling; use at most 65 or raise local_ack_timeout"));
  EXPECT_TRUE(
      ErrorIs(Check(RoceWith(kRoceAddress,
                             "min_ack_timeout_us: 50 fixed_ack_timeout: true")),
              "t.textproto:4:8: roce.min_ack_timeout_us: ",
              "is set but fixed_ack_timeout is true"));
}

// roce.congestion (issue 21): off unless enabled, defaults, conversion and
// the checks' messages.
TEST(RoceConfigTest, Congestion) {
  auto convert = [](absl::string_view field) {
    absl::StatusOr<ParsedConfig> parsed =
        ParseConfigText(RoceWith(kRoceAddress, field), kSource);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
    EXPECT_TRUE(dp.ok()) << dp.status();
    return dp.ok() ? dp->transports.get<roce::RoceConfig>().congestion
                   : roce::RoceCongestionConfig();
  };
  {
    const roce::RoceCongestionConfig c = convert("path_mtu: 1024");
    EXPECT_FALSE(c.enabled);
    EXPECT_EQ(c.ecn, roce::kEcnNotEct);
  }
  {
    const roce::RoceCongestionConfig c =
        convert("congestion { enabled: true }");
    EXPECT_TRUE(c.enabled);
    EXPECT_EQ(c.ecn, roce::kEcnEct0);  // ECT(0) when on and not configured
    EXPECT_EQ(c.cnp_interval_ns, 50'000u);
    EXPECT_EQ(c.dcqcn.line_rate_bps, 0u);  // the port's, at Open
    EXPECT_EQ(c.dcqcn.min_rate_bps, 1'000'000u);
    EXPECT_EQ(c.dcqcn.alpha_timer_ns, 55'000u);
    EXPECT_EQ(c.dcqcn.increase_timer_ns, 300'000u);
    EXPECT_EQ(c.dcqcn.byte_counter_bytes, 10'000'000u);
    EXPECT_EQ(c.dcqcn.fast_recovery_stages, 5u);
    EXPECT_EQ(c.dcqcn.additive_increase_bps, 5'000'000u);
    EXPECT_EQ(c.dcqcn.hyper_increase_bps, 50'000'000u);
    EXPECT_DOUBLE_EQ(c.dcqcn.g, 1.0 / 256);
    EXPECT_DOUBLE_EQ(c.dcqcn.initial_alpha, 1.0);
    EXPECT_EQ(c.dcqcn.initial_rate_bps, 0u);  // the line rate
  }
  {
    const roce::RoceCongestionConfig c = convert(
        "congestion { enabled: true ecn: ROCE_ECN_ECT1 cnp_interval_us: 4 "
        "line_rate_mbps: 25000 min_rate_mbps: 10 g: 0.5 alpha_timer_us: 100 "
        "increase_timer_us: 200 byte_counter_bytes: 0 fast_recovery_stages: "
        "3 additive_increase_mbps: 40 hyper_increase_mbps: 400 "
        "initial_alpha: 0.25 initial_rate_mbps: 3125 }");
    EXPECT_EQ(c.ecn, roce::kEcnEct1);
    EXPECT_EQ(c.cnp_interval_ns, 4'000u);
    EXPECT_EQ(c.dcqcn.line_rate_bps, 25'000'000'000u);
    EXPECT_EQ(c.dcqcn.min_rate_bps, 10'000'000u);
    EXPECT_DOUBLE_EQ(c.dcqcn.g, 0.5);
    EXPECT_EQ(c.dcqcn.alpha_timer_ns, 100'000u);
    EXPECT_EQ(c.dcqcn.increase_timer_ns, 200'000u);
    EXPECT_EQ(c.dcqcn.byte_counter_bytes, 0u);
    EXPECT_EQ(c.dcqcn.fast_recovery_stages, 3u);
    EXPECT_EQ(c.dcqcn.additive_increase_bps, 40'000'000u);
    EXPECT_EQ(c.dcqcn.hyper_increase_bps, 400'000'000u);
    EXPECT_DOUBLE_EQ(c.dcqcn.initial_alpha, 0.25);
    EXPECT_EQ(c.dcqcn.initial_rate_bps, 3'125'000'000u);
  }
  // ECT without congestion control: marked, never answered.
  EXPECT_EQ(convert("congestion { ecn: ROCE_ECN_ECT0 }").ecn, roce::kEcnEct0);
  EXPECT_EQ(convert("congestion { enabled: true ecn: ROCE_ECN_OFF }").ecn,
            roce::kEcnNotEct);
  auto error = [](absl::string_view field) {
    return std::string(Check(RoceWith(kRoceAddress, field)).message());
  };
  EXPECT_THAT(error("congestion { cnp_interval_us: 20 }"),
              testing::HasSubstr("roce.congestion.enabled: is false but DCQCN "
                                 "parameters are set"));
  EXPECT_THAT(error("congestion { enabled: true cnp_interval_us: 2000000 }"),
              testing::HasSubstr("roce.congestion.cnp_interval_us: 2000000 is "
                                 "not allowed; use 1..1000000, or 0 for 50"));
  EXPECT_THAT(
      error("congestion { enabled: true line_rate_mbps: 1000 "
            "min_rate_mbps: 2000 }"),
      testing::HasSubstr("roce.congestion.min_rate_mbps: 2000 is not allowed; "
                         "use 1..1000"));
  EXPECT_THAT(
      error("congestion { enabled: true line_rate_mbps: 40 }"),
      testing::HasSubstr("roce.congestion.hyper_increase_mbps: is unset, and "
                         "its default 50 Mb/s is above line_rate_mbps 40; set "
                         "it to at most 40"));
  EXPECT_THAT(error("congestion { enabled: true g: 0 }"),
              testing::HasSubstr("roce.congestion.g: 0 is not a gain in "
                                 "(0, 1]"));
  EXPECT_THAT(
      error("congestion { enabled: true line_rate_mbps: 1000 "
            "min_rate_mbps: 10 initial_rate_mbps: 2000 }"),
      testing::HasSubstr("roce.congestion.initial_rate_mbps: 2000 is not "
                         "allowed; use 10..1000, or 0 for the line rate"));
  EXPECT_THAT(error("congestion { enabled: true min_rate_mbps: 10 "
                    "initial_rate_mbps: 5 }"),
              testing::HasSubstr("roce.congestion.initial_rate_mbps: 5 is not "
                                 "allowed; use 10..1600000"));
  EXPECT_THAT(error("congestion { initial_rate_mbps: 500 }"),
              testing::HasSubstr("roce.congestion.enabled: is false but DCQCN "
                                 "parameters are set"));
  EXPECT_THAT(error("congestion { enabled: true initial_alpha: 1.5 }"),
              testing::HasSubstr("roce.congestion.initial_alpha: 1.5 is not "
                                 "in [0, 1]"));
}

TEST(RoceConfigTest, ServicePorts) {
  EXPECT_TRUE(ErrorIs(
      Check(RoceWith(kRoceAddress, "naaice_port: 7174 rping_port: 7174")),
      "t.textproto:4:26: roce.rping_port: ",
      "7174 is already naaice_port; give each service its own port"));
  EXPECT_TRUE(
      ErrorIs(Check(RoceWith(kRoceAddress, "perftest_port: 65536")),
              "t.textproto:4:8: roce.perftest_port: ", "65536 is not a port"));
  EXPECT_TRUE(
      ErrorIs(Check(RoceWith(kRoceAddress, "rping_port: 7174 echo_port: 7174")),
              "t.textproto:4:25: roce.echo_port: ",
              "7174 is already rping_port; give each service its own port"));
  EXPECT_TRUE(ErrorIs(
      Check(RoceWith(kRoceAddress, "connection_region_bytes: 8589934592")),
      "t.textproto:4:8: roce.connection_region_bytes: ", "more than 4 GiB"));
  EXPECT_TRUE(ErrorIs(
      Check(RoceWith(kRoceAddress, "perftest_region_bytes: 8589934592")),
      "t.textproto:4:8: roce.perftest_region_bytes: ", "more than 4 GiB"));
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
      RoceWith(kRoceAddress,
               "listen_ports: 7471 rping_port: 7174 perftest_port: 18515 "
               "echo_port: 7472"),
      kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  // The CM listens on every service's port too.
  EXPECT_EQ(dp->transports.get<roce::RoceConfig>().listen_ports,
            (std::vector<uint16_t>{7471, 7174, 18515, 7472}));
  EXPECT_EQ(dp->transports.get<roce::RoceConfig>().rping_port, 7174);
  EXPECT_EQ(dp->transports.get<roce::RoceConfig>().echo_port, 7472);
  EXPECT_EQ(dp->transports.get<roce::RoceConfig>().perftest_port, 18515);
  EXPECT_EQ(dp->transports.get<roce::RoceConfig>().connection_region_bytes,
            uint64_t{1} << 20);
  // perftest's data region: its largest message unless configured.
  EXPECT_EQ(dp->transports.get<roce::RoceConfig>().perftest_region_bytes,
            uint64_t{1} << 23);
}

TEST(RoceConfigTest, PerftestWriteLat) {
  auto error = [](const std::string& roce) {
    return std::string(Check(RoceWith(kRoceAddress, roce)).message());
  };
  EXPECT_THAT(error("perftest_write_lat { size: 64 }"),
              testing::HasSubstr("roce.perftest_write_lat.port: is needed"));
  EXPECT_THAT(
      error("perftest_port: 18515 perftest_write_lat { port: 18515 }"),
      testing::HasSubstr("roce.perftest_write_lat.port: 18515 is already "
                         "perftest_port; give each service its own port"));
  EXPECT_THAT(error("perftest_write_lat { port: 18516 size: 8388609 }"),
              testing::HasSubstr("roce.perftest_write_lat.size: 8388609 bytes "
                                 "do not fit the perftest data region"));
  EXPECT_THAT(error("perftest_region_bytes: 65536 "
                    "perftest_write_lat { port: 18516 all_sizes: true }"),
              testing::HasSubstr("roce.perftest_write_lat.all_sizes: needs an "
                                 "8 MiB perftest data region"));
  EXPECT_THAT(
      error("perftest_write_lat { port: 18516 iterations: 1000000001 }"),
      testing::HasSubstr("roce.perftest_write_lat.iterations: 1000000001 is "
                         "more than perftest runs"));
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
      RoceWith(kRoceAddress,
               "listen_ports: 7471 perftest_write_lat { port: 18516 }"),
      kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  const roce::RoceConfig& rc = dp->transports.get<roce::RoceConfig>();
  EXPECT_EQ(rc.listen_ports, (std::vector<uint16_t>{7471, 18516}));
  // perftest's defaults: -s 2, -n 1000.
  EXPECT_EQ(rc.perftest_write_lat.port, 18516);
  EXPECT_EQ(rc.perftest_write_lat.size, 2u);
  EXPECT_EQ(rc.perftest_write_lat.iterations, 1000u);
  EXPECT_FALSE(rc.perftest_write_lat.all_sizes);
}

TEST(RoceConfigTest, QueuePairHandlers) {
  const std::string bound = Lines({
      kWire, kWorker, kRoceAddress, "roce { }",
      R"(handlers { name: "h" kind: "count" roce { qpn: 256 } })",  // 5
  });
  EXPECT_TRUE(Check(bound).ok());
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(bound, kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  EXPECT_EQ(dp->handlers[0].binding.kind, roce::kBindQp);
  EXPECT_EQ(dp->handlers[0].binding.key, 256u);
  EXPECT_TRUE(ErrorIs(
      Check(
          Lines({kWire, kWorker, kRoceAddress,
                 R"(handlers { name: "h" kind: "count" roce { qpn: 256 } })"})),
      "t.textproto:4:", "handlers[0].roce: needs RoCE: add a roce section"));
  EXPECT_TRUE(ErrorIs(
      Check(Lines({kWire, kWorker, kRoceAddress, "roce { }",
                   R"(handlers { name: "h" kind: "count" roce { qpn: 1 } })"})),
      "t.textproto:5:", "is not a data queue pair"));
  EXPECT_TRUE(ErrorIs(
      Check(Lines(
          {kWire, kWorker, kRoceAddress, "roce { }",
           R"(handlers { name: "h" kind: "count" match { ip_proto: 17 } roce { qpn: 256 } })"})),
      "t.textproto:5:", "matches no frames"));
}

TEST(RoceConfigTest, NaaiceFunctionHandlers) {
  const std::string bound = Lines({
      kWire,
      kWorker,
      kRoceAddress,
      "roce { naaice_port: 12345 }",
      R"(handlers { name: "f" kind: "naaice_function" params { key: "function" value: "vector_sum" } roce { naaice_function: 40 } })",
  });
  EXPECT_TRUE(Check(bound).ok());
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(bound, kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  EXPECT_EQ(dp->handlers[0].binding.kind, roce::kBindNaaiceFunction);
  EXPECT_EQ(dp->handlers[0].binding.key, 40u);
  EXPECT_TRUE(ErrorIs(
      Check(Lines(
          {kWire, kWorker, kRoceAddress, "roce { naaice_port: 12345 }",
           R"(handlers { name: "f" kind: "count" roce { naaice_function: 40 } })"})),
      "t.textproto:5:", "must be kind naaice_function"));
  EXPECT_TRUE(ErrorIs(
      Check(Lines(
          {kWire, kWorker, kRoceAddress, "roce { naaice_port: 12345 }",
           R"(handlers { name: "f" kind: "naaice_function" params { key: "function" value: "vector_sum" } })"})),
      "t.textproto:5:", "bind it with roce { naaice_function: CODE }"));
  EXPECT_TRUE(ErrorIs(
      Check(Lines(
          {kWire, kWorker, kRoceAddress, "roce { naaice_port: 12345 }",
           R"(handlers { name: "f" kind: "naaice_function" params { key: "function" value: "vector_sum" } roce { naaice_function: 128 } })"})),
      "t.textproto:5:", "NAAICE codes are 1..127"));
  EXPECT_TRUE(ErrorIs(
      Check(Lines(
          {kWire, kWorker, kRoceAddress, "roce { }",
           R"(handlers { name: "f" kind: "naaice_function" params { key: "function" value: "vector_sum" } roce { naaice_function: 40 } })"})),
      "t.textproto:5:", "set roce.naaice_port"));
}

TEST(ToDataplaneConfigTest, PcapExample) {
  absl::StatusOr<v1::Config> loaded =
      LoadConfig(DeployConfig("example-pcap.textproto"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(*loaded);
  ASSERT_TRUE(dp.ok()) << dp.status();

  ASSERT_EQ(dp->ports.size(), 2u);
  const PortConfig& wire = dp->ports[0];
  EXPECT_EQ(wire.name, "wire0");
  EXPECT_TRUE(absl::StartsWith(wire.vdev, "net_pcap0,rx_pcap="));
  EXPECT_EQ(wire.pci, "");
  EXPECT_EQ(wire.existing, "");
  EXPECT_EQ(wire.role, PortRole::kWire);
  EXPECT_EQ(wire.queues, 1);
  EXPECT_EQ(wire.mtu, 1500);
  EXPECT_EQ(wire.rx_descriptors, 512);
  EXPECT_EQ(wire.tx_descriptors, 512);
  EXPECT_TRUE(wire.promiscuous);
  const PortConfig& host = dp->ports[1];
  EXPECT_EQ(host.name, "host0");
  EXPECT_EQ(host.role, PortRole::kHost);
  EXPECT_EQ(host.mtu, 0);
  EXPECT_EQ(host.rx_descriptors, 1024);
  EXPECT_EQ(host.tx_descriptors, 1024);

  ASSERT_EQ(dp->port_pairs.size(), 1u);
  EXPECT_EQ(dp->port_pairs[0], (std::pair<uint16_t, uint16_t>{0, 1}));
  EXPECT_EQ(dp->worker_cores, std::vector<uint32_t>{1});
  EXPECT_EQ(dp->mbufs, 8192u);
  EXPECT_EQ(dp->burst, 32);

  ASSERT_EQ(dp->handlers.size(), 2u);
  const HandlerConfig& count = dp->handlers[0];
  EXPECT_EQ(count.name, "udp-by-port");
  EXPECT_EQ(count.kind, "count");
  EXPECT_EQ(count.params.at("by"), "dst_port");
  EXPECT_EQ(count.params.at("buckets"), "64");
  EXPECT_EQ(count.state_size, 1024u);
  EXPECT_EQ(count.cycle_budget, 20000u);
  EXPECT_EQ(count.disable_after_overruns, 1000u);
  EXPECT_EQ(count.priority, 10u);
  EXPECT_EQ(count.match.in_port_mask, 0b01u);
  EXPECT_EQ(count.match.ethertype, 0x0800);
  EXPECT_TRUE(count.match.match_ip_proto);
  EXPECT_EQ(count.match.ip_proto, 17);
  EXPECT_FALSE(count.match.match_src);
  EXPECT_FALSE(count.match.match_dst);
  EXPECT_EQ(count.match.src_port_first, 0);
  EXPECT_EQ(count.match.src_port_last, 0xffff);
  EXPECT_EQ(count.match.dst_port_first, 1);
  EXPECT_EQ(count.match.dst_port_last, 65535);

  const HandlerConfig& filter = dp->handlers[1];
  EXPECT_EQ(filter.kind, "filter");
  EXPECT_TRUE(filter.match.match_dst);
  EXPECT_TRUE(filter.match.dst.is_ipv4);
  EXPECT_EQ(filter.match.dst.length, 96 + 24);
  // last 0 means just first.
  EXPECT_EQ(filter.match.dst_port_first, 80);
  EXPECT_EQ(filter.match.dst_port_last, 80);
  EXPECT_EQ(filter.match.ethertype, 0);
}

TEST(ToDataplaneConfigTest, MemifExample) {
  absl::StatusOr<v1::Config> loaded =
      LoadConfig(DeployConfig("example-memif.textproto"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(*loaded);
  ASSERT_TRUE(dp.ok()) << dp.status();
  ASSERT_EQ(dp->ports.size(), 2u);
  EXPECT_FALSE(dp->ports[0].promiscuous);
  EXPECT_FALSE(dp->ports[1].promiscuous);
  EXPECT_EQ(dp->ports[0].queues, 0);
  EXPECT_EQ(dp->worker_cores, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(dp->burst, 64);
  ASSERT_EQ(dp->handlers.size(), 2u);
  const MatchRule& xor_match = dp->handlers[0].match;
  EXPECT_EQ(xor_match.in_port_mask, MatchRule::kAllPorts);
  EXPECT_TRUE(xor_match.match_src);
  EXPECT_FALSE(xor_match.src.is_ipv4);
  EXPECT_EQ(xor_match.src.length, 64);
  EXPECT_EQ(xor_match.src_port_first, 5000);
  EXPECT_EQ(xor_match.src_port_last, 5099);
  EXPECT_EQ(dp->handlers[1].match.in_port_mask, 0b10u);
  EXPECT_FALSE(dp->handlers[1].match.match_ip_proto);
}

TEST(ToDataplaneConfigTest, DefaultsAreFilled) {
  absl::StatusOr<v1::Config> loaded = LoadConfig("");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(*loaded);
  ASSERT_TRUE(dp.ok()) << dp.status();
  ASSERT_EQ(dp->ports.size(), 2u);
  for (const PortConfig& port : dp->ports) {
    EXPECT_EQ(port.queues, 0);  // one per worker, decided by the dataplane
    EXPECT_EQ(port.mtu, 0);
    EXPECT_EQ(port.rx_descriptors, 1024);
    EXPECT_EQ(port.tx_descriptors, 1024);
    EXPECT_TRUE(port.promiscuous);
  }
  EXPECT_EQ(dp->burst, 32);
  EXPECT_EQ(dp->mbufs, 0u);
  ASSERT_EQ(dp->handlers.size(), 2u);
  EXPECT_EQ(dp->handlers[0].match.in_port_mask, MatchRule::kAllPorts);
  EXPECT_TRUE(dp->handlers[0].match.match_ip_proto);
  EXPECT_EQ(dp->handlers[0].match.ip_proto, 1);
  EXPECT_EQ(dp->handlers[1].match.ip_proto, 58);
  EXPECT_TRUE(dp->handlers[0].params.empty());
}

TEST(ToDataplaneConfigTest, ExplicitIpProtoZeroIsAMatch) {
  absl::StatusOr<ParsedConfig> parsed =
      ParseConfigText(MatchWith({"ip_proto: 0"}), kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(parsed->config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  EXPECT_TRUE(dp->handlers[0].match.match_ip_proto);
  EXPECT_EQ(dp->handlers[0].match.ip_proto, 0);
}

TEST(ToDataplaneConfigTest, RejectsInvalidConfig) {
  v1::Config config;
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(config);
  EXPECT_TRUE(ErrorIs(dp.status(), "ports: no ports are configured"));
}

// --- EAL arguments.

TEST(BuildEalArgsTest, DenseLcoresThenConfigArgs) {
  absl::StatusOr<ParsedConfig> parsed =
      ParseConfigText(Lines({kWire, "main_lcore: 2", "workers: [3, 5, 7]",
                             "eal_args: [\"--no-huge\", \"-m\", \"256\"]"}),
                      kSource);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(BuildEalArgs(parsed->config),
            (std::vector<std::string>{"spinnicd", "--lcores", "0@2,1@3,2@5,3@7",
                                      "--main-lcore", "0", "--no-huge", "-m",
                                      "256"}));
}

TEST(BuildEalArgsTest, DefaultConfig) {
  absl::StatusOr<v1::Config> loaded = LoadConfig("");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(
      BuildEalArgs(*loaded),
      (std::vector<std::string>{"spinnicd", "--lcores", "0@0,1@1",
                                "--main-lcore", "0", "--no-huge", "-m", "512",
                                "--no-pci", "--file-prefix", "spinnic"}));
}

// --- Overrides.

TEST(OverridesTest, ReplaceAndAppend) {
  ConfigOverrides overrides;
  overrides.duration_s = 10;
  overrides.stats_interval_ms = 250;
  overrides.workers = std::vector<uint32_t>{4, 5};
  overrides.main_lcore = 3;
  overrides.extra_eal_args = {"--log-level", "lib.eal:debug"};
  absl::StatusOr<v1::Config> loaded = LoadConfig("", overrides);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->runtime().duration_s(), 10u);
  EXPECT_EQ(loaded->runtime().stats_interval_ms(), 250u);
  EXPECT_EQ(loaded->main_lcore(), 3u);
  ASSERT_EQ(loaded->workers_size(), 2);
  EXPECT_EQ(loaded->workers(0), 4u);
  EXPECT_EQ(loaded->workers(1), 5u);
  std::vector<std::string> eal = BuildEalArgs(*loaded);
  EXPECT_EQ(eal, (std::vector<std::string>{
                     "spinnicd", "--lcores", "0@3,1@4,2@5", "--main-lcore", "0",
                     "--no-huge", "-m", "512", "--no-pci", "--file-prefix",
                     "spinnic", "--log-level", "lib.eal:debug"}));
}

TEST(OverridesTest, UnsetOverridesChangeNothing) {
  absl::StatusOr<v1::Config> plain = LoadConfig("");
  absl::StatusOr<v1::Config> overridden = LoadConfig("", ConfigOverrides{});
  ASSERT_TRUE(plain.ok() && overridden.ok());
  EXPECT_EQ(plain->SerializeAsString(), overridden->SerializeAsString());
}

TEST(OverridesTest, ErrorsInOverriddenFieldsBlameTheCommandLine) {
  ConfigOverrides overrides;
  overrides.workers = std::vector<uint32_t>{0};
  EXPECT_TRUE(
      ErrorIs(LoadConfig("", overrides).status(),
              "command line: workers[0]: ", "core 0 is also main_lcore"));

  overrides = {};
  overrides.workers = std::vector<uint32_t>{};
  EXPECT_TRUE(ErrorIs(LoadConfig("", overrides).status(),
                      "command line: workers: ", "no worker cores"));

  overrides = {};
  overrides.extra_eal_args = {"--no-huge", "-l", "1"};
  EXPECT_TRUE(ErrorIs(
      LoadConfig("", overrides).status(),
      "command line: eal_args[7]: ", "conflicts with the lcore layout"));

  // A file field that conflicts with an overridden one keeps its position.
  overrides = {};
  overrides.main_lcore = 1;
  EXPECT_TRUE(ErrorIs(LoadConfig("", overrides).status(),
                      absl::StrCat(kDefaultConfigSourceName, ":"),
                      "workers[0]: core 1 is also main_lcore"));
}

TEST(OverridesTest, AppliedWithoutLocations) {
  v1::Config config;
  ConfigOverrides overrides;
  overrides.workers = std::vector<uint32_t>{9};
  overrides.extra_eal_args = {"-m", "64"};
  ApplyOverrides(overrides, &config);
  EXPECT_EQ(config.workers_size(), 1);
  EXPECT_EQ(config.eal_args_size(), 2);
  // Runtime untouched when not overridden.
  EXPECT_FALSE(config.has_runtime());
}

// --- One handler (gRPC InstallHandler) and one peer (AddPeer): checked
// alone against a running config, with the errors the whole config gets.

// A running config with DiAD, RoCE (NAAICE on) and a handler of its own.
v1::Config RunningConfig() {
  absl::StatusOr<ParsedConfig> parsed = ParseConfigText(
      Lines({kWire, kHost, kPair, kWorker,
             R"(addresses { ipv4: "192.0.2.10" diad_node: "fd00:d1ad::1" })",
             "diad { }", "roce { naaice_port: 12345 }",
             R"(handlers { name: "running" kind: "count" })"}),
      kSource);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(ValidateConfig(parsed->config).ok())
      << ValidateConfig(parsed->config);
  return parsed->config;
}

v1::HandlerInstall HandlerText(absl::string_view text) {
  v1::HandlerInstall handler;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(std::string(text),
                                                            &handler))
      << text;
  return handler;
}

TEST(ToHandlerConfigTest, SameResultAsTheWholeConfig) {
  const v1::Config running = RunningConfig();
  for (
      absl::string_view text : {
          R"(name: "ok" kind: "count")",
          R"(name: "m" kind: "count" match { in_ports: "host0" ip_proto: 17 dst_port { first: 53 } })",
          R"(name: "s" kind: "count" diad { stream_id: 7 })",
          R"(name: "q" kind: "count" roce { qpn: 256 })",
          R"(name: "f" kind: "naaice_function" roce { naaice_function: 40 })",
          R"(kind: "count")",
          R"(name: "bad name" kind: "count")",
          R"(name: "k" kind: "no_such_kind")",
          R"(name: "p" kind: "count" params { key: "nope" value: "1" })",
          R"(name: "z" kind: "count" state_size: 100000)",
          R"(name: "i" kind: "count" match { in_ports: "nowhere" })",
          R"(name: "e" kind: "count" match { ethertype: 0x100 })",
          R"(name: "d" kind: "count" diad { })",
          R"(name: "dm" kind: "count" match { ip_proto: 1 } diad { stream_id: 1 })",
          R"(name: "r" kind: "count" roce { qpn: 1 })",
          R"(name: "rf" kind: "count" roce { naaice_function: 40 })",
          R"(name: "nf" kind: "naaice_function")",
          R"(name: "nc" kind: "naaice_function" roce { naaice_function: 200 })",
      }) {
    const v1::HandlerInstall handler = HandlerText(text);
    v1::Config whole = running;
    whole.clear_handlers();
    *whole.add_handlers() = handler;
    absl::StatusOr<DataplaneConfig> expected = ToDataplaneConfig(whole);
    absl::StatusOr<HandlerConfig> got = ToHandlerConfig(handler, running);
    ASSERT_EQ(got.status(), expected.status()) << text;
    if (!got.ok()) continue;
    const HandlerConfig& want = expected->handlers[0];
    EXPECT_EQ(got->name, want.name);
    EXPECT_EQ(got->kind, want.kind);
    EXPECT_EQ(got->params, want.params);
    EXPECT_EQ(got->state_size, want.state_size);
    EXPECT_EQ(got->match.in_port_mask, want.match.in_port_mask) << text;
    EXPECT_EQ(got->match.ip_proto, want.match.ip_proto);
    EXPECT_EQ(got->match.dst_port_first, want.match.dst_port_first);
    EXPECT_EQ(got->match.dst_port_last, want.match.dst_port_last);
    EXPECT_EQ(got->binding.kind, want.binding.kind) << text;
    EXPECT_EQ(got->binding.key, want.binding.key) << text;
  }
}

TEST(ToHandlerConfigTest, ErrorsNameTheHandlerAsTheFirstEntry) {
  EXPECT_TRUE(ErrorIs(
      ToHandlerConfig(HandlerText(R"(name: "k" kind: "no_such_kind")"),
                      RunningConfig())
          .status(),
      "handlers[0].kind: \"no_such_kind\" is not a compiled-in handler kind"));
  EXPECT_TRUE(ErrorIs(
      ToHandlerConfig(
          HandlerText(R"(name: "i" kind: "count" match { in_ports: "x" })"),
          RunningConfig())
          .status(),
      "handlers[0].match.in_ports[0]: no port is named \"x\"; ports are: "
      "wire0, host0"));
}

TEST(ToHandlerConfigTest, DoesNotCheckTheRunningHandlers) {
  // The running config's own handler, installed again (a replace): the
  // name is the dataplane's to refuse or replace, not a config error.
  const v1::Config running = RunningConfig();
  absl::StatusOr<HandlerConfig> again =
      ToHandlerConfig(running.handlers(0), running);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->name, "running");
  // A running config that is not checked again: another handler in it
  // that would no longer validate does not matter.
  v1::Config with_bad = running;
  with_bad.add_handlers()->set_name("bad name");
  EXPECT_TRUE(
      ToHandlerConfig(HandlerText(R"(name: "ok" kind: "count")"), with_bad)
          .ok());
}

TEST(ToPeerConfigTest, SameResultAsTheWholeConfig) {
  const v1::Config running = RunningConfig();
  for (absl::string_view text : {
           R"(name: "b" node: "fd00:d1ad::2" mac: "02:00:00:00:00:02")",
           R"(node: "fd00:d1ad::2" mac: "02:00:00:00:00:02")",
           R"(name: "b c" node: "fd00:d1ad::2" mac: "02:00:00:00:00:02")",
           R"(name: "b" node: "2001:db8::2" mac: "02:00:00:00:00:02")",
           R"(name: "b" node: "fd00:d1ad::1" mac: "02:00:00:00:00:02")",
           R"(name: "b" node: "fd00:d1ad::2" mac: "01:00:00:00:00:02")",
           R"(name: "b" node: "fd00:d1ad::2")",
       }) {
    v1::DiadPeer peer;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(std::string(text),
                                                              &peer));
    v1::Config whole = running;
    whole.clear_handlers();
    whole.mutable_diad()->clear_peers();
    *whole.mutable_diad()->add_peers() = peer;
    absl::StatusOr<DataplaneConfig> expected = ToDataplaneConfig(whole);
    absl::StatusOr<diad::PeerConfig> got = ToPeerConfig(peer, running);
    ASSERT_EQ(got.status(), expected.status()) << text;
    if (!got.ok()) continue;
    EXPECT_EQ(got->name,
              expected->transports.get<diad::DiadConfig>().peers[0].name);
    EXPECT_EQ(got->node,
              expected->transports.get<diad::DiadConfig>().peers[0].node);
    EXPECT_EQ(got->mac,
              expected->transports.get<diad::DiadConfig>().peers[0].mac);
    EXPECT_EQ(got->recovery,
              expected->transports.get<diad::DiadConfig>().peers[0].recovery);
  }
}

// diad.peers[].recovery and diad.reorder_packets (issue 17): GO_BACK_N by
// default, SELECTIVE by name; the reorder bound is checked and converted.
TEST(DiadRecoveryTest, PeersChooseTheirRecovery) {
  v1::Config config = RunningConfig();
  config.clear_handlers();
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(peers { name: "b" node: "fd00:d1ad::2" mac: "02:00:00:00:00:02" }
         peers { name: "c" node: "fd00:d1ad::3" mac: "02:00:00:00:00:03"
                 recovery: SELECTIVE }
         reorder_packets: 300)",
      config.mutable_diad()));
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  const diad::DiadConfig& d = dp->transports.get<diad::DiadConfig>();
  ASSERT_EQ(d.peers.size(), 2u);
  EXPECT_EQ(d.peers[0].recovery, diad::Recovery::kGoBackN);
  EXPECT_EQ(d.peers[1].recovery, diad::Recovery::kSelective);
  EXPECT_EQ(d.channel.reorder_packets, 300u);

  config.mutable_diad()->set_reorder_packets(70000);
  absl::Status too_many = ValidateConfig(config);
  EXPECT_EQ(too_many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(too_many.message())
                .find("diad.reorder_packets: 70000 is not allowed; use "
                      "1..65536, or 0 for twice window_packets"),
            std::string::npos)
      << too_many;
}

// diad.zero_copy_min_bytes (issue 16): 1024 when unset, 0 turns zero-copy
// off, more than a packet can carry is refused.
TEST(DiadZeroCopyTest, ThresholdDefaultsOffAndBounds) {
  v1::Config config = RunningConfig();
  config.clear_handlers();
  absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  EXPECT_EQ(dp->transports.get<diad::DiadConfig>().zero_copy_min_bytes, 1024u);
  config.mutable_diad()->set_zero_copy_min_bytes(0);
  dp = ToDataplaneConfig(config);
  ASSERT_TRUE(dp.ok()) << dp.status();
  EXPECT_EQ(dp->transports.get<diad::DiadConfig>().zero_copy_min_bytes, 0u);
  config.mutable_diad()->set_zero_copy_min_bytes(70000);
  absl::Status too_large = ValidateConfig(config);
  EXPECT_EQ(too_large.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(too_large.message())
                .find("diad.zero_copy_min_bytes: 70000 is larger than any "
                      "packet's payload; use 0..65535"),
            std::string::npos)
      << too_large;
}

// diad.rto_min_us, fixed_rto and txn_deadline_ms (issue 17 items 2 and 5):
// adaptive by default with a 100 us floor, converted, and refused with a
// message that says what to write instead.
TEST(DiadTimersTest, AdaptiveTimeoutAndDeadlineAreCheckedAndConverted) {
  v1::Config config = RunningConfig();
  config.clear_handlers();
  {
    absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(config);
    ASSERT_TRUE(dp.ok()) << dp.status();
    const diad::ChannelConfig& ch =
        dp->transports.get<diad::DiadConfig>().channel;
    EXPECT_TRUE(ch.adaptive_rto);
    EXPECT_EQ(ch.rto_min_ns, std::min<uint64_t>(100'000, ch.rto_ns));
    EXPECT_EQ(ch.txn_deadline_ns, 0u);  // the default, 10 x down_after
    EXPECT_EQ(diad::TxnDeadlineNs(ch), 10 * diad::DownAfterNs(ch));
  }
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"(rto_us: 1000 rto_max_us: 16000 rto_min_us: 50 txn_deadline_ms: 2000)",
      config.mutable_diad()));
  {
    absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(config);
    ASSERT_TRUE(dp.ok()) << dp.status();
    const diad::ChannelConfig& ch =
        dp->transports.get<diad::DiadConfig>().channel;
    EXPECT_EQ(ch.rto_min_ns, 50'000u);
    EXPECT_EQ(ch.txn_deadline_ns, 2'000'000'000u);
    EXPECT_EQ(diad::TxnDeadlineNs(ch), 2'000'000'000u);
  }
  auto error_of = [](const v1::Config& c) {
    absl::Status s = ValidateConfig(c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  };
  v1::Config bad = config;
  bad.mutable_diad()->set_rto_min_us(20000);
  EXPECT_NE(error_of(bad).find("diad.rto_min_us: 20000 is above rto_max_us "
                               "(16000)"),
            std::string::npos)
      << error_of(bad);
  bad = config;
  bad.mutable_diad()->set_fixed_rto(true);
  EXPECT_NE(error_of(bad).find("diad.rto_min_us: is set but fixed_rto is "
                               "true"),
            std::string::npos)
      << error_of(bad);
  bad.mutable_diad()->clear_rto_min_us();
  EXPECT_TRUE(ValidateConfig(bad).ok());
  absl::StatusOr<DataplaneConfig> fixed = ToDataplaneConfig(bad);
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_FALSE(fixed->transports.get<diad::DiadConfig>().channel.adaptive_rto);
  bad = config;
  // 1 + 2 + 4 + 8 + 16 + 4 x 16 ms: down after 95 ms.
  bad.mutable_diad()->set_txn_deadline_ms(94);
  EXPECT_NE(error_of(bad).find("diad.txn_deadline_ms: 94 is below down_after "
                               "(95 ms with these timers)"),
            std::string::npos)
      << error_of(bad);
  EXPECT_NE(error_of(bad).find("use at least 95, or 0 for 950"),
            std::string::npos)
      << error_of(bad);
  bad.mutable_diad()->set_txn_deadline_ms(95);
  EXPECT_TRUE(ValidateConfig(bad).ok());
}

// diad.congestion (issue 21): off by default (nothing changes), converted
// with the window_packets ceiling, and refused with what to write instead.
TEST(DiadCongestionConfigTest, OffByDefaultConvertedAndChecked) {
  v1::Config config = RunningConfig();
  config.clear_handlers();
  auto convert = [](const v1::Config& c) {
    absl::StatusOr<DataplaneConfig> dp = ToDataplaneConfig(c);
    EXPECT_TRUE(dp.ok()) << dp.status();
    return dp.ok() ? dp->transports.get<diad::DiadConfig>().congestion
                   : diad::DiadCongestionConfig();
  };
  EXPECT_FALSE(convert(config).enabled);
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "window_packets: 64 congestion { enabled: true }",
      config.mutable_diad()));
  {
    const diad::DiadCongestionConfig c = convert(config);
    EXPECT_TRUE(c.enabled);
    EXPECT_EQ(c.window.target_delay_ns, 50'000);
    EXPECT_DOUBLE_EQ(c.window.max_window, 64);
    EXPECT_DOUBLE_EQ(c.window.initial_window, 16);
    EXPECT_DOUBLE_EQ(c.window.min_window, 1);
    EXPECT_DOUBLE_EQ(c.window.max_mdf, 0.5);
  }
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "window_packets: 8 congestion { enabled: true target_rtt_us: 20 "
      "additive_increase: 2 beta: 0.5 max_mdf: 0.25 min_window: 0.5 }",
      config.mutable_diad()));
  {
    const diad::DiadCongestionConfig c = convert(config);
    EXPECT_EQ(c.window.target_delay_ns, 20'000);
    EXPECT_DOUBLE_EQ(c.window.additive_increase, 2);
    EXPECT_DOUBLE_EQ(c.window.beta, 0.5);
    EXPECT_DOUBLE_EQ(c.window.max_mdf, 0.25);
    EXPECT_DOUBLE_EQ(c.window.min_window, 0.5);
    EXPECT_DOUBLE_EQ(c.window.max_window, 8);
    EXPECT_DOUBLE_EQ(c.window.initial_window, 8);  // 16 above the ceiling
  }
  auto error_of = [&](const std::string& text) {
    v1::Config bad = RunningConfig();
    bad.clear_handlers();
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
        text, bad.mutable_diad()));
    absl::Status s = ValidateConfig(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return std::string(s.message());
  };
  EXPECT_THAT(error_of("congestion { target_rtt_us: 20 }"),
              testing::HasSubstr("diad.congestion.enabled: is false but "
                                 "window parameters are set"));
  EXPECT_THAT(error_of("congestion { enabled: true target_rtt_us: 2000000 }"),
              testing::HasSubstr("diad.congestion.target_rtt_us: 2000000 is "
                                 "not allowed; use 1..1000000"));
  EXPECT_THAT(
      error_of("congestion { enabled: true max_mdf: 1 }"),
      testing::HasSubstr("diad.congestion.max_mdf: 1 is not in (0, 1)"));
  EXPECT_THAT(error_of("congestion { enabled: true beta: 0 }"),
              testing::HasSubstr("diad.congestion.beta: 0 is not in (0, 1]"));
  EXPECT_THAT(
      error_of(
          "window_packets: 32 congestion { enabled: true min_window: 64 }"),
      testing::HasSubstr("diad.congestion.min_window: 64 is not in (0, 32] "
                         "(window_packets)"));
  EXPECT_THAT(error_of("congestion { enabled: true min_window: 4 "
                       "initial_window: 2 }"),
              testing::HasSubstr("diad.congestion.initial_window: 2 is not in "
                                 "[4, 256]"));
}

}  // namespace
}  // namespace spinnic
