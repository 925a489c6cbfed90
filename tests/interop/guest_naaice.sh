# Guest command file of the interop "naaice" case: our NAAICE-style host
# (naaice_client, built on the host, run from /share) offloads vector_sum and
# matvec (and the library's add1) to the appliance's NAAICE port, several
# RPCs each, every result checked by the client; then vector_sum again under
# code $INSTALLED_CODE, which only a naaice_function handler installed over
# gRPC serves. Lines are prefixed with the function.
. /share/params
ping -c 1 -W 2 "$APPLIANCE" >/dev/null 2>&1
for fn in vector_sum matvec add1; do
  timeout 60 /share/naaice_client "$APPLIANCE" "$NAAICE_PORT" --function $fn \
    --size "$NAAICE_SIZE" --rpcs "$NAAICE_RPCS" >/tmp/$fn.log 2>&1
  rc=$?
  sed "s/^/$fn: /" /tmp/$fn.log
  echo "$fn rc=$rc"
done
timeout 60 /share/naaice_client "$APPLIANCE" "$NAAICE_PORT" --function vector_sum \
  --code "$INSTALLED_CODE" --size "$NAAICE_SIZE" --rpcs "$NAAICE_RPCS" >/tmp/installed.log 2>&1
rc=$?
sed "s/^/installed: /" /tmp/installed.log
echo "installed rc=$rc"
