// The stats renderings: --stats_json is v1::Stats through protobuf's JSON
// printer (snake_case keys, every field present, 64-bit counters as
// strings), the same form as spinctl stats --json (docs/counters.md).
#include "control/stats_format.h"

#include <string>

#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace spinnic {
namespace {

StatsSnapshot Sample() {
  StatsSnapshot s;
  PortStats port;
  port.name = "wire0";
  port.port_id = 3;
  port.queues = 2;
  port.link_up = true;
  port.rx_packets = 5;
  port.drops[static_cast<size_t>(DropReason::kRunt)] = 7;
  port.hw_ipackets = 9;
  s.ports.push_back(port);
  HpuStats hpu;
  hpu.index = 0;
  hpu.lcore = 1;
  hpu.loops = uint64_t{1} << 60;
  s.hpus.push_back(hpu);
  EctxStats e;
  e.id = 4;
  e.name = "count-all";
  e.kind = "count";
  e.packets = 11;
  e.state = {0x01, 0xab};
  s.ectxs.push_back(e);
  s.transports.push_back(
      {"diad", true, {{"tx_data", 12}, {"drop_truncated", 0}}});
  return s;
}

TEST(StatsFormatTest, JsonIsTheStatsMessage) {
  const StatsSnapshot snapshot = Sample();
  absl::StatusOr<std::string> json = FormatStatsJson(snapshot);
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_FALSE(json->empty());
  EXPECT_EQ(json->back(), '\n');

  v1::Stats parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &parsed).ok());
  v1::Stats expected;
  FillStats(snapshot, &expected);
  expected.set_timestamp_ns(parsed.timestamp_ns());
  EXPECT_TRUE(
      google::protobuf::util::MessageDifferencer::Equals(parsed, expected))
      << *json;
  EXPECT_EQ(parsed.handlers(0).state_hex(), "01ab");
  EXPECT_EQ(parsed.ports(0).port_id(), 3u);
  EXPECT_EQ(parsed.ports(0).queues(), 2u);
}

TEST(StatsFormatTest, JsonKeysAreStableSnakeCase) {
  absl::StatusOr<std::string> json = FormatStatsJson(Sample());
  ASSERT_TRUE(json.ok()) << json.status();
  for (const char* key :
       {"\"ports\":", "\"hpus\":", "\"handlers\":", "\"diad\":", "\"roce\":[]",
        "\"hw_ipackets\":\"9\"", "\"rx_packets\":\"5\"", "\"runt\":\"7\"",
        "\"busy_loops\":\"0\"", "\"loops\":\"1152921504606846976\"",
        "\"state_hex\":\"01ab\"", "\"port_id\":3", "\"queues\":2",
        "{\"name\":\"tx_data\",\"value\":\"12\"}",
        "{\"name\":\"drop_truncated\",\"value\":\"0\"}"}) {
    EXPECT_NE(json->find(key), std::string::npos) << key << " in " << *json;
  }
  for (const char* old : {"lcores", "ectxs", "\"hw\"", "rxPackets"}) {
    EXPECT_EQ(json->find(old), std::string::npos) << old << " in " << *json;
  }
}

TEST(StatsFormatTest, TextNamesPortsAndHandlers) {
  const std::string text = FormatStatsText(Sample(), nullptr, 0);
  EXPECT_NE(text.find("wire0"), std::string::npos) << text;
  EXPECT_NE(text.find("count-all"), std::string::npos) << text;
  EXPECT_NE(text.find("tx_data"), std::string::npos) << text;
  EXPECT_NE(text.find("drop runt"), std::string::npos) << text;
}

// A transport with a list of its own in v1::Stats fills that list; any other
// transport's counters appear under its name in `transports`, none dropped.
TEST(StatsFormatTest, EveryTransportsCountersReachTheMessage) {
  StatsSnapshot snapshot = Sample();
  snapshot.transports.push_back({"toy", true, {{"frames", 3}, {"bytes", 0}}});
  v1::Stats stats;
  FillStats(snapshot, &stats);
  ASSERT_EQ(stats.diad_size(), 2);
  EXPECT_EQ(stats.diad(0).name(), "tx_data");
  EXPECT_EQ(stats.diad(0).value(), 12u);
  EXPECT_EQ(stats.roce_size(), 0);
  ASSERT_EQ(stats.transports_size(), 1);
  EXPECT_EQ(stats.transports(0).name(), "toy");
  ASSERT_EQ(stats.transports(0).counters_size(), 2);
  EXPECT_EQ(stats.transports(0).counters(0).name(), "frames");
  EXPECT_EQ(stats.transports(0).counters(0).value(), 3u);
  EXPECT_EQ(stats.transports(0).counters(1).name(), "bytes");
}

}  // namespace
}  // namespace spinnic
