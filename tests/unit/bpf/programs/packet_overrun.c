/* Valid, but writes one byte past the end of its frame at run time: the
 * helper refuses and the invocation fails. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(packet_overrun) {
  spin_pkt_store(ctx, ctx->packet_length, 1, 0xff);
  return SPIN_SUCCESS;
}
