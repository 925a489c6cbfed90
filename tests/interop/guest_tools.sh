# Guest command file of the interop "tools" case: the perftest modes users
# run first, each with -R (rdma_cm) against the appliance's perftest server,
# each bounded. Output lines are prefixed with the case's label; each case
# ends with "LABEL rc=N". TOOLS_ONLY (in /share/params) picks a subset.
. /share/params
ping -c 1 -W 2 "$APPLIANCE" >/dev/null 2>&1
ping -6 -c 1 -W 2 "$APPLIANCE6" >/dev/null 2>&1
. /share/guest_lib.sh
A=$APPLIANCE
# Timeouts in guest seconds; TCG on a loaded host runs a guest several
# times slower than usual (TOOLS_SCALE multiplies them).
T=${TOOLS_SCALE:-1}
# ib_write_lat on its own port (roce.perftest_write_lat: -n 100, size 2).
run write_lat $((60 * T)) ib_write_lat -R -d rxe0 -n 100 -p 18516 "$A"
run send_bw $((60 * T)) ib_send_bw -R -d rxe0 -n 100 "$A"
run read_bw $((60 * T)) ib_read_bw -R -d rxe0 -n 100 "$A"
run write_bw_a $((180 * T)) ib_write_bw -R -d rxe0 -a -n 5 "$A"
run send_lat $((60 * T)) ib_send_lat -R -d rxe0 -n 100 "$A"
run read_lat $((60 * T)) ib_read_lat -R -d rxe0 -n 100 "$A"
run atomic_lat $((60 * T)) ib_atomic_lat -R -d rxe0 -n 100 "$A"
run write_bw_gbits $((60 * T)) ib_write_bw -R -d rxe0 -n 100 --report_gbits "$A"
run write_bw_q4 $((60 * T)) ib_write_bw -R -d rxe0 -n 100 -q 4 "$A"
# The rest of issue 18's matrix: ib_atomic_bw in every mode, -q 4 and
# --report_gbits for READ and SEND, the latency sweeps (-a) of SEND and
# READ. (perftest refuses -q and -b for the _lat tools and -a for
# ib_atomic_lat; ib_write_lat -a needs roce.perftest_write_lat with
# all_sizes.)
run atomic_bw $((60 * T)) ib_atomic_bw -R -d rxe0 -n 100 "$A"
run atomic_bw_q4 $((60 * T)) ib_atomic_bw -R -d rxe0 -n 100 -q 4 "$A"
run atomic_bw_b $((120 * T)) ib_atomic_bw -R -d rxe0 -n 100 -b "$A"
run atomic_bw_gbits $((60 * T)) ib_atomic_bw -R -d rxe0 -n 100 --report_gbits "$A"
run read_bw_q4 $((60 * T)) ib_read_bw -R -d rxe0 -n 100 -q 4 "$A"
run send_bw_q4 $((60 * T)) ib_send_bw -R -d rxe0 -n 100 -q 4 "$A"
run read_bw_gbits $((60 * T)) ib_read_bw -R -d rxe0 -n 100 --report_gbits "$A"
run send_bw_gbits $((60 * T)) ib_send_bw -R -d rxe0 -n 100 --report_gbits "$A"
run send_lat_a $((300 * T)) ib_send_lat -R -d rxe0 -a -n 5 "$A"
run read_lat_a $((300 * T)) ib_read_lat -R -d rxe0 -a -n 5 "$A"
# udaddy (UD, rdma_cm's UDP port space): the appliance serves no UD QPs and
# answers its SIDR_REQ "service ID not supported" (docs/roce-cm.md, SIDR):
# udaddy reports RDMA_CM_EVENT_UNREACHABLE at once instead of timing out.
# librdmacm's rdma_client and rdma_xclient against the echo service
# (roce.echo_port): a 16-byte SEND and its answer; each prints "end 0".
run rdma_client $((30 * T)) rdma_client -s "$A" -p 7472
run rdma_client6 $((30 * T)) rdma_client -s "$APPLIANCE6" -p 7472
run rdma_xclient $((30 * T)) rdma_xclient -s "$A" -p 7472
run udaddy $((30 * T)) udaddy -s "$A"
run udaddy6 $((30 * T)) udaddy -s "$APPLIANCE6"
# Bidirectional (-b: both sides send; the client also reports what it
# received) and the -a size sweeps of READ and SEND.
run write_bw_b $((120 * T)) ib_write_bw -R -d rxe0 -b -n 100 "$A"
run read_bw_b $((120 * T)) ib_read_bw -R -d rxe0 -b -n 100 "$A"
run send_bw_b $((120 * T)) ib_send_bw -R -d rxe0 -b -n 100 "$A"
run read_bw_a $((300 * T)) ib_read_bw -R -d rxe0 -a -n 5 "$A"
run send_bw_a $((300 * T)) ib_send_bw -R -d rxe0 -a -n 5 "$A"
# librdmacm's connection setup rate: 100 connections (each with an RC QP)
# to the plain listen port, connected, then all disconnected; it prints
# per-step times (roce.max_qps is 256, the default).
run cmtime $((300 * T)) cmtime -s "$A" -p 7471 -c 100
# rping with its largest message (-S 65535: it refuses RPING_BUFSIZE, 64 KiB,
# though its message names it as the top of the range): 1,000
# iterations, every one checked by the client (-V: the sink, which our
# WRITE filled, equals the source our READ fetched), IPv4 and IPv6; and
# two printed (-v, shortened to their lengths by vlen.sh) so the check
# sees all 65534 characters (the buffer as a string) came back.
run rping_max $((900 * T)) rping -c -a "$A" -S 65535 -C 1000 -V
run rping_max6 $((900 * T)) rping -c -a "$APPLIANCE6" -S 65535 -C 1000 -V
cat >/tmp/vlen.sh <<'EOF'
# vlen.sh COMMAND...: runs COMMAND; prints its stdout with each line longer
# than 100 characters cut to 40 and "... [N chars]", then its stderr
# (rping -v prints 64 KiB lines, and its stderr would land inside them);
# exits with COMMAND's status.
"$@" >/tmp/vlen.out 2>/tmp/vlen.err
rc=$?
awk '{ if (length($0) > 100) print substr($0, 1, 40) "... [" length($0) " chars]"; else print }' /tmp/vlen.out
cat /tmp/vlen.err
exit $rc
EOF
run rping_max_v $((60 * T)) sh /tmp/vlen.sh rping -c -a "$A" -S 65535 -C 2 -v -V
# Bad input from a client: one killed mid-transfer (SIGKILL: the tool
# never disconnects; its kernel's rdma_cm tears the connection down, as
# for any process that dies), an ib_write_bw streaming WRITEs and an rping
# whose READs and WRITEs the appliance has in flight toward it; then the
# same tools again, which must pass. killmid.sh SECONDS PATTERN COMMAND...
# starts COMMAND (line-buffered: its output is a file), waits up to
# SECONDS until that shows PATTERN (the transfer is under way), lets it
# run 2 s more, kills it in any case and exits 0 when it was killed
# mid-transfer (status 137).
cat >/tmp/killmid.sh <<'EOF'
t=$1 pat=$2; shift 2
stdbuf -oL -eL "$@" >/tmp/killmid.out 2>&1 &
pid=$!
i=0
while [ $i -lt $((t * 10)) ] && ! grep -q -- "$pat" /tmp/killmid.out; do sleep 0.1; i=$((i + 1)); done
started=no
grep -q -- "$pat" /tmp/killmid.out && started=yes
sleep 2
kill -9 $pid
wait $pid
rc=$?
tail -n 3 /tmp/killmid.out | cut -c 1-120
echo "killed: rc=$rc started=$started after $((i / 10)) s"
[ "$started" = yes ] && [ $rc -eq 137 ]
EOF
run killed_write_bw $((120 * T)) sh /tmp/killmid.sh $((30 * T)) '#bytes' ib_write_bw -R -d rxe0 -n 1000000 "$A"
run write_bw_after_kill $((60 * T)) ib_write_bw -R -d rxe0 -n 100 "$A"
run killed_rping $((120 * T)) sh /tmp/killmid.sh $((30 * T)) 'ping data' rping -c -a "$A" -C 1000000 -S 4096 -v
run rping_after_kill $((120 * T)) rping -c -a "$A" -C 50 -V
# Eight clients at once in this guest (3 rping, 3 ib_write_bw, 2
# rdma_client), each its own label; TOOLS_ONLY=many selects them all.
run_bg many rping_m1 $((300 * T)) rping -c -a "$A" -C 50 -V
run_bg many rping_m2 $((300 * T)) rping -c -a "$A" -C 50 -V
run_bg many rping_m3 $((300 * T)) rping -c -a "$A" -C 50 -V
run_bg many write_bw_m1 $((300 * T)) ib_write_bw -R -d rxe0 -n 200 "$A"
run_bg many write_bw_m2 $((300 * T)) ib_write_bw -R -d rxe0 -n 200 "$A"
run_bg many write_bw_m3 $((300 * T)) ib_write_bw -R -d rxe0 -n 200 "$A"
run_bg many rdma_client_m1 $((300 * T)) rdma_client -s "$A" -p 7472
run_bg many rdma_client_m2 $((300 * T)) rdma_client -s "$A" -p 7472
wait_bg
# Connect/disconnect cycles: CYCLES (params; 1000 by default) runs of
# rdma_client to the echo port one after the other, and CYCLES/100 runs of
# cmtime -c 100 (100 connections each). cycles.sh N COMMAND... runs COMMAND
# N times, each bounded, and stops at the first failure with its number
# and output.
cat >/tmp/cycles.sh <<'EOF'
n=$1; shift; i=0
while [ $i -lt $n ]; do
  if ! out=$(timeout 120 "$@" 2>&1); then echo "cycle $i failed: $out"; exit 1; fi
  i=$((i + 1))
done
echo "cycles: $n of $n done"
EOF
run cycles_client $((900 * T)) sh /tmp/cycles.sh "${CYCLES:-1000}" rdma_client -s "$A" -p 7472
# cmtime's tables are kept (cycles.sh would swallow them).
cat >/tmp/batches.sh <<'EOF'
n=$1; shift; i=0
while [ $i -lt $n ]; do
  timeout 120 "$@" || { echo "batch $i failed"; exit 1; }
  i=$((i + 1))
done
EOF
run cycles_cmtime $((900 * T)) sh /tmp/batches.sh $((${CYCLES:-1000} / 100)) cmtime -s "$A" -p 7471 -c 100
