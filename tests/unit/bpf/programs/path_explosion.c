/* Forty ifs in a row: 2^40 paths from entry to exit, each of which
 * librte_bpf's validator would walk. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(paths) {
  spin_u64 x = ctx->param;
#pragma unroll
  for (int i = 0; i < 40; i++) {
    if (x & (1ull << i)) spin_event(ctx, i, x);
  }
  return SPIN_SUCCESS;
}
