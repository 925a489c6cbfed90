# Guest command file of the interop "many2" case, run by two guests at once
# (cli 192.0.2.12 and cli2 192.0.2.13) against one appliance: rping,
# perftest, librdmacm's rdma_client and our NAAICE client, all started at
# once in the background (guest_lib.sh's run_bg), then waited for. Labels
# are the same in both guests; each guest writes its own out.log.
. /share/params
ping -c 1 -W 2 "$APPLIANCE" >/dev/null 2>&1
. /share/guest_lib.sh
A=$APPLIANCE
# Start together: each guest says it is up and waits for the others
# (GUESTS in /share/params; rxe_ready/rxe_wait from run_peer's /share/env):
# one guest boots faster than the other under TCG.
rxe_ready "up_$RXE_NAME"
echo "up_at=$(date +%T.%N | cut -c1-12)"
for g in $GUESTS; do rxe_wait "up_$g" 120 || echo "no start signal from $g"; done
echo "start_at=$(date +%T.%N | cut -c1-12)"
T=${TOOLS_SCALE:-1}
# The two guests offload different functions (cli vector_sum, cli2 matvec).
case $RXE_NAME in cli2) FN=matvec ;; *) FN=vector_sum ;; esac
run_bg many rping_m1 $((300 * T)) rping -c -a "$A" -C 50 -V
run_bg many rping_m2 $((300 * T)) rping -c -a "$A" -C 50 -V
run_bg many write_bw_m1 $((300 * T)) ib_write_bw -R -d rxe0 -n 200 "$A"
run_bg many rdma_client_m1 $((300 * T)) rdma_client -s "$A" -p 7472
run_bg many naaice_m1 $((300 * T)) /share/naaice_client "$A" "$NAAICE_PORT" \
  --function $FN --size "$NAAICE_SIZE" --rpcs "$NAAICE_RPCS" --timeout-ms $((30000 * T))
wait_bg
