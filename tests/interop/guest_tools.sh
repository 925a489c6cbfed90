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
run write_bw_a $((180 * T)) ib_write_bw -R -d rxe0 -a -n 5 "$A"
run send_lat $((60 * T)) ib_send_lat -R -d rxe0 -n 100 "$A"
run read_lat $((60 * T)) ib_read_lat -R -d rxe0 -n 100 "$A"
run atomic_lat $((60 * T)) ib_atomic_lat -R -d rxe0 -n 100 "$A"
run write_bw_gbits $((60 * T)) ib_write_bw -R -d rxe0 -n 100 --report_gbits "$A"
run write_bw_q4 $((60 * T)) ib_write_bw -R -d rxe0 -n 100 -q 4 "$A"
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
# ib_write_lat -a needs a port configured with all_sizes (its server
# steps through the sizes too): RocePerftestWriteLatAllTest covers it.
# IPv6 (-x 2 with fd00:1::11): perftest 4.5-0.17 resolves -R addresses as
# AF_INET only ("Address family for hostname not supported"); rping covers
# IPv6 with rdma_cm (docs/interop.md).
