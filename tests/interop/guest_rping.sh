# Guest command file of the interop "rping" case: rping's client and
# rxe_ops' client against the appliance, bounded (both wait for the server's
# SENDs otherwise).
. /share/params
ping -c 1 -W 2 "$APPLIANCE" >/dev/null 2>&1
timeout 12 rping -c -a "$APPLIANCE" -v -C 3 >/tmp/rping.log 2>&1
rc=$?
sed 's/^/rping: /' /tmp/rping.log
echo "rping rc=$rc"
timeout 10 rxe_ops -c "$APPLIANCE" 7471 >/tmp/rxe_ops.log 2>&1
rc=$?
sed 's/^/rxe_ops: /' /tmp/rxe_ops.log
echo "rxe_ops rc=$rc"
