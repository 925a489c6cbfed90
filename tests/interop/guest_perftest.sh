# Guest command file of the interop "perftest" case: perftest's clients over
# rdma_cm (-R) against the appliance, bounded (they wait forever for the
# server's SEND answers otherwise). Output lines are prefixed with the tool.
. /share/params
ping -c 1 -W 2 "$APPLIANCE" >/dev/null 2>&1
for tool in ib_write_bw ib_read_bw; do
  timeout 12 $tool -R -d rxe0 -s 4096 -n 20 "$APPLIANCE" >/tmp/$tool.log 2>&1
  rc=$?
  sed "s/^/$tool: /" /tmp/$tool.log
  echo "$tool rc=$rc"
done
