/* Reads past the end of its context. */
#include "handlers/bpf/spin_bpf.h"
SPIN_PAYLOAD(oob) {
  volatile spin_u64 *p = (volatile spin_u64 *)((char *)ctx + 256);
  return *p ? SPIN_SUCCESS : SPIN_DROP;
}
