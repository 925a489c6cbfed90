#!/usr/bin/env bash
# Smoke test of spinnic-impair: 2 s between two net_null ports (net_null RX is
# an endless source) with --loss 0.05; the stats JSON has every counter, the
# loss ratio is near 0.05 and the counters add up; SIGTERM stops it with
# exit 0; bad flags exit 2 with one line on stderr and start nothing.
# Usage: impair_smoke.sh path/to/spinnic-impair
set -u
bin=${1:?usage: impair_smoke.sh path/to/spinnic-impair}
tmp=$(mktemp -d /tmp/impair-smoke.XXXXXX)
prefix="spn-impair-smoke-$$"
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -rf "$tmp" "/var/run/dpdk/$prefix" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$prefix"
}
trap cleanup EXIT

failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

eal=(-l 0 --no-huge -m 256 --no-pci --file-prefix "$prefix" --log-level 4)

# Checks a stats JSON: every counter, loss ratio in [lo, hi], conservation.
check_json() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, lo, hi = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
stats = json.load(open(path))
keys = ["in", "out", "lost", "duplicated", "reordered", "corrupted", "delayed",
        "held_max", "queue_full_drops", "no_buffer", "reorder_skipped",
        "flushed", "tx_dropped", "tail_drops", "ecn_marked", "ecn_not_ect",
        "ecn_already_ce", "queue_max", "queue_p50", "queue_p99",
        "queue_depths"]
ok = True
for direction in ("a_to_b", "b_to_a"):
    c = stats[direction]
    missing = [k for k in keys if k not in c]
    if missing:
        print(f"{direction}: missing counters {missing}"); ok = False; continue
    if c["in"] < 10000:
        print(f"{direction}: only {c['in']} packets in"); ok = False; continue
    ratio = c["lost"] / c["in"]
    print(f"{direction}: in {c['in']} lost {c['lost']} ratio {ratio:.5f}")
    if not lo <= ratio <= hi:
        print(f"{direction}: loss ratio {ratio} outside [{lo}, {hi}]"); ok = False
    if (c["out"] + c["queue_full_drops"] + c["tail_drops"]
            != c["in"] - c["lost"] + c["duplicated"]):
        print(f"{direction}: counters do not add up: {c}"); ok = False
for port in ("a", "b"):
    if "opackets" not in stats["ports"][port]:
        print(f"port {port}: no opackets"); ok = False
sys.exit(0 if ok else 1)
PY
}

# 1. --duration_s 2 with 5 % loss.
"$bin" --port_a net_null0 --port_b net_null1 --seed 7 --loss 0.05 \
  --duration_s 2 --stats_json "$tmp/stats.json" -- "${eal[@]}" \
  >"$tmp/out.txt" 2>"$tmp/err.txt" &
pid=$!
rc=""
for _ in $(seq 1 300); do  # 30 s at most
  if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; rc=$?; break; fi
  sleep 0.1
done
pid=""
if [[ "$rc" == "0" ]]; then pass "--duration_s 2 exits 0"; else
  fail "--duration_s 2 exit code '${rc:-timeout}'"; tail -20 "$tmp/out.txt" "$tmp/err.txt"; fi
if [[ -s "$tmp/stats.json" ]] && check_json "$tmp/stats.json" 0.04 0.06; then
  pass "stats JSON: counters present, loss ratio near 0.05, counters add up"
else
  fail "stats JSON"; cat "$tmp/stats.json" 2>/dev/null
fi
if grep -q "A->B: in" "$tmp/out.txt" && grep -q "B->A: in" "$tmp/out.txt"; then
  pass "final counters printed"
else
  fail "final counters not printed"; tail -20 "$tmp/out.txt"
fi

# 2. SIGTERM stops it (exit 0, stats written), with every impairment on.
rm -f "$tmp/stats.json"
"$bin" --port_a net_null0 --port_b net_null1 --loss 0.01 --duplicate 0.01 \
  --reorder 0.01 --corrupt 0.01 --delay_us 100 --jitter_us 50 \
  --stats_json "$tmp/stats.json" -- "${eal[@]}" \
  >"$tmp/out2.txt" 2>"$tmp/err2.txt" &
pid=$!
for _ in $(seq 1 100); do  # until it forwards (10 s at most)
  grep -q "forwarding between" "$tmp/out2.txt" 2>/dev/null && break
  sleep 0.1
done
sleep 1
kill -TERM "$pid" 2>/dev/null
rc=""
for _ in $(seq 1 100); do
  if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; rc=$?; break; fi
  sleep 0.1
done
pid=""
if [[ "$rc" == "0" ]] && grep -q "signal 15" "$tmp/out2.txt" &&
   check_json "$tmp/stats.json" 0.005 0.015 >/dev/null; then
  pass "SIGTERM: exit 0, stats written"
else
  fail "SIGTERM: exit code '${rc:-timeout}'"; tail -20 "$tmp/out2.txt" "$tmp/err2.txt"
  cat "$tmp/stats.json" 2>/dev/null
fi

# 2b. A bottleneck on A->B only (100 Mb/s, 64 frames, ECN from 8 to 32
# frames): it tail-drops, never sends faster than the rate (its own TSC
# clock; the exit flush may add one queue), the net_null frames (not IP)
# count as not ECT, and B->A is untouched.
rm -f "$tmp/stats3.json"
"$bin" --port_a net_null0 --port_b net_null1 --a_to_b_rate_bps 1e8 \
  --frame_overhead_bytes 0 --bottleneck_frames 64 --ecn_min_frames 8 \
  --ecn_max_frames 32 --ecn_max_probability 0.5 --duration_s 1 \
  --stats_json "$tmp/stats3.json" -- "${eal[@]}" \
  >"$tmp/out3.txt" 2>"$tmp/err3.txt" &
pid=$!
rc=""
for _ in $(seq 1 300); do  # 30 s at most
  if ! kill -0 "$pid" 2>/dev/null; then wait "$pid"; rc=$?; break; fi
  sleep 0.1
done
pid=""
if [[ "$rc" == "0" ]] && python3 - "$tmp/stats3.json" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
a, b = stats["a_to_b"], stats["b_to_a"]
frame_bits = 64 * 8  # net_null frames are 64 bytes; overhead 0
bound = 1e8 * stats["duration_s"] / frame_bits + 64 + 1
checks = {
    "tail drops": a["tail_drops"] > 0,
    "conservation": a["out"] + a["queue_full_drops"] + a["tail_drops"]
                    == a["in"] - a["lost"] + a["duplicated"],
    "rate bound": a["out"] <= bound,
    "queue bound": a["queue_max"] <= 64 and a["queue_p99"] <= 64,
    "not ECT counted": a["ecn_not_ect"] > 0 and a["ecn_marked"] == 0,
    "histogram": sum(a["queue_depths"]["counts"]) > 0,
    "B->A untouched": b["tail_drops"] == 0 and b["out"] == b["in"],
    "config": stats["config"]["a_to_b"]["rate_bps"] == 100000000
              and stats["config"]["b_to_a"]["rate_bps"] == 0,
}
print({k: v for k, v in checks.items()}, "out", a["out"], "bound", int(bound))
sys.exit(0 if all(checks.values()) else 1)
PY
then
  pass "bottleneck A->B: tail drops, rate and queue bounds, counters"
else
  fail "bottleneck A->B: exit code '${rc:-timeout}'"; tail -5 "$tmp/out3.txt" "$tmp/err3.txt"
  cat "$tmp/stats3.json" 2>/dev/null
fi

# 3. Bad flags: exit 2, one line naming the flag, nothing on stdout.
bad_flag() {
  local name=$1; shift
  "$bin" "$@" >"$tmp/bad_out.txt" 2>"$tmp/bad_err.txt"
  local code=$?
  local lines
  lines=$(wc -l <"$tmp/bad_err.txt")
  if [[ $code == 2 && $lines == 1 && ! -s "$tmp/bad_out.txt" ]] &&
     grep -q -- "$name" "$tmp/bad_err.txt"; then
    pass "bad flag ($*): exit 2: $(cat "$tmp/bad_err.txt")"
  else
    fail "bad flag ($*): exit $code, $lines lines"; cat "$tmp/bad_err.txt" "$tmp/bad_out.txt"
  fi
}
ports=(--port_a net_null0 --port_b net_null1)
bad_flag --loss "${ports[@]}" --loss=abc
bad_flag --loss "${ports[@]}" --loss 1.5
bad_flag --a_to_b_reorder "${ports[@]}" --a_to_b_reorder=-0.5
bad_flag --reorder_depth "${ports[@]}" --reorder_depth 0
bad_flag --bogus "${ports[@]}" --bogus=1
bad_flag --port_b --port_a net_null0
bad_flag --burst "${ports[@]}" --burst 0
bad_flag --duration_s "${ports[@]}" --duration_s
bad_flag --rate_bps "${ports[@]}" --rate_bps=-1
bad_flag --a_to_b_rate_bps "${ports[@]}" --a_to_b_rate_bps=abc
bad_flag --ecn_max_frames "${ports[@]}" --ecn_max_frames 10
bad_flag --ecn_max_frames "${ports[@]}" --rate_bps 1e9 --ecn_max_frames 2000
bad_flag --bottleneck_frames "${ports[@]}" --rate_bps 1e9 --bottleneck_frames 0

if ls /var/run/dpdk/"$prefix" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$prefix" >/dev/null 2>&1; then
  echo "note: the runtime directory of $prefix was left behind (removed now)"
fi
echo "impair_smoke: $failures failure(s)"
[[ $failures == 0 ]]
