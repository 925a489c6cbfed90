/* Calls a function of its own that is not inlined. */
#include "handlers/bpf/spin_bpf.h"
__attribute__((noinline)) static int half(struct spin_ctx *ctx) {
  return ctx->packet_length > 1000 ? SPIN_DROP : SPIN_SUCCESS;
}
SPIN_PAYLOAD(caller) { return half(ctx); }
