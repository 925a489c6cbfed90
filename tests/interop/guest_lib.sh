# Sourced by the guest command files (guest_tools.sh, guest_cnp.sh) from
# /share, where interop.sh copies it.
#
# run LABEL TIMEOUT COMMAND...: runs the command, bounded by TIMEOUT guest
# seconds; prints "=== LABEL: COMMAND", its output with every line
# prefixed "LABEL: ", then "LABEL rc=N". TOOLS_ONLY (in /share/params: "all"
# or labels) skips the labels it does not name.
run() {
  local label=$1 t=$2
  shift 2
  case " ${TOOLS_ONLY:-all} " in *" all "* | *" $label "*) ;; *) return ;; esac
  echo "=== $label: $*"
  timeout "$t" "$@" >/tmp/$label.log 2>&1
  local rc=$?
  sed "s/^/$label: /" /tmp/$label.log
  echo "$label rc=$rc"
  sleep 1
}
