/* Calls a function that is not a spinnic helper. */
#include "handlers/bpf/spin_bpf.h"
extern spin_u64 bpf_ktime_get_ns(void);
SPIN_PAYLOAD(unknown) { return bpf_ktime_get_ns() ? SPIN_SUCCESS : SPIN_DROP; }
