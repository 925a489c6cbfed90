#include "dataplane/port.h"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dataplane/host_checks.h"

namespace spinnic {
namespace {

absl::Status PortError(const PortConfig& config, absl::string_view what,
                       int rc) {
  return absl::FailedPreconditionError(
      absl::StrCat("port '", config.name, "': ", what,
                   rc != 0 ? absl::StrCat(" (", rte_strerror(-rc), ")") : ""));
}

// Probes a PCI device or vdev and returns the ethdev id it created.
absl::StatusOr<uint16_t> ProbeDevice(const PortConfig& config,
                                     std::string* probed) {
  uint16_t port_id = 0;
  if (!config.existing.empty()) {
    if (rte_eth_dev_get_port_by_name(config.existing.c_str(), &port_id) != 0) {
      return PortError(
          config, absl::StrCat("no ethdev named '", config.existing, "'"), 0);
    }
    return port_id;
  }
  const std::string& devargs = config.pci.empty() ? config.vdev : config.pci;
  // The ethdev name is the devargs up to the first comma: "net_pcap0" or the
  // PCI address.
  std::string device_name = devargs.substr(0, devargs.find(','));
  int rc = rte_dev_probe(devargs.c_str());
  if (rc != 0 && !config.pci.empty()) {
    return PortError(config, DiagnosePciDevice(config.pci), rc);
  }
  if (rc != 0) {
    return PortError(
        config,
        absl::StrCat(
            "cannot probe '", devargs,
            "': check the driver name, "
            "its arguments and that the device exists (for "
            "net_af_packet: the interface; for PCI: bound to vfio-pci)"),
        rc);
  }
  *probed = devargs;
  if (rte_eth_dev_get_port_by_name(device_name.c_str(), &port_id) == 0) {
    return port_id;
  }
  // PCI ethdevs may be named in another format; find the newest port whose
  // device name matches.
  RTE_ETH_FOREACH_DEV(port_id) {
    char name[RTE_ETH_NAME_MAX_LEN];
    if (rte_eth_dev_get_name_by_port(port_id, name) == 0 &&
        std::strstr(name, device_name.c_str()) != nullptr) {
      return port_id;
    }
  }
  return PortError(
      config, absl::StrCat("probed '", devargs, "' but found no ethdev"), 0);
}

}  // namespace

absl::StatusOr<Port> Port::Open(const PortConfig& config,
                                uint16_t wanted_queues, rte_mempool* pool) {
  Port port;
  port.name_ = config.name;
  absl::StatusOr<uint16_t> id = ProbeDevice(config, &port.probed_device_);
  if (!id.ok()) return id.status();
  port.port_id_ = *id;
  port.open_ = true;  // from here on, Close() undoes what was done

  rte_eth_dev_info info;
  int rc = rte_eth_dev_info_get(port.port_id_, &info);
  if (rc != 0) return PortError(config, "cannot read device info", rc);

  uint16_t queues = config.queues != 0 ? config.queues : wanted_queues;
  queues = std::min<uint16_t>({queues, info.max_rx_queues, info.max_tx_queues});
  if (queues == 0) return PortError(config, "device has no queues", 0);
  port.queues_ = queues;

  rte_eth_conf conf;
  std::memset(&conf, 0, sizeof conf);
  if (queues > 1 && info.flow_type_rss_offloads != 0) {
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf =
        (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP | RTE_ETH_RSS_UDP) &
        info.flow_type_rss_offloads;
  }
  uint32_t mtu = config.mtu != 0 ? config.mtu : RTE_ETHER_MTU;
  if (mtu > info.max_mtu || mtu < info.min_mtu) {
    return PortError(config,
                     absl::StrCat("MTU ", mtu,
                                  " is outside what the device "
                                  "allows [",
                                  info.min_mtu, ", ", info.max_mtu,
                                  "]; set ports.mtu within it"),
                     0);
  }
  conf.rxmode.mtu = mtu;
  uint32_t data_room = rte_pktmbuf_data_room_size(pool) - RTE_PKTMBUF_HEADROOM;
  port.max_frame_ = mtu + RTE_ETHER_HDR_LEN;
  // Two VLAN tags on top of the frame. Some PMDs also count their own
  // per-buffer header against the room (virtio: a VLAN tag and the 12-byte
  // virtio-net header) and refuse the RX queue unless it may scatter, so a
  // device that can scatter does so once a frame comes that close.
  constexpr uint32_t kVlanTags = 8;
  constexpr uint32_t kPmdHeaderSlack = 32;
  const bool can_scatter =
      (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER) != 0;
  if (port.max_frame_ + kVlanTags > data_room && !can_scatter) {
    return PortError(config,
                     absl::StrCat("MTU ", mtu,
                                  " needs frames larger than "
                                  "one mbuf (",
                                  data_room,
                                  " B) and the "
                                  "device cannot scatter; lower the MTU"),
                     0);
  }
  if (can_scatter &&
      port.max_frame_ + kVlanTags + kPmdHeaderSlack > data_room) {
    conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
  }
  if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) {
    conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    port.tx_multi_segs_ = true;
  }

  rc = rte_eth_dev_configure(port.port_id_, queues, queues, &conf);
  if (rc != 0) return PortError(config, "configure failed", rc);
  uint16_t rx_desc = config.rx_descriptors;
  uint16_t tx_desc = config.tx_descriptors;
  rc = rte_eth_dev_adjust_nb_rx_tx_desc(port.port_id_, &rx_desc, &tx_desc);
  if (rc != 0) return PortError(config, "descriptor counts rejected", rc);
  int socket = rte_eth_dev_socket_id(port.port_id_);
  if (socket < 0) socket = 0;
  for (uint16_t q = 0; q < queues; ++q) {
    rc = rte_eth_rx_queue_setup(port.port_id_, q, rx_desc, socket, nullptr,
                                pool);
    if (rc != 0) {
      return PortError(config, absl::StrCat("RX queue ", q, " setup failed"),
                       rc);
    }
    rc = rte_eth_tx_queue_setup(port.port_id_, q, tx_desc, socket, nullptr);
    if (rc != 0) {
      return PortError(config, absl::StrCat("TX queue ", q, " setup failed"),
                       rc);
    }
  }
  rc = rte_eth_dev_start(port.port_id_);
  if (rc != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "port '", config.name, "': cannot start ethdev ", port.port_id_, ": ",
        rte_strerror(-rc),
        "; the driver's log lines above say why: check the device, a vdev's "
        "arguments (a memif client needs its server's socket) and the "
        "port's queues and mtu"));
  }
  if (config.promiscuous) {
    // Some virtual devices have no such mode and pass everything anyway.
    rte_eth_promiscuous_enable(port.port_id_);
  }
  return port;
}

Port::Port(Port&& other) noexcept
    : name_(std::move(other.name_)),
      probed_device_(std::move(other.probed_device_)),
      port_id_(other.port_id_),
      queues_(other.queues_),
      max_frame_(other.max_frame_),
      tx_multi_segs_(other.tx_multi_segs_),
      open_(other.open_) {
  other.open_ = false;
}

Port::~Port() { Close(); }

void Port::Close() {
  if (!open_) return;
  open_ = false;
  rte_eth_dev_info info;
  rte_device* device = nullptr;
  if (rte_eth_dev_info_get(port_id_, &info) == 0) device = info.device;
  rte_eth_dev_stop(port_id_);
  rte_eth_dev_close(port_id_);
  // Detach what we probed so that a later Open of the same devargs (tests,
  // restarts within one process) can probe it again.
  if (!probed_device_.empty() && device != nullptr) rte_dev_remove(device);
}

uint32_t Port::link_speed_mbps() const {
  rte_eth_link link;
  if (rte_eth_link_get_nowait(port_id_, &link) != 0) return 0;
  if (link.link_status != RTE_ETH_LINK_UP ||
      link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN) {
    return 0;
  }
  return link.link_speed;
}

bool Port::link_up() const {
  rte_eth_link link;
  if (rte_eth_link_get_nowait(port_id_, &link) != 0) return false;
  return link.link_status == RTE_ETH_LINK_UP;
}

}  // namespace spinnic
