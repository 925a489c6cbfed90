// One ethdev opened for the dataplane: probe (PCI, vdev, or an ethdev that
// already exists), configure queues/RSS/MTU, start, and stop/close at the end.
#ifndef SPINNIC_DATAPLANE_PORT_H_
#define SPINNIC_DATAPLANE_PORT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "dataplane/dataplane_config.h"

struct rte_mempool;

namespace spinnic {

class Port {
 public:
  // Opens and starts the port with `wanted_queues` RX/TX queue pairs (fewer
  // if the device has fewer; see queues()). Errors name the port and say
  // what to check (driver, interface name, MTU the device allows).
  static absl::StatusOr<Port> Open(const PortConfig& config,
                                   uint16_t wanted_queues, rte_mempool* pool);

  Port(Port&& other) noexcept;
  Port& operator=(Port&&) = delete;
  Port(const Port&) = delete;
  ~Port();

  // Stops and closes the device (and detaches a probed vdev). Idempotent.
  void Close();

  const std::string& name() const { return name_; }
  uint16_t port_id() const { return port_id_; }
  uint16_t queues() const { return queues_; }
  // Largest frame (L2 header + payload, no FCS) the port sends, VLAN tags
  // allowed on top.
  uint32_t max_frame() const { return max_frame_; }
  bool link_up() const;
  // Whether the port sends chained mbufs (RTE_ETH_TX_OFFLOAD_MULTI_SEGS):
  // the condition for zero-copy payloads (region_tx.h).
  bool tx_multi_segs() const { return tx_multi_segs_; }
  // Mbit/s as the device reports it; 0 when unknown or down.
  uint32_t link_speed_mbps() const;

 private:
  Port() = default;

  std::string name_;
  std::string probed_device_;  // non-empty when we probed it (we detach it)
  uint16_t port_id_ = 0;
  uint16_t queues_ = 0;
  uint32_t max_frame_ = 0;
  bool tx_multi_segs_ = false;
  bool open_ = false;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_PORT_H_
