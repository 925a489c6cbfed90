/* A window whose length the loader cannot know. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(variable) {
  spin_u8 *p = spin_pkt_ptr(ctx, 0, ctx->packet_length);
  if (!p) return SPIN_SUCCESS;
  return p[0];
}
