// The dataplane's own view of its configuration: plain structs, no protobuf
// (control/config_loader.cc converts a validated spinnic.v1.Config into
// these; tests build them directly).
#ifndef SPINNIC_DATAPLANE_DATAPLANE_CONFIG_H_
#define SPINNIC_DATAPLANE_DATAPLANE_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "dataplane/binding.h"
#include "dataplane/match_rule.h"
#include "dataplane/transport_sections.h"

namespace spinnic {

enum class PortRole : uint8_t { kWire, kHost };

// The transport TX pacer of a port (dataplane/tx_pacer.h says how it works;
// docs/config.md#transport-pacer what each field is for).
struct TxPacerConfig {
  // Off: the transports' frames join the TX batch beside passthrough's.
  bool enabled = false;
  // 0..99: percent of what a congested TX queue accepts kept for
  // passthrough frames.
  uint32_t passthrough_share_percent = 0;
  // Transport frames one HPU may hold for the port; more are refused.
  uint32_t queue_frames = 512;
  // Ceiling on the transports' bytes per second per TX queue; 0: none.
  uint64_t rate_bytes_per_s = 0;
};

struct PortConfig {
  std::string name;
  // Exactly one of: a PCI address, a vdev string, or the name of an ethdev
  // that already exists in this process (tests: rte_eth_from_rings).
  std::string pci;
  std::string vdev;
  std::string existing;
  PortRole role = PortRole::kWire;
  uint16_t queues = 0;  // 0: one per worker
  uint16_t mtu = 0;     // 0: device default
  uint16_t rx_descriptors = 1024;
  uint16_t tx_descriptors = 1024;
  bool promiscuous = true;
  TxPacerConfig transport_pacer;
  // v1::Port.forward_unchecked.
  bool forward_unchecked = false;
};

struct HandlerConfig {
  std::string name;
  std::string kind;
  absl::flat_hash_map<std::string, std::string> params;
  uint32_t state_size = 0;
  std::vector<uint8_t> initial_state;
  MatchRule match;
  uint64_t cycle_budget = 0;
  uint32_t disable_after_overruns = 0;
  uint32_t priority = 0;
  // Ids of registered memory regions the handler may use (ctx.Regions()).
  std::vector<uint64_t> bound_regions;
  // A transport's messages it takes instead of matching frames.
  MessageBinding binding;
};

struct DataplaneConfig {
  std::vector<PortConfig> ports;
  // Index pairs into `ports`.
  std::vector<std::pair<uint16_t, uint16_t>> port_pairs;
  // CPU core per HPU worker; EAL lcore ids are assigned 1..N in this order.
  std::vector<uint32_t> worker_cores;
  std::vector<HandlerConfig> handlers;
  uint32_t mbufs = 0;  // 0: sized from ports and queues
  uint16_t burst = 32;
  // Memory regions: at most this many, of at most this many bytes in all.
  uint32_t max_regions = 1024;
  uint64_t region_bytes_limit = uint64_t{64} << 20;
  // Each transport's own config (diad::DiadConfig, roce::RoceConfig, ...).
  TransportSections transports;
  // Appended to the name of every DPDK object the dataplane and its
  // transports create (pools, rings; ResourceName in transport.h): DPDK
  // names are process-wide, so two Dataplanes in one process need different
  // suffixes (bench/cost runs two). Empty, the default, keeps the plain
  // names ("spinnic_pkts") that tools and tests look up. At most
  // kMaxInstanceSuffix characters of [A-Za-z0-9_].
  std::string instance_suffix;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_DATAPLANE_CONFIG_H_
