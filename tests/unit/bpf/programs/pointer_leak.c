/* Writes a packet address into state memory, where spinctl state reads it. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(leak) {
  spin_u8 *p = spin_pkt_ptr(ctx, 0, 1);
  spin_u64 *s = spin_state_ptr(ctx, 0, 8);
  if (!p || !s) return SPIN_SUCCESS;
  *s = (spin_u64)p;
  return SPIN_SUCCESS;
}
