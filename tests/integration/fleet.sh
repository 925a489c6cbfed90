#!/usr/bin/env bash
# fleet: spinctl --targets against three real spinnicd (docs/spinctl.md,
# "Fleet rollout"). Each runs on two unpaired net_ring ports (no traffic, no
# root, no hugepages) with its own DPDK file prefix and control socket.
#
#   1. install on all three (canary 1, then the rest): every row ok, each
#      appliance lists the handler as given.
#   2. install of a name the third already has: it fails there with
#      ALREADY_EXISTS, the first two are rolled back; their handler lists
#      (specs included) equal those from before, the third's is untouched.
#   3. remove of a handler the third lacks: the first two reinstall it with
#      the spec ListHandlers gave before (params, state size, initial state,
#      match, priority, bound region).
#   4. replace with a fourth target that cannot be reached: the three
#      changed get their previous spec back; the fourth's row says why.
#   5. usage errors: --targets after the command, with --socket, with a
#      command that has no fleet mode, a bad targets file.
#
# usage: fleet.sh SPINNICD SPINCTL
# shellcheck disable=SC2034  # used by lib.sh
TEST_NAME=fleet
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
it_init "$@"
[[ $# -ge 2 ]] || die "usage: $0 SPINNICD SPINCTL"
it_spinctl_init "$2"

NAMES=(a b c)
declare -A PID
fleet_cleanup() {
  local rc=$? x
  for x in "${NAMES[@]}"; do
    rm -rf "/var/run/dpdk/$FILE_PREFIX-$x" "${XDG_RUNTIME_DIR:-/nonexistent}/dpdk/$FILE_PREFIX-$x" \
      "/tmp/dpdk/$FILE_PREFIX-$x" 2>/dev/null
  done
  (exit "$rc")
  it_cleanup
}
trap fleet_cleanup EXIT

TARGETS=$TMP/targets.textproto
: >"$TARGETS"
for x in "${NAMES[@]}"; do
  cat >"$TMP/config-$x.textproto" <<EOC
# spinnic integration test $TEST_NAME, appliance $x (generated)
eal_args: ["--no-huge", "-m", "256", "--no-pci", "--file-prefix", "$FILE_PREFIX-$x"]
ports { name: "p0" vdev: "net_ring0" role: PORT_ROLE_WIRE }
ports { name: "p1" vdev: "net_ring1" role: PORT_ROLE_HOST }
workers: [1]
main_lcore: 0
EOC
  "$SPINNICD" --config "$TMP/config-$x.textproto" --control_socket "$TMP/$x.sock" \
    --duration_s 120 >"$TMP/spinnicd-$x.out" 2>"$TMP/spinnicd-$x.err" </dev/null &
  PID[$x]=$!
  IT_BG+=("${PID[$x]}")
  echo "targets { name: \"node-$x\" address: \"unix:$TMP/$x.sock\" }" >>"$TARGETS"
done
log "three spinnicd started (pids ${PID[*]})"
for x in "${NAMES[@]}"; do
  ok=0
  for ((i = 0; i < 300; i++)); do
    kill -0 "${PID[$x]}" 2>/dev/null || die "spinnicd $x exited at start: $(head -c 2000 "$TMP/spinnicd-$x.err")"
    "$SPINCTL" --socket "$TMP/$x.sock" --timeout_ms 2000 health >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.1
  done
  [[ $ok -eq 1 ]] || die "spinnicd $x did not answer health within 30 s"
done
log "all three answer health checks"

# on X ARGS...: spinctl on appliance X; fl ARGS...: spinctl --targets.
on() {
  local x=$1
  shift
  "$SPINCTL" --socket "$TMP/$x.sock" "$@" >"$TMP/cmd.out" 2>"$TMP/cmd.err" </dev/null
  RC=$?
}
fl() {
  "$SPINCTL" --targets "$TARGETS" "$@" >"$TMP/cmd.out" 2>"$TMP/cmd.err" </dev/null
  RC=$?
}
# specs X FILE: appliance X's handler list (install records and bound
# regions, not counters) as canonical JSON into FILE.
specs() {
  on "$1" --json handlers
  "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps([sorted(d["handlers"], key=lambda h: h["name"]), d.get("bound_regions", {})], sort_keys=True))' \
    "$TMP/cmd.out" >"$2"
}
same() { cmp -s "$1" "$2" || { log "differs: $(cat "$1") vs $(cat "$2")"; return 1; }; }
row() { grep -Eq -- "^node-$1 +$2 +$3" "$TMP/cmd.out" || { log "no row '$1 $2 $3' in: $(tr '\n' '|' <"$TMP/cmd.out")"; return 1; }; }

# --- 1. install everywhere ---------------------------------------------------
for x in "${NAMES[@]}"; do on "$x" region-register --length 4096; done
on a regions --json
REGION=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["regions"][0]["id"])' "$TMP/cmd.out") ||
  die "no region on a: $(cat "$TMP/cmd.out" "$TMP/cmd.err")"
fl install --canary 1 --name fc --kind count --param by=ip_proto --param buckets=4 --state_size 64 \
  --initial_state 0102 --match 'ip_proto: 1' --priority 5 --bind "$REGION"
check "install on three: exit 0" rc_is 0
check "install: canary node-a in wave 1, the others in wave 2, all ok" eval \
  'row a 1 ok && row b 2 ok && row c 2 ok && out_has "^install done: 3 ok$"'
for x in "${NAMES[@]}"; do
  on "$x" --json handlers
  check "install: node-$x lists fc with its params, state size and region" \
    py '[(h["params"], h["state_size"], h["priority"], d["bound_regions"]["fc"]["ids"]) for h in d["handlers"] if h["name"] == "fc"] == [({"by": "ip_proto", "buckets": "4"}, 64, 5, ["'"$REGION"'"])]'
done

# --- 2. install that fails on the third --------------------------------------
on c install --name f2 --kind count --match 'ip_proto: 17'
check "node-c has its own f2" rc_is 0
for x in "${NAMES[@]}"; do specs "$x" "$TMP/before2-$x.json"; done
fl install --canary 1 --name f2 --kind count --match 'ip_proto: 6'
check "install of a name node-c has: exit 1" rc_is 1
check "install: node-c failed with ALREADY_EXISTS, node-a and node-b rolled back" eval \
  'row a 1 rolled-back && row b 2 rolled-back && row c 2 "failed +ALREADY_EXISTS: .*f2" && out_has "^install FAILED, stopped: 1 failed, 2 rolled-back$"'
for x in "${NAMES[@]}"; do
  specs "$x" "$TMP/after2-$x.json"
  check "install rolled back: node-$x's handlers are as before" same "$TMP/before2-$x.json" "$TMP/after2-$x.json"
done
fl --json install --canary 1 --name f2 --kind count --match 'ip_proto: 6'
check "install --json: a FleetReport with ok false and the three results" \
  py 'd["operation"] == "install" and not d["ok"] and [(r["target"], r["wave"], r["result"]) for r in d["results"]] == [("node-a", 1, "rolled-back"), ("node-b", 2, "rolled-back"), ("node-c", 2, "failed")]'

# --- 3. remove that fails on the third: reinstall the exact spec -------------
on c remove fc
check "node-c's fc removed by hand" rc_is 0
for x in "${NAMES[@]}"; do specs "$x" "$TMP/before3-$x.json"; done
fl remove fc --wave_size 1
check "remove of a handler node-c lacks: exit 1" rc_is 1
check "remove: waves of one; node-c NOT_FOUND, node-a and node-b reinstalled" eval \
  'row a 1 "rolled-back +removed, then reinstalled" && row b 2 rolled-back && row c 3 "failed +NOT_FOUND"'
for x in "${NAMES[@]}"; do
  specs "$x" "$TMP/after3-$x.json"
  check "remove rolled back: node-$x's handlers (specs, bound region) are as before" \
    same "$TMP/before3-$x.json" "$TMP/after3-$x.json"
done
on a state fc --length 2 --raw
check "remove rolled back: node-a's fc starts again from its initial state 0102" \
  eval '[[ $(od -An -tx1 "$TMP/cmd.out" | tr -d " \n") == 0102 ]]'

# --- 4. replace with an unreachable fourth target ----------------------------
cp "$TARGETS" "$TMP/targets4.textproto"
echo "targets { name: \"node-d\" address: \"unix:$TMP/nosuch.sock\" }" >>"$TMP/targets4.textproto"
on c install --name fc --kind count --match 'ip_proto: 58'
for x in "${NAMES[@]}"; do specs "$x" "$TMP/before4-$x.json"; done
"$SPINCTL" --targets "$TMP/targets4.textproto" --timeout_ms 3000 replace --name fc --kind count \
  --match 'ip_proto: 17' --wave_size 3 >"$TMP/cmd.out" 2>"$TMP/cmd.err" </dev/null
RC=$?
check "replace with node-d unreachable: exit 1" rc_is 1
check "replace: node-a..c rolled back to the previous spec, node-d failed UNAVAILABLE" eval \
  'row a 1 "rolled-back +replaced, then the previous spec restored" && row b 1 rolled-back && row c 1 rolled-back && row d 2 "failed +UNAVAILABLE: .*nosuch.sock"'
for x in "${NAMES[@]}"; do
  specs "$x" "$TMP/after4-$x.json"
  check "replace rolled back: node-$x's handlers are as before" same "$TMP/before4-$x.json" "$TMP/after4-$x.json"
done
fl replace --name fc --kind count --match 'ip_proto: 17' --canary 2
check "replace on three: exit 0, all ok" eval 'rc_is 0 && row a 1 ok && row b 1 ok && row c 2 ok'
on b --json handlers
check "replace: node-b's fc has the new match" py '[h["match"]["ip_proto"] for h in d["handlers"] if h["name"] == "fc"] == [17]'

# --- 5. usage errors (no server needed) --------------------------------------
sc install --name x --kind count --targets "$TARGETS"
check "--targets after the command: exit 2, says where it goes" eval \
  'rc_is 2 && err_has "--targets goes before the command"'
"$SPINCTL" --targets "$TARGETS" --socket "$TMP/a.sock" remove fc >"$TMP/cmd.out" 2>"$TMP/cmd.err"
RC=$?
check "--targets with --socket: exit 2" eval 'rc_is 2 && err_has "do not combine with --targets"'
fl handlers
check "--targets handlers: exit 2, names the fleet commands" eval \
  'rc_is 2 && err_has "has no fleet mode: --targets works with install, replace and remove"'
echo 'targets { name: "x" }' >"$TMP/bad.textproto"
"$SPINCTL" --targets "$TMP/bad.textproto" remove fc >"$TMP/cmd.out" 2>"$TMP/cmd.err"
RC=$?
check "a target without an address: exit 2, names it" eval 'rc_is 2 && err_has "targets\[0\] .*has no address"'

it_finish
