#include "control/default_config.h"

namespace spinnic {
namespace {

// Keep identical to deploy/configs/quickstart.textproto (the unit test
// DefaultConfig.MatchesQuickstartFile compares them). The delimiter is not
// "pb" on purpose: clang-format would reformat a pb raw string.
constexpr absl::string_view kDefaultConfig =
    R"config(# proto-file: proto/spinnic/v1/config.proto
# proto-message: spinnic.v1.Config
#
# The quick-start topology: spinnicd as a bump in the wire between two veth
# interfaces, spn-wire0 (the network side) and spn-host0 (the host side),
# counting the ICMP and ICMPv6 packets that pass. This is also the config
# spinnicd runs when started without --config (control/default_config.cc
# embeds this text; a unit test keeps the two equal). Every field is in
# docs/config.md.

# Extra EAL arguments, after the ones spinnicd derives (--lcores,
# --main-lcore). No hugepages (512 MiB of ordinary memory), no PCI scan, and
# a private runtime directory so that it does not clash with other DPDK
# processes.
eal_args: ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", "spinnic"]

# Port 0 faces the network: an AF_PACKET socket on the veth spn-wire0.
ports {
  name: "wire0"
  vdev: "net_af_packet0,iface=spn-wire0"
  role: PORT_ROLE_WIRE
  # queues, mtu, rx_descriptors, tx_descriptors and promiscuous keep their
  # defaults: one queue per worker, the device MTU, 1024 descriptors,
  # promiscuous on.
}

# Port 1 faces the host: an AF_PACKET socket on the veth spn-host0.
ports {
  name: "host0"
  vdev: "net_af_packet1,iface=spn-host0"
  role: PORT_ROLE_HOST
}

# What arrives on one side and is not for the appliance leaves on the other.
port_pairs {
  a: "wire0"
  b: "host0"
}

# The main lcore (control plane, never packets) on core 0; one HPU worker on
# core 1.
main_lcore: 0
workers: [1]

# Count IPv4 ICMP packets (IP protocol 1) in both directions; the count
# handler forwards every packet unchanged.
handlers {
  name: "count-icmp"
  kind: "count"
  # No params: count's defaults (one total, no buckets).
  match {
    ip_proto: 1
  }
}

# The same for ICMPv6 (next header 58), which includes IPv6 neighbour
# discovery.
handlers {
  name: "count-icmpv6"
  kind: "count"
  match {
    ip_proto: 58
  }
}

runtime {
  # Run until SIGINT/SIGTERM.
  duration_s: 0
  # Print counters every second.
  stats_interval_ms: 1000
}
)config";

}  // namespace

absl::string_view DefaultConfigText() { return kDefaultConfig; }

}  // namespace spinnic
