/* Indexes a window with a value only known at run time. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(variable) {
  spin_u8 *p = spin_pkt_ptr(ctx, 0, 64);
  if (!p) return SPIN_SUCCESS;
  return p[ctx->param & 63];
}
