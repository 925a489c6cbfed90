/* More than SPIN_MAX_INSNS instructions. */
#include "handlers/bpf/spin_bpf.h"
#define A spin_state_add(ctx, 0, 1);
#define A10 A A A A A A A A A A
#define A100 A10 A10 A10 A10 A10 A10 A10 A10 A10 A10
SPIN_PAYLOAD(too_long) {
  A100 A100 A100 A100 A100 A100 A100 A100 A100 A100 A100 A100
  return SPIN_SUCCESS;
}
