// The Prometheus families BuildMetricFamilies makes from a snapshot,
// --metrics_listen's checks, and ServiceMonitor's health judgement.
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "control/metrics_exporter.h"
#include "control/service_monitor.h"
#include "dataplane/diad/diad_module.h"
#include "dataplane/roce/roce_module.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace spinnic {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

StatsSnapshot SampleSnapshot() {
  StatsSnapshot s;
  PortStats p;
  p.name = "wire0";
  p.link_up = true;
  p.rx_packets = 12345678901ULL;
  p.tx_packets = 7;
  p.drops[static_cast<size_t>(DropReason::kNoRoute)] = 3;
  s.ports.push_back(p);
  PortHpuStats share;
  share.port = 0;
  share.hpu = 0;
  share.rx_queue = 0;  // its own RX queue; no TX queue of its own
  share.rx_packets = 12345678901ULL;
  s.port_hpus.push_back(share);
  HpuStats h;
  h.index = 0;
  h.lcore = 1;
  h.loops = 1000;
  s.hpus.push_back(h);
  EctxStats e;
  e.name = "count-icmp";
  e.kind = "count";
  e.invocations = 4;
  e.cycles = 400;
  s.ectxs.push_back(e);
  TransportStats t;
  t.name = "diad";
  t.enabled = true;
  t.counters = {{"retransmits", 5}, {"drop_bad_crc", 2}};
  s.transports.push_back(t);
  return s;
}

std::string Render(const StatsSnapshot& s, const std::vector<PeerInfo>* peers) {
  RegionInfo region;
  region.id = 1;
  region.name = "buf";
  region.length = 65536;
  return prometheus::TextSerializer().Serialize(
      BuildMetricFamilies(s, {region}, peers, nullptr));
}

TEST(MetricsTest, FamiliesCarryTheSnapshotsValuesAndLabels) {
  PeerInfo peer;
  peer.name = "b";
  peer.srtt_ns = 1500000;
  peer.retransmits = 9;
  std::vector<PeerInfo> peers{peer};
  const std::string text = Render(SampleSnapshot(), &peers);
  EXPECT_THAT(text, HasSubstr("# TYPE spinnic_port_rx_packets_total counter"));
  EXPECT_THAT(text, HasSubstr("spinnic_port_rx_packets_total{port=\"wire0\"} "
                              "12345678901\n"));
  EXPECT_THAT(text, HasSubstr("spinnic_port_drops_total{port=\"wire0\","
                              "reason=\"no_route\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("spinnic_port_link_up{port=\"wire0\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("spinnic_port_hpu_rx_packets_total{port="
                              "\"wire0\",hpu=\"0\",rx_queue=\"0\",tx_queue="
                              "\"none\"} 12345678901\n"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_hpu_loops_total{hpu=\"0\",lcore=\"1\"} 1000"));
  EXPECT_THAT(text, HasSubstr("# TYPE spinnic_handler_cycles_per_invocation "
                              "histogram"));
  EXPECT_THAT(text, HasSubstr("spinnic_handler_cycles_per_invocation_count{"
                              "handler=\"count-icmp\",kind=\"count\"} 4"));
  EXPECT_THAT(text, HasSubstr("spinnic_handler_cycles_per_invocation_sum{"
                              "handler=\"count-icmp\",kind=\"count\"} 400"));
  EXPECT_THAT(text, HasSubstr("spinnic_diad_retransmits_total 5\n"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_diad_drops_total{reason=\"bad_crc\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("spinnic_region_bytes{region=\"1\",name=\"buf\"} "
                              "65536\n"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_diad_peer_srtt_seconds{peer=\"b\"} 0.0015"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_diad_peer_retransmits_total{peer=\"b\"} 9"));
}

TEST(MetricsTest, EveryCounterEndsInTotal) {
  std::vector<PeerInfo> peers(1);
  for (const prometheus::MetricFamily& f :
       BuildMetricFamilies(SampleSnapshot(), {}, &peers, nullptr)) {
    if (f.type == prometheus::MetricType::Counter) {
      EXPECT_TRUE(f.name.size() > 6 &&
                  f.name.compare(f.name.size() - 6, 6, "_total") == 0)
          << f.name;
    }
    EXPECT_EQ(f.name.rfind("spinnic_", 0), 0u) << f.name;
  }
}

TEST(MetricsTest, RoceQpsCarryTheirCongestionControl) {
  QpInfo q;
  q.qpn = 0x101;
  q.hpu = 1;
  q.packets = 40;
  q.rate_bps = 1'250'000'000;
  q.alpha = 0.5;
  q.cnps_received = 7;
  q.cnps_sent = 3;
  q.ce_marks = 11;
  const std::vector<QpInfo> qps = {q};
  const std::string text = prometheus::TextSerializer().Serialize(
      BuildMetricFamilies(SampleSnapshot(), {}, nullptr, &qps));
  const std::string labels = "{qpn=\"257\",hpu=\"1\"}";
  EXPECT_THAT(text,
              HasSubstr("spinnic_roce_qp_packets_total" + labels + " 40"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_roce_qp_rate_bps" + labels + " 1250000000"));
  EXPECT_THAT(text, HasSubstr("spinnic_roce_qp_alpha" + labels + " 0.5"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_roce_qp_cnps_received_total" + labels + " 7"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_roce_qp_cnps_sent_total" + labels + " 3"));
  EXPECT_THAT(text,
              HasSubstr("spinnic_roce_qp_ce_marks_total" + labels + " 11"));
}

TEST(MetricsTest, NoPeerFamiliesWithoutDiad) {
  EXPECT_THAT(Render(SampleSnapshot(), nullptr),
              Not(HasSubstr("spinnic_diad_peer_")));
}

TEST(MetricsTest, ListenAddressChecks) {
  EXPECT_TRUE(ValidateMetricsListen("127.0.0.1:9470", false).ok());
  EXPECT_TRUE(ValidateMetricsListen("localhost:9470", false).ok());
  absl::Status v6 = ValidateMetricsListen("[::1]:9470", false);
  EXPECT_EQ(v6.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(v6.message(), HasSubstr("no IPv6"));
  EXPECT_TRUE(ValidateMetricsListen("0.0.0.0:9470", true).ok());
  absl::Status open = ValidateMetricsListen("0.0.0.0:9470", false);
  EXPECT_EQ(open.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(open.message(), HasSubstr("not a loopback address"));
  EXPECT_FALSE(ValidateMetricsListen("127.0.0.1", false).ok());
  EXPECT_FALSE(ValidateMetricsListen("127.0.0.1:0", false).ok());
  EXPECT_FALSE(ValidateMetricsListen("127.0.0.1:70000", false).ok());
  EXPECT_FALSE(ValidateMetricsListen("::1:9470", false).ok());
}

TEST(ServiceMonitorTest, StalledHpuAndLinkDownAreProblemsUntilTheyRecover) {
  ServiceMonitor monitor(absl::Seconds(1));
  StatsSnapshot s = SampleSnapshot();
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_THAT(monitor.Update(s, t0), IsEmpty());
  EXPECT_TRUE(monitor.Ready());
  // Not moving for less than the limit: fine; for more: stalled (updates
  // every 100 ms, as spinnicd makes them).
  for (int ms = 100; ms <= 1000; ms += 100) {
    EXPECT_THAT(monitor.Update(s, t0 + absl::Milliseconds(ms)), IsEmpty());
  }
  std::vector<std::string> problems =
      monitor.Update(s, t0 + absl::Milliseconds(1100));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], HasSubstr("hpu 0 (lcore 1) made no progress"));
  s.hpus[0].loops += 1;
  EXPECT_THAT(monitor.Update(s, t0 + absl::Milliseconds(1200)), IsEmpty());
  s.ports[0].link_up = false;
  s.hpus[0].loops += 1;
  problems = monitor.Update(s, t0 + absl::Milliseconds(1300));
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "port wire0: link down");
  EXPECT_FALSE(monitor.Ready());
}

TEST(ServiceMonitorTest, StalledHpuNeedsUpdatesThroughoutTheStall) {
  ServiceMonitor monitor(absl::Seconds(1));
  StatsSnapshot s = SampleSnapshot();
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int ms = 0; ms <= 1000; ms += 100) {
    EXPECT_THAT(monitor.Update(s, t0 + absl::Milliseconds(ms)), IsEmpty());
  }
  EXPECT_EQ(monitor.Update(s, t0 + absl::Milliseconds(1100)).size(), 1u);
}

TEST(ServiceMonitorTest, AStoppedProcessIsNoStall) {
  ServiceMonitor monitor(absl::Seconds(1));
  StatsSnapshot s = SampleSnapshot();
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_THAT(monitor.Update(s, t0), IsEmpty());
  // SIGSTOP for 10 s: neither the HPUs nor the control thread ran.
  EXPECT_THAT(monitor.Update(s, t0 + absl::Seconds(10)), IsEmpty());
  for (int ms = 10100; ms <= 11000; ms += 100) {
    EXPECT_THAT(monitor.Update(s, t0 + absl::Milliseconds(ms)), IsEmpty());
  }
  EXPECT_EQ(monitor.Update(s, t0 + absl::Milliseconds(11100)).size(), 1u);
}

TEST(ServiceMonitorTest, NotReadyBeforeEveryHpuPolled) {
  ServiceMonitor monitor(absl::Seconds(1));
  StatsSnapshot s = SampleSnapshot();
  s.hpus[0].loops = 0;
  monitor.Update(s, absl::FromUnixSeconds(1));
  EXPECT_FALSE(monitor.Ready());
}

TEST(ServiceMonitorTest, StatusLineHasRates) {
  StatsSnapshot before = SampleSnapshot();
  StatsSnapshot now = before;
  now.ports[0].rx_packets += 5000;
  now.ports[0].tx_packets += 2500;
  EXPECT_THAT(StatusLine(now, before, 5.0, {}),
              HasSubstr("rx 1000 pps, tx 500 pps, drops 0/s"));
  EXPECT_THAT(StatusLine(now, before, 5.0, {"port wire0: link down"}),
              HasSubstr("NOT SERVING: port wire0: link down"));
}

}  // namespace
}  // namespace spinnic
