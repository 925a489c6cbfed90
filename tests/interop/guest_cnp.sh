# Guest command file of the interop "cnp" case (issue 21): does Linux rxe
# take spinnic's congestion notification packets as it should? rxe has no
# DCQCN of its own; a CNP must be dropped quietly, and the requester's
# traffic must go on unharmed. ib_write_bw -R with ToS 3 makes rxe send
# every packet CE-marked (the IPv4 ECN bits 11, as a congested switch
# would leave them), so the appliance, with roce.congestion on, answers
# with CNPs to the client's QP; the same run without -T is the reference.
# Output lines carry the run's label; each run ends with "LABEL rc=N".
. /share/params
ping -c 1 -W 2 "$APPLIANCE" >/dev/null 2>&1
T=${TOOLS_SCALE:-1}
. /share/guest_lib.sh
dmesg -c >/dev/null 2>&1
run write_bw_ce $((120 * T)) ib_write_bw -R -d rxe0 -n 500 -T 3 "$APPLIANCE"
run write_bw_plain $((120 * T)) ib_write_bw -R -d rxe0 -n 500 "$APPLIANCE"
# What the kernel said meanwhile (rxe logs a dropped packet of the wrong
# QP type at most at a warning, rate-limited; nothing is expected here).
dmesg | sed 's/^/dmesg: /'
