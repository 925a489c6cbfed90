#include "control/default_config.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "control/config_loader.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace spinnic {
namespace {

constexpr char kQuickstartPath[] =
    SPINNIC_SOURCE_DIR "/deploy/configs/quickstart.textproto";

TEST(DefaultConfigTest, ParsesAndValidates) {
  absl::StatusOr<ParsedConfig> parsed =
      ParseConfigText(DefaultConfigText(), kDefaultConfigSourceName);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_TRUE(ValidateConfig(parsed->config, &parsed->locations).ok())
      << ValidateConfig(parsed->config, &parsed->locations);
}

TEST(DefaultConfigTest, MatchesQuickstartFile) {
  absl::StatusOr<ParsedConfig> embedded =
      ParseConfigText(DefaultConfigText(), kDefaultConfigSourceName);
  absl::StatusOr<ParsedConfig> file = ParseConfigFile(kQuickstartPath);
  ASSERT_TRUE(embedded.ok()) << embedded.status();
  ASSERT_TRUE(file.ok()) << file.status();
  std::string differences;
  google::protobuf::util::MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(embedded->config, file->config))
      << "control/default_config.cc and " << kQuickstartPath
      << " differ; copy the file into the raw string:\n"
      << differences;
}

TEST(DefaultConfigTest, IsTheQuickStartTopology) {
  absl::StatusOr<v1::Config> config = LoadConfig("");
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->ports_size(), 2);
  EXPECT_EQ(config->ports(0).name(), "wire0");
  EXPECT_EQ(config->ports(0).vdev(), "net_af_packet0,iface=spn-wire0");
  EXPECT_EQ(config->ports(0).role(), v1::PORT_ROLE_WIRE);
  EXPECT_EQ(config->ports(1).name(), "host0");
  EXPECT_EQ(config->ports(1).vdev(), "net_af_packet1,iface=spn-host0");
  EXPECT_EQ(config->ports(1).role(), v1::PORT_ROLE_HOST);
  ASSERT_EQ(config->port_pairs_size(), 1);
  EXPECT_EQ(config->port_pairs(0).a(), "wire0");
  EXPECT_EQ(config->port_pairs(0).b(), "host0");
  EXPECT_EQ(config->main_lcore(), 0u);
  ASSERT_EQ(config->workers_size(), 1);
  EXPECT_EQ(config->workers(0), 1u);
  ASSERT_EQ(config->handlers_size(), 2);
  EXPECT_EQ(config->handlers(0).name(), "count-icmp");
  EXPECT_EQ(config->handlers(0).kind(), "count");
  EXPECT_EQ(config->handlers(0).match().ip_proto(), 1u);
  EXPECT_EQ(config->handlers(1).name(), "count-icmpv6");
  EXPECT_EQ(config->handlers(1).match().ip_proto(), 58u);
  EXPECT_EQ(config->runtime().duration_s(), 0u);
  EXPECT_EQ(config->runtime().stats_interval_ms(), 1000u);
  // --no-huge and --in-memory cannot be combined.
  for (const std::string& arg : config->eal_args()) {
    EXPECT_NE(arg, "--in-memory");
  }
}

}  // namespace
}  // namespace spinnic
