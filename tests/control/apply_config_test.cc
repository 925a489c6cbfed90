// Hitless reload (ApplyConfig, GetRunningConfig; docs/reload.md) against a
// launched HPU carrying traffic (tests/common/churn_rig.h): a file that
// replaces, adds and removes handlers is applied again and again under load
// and every frame sent comes out, in order and unchanged; a bad file, one
// that needs a restart, and one whose change the dataplane refuses each
// leave the running state exactly as it was, with the error that says why;
// a dry run changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/common/churn_rig.h"

namespace spinnic::churn {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;

class ApplyConfigTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<Rig>> rig = Rig::Create("apply_test");
    ASSERT_TRUE(rig.ok()) << rig.status();
    rig_ = rig->release();
  }
  static void TearDownTestSuite() {
    delete rig_;
    rig_ = nullptr;
  }

  void SetUp() override {
    ASSERT_NE(rig_, nullptr);
    // Every test starts from the same handlers: "a" counts the traffic's
    // UDP flow, "b" sits on TCP (no traffic), "w" is the witness: it takes
    // the UDP frames "a" does not, so it counts a frame only if "a" was
    // ever missing from the table the HPU used.
    absl::StatusOr<v1::ApplyConfigResponse> applied = Apply(First());
    ASSERT_TRUE(applied.ok()) << applied.status();
  }

  static ControlClient& client() { return rig_->client(); }

  // The config the rig's daemon would run, with `handlers` as its handlers.
  static v1::Config WithHandlers(absl::string_view handlers) {
    absl::StatusOr<v1::GetRunningConfigResponse> running =
        client().GetRunningConfig();
    EXPECT_TRUE(running.ok()) << running.status();
    v1::Config config = running->config();
    config.clear_handlers();
    v1::Config extra;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
        std::string(handlers), &extra));
    for (const v1::HandlerInstall& h : extra.handlers()) {
      *config.add_handlers() = h;
    }
    return config;
  }

  static std::string Text(const v1::Config& config) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(config, &text);
    return text;
  }

  static v1::Config First() {
    return WithHandlers(R"pb(
      handlers {
        name: "a"
        kind: "count"
        priority: 1
        match {
          ip_proto: 17
          dst_port { first: 4001 }
        }
      }
      handlers {
        name: "b"
        kind: "null"
        priority: 2
        match { ip_proto: 6 }
      }
      handlers {
        name: "w"
        kind: "count"
        priority: 9
        match { ip_proto: 17 }
      }
    )pb");
  }

  // "a" replaced with other params, "b" removed, "c" added; "w" stays.
  static v1::Config Second() {
    return WithHandlers(R"pb(
      handlers {
        name: "a"
        kind: "count"
        priority: 1
        params { key: "by" value: "dst_port" }
        params { key: "buckets" value: "4" }
        match {
          ip_proto: 17
          dst_port { first: 4001 }
        }
      }
      handlers {
        name: "c"
        kind: "count"
        priority: 3
        match { ip_proto: 6 }
      }
      handlers {
        name: "w"
        kind: "count"
        priority: 9
        match { ip_proto: 17 }
      }
    )pb");
  }

  static absl::StatusOr<v1::ApplyConfigResponse> Apply(
      const v1::Config& config, bool dry_run = false,
      const std::string& source = "test.textproto") {
    return ApplyText(Text(config), dry_run, source);
  }

  static absl::StatusOr<v1::ApplyConfigResponse> ApplyText(
      const std::string& text, bool dry_run = false,
      const std::string& source = "test.textproto") {
    v1::ApplyConfigRequest request;
    request.set_config_text(text);
    request.set_dry_run(dry_run);
    request.set_source_name(source);
    return client().ApplyConfig(request);
  }

  static v1::Config Running() {
    absl::StatusOr<v1::GetRunningConfigResponse> running =
        client().GetRunningConfig();
    EXPECT_TRUE(running.ok()) << running.status();
    return running->config();
  }

  static std::vector<std::string> Lines(const v1::ApplyConfigResponse& r) {
    std::vector<std::string> lines;
    for (const v1::ConfigChange& change : r.changes()) {
      lines.push_back(change.line());
    }
    return lines;
  }

  // The running state is `expected`, and ListHandlers says the same.
  static void ExpectRunning(const v1::Config& expected) {
    v1::Config running = Running();
    std::string diff;
    MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(expected, running)) << diff;
    absl::StatusOr<v1::ListHandlersResponse> listed = client().ListHandlers();
    ASSERT_TRUE(listed.ok()) << listed.status();
    ASSERT_EQ(listed->handlers_size(), expected.handlers_size());
    for (int i = 0; i < expected.handlers_size(); ++i) {
      EXPECT_TRUE(
          MessageDifferencer::Equals(listed->handlers(i), expected.handlers(i)))
          << listed->handlers(i).ShortDebugString();
    }
  }

  static Rig* rig_;
};

Rig* ApplyConfigTest::rig_ = nullptr;

TEST_F(ApplyConfigTest, ApplyUnderLoadLosesNoFrame) {
  std::unique_ptr<Traffic> traffic = rig_->MakeTraffic();
  traffic->Start();
  for (int i = 0; i < 2000 && traffic->sent() < 20000; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  constexpr int kApplies = 100;
  int applied = 0;
  absl::Status failed;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kApplies && failed.ok(); ++i) {
    absl::StatusOr<v1::ApplyConfigResponse> r =
        Apply(i % 2 == 0 ? Second() : First());
    if (!r.ok()) {
      failed = r.status();
      break;
    }
    if (i == 0) {
      EXPECT_THAT(Lines(*r),
                  ElementsAre("- handler b", "~ handler a: params changed",
                              "+ handler c (kind count)"));
    }
    applied += r->applied();
  }
  const absl::Duration elapsed = absl::Now() - start;
  // The last apply (Second) stays; let some frames meet it.
  ASSERT_TRUE(failed.ok()) << failed;
  ASSERT_TRUE(Apply(Second()).ok());
  const uint64_t at_last_apply = traffic->sent();
  for (int i = 0; i < 2000 && traffic->sent() < at_last_apply + 20000; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const TrafficCounts counts = traffic->Stop();
  EXPECT_EQ(applied, kApplies);

  StatsSnapshot stats = rig_->dataplane().Snapshot();
  uint64_t port_drops = 0;
  for (const PortStats& port : stats.ports) {
    for (uint64_t drops : port.drops) port_drops += drops;
  }
  std::printf(
      "%d applies (3 changes each) under load in %.0f ms: %llu frames sent, "
      "%llu forwarded, %llu lost, %llu out of order, %llu changed\n",
      applied, absl::ToDoubleMilliseconds(elapsed),
      static_cast<unsigned long long>(counts.sent),
      static_cast<unsigned long long>(counts.received),
      static_cast<unsigned long long>(counts.sent - counts.received),
      static_cast<unsigned long long>(counts.out_of_order),
      static_cast<unsigned long long>(counts.corrupted));
  ASSERT_GT(counts.sent, 0u);
  EXPECT_EQ(counts.received, counts.sent)
      << (counts.sent - counts.received) << " frames lost";
  EXPECT_EQ(counts.out_of_order, 0u);
  EXPECT_EQ(counts.corrupted, 0u);
  EXPECT_EQ(port_drops, 0u);
  EXPECT_EQ(stats.ports[0].rx_packets, stats.ports[1].tx_packets);

  ExpectRunning(Second());
  // The replaced "a" runs with its new params: it counted the flow after
  // the last apply, by destination port (bucket 4001 % 4 = 1).
  absl::StatusOr<v1::ListHandlersResponse> listed = client().ListHandlers();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->stats_size(), 3);
  ASSERT_EQ(listed->stats(0).name(), "a");
  EXPECT_GT(listed->stats(0).packets(), 0u);
  // Every replacement of "a" was atomic: the witness, installed throughout,
  // never got a frame of the flow.
  ASSERT_EQ(listed->stats(2).name(), "w");
  EXPECT_EQ(listed->stats(2).packets(), 0u);
  absl::StatusOr<std::string> bucket1 = client().ReadHandlerState("a", 16, 8);
  ASSERT_TRUE(bucket1.ok()) << bucket1.status();
  uint64_t bucket1_packets = 0;
  std::memcpy(&bucket1_packets, bucket1->data(), sizeof(bucket1_packets));
  EXPECT_EQ(bucket1_packets, listed->stats(0).packets());
}

TEST_F(ApplyConfigTest, TheRunningConfigAppliedAgainChangesNothing) {
  absl::StatusOr<v1::GetRunningConfigResponse> running =
      client().GetRunningConfig();
  ASSERT_TRUE(running.ok());
  absl::StatusOr<v1::ApplyConfigResponse> r = ApplyText(running->config_text());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->changes_size(), 0);
  EXPECT_FALSE(r->applied());
}

TEST_F(ApplyConfigTest, DryRunChangesNothing) {
  const v1::Config before = Running();
  absl::StatusOr<v1::ApplyConfigResponse> r = Apply(Second(), true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->applied());
  EXPECT_THAT(Lines(*r),
              ElementsAre("- handler b", "~ handler a: params changed",
                          "+ handler c (kind count)"));
  ExpectRunning(before);
}

TEST_F(ApplyConfigTest, ParseErrorChangesNothing) {
  const v1::Config before = Running();
  // The bad value is on the line after the printed config, column 28.
  const std::string good = Text(Second());
  const int bad_line =
      static_cast<int>(std::count(good.begin(), good.end(), '\n')) + 1;
  absl::StatusOr<v1::ApplyConfigResponse> r = ApplyText(
      good + "handlers { name: \"d\" kind: count }\n", false, "bad.textproto");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()),
            absl::StrCat("bad.textproto:", bad_line,
                         ":28: Expected string, got: count"));
  ExpectRunning(before);
}

TEST_F(ApplyConfigTest, ValidationErrorChangesNothing) {
  const v1::Config before = Running();
  v1::Config bad = Second();
  bad.mutable_handlers(1)->set_kind("no-such-kind");
  // The error points at the bad field: its line in the printed text.
  const std::string text = Text(bad);
  const size_t at = text.find("kind: \"no-such-kind\"");
  const int line =
      static_cast<int>(std::count(text.begin(), text.begin() + at, '\n')) + 1;
  absl::StatusOr<v1::ApplyConfigResponse> r = ApplyText(text);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()),
            absl::StrCat(
                "test.textproto:", line,
                ":3: handlers[1].kind: \"no-such-kind\" is not a compiled-in "
                "handler kind; use one of: agg, bcast, bpf, capture, "
                "cond_read, count, datatype, filter, kvs, naaice_function, "
                "null, pingpong, raid_parity, reduce, reflect, stream_check, "
                "xor_payload (spinnicd --list_handlers describes them)"));
  ExpectRunning(before);
}

TEST_F(ApplyConfigTest, RestartOnlyChangeIsRefusedAsAWhole) {
  const v1::Config before = Running();
  v1::Config restart = Second();
  restart.mutable_ports(1)->set_mtu(9000);
  restart.mutable_runtime()->set_burst(64);
  absl::StatusOr<v1::ApplyConfigResponse> r = Apply(restart);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(),
            "nothing applied: ports[1].mtu: 0 -> 9000 needs a restart of "
            "spinnicd; runtime: (unset) -> {burst: 64} needs a restart of "
            "spinnicd; keep the running values in the file, or restart "
            "spinnicd with it (spinctl config show prints them)");
  ExpectRunning(before);
}

TEST_F(ApplyConfigTest, ARefusedChangeRollsBackTheOnesBeforeIt) {
  const v1::Config before = Running();
  // "cap" (kind capture) needs a bound region, which a config file cannot
  // give: the dataplane refuses it after "b" was removed and "a" replaced.
  v1::Config refused = Second();
  v1::HandlerInstall* cap = refused.add_handlers();
  cap->set_name("cap");
  cap->set_kind("capture");
  absl::StatusOr<v1::ApplyConfigResponse> r = Apply(refused);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(r.status().message()),
            "change 4 of 4, '+ handler cap (kind capture)', failed: handler "
            "'cap': kind 'capture' needs 1 bound region(s), got 0; register a "
            "region and list its id in bound_regions (spinctl install --bind "
            "ID); the 3 change(s) before it were rolled back; nothing "
            "changed");
  ExpectRunning(before);
  // "a" was put back as it was: it still counts the flow into one bucket.
  std::unique_ptr<Traffic> traffic = rig_->MakeTraffic();
  traffic->Start();
  for (int i = 0; i < 2000 && traffic->sent() < 2000; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const TrafficCounts counts = traffic->Stop();
  EXPECT_EQ(counts.received, counts.sent);
}

}  // namespace
}  // namespace spinnic::churn
