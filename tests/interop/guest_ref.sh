# Guest command file of the reference run (reference.sh): the clients of
# guest_tools.sh, with the same flags, against a second rxe guest running
# the matching Linux servers, one tool after the other. Both guests of
# `run_peer.sh pair` source this file: "srv" (192.0.2.11) plays the
# server of each step, "cli" (192.0.2.12) the client. Each step:
#   srv: starts its server (bounded), polls `rdma resource show cm_id`
#        until it listens on the port (at most 30 s), rxe_ready s_LABEL;
#   cli: rxe_wait s_LABEL, runs the client with guest_lib.sh's `run`
#        (same output lines as guest_tools.sh), rxe_ready c_LABEL;
#   srv: rxe_wait c_LABEL, gives its server 10 s to exit, then stops it,
#        and prints the server's output under "srv LABEL".
# TOOLS_ONLY / TOOLS_SCALE (in /share/params) as for guest_tools.sh.
. /share/params
. /share/guest_lib.sh
S=192.0.2.11
S6=fd00:1::11
T=${TOOLS_SCALE:-1}

listening() { # PORT -> 0 once an rdma_cm id listens on PORT
  rdma resource show cm_id 2>/dev/null | grep -E "LISTEN" | grep -qE ":$1( |$)"
}

srv_step() { # LABEL BOUND PORT SERVER_COMMAND...
  local label=$1 t=$2 port=$3 i=0 p s
  shift 3
  selected "$label" || return 0
  echo "$*" >/tmp/$label.cmd
  s=$(now_ms)
  timeout "$((t + 60))" "$@" >/tmp/$label.log 2>&1 &
  p=$!
  while ! listening "$port" && [ $i -lt 60 ] && kill -0 $p 2>/dev/null; do
    sleep 0.5
    i=$((i + 1))
  done
  listening "$port" || echo "srv $label: not seen listening on $port (going on)"
  rxe_ready "s_$label"
  rxe_wait "c_$label" "$((t + 300))"
  i=0
  while kill -0 $p 2>/dev/null && [ $i -lt 20 ]; do
    sleep 0.5
    i=$((i + 1))
  done
  kill -0 $p 2>/dev/null && { echo "srv $label: still running 10 s after the client; stopped"; kill $p; }
  wait $p
  echo $? >/tmp/$label.rc
  echo $(($(now_ms) - s)) >/tmp/$label.ms
  report "$label"
}

cli_step() { # LABEL BOUND PORT SERVER_COMMAND -- CLIENT_COMMAND...
  local label=$1 t=$2
  shift 3
  selected "$label" || return 0
  while [ "$1" != -- ]; do shift; done
  shift
  if rxe_wait "s_$label" 600; then
    run "$label" "$t" "$@"
  else
    echo "=== $label: $*"
    echo "$label: the server guest never got ready"
    echo "$label rc=255"
  fi
  rxe_ready "c_$label"
}

step() { # LABEL BOUND PORT SERVER_COMMAND... -- CLIENT_COMMAND...
  if [ "$RXE_NAME" = srv ]; then
    local a=$1 b=$2 c=$3 cmd=
    shift 3
    while [ "$1" != -- ]; do cmd="$cmd $1"; shift; done
    # shellcheck disable=SC2086 # the commands below have no quoted words
    srv_step "$a" "$b" "$c" $cmd
  else
    cli_step "$@"
  fi
}

[ "$RXE_NAME" = cli ] && ping -c 1 -W 2 $S >/dev/null 2>&1
[ "$RXE_NAME" = cli ] && ping -6 -c 1 -W 2 $S6 >/dev/null 2>&1

# perftest: the server gets every flag that changes what it does (-n, -a,
# -q, -b, -p; --report_gbits only changes its own printing, kept alike).
P="ib_write_bw -R -d rxe0"
step write_bw_gbits $((60 * T)) 18515 $P -n 100 --report_gbits -- $P -n 100 --report_gbits $S
step write_bw_a $((300 * T)) 18515 $P -a -n 5 -- $P -a -n 5 $S
step read_bw $((60 * T)) 18515 ib_read_bw -R -d rxe0 -n 100 -- ib_read_bw -R -d rxe0 -n 100 $S
step send_bw $((60 * T)) 18515 ib_send_bw -R -d rxe0 -n 100 -- ib_send_bw -R -d rxe0 -n 100 $S
step write_lat $((60 * T)) 18516 ib_write_lat -R -d rxe0 -n 100 -p 18516 -- ib_write_lat -R -d rxe0 -n 100 -p 18516 $S
step send_lat $((60 * T)) 18515 ib_send_lat -R -d rxe0 -n 100 -- ib_send_lat -R -d rxe0 -n 100 $S
step read_lat $((60 * T)) 18515 ib_read_lat -R -d rxe0 -n 100 -- ib_read_lat -R -d rxe0 -n 100 $S
step atomic_lat $((60 * T)) 18515 ib_atomic_lat -R -d rxe0 -n 100 -- ib_atomic_lat -R -d rxe0 -n 100 $S
step write_bw_q4 $((60 * T)) 18515 $P -n 100 -q 4 -- $P -n 100 -q 4 $S
step write_bw_b $((120 * T)) 18515 $P -b -n 100 -- $P -b -n 100 $S
step read_bw_b $((120 * T)) 18515 ib_read_bw -R -d rxe0 -b -n 100 -- ib_read_bw -R -d rxe0 -b -n 100 $S
step send_bw_b $((120 * T)) 18515 ib_send_bw -R -d rxe0 -b -n 100 -- ib_send_bw -R -d rxe0 -b -n 100 $S
# The rest of the matrix (guest_tools.sh has the why).
AT="ib_atomic_bw -R -d rxe0"
step atomic_bw $((60 * T)) 18515 $AT -n 100 -- $AT -n 100 $S
step atomic_bw_q4 $((60 * T)) 18515 $AT -n 100 -q 4 -- $AT -n 100 -q 4 $S
step atomic_bw_b $((120 * T)) 18515 $AT -n 100 -b -- $AT -n 100 -b $S
step atomic_bw_gbits $((60 * T)) 18515 $AT -n 100 --report_gbits -- $AT -n 100 --report_gbits $S
step read_bw_q4 $((60 * T)) 18515 ib_read_bw -R -d rxe0 -n 100 -q 4 -- ib_read_bw -R -d rxe0 -n 100 -q 4 $S
step send_bw_q4 $((60 * T)) 18515 ib_send_bw -R -d rxe0 -n 100 -q 4 -- ib_send_bw -R -d rxe0 -n 100 -q 4 $S
step read_bw_gbits $((60 * T)) 18515 ib_read_bw -R -d rxe0 -n 100 --report_gbits -- ib_read_bw -R -d rxe0 -n 100 --report_gbits $S
step send_bw_gbits $((60 * T)) 18515 ib_send_bw -R -d rxe0 -n 100 --report_gbits -- ib_send_bw -R -d rxe0 -n 100 --report_gbits $S
step send_lat_a $((300 * T)) 18515 ib_send_lat -R -d rxe0 -a -n 5 -- ib_send_lat -R -d rxe0 -a -n 5 $S
step read_lat_a $((300 * T)) 18515 ib_read_lat -R -d rxe0 -a -n 5 -- ib_read_lat -R -d rxe0 -a -n 5 $S
# librdmacm: the echo server for rdma_client (rdma_server takes -s for its
# address; rdma_xserver has none and listens on any), udaddy's server.
step rdma_client $((30 * T)) 7472 rdma_server -p 7472 -- rdma_client -s $S -p 7472
step rdma_client6 $((30 * T)) 7472 rdma_server -s $S6 -p 7472 -- rdma_client -s $S6 -p 7472
step rdma_xclient $((30 * T)) 7472 rdma_xserver -p 7472 -- rdma_xclient -s $S -p 7472
step udaddy $((30 * T)) 7174 udaddy -b $S -- udaddy -s $S
step udaddy6 $((30 * T)) 7174 udaddy -b $S6 -- udaddy -s $S6
step cmtime $((300 * T)) 7471 cmtime -b $S -p 7471 -c 100 -- cmtime -s $S -p 7471 -c 100
# rping's server needs the size (its buffer) and stops after -C.
step rping_max $((900 * T)) 7174 rping -s -a $S -S 65535 -C ${RPING_COUNT:-1000} -- rping -c -a $S -S 65535 -C ${RPING_COUNT:-1000} -V
step rping_max6 $((900 * T)) 7174 rping -s -a $S6 -S 65535 -C ${RPING_COUNT:-1000} -- rping -c -a $S6 -S 65535 -C ${RPING_COUNT:-1000} -V
step read_bw_a $((300 * T)) 18515 ib_read_bw -R -d rxe0 -a -n 5 -- ib_read_bw -R -d rxe0 -a -n 5 $S
step send_bw_a $((300 * T)) 18515 ib_send_bw -R -d rxe0 -a -n 5 -- ib_send_bw -R -d rxe0 -a -n 5 $S
