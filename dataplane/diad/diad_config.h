// The DiAD transport's configuration as the dataplane sees it (plain structs;
// control/config_loader.cc fills them from spinnic.v1.Config's `diad`).
#ifndef SPINNIC_DATAPLANE_DIAD_DIAD_CONFIG_H_
#define SPINNIC_DATAPLANE_DIAD_DIAD_CONFIG_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/diad/channel.h"
#include "dataplane/diad/delay_window.h"
#include "dataplane/diad/wire.h"

namespace spinnic::diad {

// Binding kinds DiAD defines (dataplane/binding.h): an ECTX that takes the
// stream messages to a stream id (key). Writes into a region are the shared
// kBindRegionWrites.
inline constexpr uint16_t kBindStream = 0x10;

using NodeAddress = std::array<uint8_t, 16>;
using MacAddress = std::array<uint8_t, 6>;

struct PeerConfig {
  std::string name;
  NodeAddress node{};
  MacAddress mac{};
  // Loss recovery on this peer's channels (`diad.peers[].recovery`):
  // SELECTIVE takes effect once the peer shows it speaks it too; against a
  // GO_BACK_N peer the channel stays go-back-N (docs/diad.md).
  Recovery recovery = Recovery::kGoBackN;
};

// diad.congestion (docs/congestion.md, "DiAD"): off by default, and then
// nothing on the wire or in behaviour changes.
struct DiadCongestionConfig {
  bool enabled = false;
  // The window's parameters; max_window is the channel's window_packets.
  DelayWindowParams window;
};

// The ECN codepoints (RFC 3168) in the IPv6 traffic class's low two bits.
inline constexpr uint8_t kEcnNotEct = 0;
inline constexpr uint8_t kEcnEct0 = 2;
inline constexpr uint8_t kEcnCe = 3;

struct DiadConfig {
  // DiAD is on when a node address is configured.
  bool enabled = false;
  NodeAddress node{};
  MacAddress mac{};
  uint16_t udp_port = kDefaultUdpPort;
  // Our index of the port that faces the DiAD network (frames to peers
  // leave through it; DiAD frames are accepted on any port).
  uint16_t port = 0;
  // IPv6 MTU of the path: a packet carries path_mtu - 96 payload bytes.
  uint16_t path_mtu = 1500;
  // Channels per peer; channel c is served by HPU c % workers.
  uint16_t channels = 4;
  uint32_t max_peers = 64;
  // Largest read, write or stream message, in bytes.
  uint32_t max_message_bytes = 16u << 20;
  // Operations (from gRPC or handlers) queued or in flight at once.
  uint32_t max_pending_ops = 65536;
  // READ response packets with at least this many payload bytes go out
  // zero-copy (region_tx.h: the payload mbuf points into the region) when
  // the DiAD port sends chained mbufs; smaller ones, or every one with 0,
  // are copied into the packet.
  uint32_t zero_copy_min_bytes = 1024;
  ChannelConfig channel;
  DiadCongestionConfig congestion;
  std::vector<PeerConfig> peers;
  // The engine's clock for everything it times (acknowledgements, the
  // retransmission timer, RTT samples, the congestion window, pacing,
  // transaction deadlines), in nanoseconds; nullptr: clock::NowNanos. Not
  // from the config file: a bench that steps a simulated network sets it
  // (bench/cost/incast.h), as roce's requester_now_ns.
  uint64_t (*now_ns)() = nullptr;

  uint32_t max_payload() const {
    return path_mtu -
           static_cast<uint32_t>(kIpv6Bytes + kUdpBytes + kHeaderBytes);
  }
};

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_DIAD_CONFIG_H_
