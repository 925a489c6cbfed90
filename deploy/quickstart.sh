#!/usr/bin/env bash
# quickstart.sh [--duration S] [--no-deps] [--builddir DIR]
#
# spinnic's first command, from a fresh clone on Debian 12, as root:
#   1. installs the Debian packages it needs (deploy/install-deps.sh),
#   2. configures and builds spinnicd into ./build (meson + ninja),
#   3. brings up two hosts in network namespaces joined by veth pairs whose
#      root-side ends, spn-wire0 and spn-host0, only spinnicd connects
#      (deploy/netns-topology.sh),
#   4. runs spinnicd with its built-in default config (the quick-start
#      topology, deploy/configs/quickstart.textproto: af_packet on both veths,
#      bump in the wire, `count` handlers for ICMP and ICMPv6, no hugepages)
#      for S seconds (default 30; env QUICKSTART_SECONDS), printing its
#      counters every 5 seconds (env QUICKSTART_STATS_SECONDS); once the hosts reach each other through it,
#      installs a third handler at runtime with spinctl (`count-tcp`, over
#      the gRPC control socket), then the hosts ping each other over IPv4
#      and IPv6 and move a few MB over TCP through it, and spinctl shows the
#      handlers' counters before and after,
#   5. stops by itself or on Ctrl-C, always removes the namespaces, and prints
#      a summary: pings, TCP bytes (sha256-checked), the count handlers'
#      counters.
# Exit status 0 when every ping was answered, every TCP byte arrived intact
# and the handler installed at runtime counted the TCP packets.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
duration=${QUICKSTART_SECONDS:-${SPINNIC_DURATION:-30}}
# The counters table is long: every few seconds, not every second (the
# built-in config's own interval).
stats_seconds=${QUICKSTART_STATS_SECONDS:-5}
deps=1
builddir=${SPINNIC_BUILDDIR:-$REPO/build}
PREFIX=spn   # the interface names the built-in default config uses

while [[ $# -gt 0 ]]; do
  case $1 in
    --duration) duration=$2; shift 2 ;;
    --duration=*) duration=${1#*=}; shift ;;
    --no-deps) deps=0; shift ;;
    --builddir) builddir=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "quickstart: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $duration =~ ^[0-9]+$ && $duration -ge 10 ]] ||
  { echo "quickstart: --duration must be a whole number of seconds, at least 10" >&2; exit 2; }
[[ $stats_seconds =~ ^[0-9]+$ && $stats_seconds -ge 1 ]] ||
  { echo "quickstart: QUICKSTART_STATS_SECONDS must be a whole number of seconds, at least 1" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    echo "quickstart: network namespaces and af_packet need root; re-running with sudo"
    exec sudo QUICKSTART_SECONDS="$duration" QUICKSTART_STATS_SECONDS="$stats_seconds" \
      SPINNIC_BUILDDIR="$builddir" bash "$0" "$@"
  fi
  echo "quickstart: run as root (network namespaces, af_packet); sudo is not available" >&2
  exit 1
fi

step() { printf '\n== %s\n' "$*"; }
cd "$REPO"

# --- 1. packages ----------------------------------------------------------------
if [[ $deps -eq 1 ]]; then
  step "Debian packages (deploy/install-deps.sh)"
  bash "$REPO/deploy/install-deps.sh"
fi

# --- 2. build ---------------------------------------------------------------------
step "building spinnicd and spinctl in $builddir"
if [[ ! -f $builddir/build.ninja ]]; then
  meson setup "$builddir" "$REPO"
fi
ninja -C "$builddir" control/spinnicd control/spinctl/spinctl
SPINNICD=$builddir/control/spinnicd
SPINCTL=$builddir/control/spinctl/spinctl
"$SPINNICD" --check_config

# --- 3.-5. topology, spinnicd, traffic ------------------------------------------
work=$(mktemp -d /tmp/spinnic-quickstart.XXXXXX)
spn_pid=
traffic_pid=
trickle_pid=
interrupted=0

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in $traffic_pid $trickle_pid; do kill "$p" 2>/dev/null || true; done
  if [[ -n $spn_pid ]] && kill -0 "$spn_pid" 2>/dev/null; then
    kill -INT "$spn_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$spn_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$spn_pid" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  bash "$REPO/deploy/netns-topology.sh" down --prefix "$PREFIX" >/dev/null 2>&1 || true
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
# Ctrl-C: stop the traffic and spinnicd, then still print the summary.
on_int() {
  interrupted=1
  echo
  echo "quickstart: interrupted: stopping spinnicd"
  for p in $traffic_pid $trickle_pid; do kill "$p" 2>/dev/null || true; done
  [[ -n $spn_pid ]] && kill -INT "$spn_pid" 2>/dev/null || true
}
trap on_int INT TERM

step "network namespaces $PREFIX-a (10.99.0.1, fd99::1) and $PREFIX-b (10.99.0.2, fd99::2)"
bash "$REPO/deploy/netns-topology.sh" down --prefix "$PREFIX" >/dev/null 2>&1 || true
bash "$REPO/deploy/netns-topology.sh" up --prefix "$PREFIX"

step "spinnicd (built-in default config) for ${duration} s; counters every ${stats_seconds} s"
# spinnicd's output, indented so that the traffic lines stand out. The
# indenter ignores Ctrl-C: spinnicd prints its final counters after it.
# Its control socket is private to this run (owner-only, in $work).
sock=$work/spinnicd.sock
"$SPINNICD" --duration_s "$duration" --stats_json "$work/stats.json" \
  --stats_interval_ms "$((stats_seconds * 1000))" --control_socket "$sock" \
  > >(trap '' INT TERM; exec sed -u 's/^/    | /') 2>&1 </dev/null &
spn_pid=$!

# Traffic, in the background so that Ctrl-C can stop it: wait for the path...
bash "$REPO/deploy/traffic.sh" --prefix "$PREFIX" --wait 30 \
  --summary "$work/summary" wait &
traffic_pid=$!
wait "$traffic_pid" 2>/dev/null || true  # its results are in the summary file
traffic_pid=
# ... keep a ping a second going until spinnicd stops, and install a handler
# while it flows, over the control API ...
if [[ $interrupted -eq 0 ]] && kill -0 "$spn_pid" 2>/dev/null; then
  bash "$REPO/deploy/traffic.sh" --prefix "$PREFIX" trickle >/dev/null 2>&1 &
  trickle_pid=$!
  step "spinctl: install a handler at runtime (count-tcp), while traffic flows"
  echo "\$ spinctl install --name count-tcp --kind count --match 'ip_proto: 6'"
  "$SPINCTL" --socket "$sock" install --name count-tcp --kind count \
    --match 'ip_proto: 6' || echo "quickstart: spinctl install failed"
  echo "\$ spinctl handlers"
  "$SPINCTL" --socket "$sock" handlers || true
fi
# ... then ping both ways and move 8 MiB over TCP (IPv4 and IPv6).
if [[ $interrupted -eq 0 ]]; then
  bash "$REPO/deploy/traffic.sh" --prefix "$PREFIX" --count 5 \
    --bytes $((8 * 1024 * 1024)) --summary "$work/summary" ping tcp &
  traffic_pid=$!
  wait "$traffic_pid" 2>/dev/null || true
  traffic_pid=
fi
if [[ $interrupted -eq 0 ]] && kill -0 "$spn_pid" 2>/dev/null; then
  step "spinctl: the handlers' counters have moved"
  echo "\$ spinctl handlers"
  "$SPINCTL" --socket "$sock" handlers || true
fi
if [[ $interrupted -eq 0 ]] && kill -0 "$spn_pid" 2>/dev/null; then
  echo "quickstart: traffic done; spinnicd keeps running until ${duration} s (Ctrl-C stops it now)"
fi
spn_rc=0
while kill -0 "$spn_pid" 2>/dev/null; do
  wait "$spn_pid" 2>/dev/null && spn_rc=0 || spn_rc=$?
done
spn_pid=
if [[ -n $trickle_pid ]]; then
  kill "$trickle_pid" 2>/dev/null || true
  wait "$trickle_pid" 2>/dev/null || true
  trickle_pid=
fi
sleep 0.2  # let the last indented lines of spinnicd's output through

# --- summary ------------------------------------------------------------------
step "summary"
PY=$(command -v /usr/bin/python3 || command -v python3)
ok=1
"$PY" - "$work/summary" "$work/stats.json" "$spn_rc" "$interrupted" <<'EOF' || ok=0
import json, os, sys
summary_path, stats_path, spn_rc, interrupted = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
kv = {}
if os.path.exists(summary_path):
    for line in open(summary_path):
        k, _, v = line.strip().partition("=")
        kv[k] = v
ok = True
def row(label, value, good):
    global ok
    ok = ok and good
    print("  %-34s %s%s" % (label, value, "" if good else "   <-- FAILED"))
row("path between the hosts", "up" if kv.get("path_up") == "1" else "never came up", kv.get("path_up") == "1")
for k, label in (("ping_v4_a_to_b", "ping IPv4 A -> B"), ("ping_v4_b_to_a", "ping IPv4 B -> A"),
                 ("ping_v6_a_to_b", "ping IPv6 A -> B"), ("ping_v6_b_to_a", "ping IPv6 B -> A")):
    v = kv.get(k, "not run")
    good = "/" in v and v.split("/")[0] == v.split("/")[1]
    row(label, v + " replies" if "/" in v else v, good)
for k, label in (("tcp_v4", "TCP IPv4 A -> B (sha256)"), ("tcp_v6", "TCP IPv6 A -> B (sha256)")):
    v = kv.get(k, "not run")
    good = v.startswith("ok ")
    row(label, ("%s bytes intact" % v.split()[1]) if good else v, good)
row("spinnicd exit status", str(spn_rc), spn_rc == 0)
try:
    s = json.load(open(stats_path))
except (OSError, ValueError):
    row("spinnicd final counters", "none written", False)
    sys.exit(0 if ok else 1)
# v1::Stats as protobuf JSON (docs/counters.md): 64-bit counters are strings.
for e in s.get("handlers", []):
    print("  %-34s %d packets, %d bytes" % ("handler %s (%s)" % (e["name"], e["kind"]), int(e["packets"]), int(e["bytes"])))
tcp = [e for e in s.get("handlers", []) if e["name"] == "count-tcp"]
if not interrupted:
    row("count-tcp, installed by spinctl", "%d TCP packets counted" % int(tcp[0]["packets"]) if tcp else "not installed",
        bool(tcp) and int(tcp[0]["packets"]) > 0)
for p in s.get("ports", []):
    drops = sum(int(v) for v in p["drops"].values())
    print("  %-34s rx %d, tx %d packets, %d dropped" % ("port " + p["name"], int(p["rx_packets"]), int(p["tx_packets"]), drops))
if interrupted:
    print("  (stopped early by Ctrl-C)")
sys.exit(0 if ok else 1)
EOF
if [[ $ok -eq 1 ]]; then
  echo "quickstart: OK: spinnicd carried ping and TCP between the two hosts"
  echo "next: bash deploy/run-tests.sh   (build and run every test suite)"
  exit 0
fi
echo "quickstart: FAILED (see above)"
exit 1
