// Which rdma_cm port runs which built-in service (qp_service.h), and the
// plain ports whose connections get the verbs service. The config sets it
// (roce.naaice_port, rping_port, perftest_port, perftest_write_lat.port,
// echo_port, listen_ports); RoceService.SetService changes it while traffic
// flows. The control plane validates a change on its own copy (Set) and
// hands the CM's HPU the whole new table, which the HPU adopts between
// bursts: no allocation, no lock on the HPU.
#ifndef SPINNIC_DATAPLANE_ROCE_SERVICE_PORTS_H_
#define SPINNIC_DATAPLANE_ROCE_SERVICE_PORTS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "dataplane/roce/cm_service.h"
#include "dataplane/roce/roce_config.h"

namespace spinnic::roce {

// The services a port can run. kPerftestWriteLat is perftest's server for
// ib_write_lat (roce.perftest_write_lat: the test's size and iterations
// come from the config, the client never sends them).
enum class ServiceSlot : uint8_t {
  kVerbs = 0,  // plain ports: a connection region, SENDs become events
  kNaaice,
  kRping,
  kPerftest,
  kPerftestWriteLat,
  kEcho,
  kCount,
};
inline constexpr size_t kServiceSlots =
    static_cast<size_t>(ServiceSlot::kCount);
// "verbs", "naaice", "rping", "perftest", "perftest_write_lat", "echo".
const char* ServiceSlotName(ServiceSlot slot);

class ServicePorts {
 public:
  static ServicePorts Of(const RoceConfig& config);

  // The port of a single-port service (0: off); not for kVerbs.
  uint16_t port(ServiceSlot slot) const {
    return ports_[static_cast<size_t>(slot)];
  }
  // The service connections to `port` get, kVerbs for a plain port; false
  // when nothing listens there.
  bool Lookup(uint16_t port, ServiceSlot* slot) const;
  bool Listens(uint16_t port) const {
    ServiceSlot unused;
    return Lookup(port, &unused);
  }
  std::span<const uint16_t> plain_ports() const {
    return {plain_.data(), plain_count_};
  }
  // Every port the CM listens on.
  size_t listen_count() const;

  // Control path. Enables service `name` on `port` (a single-port service
  // moves there; verbs adds a plain port) or, with enable false, turns it
  // off (verbs: removes the plain `port`; others: `port` is ignored).
  // INVALID_ARGUMENT for an unknown name or port 0, FAILED_PRECONDITION
  // when another service has the port, RESOURCE_EXHAUSTED past the CM's
  // kCmMaxListeners ports; the table is unchanged on error.
  absl::Status Set(absl::string_view name, uint32_t port, bool enable);

 private:
  std::array<uint16_t, kServiceSlots> ports_{};  // by slot; [kVerbs] unused
  std::array<uint16_t, kCmMaxListeners> plain_{};
  size_t plain_count_ = 0;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_SERVICE_PORTS_H_
