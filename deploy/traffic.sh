#!/usr/bin/env bash
# traffic.sh [--prefix NAME] [--count N] [--bytes N] [--wait S] [--summary FILE] [STEP...]
#
# Runs traffic between host A (netns NAME-a, 10.99.0.1 / fd99::1) and host B
# (netns NAME-b, 10.99.0.2 / fd99::2) of deploy/netns-topology.sh, i.e. through
# whatever joins NAME-wire0 and NAME-host0 (spinnicd). Steps, in the order given
# (default: wait ping tcp):
#   wait   until A reaches B over IPv4 and IPv6 (a TCP connect to a closed port
#          answered by a RST; sends no ICMP), at most --wait seconds (30)
#   ping   ping -c N (--count, 20) IPv4 and IPv6, A->B and B->A
#   tcp    a TCP transfer of --bytes (4 MiB) random bytes A->B over IPv4 and
#          IPv6, checked by sha256 and length on both ends
#   trickle  one IPv4 and one IPv6 ping a second until killed (keeps counters moving)
# Each step prints what it did; --summary FILE also gets key=value lines.
# Exit status: 0 when every step passed.
set -uo pipefail

prefix=spn
count=20
bytes=$((4 * 1024 * 1024))
wait_s=30
summary=/dev/null
steps=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --count) count=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --wait) wait_s=$2; shift 2 ;;
    --summary) summary=$2; shift 2 ;;
    wait|ping|tcp|trickle) steps+=("$1"); shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "traffic: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[[ ${#steps[@]} -gt 0 ]] || steps=(wait ping tcp)

NS_A=$prefix-a
NS_B=$prefix-b
V4_A=10.99.0.1
V4_B=10.99.0.2
V6_A=fd99::1
V6_B=fd99::2
PY=$(command -v /usr/bin/python3 || command -v python3) || { echo "traffic: python3 missing (run deploy/install-deps.sh)" >&2; exit 1; }

for ns in "$NS_A" "$NS_B"; do
  ip netns list | awk '{print $1}' | grep -qx -- "$ns" ||
    { echo "traffic: netns $ns missing (deploy/netns-topology.sh up --prefix $prefix)" >&2; exit 1; }
done

workdir=$(mktemp -d /tmp/spinnic-traffic.XXXXXX)
bg_pids=()
cleanup() {
  local p
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$workdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "traffic: $*"; }
record() { echo "$1=$2" >>"$summary"; }

failed=0

# --- wait -------------------------------------------------------------------
read -r -d '' PY_PROBE <<'EOF'
import socket, sys, time
host, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
while time.monotonic() < deadline:
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect((host, 9))          # discard: nobody listens, B answers RST
        sys.exit(0)
    except ConnectionRefusedError:
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
    finally:
        s.close()
sys.exit(1)
EOF

step_wait() {
  local addr ok=1
  for addr in "$V4_B" "$V6_B"; do
    if ip netns exec "$NS_A" "$PY" -c "$PY_PROBE" "$addr" "$wait_s"; then
      say "path A -> $addr is up"
    else
      say "FAIL: no path A -> $addr after ${wait_s}s"
      ok=0
    fi
  done
  record path_up "$ok"
  [[ $ok -eq 1 ]]
}

# --- ping -------------------------------------------------------------------
ping_one() {  # ns family dst label
  local ns=$1 fam=$2 dst=$3 label=$4 out rx
  out=$(ip netns exec "$ns" ping "$fam" -n -q -c "$count" -i 0.05 -w $((count + 10)) "$dst" 2>&1)
  rx=$(sed -n 's/.* \([0-9][0-9]*\) \(packets \)\{0,1\}received.*/\1/p' <<<"$out" | head -1)
  rx=${rx:-0}
  record "ping_${label}" "$rx/$count"
  if [[ $rx -eq $count ]]; then
    say "ping $label: $rx/$count replies"
  else
    say "FAIL: ping $label: $rx/$count replies"
    sed 's/^/traffic:   /' <<<"$out"
    return 1
  fi
}

step_ping() {
  local rc=0
  ping_one "$NS_A" -4 "$V4_B" v4_a_to_b || rc=1
  ping_one "$NS_B" -4 "$V4_A" v4_b_to_a || rc=1
  ping_one "$NS_A" -6 "$V6_B" v6_a_to_b || rc=1
  ping_one "$NS_B" -6 "$V6_A" v6_b_to_a || rc=1
  return $rc
}

# --- tcp --------------------------------------------------------------------
read -r -d '' PY_SINK <<'EOF'
import hashlib, socket, sys
addr, port, out, timeout = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
ls = socket.socket(fam, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind((addr, port))
ls.listen(1)
open(out + ".ready", "w").close()
ls.settimeout(timeout)
c, _ = ls.accept()
c.settimeout(timeout)
h, n = hashlib.sha256(), 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    h.update(b)
    n += len(b)
c.close()
with open(out, "w") as f:
    f.write("%d %s\n" % (n, h.hexdigest()))
EOF

read -r -d '' PY_SEND <<'EOF'
import socket, sys, time
addr, port, path, timeout = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
deadline = time.monotonic() + timeout
while True:
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((addr, port))
        break
    except ConnectionRefusedError:
        s.close()
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
with open(path, "rb") as f:
    data = f.read()
s.sendall(data)
s.shutdown(socket.SHUT_WR)
s.recv(1)  # wait for the sink to close: everything was read
s.close()
EOF

tcp_one() {  # family-label dst port
  local label=$1 dst=$2 port=$3 want got sink_pid i
  local out=$workdir/sink-$label
  want="$bytes $(sha256sum "$workdir/payload" | cut -d' ' -f1)"
  ip netns exec "$NS_B" "$PY" -c "$PY_SINK" "$dst" "$port" "$out" 60 &
  sink_pid=$!
  bg_pids+=("$sink_pid")
  for ((i = 0; i < 100; i++)); do [[ -e $out.ready ]] && break; sleep 0.1; done
  if ! timeout 90 ip netns exec "$NS_A" "$PY" -c "$PY_SEND" "$dst" "$port" "$workdir/payload" 60; then
    say "FAIL: tcp $label: sender failed"
    kill "$sink_pid" 2>/dev/null
  fi
  wait "$sink_pid" 2>/dev/null
  got=$(cat "$out" 2>/dev/null)
  if [[ "$got" == "$want" ]]; then
    say "tcp $label: $bytes bytes A -> B, sha256 ${want#* } matches"
    record "tcp_${label}" "ok $bytes"
  else
    say "FAIL: tcp $label: sent '$want', received '${got:-nothing}'"
    record "tcp_${label}" "fail"
    return 1
  fi
}

step_tcp() {
  local rc=0
  head -c "$bytes" /dev/urandom >"$workdir/payload"
  tcp_one v4 "$V4_B" 5201 || rc=1
  tcp_one v6 "$V6_B" 5202 || rc=1
  return $rc
}

step_trickle() {
  # Runs until this script is killed.
  ip netns exec "$NS_A" ping -4 -n -q -i 1 "$V4_B" >/dev/null 2>&1 &
  bg_pids+=($!)
  ip netns exec "$NS_A" ping -6 -n -q -i 1 "$V6_B" >/dev/null 2>&1 &
  bg_pids+=($!)
  wait
}

for step in "${steps[@]}"; do
  "step_$step" || failed=1
  if [[ $step == wait && $failed -ne 0 ]]; then break; fi
done
exit $failed
