/* count: the eBPF twin of the native `count` handler with by=none: one
 * {packets, bytes} pair at state offsets 0 and 8 (state_size >= 16), every
 * packet forwarded unchanged.
 *
 *   clang -O2 -target bpf -mcpu=v2 -ffreestanding -c count.c -o count.o
 *   spinctl install --bpf count.o count-all --state_size 16
 */
#include "handlers/bpf/spin_bpf.h"

SPIN_PAYLOAD(count) {
  spin_state_add(ctx, 0, 1);
  spin_state_add(ctx, 8, ctx->packet_length);
  return SPIN_SUCCESS;
}
