/* Reads one byte past the 4-byte window it asked for. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(overrun) {
  spin_u8 *p = spin_pkt_ptr(ctx, 0, 4);
  if (!p) return SPIN_SUCCESS;
  return p[4];
}
