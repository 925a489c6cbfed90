/* Compiled with -mcpu=v3: 32-bit jumps librte_bpf 22.11 cannot run. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(jmp32) {
  return (spin_u32)ctx->packet_length > 100u ? SPIN_DROP : SPIN_SUCCESS;
}
