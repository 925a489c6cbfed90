/* Writes bits computed from a packet address into state memory. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(leak) {
  spin_u8 *p = spin_pkt_ptr(ctx, 0, 1);
  spin_u64 *s = spin_state_ptr(ctx, 0, 8);
  if (!p || !s) return SPIN_SUCCESS;
  *s = ((spin_u64)p >> 12) ^ 0x5a;
  return SPIN_SUCCESS;
}
