// spinnic-gen's flags (defaults, both spellings, every refusal naming the
// flag) and the JSON object it prints (field names and order, derived
// rates, nulls, escaping): the contract the line-rate harness parses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/linerate/gen/options.h"
#include "bench/linerate/gen/report.h"

namespace spinnic::gen {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<Options> Parse(std::vector<const char*> args) {
  return ParseOptions(args);
}

std::string ErrorOf(std::vector<const char*> args) {
  absl::StatusOr<Options> o = Parse(args);
  EXPECT_FALSE(o.ok());
  if (o.ok()) return "";
  EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(o.status().message());
}

TEST(OptionsTest, Defaults) {
  absl::StatusOr<Options> o = Parse({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->tx_port, 0);
  EXPECT_EQ(o->rx_port, 0);
  EXPECT_EQ(o->size, 64u);
  EXPECT_EQ(o->rate_pps, 0u);
  EXPECT_EQ(o->duration_s, 10);
  EXPECT_EQ(o->warmup_s, 1);
  EXPECT_EQ(o->flows, 1u);
  EXPECT_EQ(o->drain_ms, 200u);
  EXPECT_EQ(o->link_timeout_s, 10);
  EXPECT_EQ(o->peer_timeout_s, 2);
  EXPECT_EQ(o->threads, Threads::kAuto);
  EXPECT_FALSE(o->help);
}

TEST(OptionsTest, BothSpellingsAndRxPortFollowsTxPort) {
  absl::StatusOr<Options> o =
      Parse({"--tx_port=1", "--size", "1518", "--rate_pps=1000000",
             "--duration_s", "2.5", "--warmup_s=0", "--flows=64",
             "--threads=split", "--mtu", "9000", "--burst=64"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->tx_port, 1);
  EXPECT_EQ(o->rx_port, 1);
  EXPECT_EQ(o->size, 1518u);
  EXPECT_EQ(o->rate_pps, 1000000u);
  EXPECT_EQ(o->duration_s, 2.5);
  EXPECT_EQ(o->warmup_s, 0);
  EXPECT_EQ(o->flows, 64u);
  EXPECT_EQ(o->threads, Threads::kSplit);
  EXPECT_EQ(o->mtu, 9000u);
  EXPECT_EQ(o->burst, 64u);
  o = Parse({"--tx_port=0", "--rx_port=1"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->rx_port, 1);
  o = Parse({"--rx_port=0", "--tx_port=1"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->rx_port, 0);
}

TEST(OptionsTest, Help) {
  EXPECT_TRUE(Parse({"--help"})->help);
  EXPECT_TRUE(Parse({"-h"})->help);
  EXPECT_THAT(Usage(), HasSubstr("--rate_pps"));
}

TEST(OptionsTest, RefusalsNameTheFlagAndTheFix) {
  EXPECT_THAT(ErrorOf({"--size=63"}), HasSubstr("--size=63"));
  EXPECT_THAT(ErrorOf({"--size=63"}), HasSubstr("64..9000"));
  EXPECT_THAT(ErrorOf({"--size=9001"}), HasSubstr("64..9000"));
  EXPECT_THAT(ErrorOf({"--size=abc"}), HasSubstr("--size=abc"));
  EXPECT_THAT(ErrorOf({"--flows=0"}), HasSubstr("1..4096"));
  EXPECT_THAT(ErrorOf({"--rate_pps=-5"}), HasSubstr("whole number"));
  EXPECT_THAT(ErrorOf({"--duration_s=0"}), HasSubstr("--duration_s=0"));
  EXPECT_THAT(ErrorOf({"--duration_s=nan"}), HasSubstr("seconds"));
  EXPECT_THAT(ErrorOf({"--warmup_s=-1"}), HasSubstr("0..3600"));
  EXPECT_THAT(ErrorOf({"--threads=many"}), HasSubstr("auto, single or split"));
  EXPECT_THAT(ErrorOf({"--burst=0"}), HasSubstr("1..256"));
  EXPECT_THAT(ErrorOf({"--mtu=20"}), HasSubstr("at least 68"));
  EXPECT_THAT(ErrorOf({"--speed=10"}), HasSubstr("unknown flag --speed"));
  EXPECT_THAT(ErrorOf({"--speed=10"}), HasSubstr("--rate_pps"));
  EXPECT_THAT(ErrorOf({"--size"}), HasSubstr("--size needs a value"));
  EXPECT_THAT(ErrorOf({"1518"}), HasSubstr("unexpected argument '1518'"));
  EXPECT_THAT(ErrorOf({"--src_port=65000", "--flows=1000"}),
              HasSubstr("lower --src_port to at most 64536"));
  EXPECT_THAT(ErrorOf({"--size=1600", "--mtu=1500"}),
              HasSubstr("raise --mtu to 1586"));
}

RunResult Sample() {
  RunResult r;
  r.size = 64;
  r.flows = 4;
  r.rate_pps = 0;
  r.tx_port = 0;
  r.rx_port = 1;
  r.threads = "single";
  r.tsc_hz = 2'000'000'000;
  r.duration_s = 2;
  r.sent = 2000;
  r.tx_bytes = 2000 * 64;
  r.seq.received = 1990;
  r.seq.lost = 10;
  r.seq.reordered = 3;
  r.seq.duplicates = 2;
  r.seq.late = 1;
  r.rx_bytes = 1990 * 64;
  r.warmup_sent = 500;
  r.warmup_received = 499;
  r.not_ours = 7;
  for (uint64_t v = 1; v <= 1000; ++v) r.latency_ns.Record(v);
  return r;
}

TEST(ReportTest, FieldsInOrderWithDerivedRates) {
  const std::string json = FormatJson(Sample());
  EXPECT_EQ(
      json,
      "{\"sent\":2000,\"received\":1990,\"lost\":10,\"reordered\":3,"
      "\"duplicates\":2,\"late\":1,\"not_ours\":7,\"warmup_sent\":500,"
      "\"warmup_received\":499,\"tx_pps\":1000.0,\"rx_pps\":995.0,"
      "\"offered_pps\":1000.0,"
      // L1: (64 + 24) * 8 bits per frame; L2: 64 * 8.
      "\"tx_gbps\":0.0007,\"rx_gbps\":0.0007,\"rx_gbps_l2\":0.0005,"
      "\"duration_s\":2.000000,"
      "\"latency_ns\":{\"min\":1,\"mean\":500.5,\"p50\":501,\"p90\":903,"
      "\"p99\":991,\"p999\":999,\"max\":1000,\"count\":1000},"
      "\"size\":64,\"flows\":4,\"rate_pps\":0,\"tx_port\":0,\"rx_port\":1,"
      "\"threads\":\"single\",\"tsc_hz\":2000000000,\"error\":null}");
}

TEST(ReportTest, OfferedIsTheTargetRateWhenPaced) {
  RunResult r = Sample();
  r.rate_pps = 5000;
  EXPECT_THAT(FormatJson(r), HasSubstr("\"offered_pps\":5000.0"));
  EXPECT_THAT(FormatJson(r), HasSubstr("\"tx_pps\":1000.0"));
}

TEST(ReportTest, LineRateCountsPreambleGapAndFcs) {
  RunResult r = Sample();
  r.duration_s = 1;
  r.sent = 14'880'952;  // 10GbE line rate at 64 B + FCS (60 B here: a test)
  r.tx_bytes = r.sent * 60;
  EXPECT_THAT(FormatJson(r), HasSubstr("\"tx_gbps\":10.0000"));
}

TEST(ReportTest, EmptyRunHasNullLatencyAndZeroRates) {
  RunResult r;
  r.size = 64;
  r.error = "port 1 (net_memif1) did not come up";
  const std::string json = FormatJson(r);
  EXPECT_THAT(json, HasSubstr("\"tx_pps\":0.0,\"rx_pps\":0.0"));
  EXPECT_THAT(json, HasSubstr("\"latency_ns\":{\"min\":null,\"mean\":null,"
                              "\"p50\":null,\"p90\":null,\"p99\":null,"
                              "\"p999\":null,\"max\":null,\"count\":0}"));
  EXPECT_THAT(json,
              HasSubstr("\"error\":\"port 1 (net_memif1) did not come up\"}"));
}

TEST(ReportTest, ErrorStringsAreEscaped) {
  EXPECT_EQ(JsonString("a\"b\\c\nd\te"), "\"a\\\"b\\\\c\\nd\\u0009e\"");
}

}  // namespace
}  // namespace spinnic::gen
