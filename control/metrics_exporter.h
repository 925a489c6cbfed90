// spinnicd's Prometheus endpoint (--metrics_listen ADDR:PORT): GET /metrics
// in the Prometheus text exposition format, rendered by prometheus-cpp from
// the same Dataplane::Snapshot that the gRPC GetStats converts
// (control/stats_format.h), plus the DiAD peers, RoCE QPs and regions as the
// control API lists them. Metric names and labels: docs/metrics.md.
#ifndef SPINNIC_CONTROL_METRICS_EXPORTER_H_
#define SPINNIC_CONTROL_METRICS_EXPORTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataplane/dataplane.h"
#include "dataplane/stats.h"
#include "prometheus/metric_family.h"

namespace prometheus {
class Collectable;
class Exposer;
}  // namespace prometheus

namespace spinnic {

struct PeerInfo;
struct QpInfo;

// Checks --metrics_listen: HOST:PORT with an IPv4 host (Debian's civetweb
// has no IPv6: an IPv6 host in brackets is refused), a port in 1..65535. A host
// that is not loopback is refused unless the control API's TCP listener has TLS
// configured (`control_tls`): the endpoint itself is plain HTTP, and an
// operator who exposes it must have decided how the box is reached.
// INVALID_ARGUMENT says what to write instead.
absl::Status ValidateMetricsListen(const std::string& listen, bool control_tls);

// Everything /metrics shows, from one snapshot and the control side's lists
// (null: that transport is off). Pure; tests call it directly.
std::vector<prometheus::MetricFamily> BuildMetricFamilies(
    const StatsSnapshot& snapshot, const std::vector<RegionInfo>& regions,
    const std::vector<PeerInfo>* peers, const std::vector<QpInfo>* qps);

class MetricsExporter {
 public:
  // Validates nothing (ValidateMetricsListen first) and starts serving
  // GET /metrics on `listen`. FAILED_PRECONDITION names the address when it
  // cannot be bound (port in use) and says how to fix it.
  static absl::StatusOr<std::unique_ptr<MetricsExporter>> Start(
      const std::string& listen, const Dataplane* dataplane);
  ~MetricsExporter();

  // The port bound, for the start-up line.
  int port() const { return port_; }

 private:
  MetricsExporter() = default;
  std::shared_ptr<prometheus::Collectable> collectable_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_METRICS_EXPORTER_H_
