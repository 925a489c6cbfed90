// A real Dataplane on two paired in-process ring ethdevs, "wire0" and
// "host0", and the spinnic.v1.Config a daemon would run for them, for tests
// and benchmarks that drive the control plane against real ports. The test
// feeds a port through rx(side) and reads what the dataplane sent out of it
// from tx(side). Needs the EAL (InitEal) first.
#ifndef SPINNIC_TESTS_COMMON_RING_DATAPLANE_H_
#define SPINNIC_TESTS_COMMON_RING_DATAPLANE_H_

#include <arpa/inet.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_config.h"
#include "dataplane/roce/roce_config.h"
#include "spinnic/v1/config.pb.h"

namespace spinnic::testing_rings {

struct RingDataplaneOptions {
  unsigned ring_size = 256;
  uint16_t descriptors = 128;
  uint32_t mbufs = 4095;
  uint64_t region_bytes_limit = DataplaneConfig().region_bytes_limit;
  // DiAD on wire0 when diad.enabled (the config() reflects it: node, MAC,
  // UDP port, channels and timers, as a daemon's config would say them).
  diad::DiadConfig diad;
  // RoCE on wire0 when roce.enabled (addresses and MAC as given).
  roce::RoceConfig roce;
  // HPUs (on lcores 1..workers; tests that poll them by hand need the EAL
  // to have that many worker lcores, not cores).
  uint32_t workers = 1;
  // wire0's TX ring (the link a test drains at its own pace); 0: ring_size.
  unsigned wire_tx_ring_size = 0;
  // wire0's transport pacer (dataplane/tx_pacer.h), when enabled.
  TxPacerConfig wire_pacer;
};

class RingDataplane {
 public:
  // `tag` makes the ring and ethdev names unique in the process: ethdev
  // names outlive a closed port, so each instance needs its own.
  static absl::StatusOr<std::unique_ptr<RingDataplane>> Create(
      const std::string& tag, const RingDataplaneOptions& options = {}) {
    std::unique_ptr<RingDataplane> rings(new RingDataplane());
    DataplaneConfig dataplane_config;
    for (int side = 0; side < 2; ++side) {
      std::string base = absl::StrCat(tag, side ? "h" : "w");
      rings->rx_[side] =
          rte_ring_create((base + "rx").c_str(), options.ring_size, 0,
                          RING_F_SP_ENQ | RING_F_SC_DEQ);
      const unsigned tx_size = side == 0 && options.wire_tx_ring_size != 0
                                   ? options.wire_tx_ring_size
                                   : options.ring_size;
      rings->tx_[side] = rte_ring_create((base + "tx").c_str(), tx_size, 0,
                                         RING_F_SP_ENQ | RING_F_SC_DEQ);
      if (rings->rx_[side] == nullptr || rings->tx_[side] == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cannot create the rings of ", base));
      }
      int port_id = rte_eth_from_rings(base.c_str(), &rings->rx_[side], 1,
                                       &rings->tx_[side], 1, 0);
      char ethdev[RTE_ETH_NAME_MAX_LEN];
      if (port_id < 0 || rte_eth_dev_get_name_by_port(
                             static_cast<uint16_t>(port_id), ethdev) != 0) {
        return absl::InternalError(
            absl::StrCat("cannot create the ring ethdev ", base));
      }
      PortConfig port;
      port.name = side ? "host0" : "wire0";
      port.existing = ethdev;
      port.role = side ? PortRole::kHost : PortRole::kWire;
      port.rx_descriptors = port.tx_descriptors = options.descriptors;
      if (side == 0) port.transport_pacer = options.wire_pacer;
      dataplane_config.ports.push_back(port);
      // The config names the ports as the daemon's would; the ring ethdevs
      // stand in for the vdevs.
      v1::Port* configured = rings->config_.add_ports();
      configured->set_name(port.name);
      configured->set_vdev(absl::StrCat("net_ring_", base));
      configured->set_role(side ? v1::PORT_ROLE_HOST : v1::PORT_ROLE_WIRE);
      if (side == 0 && options.wire_pacer.enabled) {
        const TxPacerConfig& pacer = options.wire_pacer;
        v1::TransportPacer* p = configured->mutable_transport_pacer();
        p->set_passthrough_share_percent(pacer.passthrough_share_percent);
        p->set_queue_frames(pacer.queue_frames);
        p->set_max_rate_mbps(
            static_cast<uint32_t>(pacer.rate_bytes_per_s / 125'000));
      }
    }
    dataplane_config.port_pairs = {{0, 1}};
    dataplane_config.worker_cores.clear();
    for (uint32_t w = 0; w < options.workers; ++w) {
      dataplane_config.worker_cores.push_back(w + 1);
    }
    dataplane_config.mbufs = options.mbufs;
    dataplane_config.region_bytes_limit = options.region_bytes_limit;
    if (options.diad.enabled) {
      diad::DiadConfig& dc =
          dataplane_config.transports.get<diad::DiadConfig>();
      dc = options.diad;
      dc.port = 0;
      char node[INET6_ADDRSTRLEN];
      inet_ntop(AF_INET6, options.diad.node.data(), node, sizeof node);
      rings->config_.mutable_addresses()->set_diad_node(node);
      const auto& mac = options.diad.mac;
      rings->config_.mutable_addresses()->set_mac(
          absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1],
                          mac[2], mac[3], mac[4], mac[5]));
      v1::Diad* diad = rings->config_.mutable_diad();
      diad->set_port("wire0");
      diad->set_udp_port(options.diad.udp_port);
      diad->set_path_mtu(options.diad.path_mtu);
      diad->set_channels(options.diad.channels);
      diad->set_max_peers(options.diad.max_peers);
      diad->set_max_message_bytes(options.diad.max_message_bytes);
      const diad::ChannelConfig& ch = options.diad.channel;
      diad->set_window_packets(ch.window_packets);
      diad->set_window_bytes(ch.window_bytes);
      diad->set_max_transactions(ch.max_transactions);
      diad->set_ack_every(ch.ack_every);
      diad->set_ack_delay_us(static_cast<uint32_t>(ch.ack_delay_ns / 1000));
      diad->set_rto_us(static_cast<uint32_t>(ch.rto_ns / 1000));
      diad->set_rto_max_us(static_cast<uint32_t>(ch.rto_max_ns / 1000));
      diad->set_max_retries(ch.max_retries);
      diad->set_nack_interval_us(
          static_cast<uint32_t>(ch.nack_interval_ns / 1000));
    }
    if (options.roce.enabled) {
      roce::RoceConfig& rc =
          dataplane_config.transports.get<roce::RoceConfig>();
      rc = options.roce;
      rc.port = 0;
      rings->config_.mutable_roce()->set_port("wire0");
    }
    rings->config_.add_port_pairs()->set_a("wire0");
    rings->config_.mutable_port_pairs(0)->set_b("host0");
    // The daemon's layout (main lcore on core 0, the HPU on core 1), which
    // the control plane validates requests against; the HPU of a test that
    // launches it runs where the test's EAL put lcore 1.
    for (uint32_t w = 0; w < options.workers; ++w) {
      rings->config_.add_workers(w + 1);
    }
    absl::StatusOr<std::unique_ptr<Dataplane>> dataplane =
        Dataplane::Create(dataplane_config);
    if (!dataplane.ok()) return dataplane.status();
    rings->dataplane_ = *std::move(dataplane);
    return rings;
  }

  // Stops the dataplane, then frees the rings and the frames left in them.
  ~RingDataplane() {
    dataplane_.reset();
    for (int side = 0; side < 2; ++side) {
      for (rte_ring* ring : {rx_[side], tx_[side]}) {
        void* m;
        while (ring != nullptr && rte_ring_dequeue(ring, &m) == 0) {
          rte_pktmbuf_free(static_cast<rte_mbuf*>(m));
        }
        rte_ring_free(ring);
      }
    }
  }

  Dataplane& dataplane() { return *dataplane_; }
  const v1::Config& config() const { return config_; }
  // side 0: wire0, side 1: host0.
  rte_ring* rx(int side) { return rx_[side]; }
  rte_ring* tx(int side) { return tx_[side]; }

 private:
  RingDataplane() = default;

  rte_ring* rx_[2] = {nullptr, nullptr};
  rte_ring* tx_[2] = {nullptr, nullptr};
  v1::Config config_;
  std::unique_ptr<Dataplane> dataplane_;
};

}  // namespace spinnic::testing_rings

#endif  // SPINNIC_TESTS_COMMON_RING_DATAPLANE_H_
