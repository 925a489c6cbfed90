/* Hands a helper a stack buffer where the context belongs: the helper would
 * read the engine's private fields from beyond it. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(stack_as_ctx) {
  volatile spin_u64 fake[8] = {0};
  return spin_state_add((struct spin_ctx *)fake, 0, 1) ? SPIN_SUCCESS
                                                         : SPIN_DROP;
}
