/* Valid, but adds past an 8-byte state at run time: the helper refuses and
 * the invocation fails. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(overrun) {
  spin_state_add(ctx, 0, 1);
  spin_state_add(ctx, 8, 1);
  return SPIN_SUCCESS;
}
