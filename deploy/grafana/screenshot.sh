#!/usr/bin/env bash
# screenshot.sh [--minutes N] [--builddir DIR] [--out PNG]
#
# Makes docs/img/dashboard.png, as root, after the quick start built ./build:
#   1. the quick-start topology (deploy/netns-topology.sh, prefix spg so that
#      it does not meet a running quick start) and spinnicd on the quick
#      start's config (interfaces renamed) with --metrics_listen on loopback;
#   2. Prometheus (Debian's `prometheus`, run in the foreground of this
#      script, loopback only, its TSDB in a temp dir) scraping it every 5 s;
#   3. traffic for N minutes (default 4): a ping a second both ways, and TCP
#      transfers of 4..40 MiB every 10 s (deploy/traffic.sh);
#   4. deploy/grafana/render_dashboard.py draws the dashboard's panels from
#      Prometheus's answers to their queries (not Grafana: docs/metrics.md).
# Always stops Prometheus, spinnicd and the traffic, and removes the
# namespaces and the temp dir.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
minutes=4
builddir=${SPINNIC_BUILDDIR:-$REPO/build}
out=$REPO/docs/img/dashboard.png
PREFIX=spg
METRICS_PORT=${METRICS_PORT:-19470}
PROM_PORT=${PROM_PORT:-19090}
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --builddir) builddir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "screenshot: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $minutes =~ ^[0-9]+$ && $minutes -ge 1 ]] || { echo "screenshot: --minutes: a whole number >= 1" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "screenshot: needs root (network namespaces, af_packet)" >&2; exit 1; }
command -v prometheus >/dev/null ||
  { echo "screenshot: needs Debian's prometheus package: apt-get install prometheus" >&2; exit 1; }
# Debian's python3, which has python3-matplotlib (not a pyenv or venv one).
PY=/usr/bin/python3
"$PY" -c 'import matplotlib' 2>/dev/null ||
  { echo "screenshot: needs python3-matplotlib (bash deploy/install-deps.sh)" >&2; exit 1; }
SPINNICD=$builddir/control/spinnicd
[[ -x $SPINNICD ]] || { echo "screenshot: no $SPINNICD: ninja -C $builddir control/spinnicd" >&2; exit 1; }
for port in "$METRICS_PORT" "$PROM_PORT"; do
  if ss -Hltn "sport = :$port" | grep -q .; then
    echo "screenshot: port $port is in use: set METRICS_PORT / PROM_PORT" >&2
    exit 1
  fi
done

work=$(mktemp -d /tmp/spinnic-screenshot.XXXXXX)
pids=()
cleanup() {
  local rc=$? p
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  bash "$REPO/deploy/netns-topology.sh" down --prefix "$PREFIX" >/dev/null 2>&1 || true
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT INT TERM

bash "$REPO/deploy/netns-topology.sh" up --prefix "$PREFIX" >/dev/null
sed -e "s/\"spn-/\"$PREFIX-/g; s/iface=spn-/iface=$PREFIX-/g" \
    -e 's/"--file-prefix", "spinnic"/"--file-prefix", "spinnic-screenshot"/' \
    "$REPO/deploy/configs/quickstart.textproto" >"$work/spinnic.textproto"
"$SPINNICD" --config "$work/spinnic.textproto" --control_socket "$work/ctl.sock" \
  --metrics_listen "127.0.0.1:$METRICS_PORT" --stats_interval_ms 60000 \
  >"$work/spinnicd.log" 2>&1 </dev/null &
pids+=($!)

cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 5s
  evaluation_interval: 5s
scrape_configs:
  - job_name: spinnic
    static_configs:
      - targets: ["127.0.0.1:$METRICS_PORT"]
EOF
prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/tsdb" \
  --web.listen-address "127.0.0.1:$PROM_PORT" --log.level warn \
  >"$work/prometheus.log" 2>&1 </dev/null &
pids+=($!)

bash "$REPO/deploy/traffic.sh" --prefix "$PREFIX" --wait 30 wait >/dev/null ||
  { tail -20 "$work/spinnicd.log" >&2; echo "screenshot: the hosts never reached each other" >&2; exit 1; }
bash "$REPO/deploy/traffic.sh" --prefix "$PREFIX" trickle >/dev/null 2>&1 &
pids+=($!)
echo "screenshot: traffic through spinnicd for $minutes min; Prometheus on 127.0.0.1:$PROM_PORT"
start=$(date +%s)
end=$((start + minutes * 60))
round=0
while [[ $(date +%s) -lt $end ]]; do
  mib=$((4 + (round * 7) % 37))
  bash "$REPO/deploy/traffic.sh" --prefix "$PREFIX" --bytes $((mib * 1024 * 1024)) tcp \
    >/dev/null || echo "screenshot: a $mib MiB transfer failed (drawn anyway)"
  round=$((round + 1))
  sleep 10
done
sleep 6  # one more scrape after the last transfer
"$PY" "$REPO/deploy/grafana/render_dashboard.py" --prometheus "http://127.0.0.1:$PROM_PORT" \
  --minutes "$minutes" --end "$(date +%s)" --out "$out"
