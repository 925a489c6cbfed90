/* Windows used as intended: the Ethernet header when the frame has one
 * (else SPIN_DROP), its ethertype copied into state word 1 by way of a
 * pointer moved by a constant and a spill to the stack, and state word 0
 * incremented atomically. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(windows) {
  spin_u8 *eth = spin_pkt_ptr(ctx, 0, 14);
  if (!eth) return SPIN_DROP;
  spin_u64 *s = spin_state_ptr(ctx, 0, 16);
  if (!s) return SPIN_FAIL;
  volatile spin_u8 *type = eth + 12;
  __sync_fetch_and_add(&s[0], 1);
  s[1] = (spin_u64)type[0] << 8 | type[1];
  return SPIN_SUCCESS;
}
