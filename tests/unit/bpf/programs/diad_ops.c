/* sPIN's put and get from the NIC: the payload's first 4 bytes as a stream
 * message to stream 7, the Ethernet header written at 0x1000 of the peer's
 * region 0x55, and 64 bytes of its region 0x66 at 0x2000 read into the
 * bound region at offset 8. With arg 1, a put past the packet's end. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(diad_ops) {
  if (ctx->param == 1) {
    spin_diad_put_stream(ctx, 7, ctx->packet_length - 2, 4);
    return SPIN_SUCCESS;
  }
  spin_u64 started = spin_diad_put_stream(ctx, 7, ctx->payload_offset, 4);
  started += spin_diad_put_write(ctx, 0x55, 0x1000, 0, 14);
  started += spin_diad_get(ctx, 0x66, 0x2000, 64, 8);
  return started == 3 ? SPIN_SUCCESS : SPIN_FAIL;
}
