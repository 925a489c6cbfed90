/* Dereferences a window without comparing it with 0: a short packet would
 * make it a null pointer. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(unchecked) {
  spin_u8 *p = spin_pkt_ptr(ctx, 0, 14);
  return p[12];
}
