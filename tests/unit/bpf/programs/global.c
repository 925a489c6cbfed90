/* Keeps data in a global variable instead of state memory. */
#include "handlers/bpf/spin_bpf.h"
spin_u64 packets;
SPIN_PAYLOAD(global) {
  packets++;
  return SPIN_SUCCESS;
}
