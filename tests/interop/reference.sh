#!/bin/bash
# The reference column of issue 18: the clients of the interop "tools" case
# (guest_tools.sh, same flags) against a second Linux rxe guest running the
# matching servers (ib_*_bw/_lat -R, rdma_server, rdma_xserver, udaddy,
# cmtime, rping -s), on the same emulated setup, instead of spinnicd. Two
# guests booted as a pair by /work/shared/tools/rxe-peer/run_peer.sh:
# srv 192.0.2.11 (the address spinnicd has in interop.sh), cli 192.0.2.12;
# guest_ref.sh is both guests' command file. No spinnicd is involved. See
# docs/interop.md, "Against a second rxe guest (reference)".
#
#   reference.sh [SPINNICD SPINCTL]     (both ignored: accepted so that the
#                                        call looks like interop.sh's)
#
# Env: TOOLS_ONLY="label ..." (labels of guest_ref.sh; default all),
#      TOOLS_SCALE=N (multiplies the bounds), RPING_COUNT (1000),
#      REF_NETNS (spn-ref), REF_RUN_DIR (/tmp/spinnic-interop-ref),
#      REF_GUEST_TIMEOUT (s per guest, 3000), REF_PCAP=1 (tcpdump of the
#      bridge into RUN/capture.pcap).
# Prints a markdown table (also in RUN/table.md): each label, the client's
# command, its exit code and its own figure. Exit: 0 every client exited
# 0 (udaddy included), 1 otherwise, 77 skip.

set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PEER_DIR=${RXE_PEER_DIR:-/work/shared/tools/rxe-peer}
RUN_PEER=$PEER_DIR/run_peer.sh
export RXE_BASE=${RXE_BASE:-/tmp/rxe}
export RXE_NETNS=${REF_NETNS:-spn-ref}
export RXE_BRIDGE=br-rxe
export RXE_TIMEOUT=${REF_GUEST_TIMEOUT:-3000}
RUN=${REF_RUN_DIR:-/tmp/spinnic-interop-ref}
PAIR_PID=

log() { echo "[reference $(date +%T)] $*"; }
skip() { log "SKIP: $*"; exit 77; }

cleanup() {
  local rc=$? n p
  trap - EXIT INT TERM
  for n in srv cli; do
    p=$(cat "$RUN/$n.pid" 2>/dev/null)
    # $n.pid is `timeout qemu`'s pid: it passes the signal on to qemu.
    [[ -n $p ]] && { pkill -TERM -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; }
  done
  [[ -n $PAIR_PID ]] && { kill "$PAIR_PID" 2>/dev/null; wait "$PAIR_PID" 2>/dev/null; }
  "$RUN_PEER" clean >/dev/null 2>&1
  exit "$rc"
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespace, tap, qemu)"
[[ -x $RUN_PEER ]] || skip "rxe-peer not found at $PEER_DIR (set RXE_PEER_DIR)"
[[ -f $RXE_BASE/rootfs.img && -f $RXE_BASE/vmlinuz ]] ||
  skip "no rxe guest image in $RXE_BASE: run $RUN_PEER build (about 2 min, 2 GB)"
command -v qemu-system-x86_64 >/dev/null || skip "'qemu-system-x86_64' missing"

trap cleanup EXIT
trap 'log interrupted; exit 130' INT
trap 'log terminated; exit 143' TERM

rm -rf "$RUN"
mkdir -p "$RUN"
"$RUN_PEER" clean >/dev/null 2>&1 # leftovers of a killed run
cp "$HERE/guest_lib.sh" "$RUN/guest_lib.sh"
cat >"$RUN/params" <<EOF
TOOLS_ONLY="${TOOLS_ONLY:-all}"
TOOLS_SCALE=${TOOLS_SCALE:-1}
RPING_COUNT=${RPING_COUNT:-1000}
EOF

log "booting srv and cli (TCG; the whole list takes a quarter of an hour or more)"
"$RUN_PEER" pair "$RUN" "$HERE/guest_ref.sh" "$HERE/guest_ref.sh" ${REF_PCAP:+"$RUN/capture.pcap"} \
  >"$RUN/pair.log" 2>&1 &
PAIR_PID=$!
wait "$PAIR_PID"
PAIR_PID=
OUT=$RUN/cli/out.log
SRV=$RUN/srv/out.log
[[ -s $OUT ]] || { tail -n 30 "$RUN/cli.console" 2>/dev/null; log "FAIL: no client output"; exit 1; }
grep -q '^=== cmd rc=' "$OUT" || log "the client's command file did not finish"

# ---- the table ---------------------------------------------------------------
col() { # LABEL -> the tool's own figure from the client's output
  local l=$1 row ms n
  ms=$(grep -m1 "^$l elapsed_ms=" "$OUT" | cut -d= -f2)
  case $l in
    rdma_*client*)
      grep -q "^$l: rdma_x\?client: end 0\$" "$OUT" && echo "end 0 (its SEND came back), ${ms:-?} ms" ||
        echo "$(grep -m1 -E "^$l: .*(end|error|fail)" "$OUT" | cut -d: -f2- | cut -c2-120)"
      ;;
    udaddy*)
      echo "$(grep -E "^$l: " "$OUT" | tail -1 | cut -d: -f2- | cut -c2-120), ${ms:-?} ms"
      ;;
    rping*)
      n=$(grep -m1 "^=== $l:" "$OUT" | sed -n 's/.* -C \([0-9]*\).*/\1/p')
      echo "${n:-?} x 64 KiB in $(awk -v m="${ms:-0}" 'BEGIN { printf "%.1f", m / 1000 }') s: $(awk -v m="${ms:-0}" -v n="${n:-1}" 'BEGIN { printf "%.1f", m / n }') ms per iteration"
      ;;
    cmtime)
      # Rows "step : total_ms max_ms min_us us_per_conn".
      local s r out=
      for s in "create id" "resolve addr" "resolve route" "create qp" connect disconnect destroy; do
        r=$(grep -E "^$l: $s *: " "$OUT" | tail -1 | cut -d: -f3 | tr -s ' ' | sed 's/^ //')
        [[ -n $r ]] && out+="${out:+, }$s $(cut -d' ' -f1 <<<"$r") / $(cut -d' ' -f4 <<<"$r")"
      done
      echo "total ms / us per conn: ${out:-no rows}"
      ;;
    *lat*)
      # "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%"
      row=$(grep -E "^$l: +[0-9]+ +[0-9]+ +[0-9.]+" "$OUT" | tail -1 | cut -d: -f2-)
      [[ -n $row ]] && awk '{ printf "%s B: t_typical %s us, t_avg %s us\n", $1, $5, $6 }' <<<"$row"
      ;;
    *)
      # "#bytes #iterations BW_peak BW_average MsgRate"
      row=$(grep -E "^$l: +[0-9]+ +[0-9]+ +[0-9.]+" "$OUT" | tail -1 | cut -d: -f2-)
      local unit=MB/s
      grep -q "^=== $l:.*--report_gbits" "$OUT" && unit=Gb/s
      [[ -n $row ]] && awk -v u="$unit" '{ printf "%s B x %s: %s %s avg, %s peak\n", $1, $2, $4, u, $3 }' <<<"$row"
      ;;
  esac
}

{
  echo "| label | client command (cli guest) | server command (srv guest) | client rc | the tool's figure |"
  echo "|---|---|---|---|---|"
  for l in $(grep -oE '^=== [a-z0-9_]+:' "$OUT" | cut -c5- | tr -d :); do
    echo "| \`$l\` | \`$(grep -m1 "^=== $l:" "$OUT" | cut -d: -f2- | cut -c2-)\` | \`$(grep -m1 "^=== $l:" "$SRV" 2>/dev/null | cut -d: -f2- | cut -c2-)\` (rc $(grep -m1 "^$l rc=" "$SRV" 2>/dev/null | cut -d= -f2)) | $(grep -m1 "^$l rc=" "$OUT" | cut -d= -f2) | $(col "$l") |"
  done
} >"$RUN/table.md"
cat "$RUN/table.md"
bad=$(grep -E '^[a-z0-9_]+ rc=' "$OUT" | grep -vc ' rc=0$')
log "$(grep -cE '^[a-z0-9_]+ rc=' "$OUT") clients, ${bad} exited non-zero; guest output in $RUN/{cli,srv}/out.log"
[[ $bad -eq 0 ]]
