# Guest command file of the interop "verbs" case (sourced by /bin/sh in the
# rxe guest; /share is the run directory with params and roce_verbs_client).
. /share/params
# ARP and NDP: the appliance answers for its addresses itself (it may not
# answer the echo requests; only the neighbour entries matter).
ping -c 1 -W 2 "$APPLIANCE" >/dev/null 2>&1
ping -6 -c 1 -W 2 "$APPLIANCE6" >/dev/null 2>&1
echo "arp4 $(ip -4 neigh show "$APPLIANCE")"
echo "nd6 $(ip -6 neigh show "$APPLIANCE6")"
timeout 60 /share/roce_verbs_client "$APPLIANCE" 7471 "$RKEY" "$VA" responder >/tmp/responder.log 2>&1
rc=$?
cat /tmp/responder.log
echo "responder rc=$rc"
# When the stock client fails a step, run the diagnostic with the CM's
# PSNs exchanged (docs/interop.md): it shows what works behind that bug.
if grep -q '^FAIL ' /tmp/responder.log; then
  timeout 60 /share/roce_verbs_client "$APPLIANCE" 7471 "$RKEY" "$VA" responder --swap-psn 2>&1 |
    sed 's/^/diag: /'
fi
timeout 30 /share/roce_verbs_client "$APPLIANCE" 7471 "$RKEY" "$VA" send
echo "send rc=$?"
