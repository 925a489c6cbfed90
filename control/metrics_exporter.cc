// spinnicd's Prometheus endpoint (metrics_exporter.h, docs/metrics.md).
#include "control/metrics_exporter.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "control/grpc/control_server.h"
#include "dataplane/classifier.h"
#include "dataplane/diad/diad_module.h"
#include "dataplane/log2_histogram.h"
#include "dataplane/roce/roce_module.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"

namespace spinnic {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};

absl::StatusOr<HostPort> SplitListen(const std::string& listen) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics_listen: '", listen, "' ", why,
                     "; write HOST:PORT, e.g. 127.0.0.1:9470"));
  };
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return bad("has no port");
  HostPort out;
  absl::string_view host(listen.data(), colon);
  if (absl::ConsumePrefix(&host, "[")) {
    if (!absl::ConsumeSuffix(&host, "]")) return bad("has an unclosed '['");
  } else if (absl::StrContains(host, ':')) {
    return bad("is an IPv6 address without brackets");
  }
  if (host.empty()) return bad("has no host");
  out.host = std::string(host);
  if (!absl::SimpleAtoi(absl::string_view(listen).substr(colon + 1),
                        &out.port) ||
      out.port < 1 || out.port > 65535) {
    return bad("has no port number in 1..65535");
  }
  return out;
}

// Builds one family at a time; Add appends a sample with its labels.
class Family {
 public:
  Family(std::vector<MetricFamily>* out, std::string name, std::string help,
         MetricType type)
      : out_(out) {
    family_.name = std::move(name);
    family_.help = std::move(help);
    family_.type = type;
  }
  ~Family() {
    if (!family_.metric.empty()) out_->push_back(std::move(family_));
  }
  void Add(Labels labels, double value) {
    ClientMetric m;
    m.label = std::move(labels);
    if (family_.type == MetricType::Counter) {
      m.counter.value = value;
    } else {
      m.gauge.value = value;
    }
    family_.metric.push_back(std::move(m));
  }
  // Log2Histogram buckets, cumulative as Prometheus wants them, each bound
  // times `scale` (the metric's unit). The +Inf bucket and _count are
  // `count`, and no finite bucket exceeds it: a snapshot reads the HPUs'
  // counters one after another while they run.
  template <typename Histogram>
  void AddLog2Histogram(Labels labels, const HistogramStats<Histogram>& h,
                        double scale, uint64_t count, double sum) {
    ClientMetric m;
    m.label = std::move(labels);
    uint64_t cumulative = 0;
    for (size_t b = 0; b + 1 < Histogram::kBuckets; ++b) {
      cumulative += h.counts[b];
      ClientMetric::Bucket bucket;
      bucket.upper_bound =
          static_cast<double>(Histogram::UpperBound(b)) * scale;
      bucket.cumulative_count = std::min(cumulative, count);
      m.histogram.bucket.push_back(bucket);
    }
    ClientMetric::Bucket inf;
    inf.upper_bound = std::numeric_limits<double>::infinity();
    inf.cumulative_count = count;
    m.histogram.bucket.push_back(inf);
    m.histogram.sample_count = count;
    m.histogram.sample_sum = sum;
    family_.metric.push_back(std::move(m));
  }

 private:
  std::vector<MetricFamily>* out_;
  MetricFamily family_;
};

double D(uint64_t v) { return static_cast<double>(v); }

void AddPorts(const StatsSnapshot& s, std::vector<MetricFamily>* out) {
  auto port = [](const PortStats& p) { return Labels{{"port", p.name}}; };
  struct CounterField {
    const char* name;
    const char* help;
    uint64_t PortStats::*field;
  };
  static constexpr CounterField kCounters[] = {
      {"spinnic_port_rx_packets_total", "Frames received by the HPUs",
       &PortStats::rx_packets},
      {"spinnic_port_rx_bytes_total", "Bytes received by the HPUs",
       &PortStats::rx_bytes},
      {"spinnic_port_tx_packets_total", "Frames handed to the TX queues",
       &PortStats::tx_packets},
      {"spinnic_port_tx_bytes_total", "Bytes handed to the TX queues",
       &PortStats::tx_bytes},
      {"spinnic_port_transport_paced_total",
       "Transport frames the pacer handed to the TX queues",
       &PortStats::transport_paced},
      {"spinnic_port_transport_refused_total",
       "Transport frames refused because the pacer's queue was full",
       &PortStats::transport_refused},
      {"spinnic_port_hw_ipackets_total", "Frames the device received",
       &PortStats::hw_ipackets},
      {"spinnic_port_hw_opackets_total", "Frames the device sent",
       &PortStats::hw_opackets},
      {"spinnic_port_hw_imissed_total",
       "Frames the device dropped for lack of RX descriptors",
       &PortStats::hw_imissed},
      {"spinnic_port_hw_ierrors_total", "Erroneous frames the device received",
       &PortStats::hw_ierrors},
      {"spinnic_port_hw_oerrors_total", "Frames the device failed to send",
       &PortStats::hw_oerrors},
      {"spinnic_port_hw_rx_nombuf_total",
       "RX mbuf allocation failures in the device", &PortStats::hw_rx_nombuf},
  };
  for (const CounterField& c : kCounters) {
    Family f(out, c.name, c.help, MetricType::Counter);
    for (const PortStats& p : s.ports) f.Add(port(p), D(p.*c.field));
  }
  {
    Family f(out, "spinnic_port_drops_total",
             "Frames freed without sending, by reason (docs/counters.md)",
             MetricType::Counter);
    for (const PortStats& p : s.ports) {
      for (size_t r = 0; r < p.drops.size(); ++r) {
        f.Add({{"port", p.name},
               {"reason", DropReasonName(static_cast<DropReason>(r))}},
              D(p.drops[r]));
      }
    }
  }
  {
    // Each HPU's share (its own queue when the port has one per HPU); the
    // port's totals above are their sums, from the same reads.
    Family rx(out, "spinnic_port_hpu_rx_packets_total",
              "Frames received on the port by this HPU (its RX queue)",
              MetricType::Counter);
    Family rxb(out, "spinnic_port_hpu_rx_bytes_total",
               "Bytes received on the port by this HPU", MetricType::Counter);
    Family tx(out, "spinnic_port_hpu_tx_packets_total",
              "Frames this HPU handed to the port's TX queue",
              MetricType::Counter);
    Family txb(out, "spinnic_port_hpu_tx_bytes_total",
               "Bytes this HPU handed to the port's TX queue",
               MetricType::Counter);
    for (const PortHpuStats& q : s.port_hpus) {
      if (q.port >= s.ports.size()) continue;
      auto queue = [](int32_t id) {
        return id < 0 ? std::string("none") : absl::StrCat(id);
      };
      Labels l{{"port", s.ports[q.port].name},
               {"hpu", absl::StrCat(q.hpu)},
               {"rx_queue", queue(q.rx_queue)},
               {"tx_queue", queue(q.tx_queue)}};
      rx.Add(l, D(q.rx_packets));
      rxb.Add(l, D(q.rx_bytes));
      tx.Add(l, D(q.tx_packets));
      txb.Add(l, D(q.tx_bytes));
    }
  }
  Family up(out, "spinnic_port_link_up", "1 when the port's link is up",
            MetricType::Gauge);
  Family speed(out, "spinnic_port_link_speed_mbps",
               "The link's speed in Mbit/s (0: unknown or down)",
               MetricType::Gauge);
  Family queues(out, "spinnic_port_queues", "RX/TX queues of the port",
                MetricType::Gauge);
  Family held(out, "spinnic_port_transport_held",
              "Transport frames waiting in the port's pacers now",
              MetricType::Gauge);
  for (const PortStats& p : s.ports) {
    up.Add(port(p), p.link_up ? 1 : 0);
    speed.Add(port(p), D(p.link_speed_mbps));
    queues.Add(port(p), D(p.queues));
    held.Add(port(p), D(p.transport_held));
  }
}

void AddHpus(const StatsSnapshot& s, std::vector<MetricFamily>* out) {
  struct CounterField {
    const char* name;
    const char* help;
    uint64_t HpuStats::*field;
  };
  static constexpr CounterField kCounters[] = {
      {"spinnic_hpu_loops_total", "Poll loop iterations", &HpuStats::loops},
      {"spinnic_hpu_busy_loops_total",
       "Poll loop iterations that received at least one frame",
       &HpuStats::busy_loops},
      {"spinnic_hpu_rx_packets_total", "Frames the HPU received",
       &HpuStats::rx_packets},
      {"spinnic_hpu_tx_packets_total", "Frames the HPU sent",
       &HpuStats::tx_packets},
      {"spinnic_hpu_events_total", "Handler events raised", &HpuStats::events},
      {"spinnic_hpu_event_overflow_total",
       "Handler events lost to a full event ring", &HpuStats::event_overflow},
      {"spinnic_hpu_emitted_total", "Frames handlers emitted",
       &HpuStats::emitted},
      {"spinnic_hpu_emit_failed_total", "Frames handlers could not emit",
       &HpuStats::emit_failed},
  };
  auto hpu = [](const HpuStats& h) {
    return Labels{{"hpu", absl::StrCat(h.index)},
                  {"lcore", absl::StrCat(h.lcore)}};
  };
  for (const CounterField& c : kCounters) {
    Family f(out, c.name, c.help, MetricType::Counter);
    for (const HpuStats& h : s.hpus) f.Add(hpu(h), D(h.*c.field));
  }
}

void AddHandlers(const StatsSnapshot& s, std::vector<MetricFamily>* out) {
  struct CounterField {
    const char* name;
    const char* help;
    uint64_t EctxStats::*field;
  };
  static constexpr CounterField kCounters[] = {
      {"spinnic_handler_messages_total", "Messages the handler saw",
       &EctxStats::messages},
      {"spinnic_handler_packets_total", "Packets the handler saw",
       &EctxStats::packets},
      {"spinnic_handler_bytes_total", "Bytes the handler saw",
       &EctxStats::bytes},
      {"spinnic_handler_invocations_total", "Handler calls",
       &EctxStats::invocations},
      {"spinnic_handler_cycles_total", "TSC cycles spent inside handler calls",
       &EctxStats::cycles},
      {"spinnic_handler_over_budget_total",
       "Calls that exceeded the cycle budget", &EctxStats::over_budget},
      {"spinnic_handler_dropped_total", "Packets the handler dropped",
       &EctxStats::dropped},
      {"spinnic_handler_failed_total", "Calls that returned FAIL",
       &EctxStats::failed},
      {"spinnic_handler_invalid_total",
       "Calls that returned a code not allowed there", &EctxStats::invalid},
      {"spinnic_handler_bypassed_total",
       "Packets that met the handler while it was disabled",
       &EctxStats::bypassed},
  };
  auto handler = [](const EctxStats& e) {
    return Labels{{"handler", e.name}, {"kind", e.kind}};
  };
  for (const CounterField& c : kCounters) {
    Family f(out, c.name, c.help, MetricType::Counter);
    for (const EctxStats& e : s.ectxs) f.Add(handler(e), D(e.*c.field));
  }
  {
    Family f(out, "spinnic_handler_disabled",
             "1 when the handler was disabled (overruns)", MetricType::Gauge);
    for (const EctxStats& e : s.ectxs) f.Add(handler(e), e.disabled ? 1 : 0);
  }
  Family h(out, "spinnic_handler_cycles_per_invocation",
           "TSC cycles per handler call (buckets from sampled calls)",
           MetricType::Histogram);
  for (const EctxStats& e : s.ectxs) {
    h.AddLog2Histogram(handler(e), e.call_cycles, 1.0, e.invocations,
                       D(e.cycles));
  }
}

// A transport's counters: spinnic_<transport>_<name>_total, and its drop
// reasons in one family spinnic_<transport>_drops_total{reason}.
void AddTransports(const StatsSnapshot& s, std::vector<MetricFamily>* out) {
  for (const TransportStats& t : s.transports) {
    if (!t.enabled) continue;
    std::map<std::string, std::vector<std::pair<Labels, double>>> families;
    for (const auto& [name, value] : t.counters) {
      absl::string_view n = name;
      if (absl::ConsumePrefix(&n, "drop_")) {
        families[absl::StrCat("spinnic_", t.name, "_drops_total")].push_back(
            {{{"reason", std::string(n)}}, D(value)});
      } else {
        families[absl::StrCat("spinnic_", t.name, "_", name, "_total")]
            .push_back({{}, D(value)});
      }
    }
    for (auto& [name, samples] : families) {
      Family f(out, name,
               absl::StrCat("The ", t.name, " transport's counter (docs/",
                            t.name, ".md), summed over HPUs"),
               MetricType::Counter);
      for (auto& [labels, value] : samples) f.Add(std::move(labels), value);
    }
    // spinnic_<transport>_<name>_seconds: "rtt", the round-trip samples.
    for (const auto& [name, histogram] : t.histograms) {
      Family f(out, absl::StrCat("spinnic_", t.name, "_", name, "_seconds"),
               absl::StrCat("The ", t.name, " transport's ", name,
                            " samples in seconds, summed over HPUs"),
               MetricType::Histogram);
      f.AddLog2Histogram({}, histogram, 1e-9, histogram.total(),
                         static_cast<double>(histogram.sum) * 1e-9);
    }
  }
}

void AddRegions(const std::vector<RegionInfo>& regions,
                std::vector<MetricFamily>* out) {
  Family bytes(out, "spinnic_region_bytes", "Length of the memory region",
               MetricType::Gauge);
  Family pins(out, "spinnic_region_pins", "Transfers holding the region now",
              MetricType::Gauge);
  Family bound(out, "spinnic_region_bound_handlers",
               "Handlers bound to the region", MetricType::Gauge);
  for (const RegionInfo& r : regions) {
    Labels l{{"region", absl::StrCat(r.id)}, {"name", r.name}};
    bytes.Add(l, D(r.length));
    pins.Add(l, D(r.pins));
    bound.Add(l, D(r.bound_to.size()));
  }
}

void AddPeers(const std::vector<PeerInfo>& peers,
              std::vector<MetricFamily>* out) {
  struct CounterField {
    const char* name;
    const char* help;
    uint64_t PeerInfo::*field;
  };
  static constexpr CounterField kCounters[] = {
      {"spinnic_diad_peer_tx_packets_total", "DiAD packets sent to the peer",
       &PeerInfo::tx_packets},
      {"spinnic_diad_peer_tx_bytes_total", "DiAD bytes sent to the peer",
       &PeerInfo::tx_bytes},
      {"spinnic_diad_peer_rx_packets_total",
       "DiAD packets received from the peer", &PeerInfo::rx_packets},
      {"spinnic_diad_peer_rx_bytes_total", "DiAD bytes received from the peer",
       &PeerInfo::rx_bytes},
      {"spinnic_diad_peer_retransmits_total", "Packets sent again",
       &PeerInfo::retransmits},
      {"spinnic_diad_peer_down_events_total", "Times a channel went down",
       &PeerInfo::down_events},
      {"spinnic_diad_peer_resets_total", "Channel resets", &PeerInfo::resets},
      {"spinnic_diad_peer_ops_completed_total", "Operations completed",
       &PeerInfo::ops_completed},
      {"spinnic_diad_peer_ops_failed_total", "Operations failed",
       &PeerInfo::ops_failed},
      {"spinnic_diad_peer_rtt_samples_total", "Round-trip samples taken",
       &PeerInfo::rtt_samples},
      {"spinnic_diad_peer_txn_deadline_exceeded_total",
       "Transactions failed by their deadline",
       &PeerInfo::txn_deadline_exceeded},
      {"spinnic_diad_peer_cc_delay_decreases_total",
       "Congestion window decreases for an RTT above the target",
       &PeerInfo::cc_delay_decreases},
      {"spinnic_diad_peer_cc_ecn_decreases_total",
       "Congestion window decreases for an ECN echo",
       &PeerInfo::cc_ecn_decreases},
      {"spinnic_diad_peer_cc_timeout_decreases_total",
       "Congestion window decreases for a retransmission timeout",
       &PeerInfo::cc_timeout_decreases},
      {"spinnic_diad_peer_ce_marks_received_total",
       "DiAD packets from the peer that arrived CE-marked",
       &PeerInfo::ce_marks_received},
      {"spinnic_diad_peer_ecn_echoes_received_total",
       "ACKs from the peer echoing CE marks", &PeerInfo::ecn_echoes_received},
  };
  auto peer = [](const PeerInfo& p) { return Labels{{"peer", p.name}}; };
  for (const CounterField& c : kCounters) {
    Family f(out, c.name, c.help, MetricType::Counter);
    for (const PeerInfo& p : peers) f.Add(peer(p), D(p.*c.field));
  }
  Family up(out, "spinnic_diad_peer_up", "1 when no channel of it is down",
            MetricType::Gauge);
  Family down(out, "spinnic_diad_peer_channels_down", "Channels down now",
              MetricType::Gauge);
  Family flight(out, "spinnic_diad_peer_in_flight_packets",
                "Packets sent and not yet acknowledged", MetricType::Gauge);
  Family srtt(out, "spinnic_diad_peer_srtt_seconds",
              "Largest smoothed round-trip time among the HPUs (0 before a "
              "sample)",
              MetricType::Gauge);
  Family rto(out, "spinnic_diad_peer_rto_seconds",
             "Largest retransmission timeout among the HPUs",
             MetricType::Gauge);
  Family cwnd(out, "spinnic_diad_peer_cc_window_packets",
              "Largest congestion window among the HPUs, packets (0: "
              "congestion control off)",
              MetricType::Gauge);
  Family cc_rtt(out, "spinnic_diad_peer_cc_rtt_seconds",
                "Largest last RTT sample the congestion windows took",
                MetricType::Gauge);
  for (const PeerInfo& p : peers) {
    cwnd.Add(peer(p), p.cc_window);
    cc_rtt.Add(peer(p), D(p.cc_rtt_ns) * 1e-9);
    up.Add(peer(p), p.up ? 1 : 0);
    down.Add(peer(p), D(p.channels_down));
    flight.Add(peer(p), D(p.in_flight_packets));
    srtt.Add(peer(p), D(p.srtt_ns) * 1e-9);
    rto.Add(peer(p), D(p.rto_ns) * 1e-9);
  }
}

void AddQps(const std::vector<QpInfo>& qps, std::vector<MetricFamily>* out) {
  auto qp = [](const QpInfo& q) {
    return Labels{{"qpn", absl::StrCat(q.qpn)}, {"hpu", absl::StrCat(q.hpu)}};
  };
  Family packets(out, "spinnic_roce_qp_packets_total",
                 "Request packets the QP executed", MetricType::Counter);
  Family naks(out, "spinnic_roce_qp_naks_total", "NAKs and RNR NAKs sent",
              MetricType::Counter);
  Family state(out, "spinnic_roce_qp_state",
               "QP state: 0 RESET, 1 INIT, 2 RTR, 3 RTS, 4 ERROR",
               MetricType::Gauge);
  // Congestion control (roce.congestion; rate and alpha 0 when off).
  Family rate(out, "spinnic_roce_qp_rate_bps",
              "The requester's DCQCN rate, bits per second (0: congestion "
              "control off)",
              MetricType::Gauge);
  Family alpha(out, "spinnic_roce_qp_alpha",
               "The requester's DCQCN alpha (0: congestion control off)",
               MetricType::Gauge);
  Family cnp_rx(out, "spinnic_roce_qp_cnps_received_total",
                "CNPs received for the QP (the reaction point)",
                MetricType::Counter);
  Family cnp_tx(out, "spinnic_roce_qp_cnps_sent_total",
                "CNPs the QP sent to its peer (the notification point)",
                MetricType::Counter);
  Family ce(out, "spinnic_roce_qp_ce_marks_total",
            "CE-marked packets the QP received", MetricType::Counter);
  for (const QpInfo& q : qps) {
    packets.Add(qp(q), D(q.packets));
    naks.Add(qp(q), D(q.naks));
    state.Add(qp(q), D(static_cast<uint8_t>(q.state)));
    rate.Add(qp(q), D(q.rate_bps));
    alpha.Add(qp(q), q.alpha);
    cnp_rx.Add(qp(q), D(q.cnps_received));
    cnp_tx.Add(qp(q), D(q.cnps_sent));
    ce.Add(qp(q), D(q.ce_marks));
  }
}

class SnapshotCollectable final : public prometheus::Collectable {
 public:
  explicit SnapshotCollectable(const Dataplane* dataplane)
      : dataplane_(dataplane) {}
  std::vector<MetricFamily> Collect() const override {
    // The lists first, the counters last: GetStats's snapshot, taken the
    // same way (Dataplane::Snapshot without the state memory).
    std::vector<RegionInfo> regions = dataplane_->ListRegions();
    std::vector<PeerInfo> peers;
    const auto* diad = dataplane_->transport<diad::DiadModule>();
    if (diad != nullptr) peers = diad->ListPeers();
    std::vector<QpInfo> qps;
    const auto* roce = dataplane_->transport<roce::RoceModule>();
    if (roce != nullptr) qps = roce->ListQps();
    StatsSnapshot snapshot = dataplane_->Snapshot(Dataplane::StateCopy::kOmit);
    return BuildMetricFamilies(snapshot, regions,
                               diad != nullptr ? &peers : nullptr,
                               roce != nullptr ? &qps : nullptr);
  }

 private:
  const Dataplane* dataplane_;
};

}  // namespace

absl::Status ValidateMetricsListen(const std::string& listen,
                                   bool control_tls) {
  absl::StatusOr<HostPort> host_port = SplitListen(listen);
  if (!host_port.ok()) return host_port.status();
  if (absl::StrContains(host_port->host, ':')) {
    // Measured: Debian 12's civetweb (under prometheus-cpp) is built without
    // IPv6 (mg_check_feature(8) == 0), so binding [::1] fails.
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics_listen: '", listen,
        "' is an IPv6 address, and the HTTP server spinnicd uses (civetweb "
        "as Debian builds it) has no IPv6; listen on an IPv4 address, e.g. "
        "127.0.0.1:",
        host_port->port));
  }
  if (!IsLoopbackHost(host_port->host) && !control_tls) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics_listen: '", listen,
        "' is not a loopback address, and the metrics endpoint is plain "
        "HTTP; listen on 127.0.0.1 (and let Prometheus scrape "
        "through a local proxy or agent), or configure the control API's "
        "TLS (--control_tls_cert, --control_tls_key) to allow other "
        "addresses"));
  }
  return absl::OkStatus();
}

std::vector<MetricFamily> BuildMetricFamilies(
    const StatsSnapshot& snapshot, const std::vector<RegionInfo>& regions,
    const std::vector<PeerInfo>* peers, const std::vector<QpInfo>* qps) {
  std::vector<MetricFamily> out;
  AddPorts(snapshot, &out);
  AddHpus(snapshot, &out);
  AddHandlers(snapshot, &out);
  AddTransports(snapshot, &out);
  AddRegions(regions, &out);
  if (peers != nullptr) AddPeers(*peers, &out);
  if (qps != nullptr) AddQps(*qps, &out);
  return out;
}

absl::StatusOr<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(
    const std::string& listen, const Dataplane* dataplane) {
  absl::StatusOr<HostPort> host_port = SplitListen(listen);
  if (!host_port.ok()) return host_port.status();
  std::unique_ptr<MetricsExporter> exporter(new MetricsExporter());
  try {
    // One serving thread: a scrape takes a snapshot under the dataplane's
    // lock, and parallel scrapes would only queue there.
    exporter->exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(absl::StrCat(
        "metrics endpoint: cannot listen on ", listen, " (", e.what(),
        "): is port ", host_port->port,
        " in use by another program or spinnicd? pass another "
        "--metrics_listen port, or stop what holds it (ss -ltnp 'sport = :",
        host_port->port, "')"));
  }
  exporter->collectable_ = std::make_shared<SnapshotCollectable>(dataplane);
  exporter->exposer_->RegisterCollectable(exporter->collectable_);
  std::vector<int> ports = exporter->exposer_->GetListeningPorts();
  exporter->port_ = ports.empty() ? host_port->port : ports.front();
  return exporter;
}

MetricsExporter::~MetricsExporter() = default;

}  // namespace spinnic
