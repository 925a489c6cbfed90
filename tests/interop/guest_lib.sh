# Sourced by the guest command files (guest_tools.sh, guest_cnp.sh) from
# /share, where interop.sh copies it.
#
# run LABEL TIMEOUT COMMAND...: runs the command, bounded by TIMEOUT guest
# seconds; prints "=== LABEL: COMMAND", its output with every line
# prefixed "LABEL: ", then "LABEL rc=N" and "LABEL elapsed_ms=N" (guest
# wall clock). TOOLS_ONLY (in /share/params: "all" or labels) skips the
# labels it does not name.
selected() { # NAME... -> 0 when TOOLS_ONLY names one of them (or "all")
  local n
  for n in all "$@"; do
    case " ${TOOLS_ONLY:-all} " in *" $n "*) return 0 ;; esac
  done
  return 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
report() { # LABEL: the result of a finished run, as run prints it
  echo "=== $1: $(cat /tmp/$1.cmd)"
  sed "s/^/$1: /" /tmp/$1.log
  echo "$1 rc=$(cat /tmp/$1.rc)"
  echo "$1 elapsed_ms=$(cat /tmp/$1.ms)"
}
run() {
  local label=$1 t=$2 s
  shift 2
  selected "$label" || return 0
  echo "$*" >/tmp/$label.cmd
  s=$(now_ms)
  timeout "$t" "$@" >/tmp/$label.log 2>&1
  echo $? >/tmp/$label.rc
  echo $(($(now_ms) - s)) >/tmp/$label.ms
  report "$label"
  sleep 1
}
# run_bg GROUP LABEL TIMEOUT COMMAND...: the same, started in the
# background (selected by GROUP or LABEL); wait_bg waits for every one
# started since the last wait_bg and prints their results in start order.
BG_LABELS=
BG_PIDS=
run_bg() {
  local group=$1 label=$2 t=$3
  shift 3
  selected "$group" "$label" || return 0
  echo "$*" >/tmp/$label.cmd
  (
    s=$(now_ms)
    timeout "$t" "$@" >/tmp/$label.log 2>&1
    echo $? >/tmp/$label.rc
    echo $(($(now_ms) - s)) >/tmp/$label.ms
  ) &
  BG_PIDS="$BG_PIDS $!"
  BG_LABELS="$BG_LABELS $label"
}
wait_bg() {
  local p l
  for p in $BG_PIDS; do wait "$p"; done
  for l in $BG_LABELS; do report "$l"; done
  BG_PIDS= BG_LABELS=
  sleep 1
}
