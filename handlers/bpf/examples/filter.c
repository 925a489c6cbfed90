/* filter: the eBPF twin of the native `filter` handler: drops every packet
 * its match rule sends it; with `arg` set (1..8 bytes, e.g. arg=0x474554
 * for "GET"), only packets whose L4 payload starts with those bytes.
 */
#include "handlers/bpf/spin_bpf.h"

SPIN_INLINE spin_u32 prefix_length(spin_u64 arg) {
  spin_u32 n = 0;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    if (arg >> (8 * i)) n = i + 1;
  }
  return n;
}

SPIN_PAYLOAD(filter) {
  spin_u32 n = prefix_length(ctx->param);
  if (n == 0) return SPIN_DROP;
  if (ctx->payload_offset == SPIN_ABSENT || ctx->l3_end == SPIN_ABSENT ||
      ctx->payload_offset + n > ctx->l3_end) {
    return SPIN_SUCCESS;
  }
  /* Eight bytes when the packet has them, else exactly the n compared. */
  const spin_u8 *p = spin_pkt_ptr(ctx, ctx->payload_offset, 8);
  spin_u64 head = 0;
  if (p) {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      if (i < n) head = (head << 8) | p[i];
    }
  } else {
#pragma unroll
    for (int i = 0; i < 8; i++) {
      if (i < n) head = (head << 8) | spin_pkt_load(ctx, ctx->payload_offset + i, 1);
    }
  }
  return head == ctx->param ? SPIN_DROP : SPIN_SUCCESS;
}
