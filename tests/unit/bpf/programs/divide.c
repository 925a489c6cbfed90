/* Divides by a value that may be zero. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(divide) {
  spin_state_store(ctx, 0, 8, 1000 / ctx->param);
  return SPIN_SUCCESS;
}
