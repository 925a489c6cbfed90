/* count: the eBPF twin of the native `count` handler with by=none: one
 * {packets, bytes} pair at state offsets 0 and 8 (state_size >= 16), every
 * packet forwarded unchanged. The counters are a window into state memory
 * (spin_state_ptr), updated with atomic adds like the native handler's.
 *
 *   clang -O2 -target bpf -mcpu=v2 -ffreestanding -c count.c -o count.o
 *   spinctl install --bpf count.o count-all --state_size 16
 */
#include "handlers/bpf/spin_bpf.h"

SPIN_PAYLOAD(count) {
  spin_u64 *counters = spin_state_ptr(ctx, 0, 16);
  if (!counters) return SPIN_FAIL;
  __sync_fetch_and_add(&counters[0], 1);
  __sync_fetch_and_add(&counters[1], ctx->packet_length);
  return SPIN_SUCCESS;
}
