/* A loop the compiler cannot unroll: a backward jump. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(loop) {
  for (spin_u32 i = 0; i < ctx->packet_length; i++) spin_state_add(ctx, 0, i);
  return SPIN_SUCCESS;
}
