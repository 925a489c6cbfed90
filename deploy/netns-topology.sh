#!/usr/bin/env bash
# netns-topology.sh up|down|status [--prefix NAME] [--static-neigh]
#
# Builds the two-host test topology spinnicd sits in the middle of:
#
#   netns NAME-a (host A)                root namespace                 netns NAME-b (host B)
#   eth0 10.99.0.1/24  <--veth-->  NAME-wire0   [spinnicd]   NAME-host0  <--veth-->  eth0 10.99.0.2/24
#        fd99::1/64                (WIRE port)               (HOST port)                  fd99::2/64
#
# The root-side ends (NAME-wire0, NAME-host0; default NAME is "spn", matching
# the embedded default config) carry no addresses and have IPv6 disabled, so the
# root kernel never puts frames of its own (router solicitations, MLD, DAD) on
# the wire: whatever crosses was sent by host A or host B. Inside the
# namespaces TX checksum offload is switched off: af_packet hands frames to
# user space as they are, and a CHECKSUM_PARTIAL TCP segment would arrive at
# the other host with a wrong checksum (connections would hang).
#
# Without spinnicd (or a bridge) between NAME-wire0 and NAME-host0 the hosts
# cannot reach each other.
#
# --static-neigh also installs permanent ARP/NDP entries for the peer in both
# hosts, so no neighbour discovery crosses the appliance (tests that count ICMP
# use it).
#
# Idempotent: `up` on an existing topology re-applies the settings; `down`
# removes whatever exists and succeeds when nothing does.
set -euo pipefail

usage() {
  echo "usage: $0 up|down|status [--prefix NAME] [--static-neigh]" >&2
  exit 2
}

[[ $# -ge 1 ]] || usage
action=$1
shift
prefix=spn
static_neigh=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) [[ $# -ge 2 ]] || usage; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --static-neigh) static_neigh=1; shift ;;
    -h|--help) usage ;;
    *) echo "netns-topology: unknown argument '$1'" >&2; usage ;;
  esac
done

# Interface names are at most 15 characters: NAME-wire0 leaves 9 for NAME.
if [[ ! $prefix =~ ^[A-Za-z0-9_]{1,9}$ ]]; then
  echo "netns-topology: --prefix must be 1-9 characters [A-Za-z0-9_] (got '$prefix')" >&2
  exit 2
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "netns-topology: needs root (network namespaces, veth)" >&2
  exit 1
fi
for tool in ip sysctl; do
  command -v "$tool" >/dev/null || { echo "netns-topology: '$tool' not found (run deploy/install-deps.sh)" >&2; exit 1; }
done

NS_A=$prefix-a
NS_B=$prefix-b
WIRE=$prefix-wire0
HOST=$prefix-host0
V4_A=10.99.0.1
V4_B=10.99.0.2
V6_A=fd99::1
V6_B=fd99::2
# Fixed, locally administered MACs: captures and static neighbour entries stay
# the same from run to run.
MAC_A=02:99:00:00:00:01
MAC_B=02:99:00:00:00:02

ns_exists() { ip netns list | awk '{print $1}' | grep -qx -- "$1"; }
link_exists() { ip link show dev "$1" >/dev/null 2>&1; }

# Root-side end of a veth: no IPv6 (no link-local, no RS/MLD/DAD), no
# addresses, up.
setup_root_end() {
  local dev=$1
  sysctl -qw "net.ipv6.conf.$dev.disable_ipv6=1" >/dev/null
  ip addr flush dev "$dev"
  ip link set dev "$dev" up
}

# Host end inside namespace $1, with MAC $2 and addresses $3 (v4) $4 (v6).
setup_host_end() {
  local ns=$1 mac=$2 v4=$3 v6=$4
  ip -n "$ns" link set dev lo up
  ip -n "$ns" link set dev eth0 down
  ip -n "$ns" link set dev eth0 address "$mac"
  # No router solicitations and no DAD: the only frames a host sends are the
  # ones its applications cause (plus neighbour discovery and MLD joins).
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.router_solicitations=0 >/dev/null
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.accept_ra=0 >/dev/null
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.accept_dad=0 >/dev/null
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.dad_transmits=0 >/dev/null
  # MLD reports for the groups joined at link up go out at once (their
  # retransmissions too), not spread over the following second.
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.mldv1_unsolicited_report_interval=10 >/dev/null
  ip netns exec "$ns" sysctl -qw net.ipv6.conf.eth0.mldv2_unsolicited_report_interval=10 >/dev/null
  ip -n "$ns" addr flush dev eth0
  ip -n "$ns" addr add "$v4/24" dev eth0
  ip -n "$ns" addr add "$v6/64" dev eth0 nodad
  if command -v ethtool >/dev/null; then
    # TX checksum offload off (see the header); this also turns TSO off, so
    # the kernel segments before the veth and no frame exceeds the MTU.
    ip netns exec "$ns" ethtool -K eth0 tx off >/dev/null 2>&1 ||
      echo "netns-topology: warning: ethtool -K eth0 tx off failed in $ns (TCP through af_packet may hang)" >&2
  else
    echo "netns-topology: warning: ethtool missing; TCP through af_packet will hang (run deploy/install-deps.sh)" >&2
  fi
  ip -n "$ns" link set dev eth0 up
}

make_veth() {
  local root_end=$1 ns=$2
  if link_exists "$root_end" && ! ip -n "$ns" link show dev eth0 >/dev/null 2>&1; then
    # A half-built leftover (e.g. the namespace was deleted by hand).
    ip link del dev "$root_end"
  fi
  if ! link_exists "$root_end"; then
    ip link add "$root_end" type veth peer name eth0 netns "$ns"
  fi
}

up() {
  ns_exists "$NS_A" || ip netns add "$NS_A"
  ns_exists "$NS_B" || ip netns add "$NS_B"
  make_veth "$WIRE" "$NS_A"
  make_veth "$HOST" "$NS_B"
  setup_root_end "$WIRE"
  setup_root_end "$HOST"
  setup_host_end "$NS_A" "$MAC_A" "$V4_A" "$V6_A"
  setup_host_end "$NS_B" "$MAC_B" "$V4_B" "$V6_B"
  if [[ $static_neigh -eq 1 ]]; then
    ip -n "$NS_A" neigh replace "$V4_B" lladdr "$MAC_B" dev eth0 nud permanent
    ip -n "$NS_A" neigh replace "$V6_B" lladdr "$MAC_B" dev eth0 nud permanent
    ip -n "$NS_B" neigh replace "$V4_A" lladdr "$MAC_A" dev eth0 nud permanent
    ip -n "$NS_B" neigh replace "$V6_A" lladdr "$MAC_A" dev eth0 nud permanent
  fi
  echo "netns-topology: up: $NS_A ($V4_A, $V6_A) -- $WIRE | $HOST -- $NS_B ($V4_B, $V6_B)"
}

down() {
  # Deleting a namespace deletes its veth end, and with it the root-side end.
  local ns dev
  for ns in "$NS_A" "$NS_B"; do
    if ns_exists "$ns"; then ip netns del "$ns"; fi
  done
  for dev in "$WIRE" "$HOST"; do
    if link_exists "$dev"; then ip link del dev "$dev" 2>/dev/null || true; fi
  done
  echo "netns-topology: down: $prefix"
}

status() {
  local rc=0 ns dev
  for ns in "$NS_A" "$NS_B"; do
    if ns_exists "$ns"; then echo "netns $ns: present"; ip -n "$ns" -br addr show dev eth0 2>/dev/null || true
    else echo "netns $ns: absent"; rc=1; fi
  done
  for dev in "$WIRE" "$HOST"; do
    if link_exists "$dev"; then ip -br link show dev "$dev"; else echo "link $dev: absent"; rc=1; fi
  done
  return $rc
}

case $action in
  up) up ;;
  down) down ;;
  status) status ;;
  *) usage ;;
esac
