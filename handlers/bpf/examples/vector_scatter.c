/* vector_scatter: the eBPF twin of the native `datatype` handler with
 * layout=vector, the MPI vector datatype of sPIN (Hoefler et al., SC'17).
 * The sender packs blocks of BLOCKLEN bytes back to back; each packet's
 * payload lands in the first bound region, message byte k at
 *
 *   arg + (k / BLOCKLEN) * STRIDE + k % BLOCKLEN
 *
 * as the packets arrive (ctx->message_offset places a packet that starts
 * mid-block), and the packet is consumed. BLOCKLEN and STRIDE are compile-
 * time constants (the loader refuses division by a register):
 *
 *   clang -O2 -target bpf -mcpu=v2 -ffreestanding -DBLOCKLEN=64 \
 *       -DSTRIDE=256 -c vector_scatter.c -o vector_scatter.o
 *   spinctl install --bpf vector_scatter.o vs --bind 7 --param arg=0 \
 *       --diad_stream 9
 *
 * A packet may touch at most MAX_BLOCKS blocks (the loop is unrolled);
 * more, or a block outside the region, FAILs the message. Unlike the native
 * twin, which checks the whole message's extent in its header handler, a
 * message that does not fit may be placed in part before it fails.
 */
#include "handlers/bpf/spin_bpf.h"

#ifndef BLOCKLEN
#define BLOCKLEN 64
#endif
#ifndef STRIDE
#define STRIDE 256
#endif
#define MAX_BLOCKS 32

SPIN_PAYLOAD(vector_scatter) {
  if (ctx->payload_offset == SPIN_ABSENT || ctx->l3_end == SPIN_ABSENT ||
      ctx->l3_end < ctx->payload_offset) {
    return SPIN_FAIL;
  }
  spin_u64 length = ctx->l3_end - ctx->payload_offset;
  spin_u64 done = 0;
  /* One block per step, MAX_BLOCKS steps written out (the loader has no
   * loops), without a branch: the loader counts the paths through a
   * program, and an if per step would double them every time. A step past
   * the payload's end copies 0 bytes, which the helper does without a
   * check. The empty asm keeps clang from turning the branchless min back
   * into a branch (eBPF has no conditional move). */
#define STEP                                                              \
  do {                                                                    \
    spin_u64 k = ctx->message_offset + done;                              \
    spin_u64 within = k % BLOCKLEN;                                       \
    spin_s64 diff = (spin_s64)((BLOCKLEN - within) - (length - done));    \
    spin_s64 mask = diff >> 63;                                           \
    asm volatile("" : "+r"(mask));                                        \
    spin_u64 n = (length - done) + (diff & mask); /* min(room, left) */   \
    spin_dma_to_region(ctx, ctx->param + k / BLOCKLEN * STRIDE + within,  \
                       ctx->payload_offset + done, n);                    \
    done += n;                                                            \
  } while (0)
#define STEP4 STEP; STEP; STEP; STEP
  STEP4; STEP4; STEP4; STEP4; STEP4; STEP4; STEP4; STEP4; /* MAX_BLOCKS */
  if (done < length) return SPIN_FAIL;
  spin_set_disposition(ctx, SPIN_CONSUME);
  return SPIN_SUCCESS;
}
