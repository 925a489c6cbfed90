# Sourced by the net_null passthrough scripts (passthrough_vs_testpmd.sh,
# hpu_scaling.sh): one spinnicd run forwarding between two net_null ports.
#
# null_passthrough_mpps SPINNICD WORK_DIR FILE_PREFIX SIZE SECONDS WORKERS MBUFS [PORT_FIELDS]
#   Runs spinnicd for SECONDS on two paired net_null ports (frames of SIZE
#   bytes, copy=1: the PMD writes every frame's bytes, as DMA would), with
#   the worker cores WORKERS ("1" or "1, 0"; a worker on core 0 shares the
#   main lcore's core) and prints the Mpps it transmitted, both directions
#   summed. PORT_FIELDS (e.g. "forward_unchecked: true") go into both ports.
#   Fails, with spinnicd's log on stderr, if spinnicd does.
null_passthrough_mpps() {
  local spinnicd=$1 work=$2 prefix=$3 size=$4 seconds=$5 workers=$6 mbufs=$7
  local port_fields=${8:-}
  cat >"$work/null.textproto" <<CONF
eal_args: ["--no-huge", "-m", "512", "--no-pci", "--file-prefix", "$prefix"]
ports { name: "a" vdev: "net_null0,size=$size,copy=1" role: PORT_ROLE_WIRE $port_fields }
ports { name: "b" vdev: "net_null1,size=$size,copy=1" role: PORT_ROLE_HOST $port_fields }
port_pairs { a: "a" b: "b" }
workers: [$workers]
main_lcore: 0
main_lcore_shared: true
runtime { duration_s: $seconds stats_interval_ms: 0 mbufs: $mbufs }
CONF
  "$spinnicd" --config "$work/null.textproto" --stats_json "$work/s.json" >"$work/s.log" 2>&1 ||
    { cat "$work/s.log" >&2; return 1; }
  python3 - "$work/s.json" "$work/s.log" <<'PY'
import json, re, sys
stats = json.load(open(sys.argv[1]))
secs = float(re.search(r"final counters after ([0-9.]+) s", open(sys.argv[2]).read()).group(1))
print("%.3f" % (sum(int(p["tx_packets"]) for p in stats["ports"]) / secs / 1e6))  # uint64: a JSON string
PY
}
