/* A function in .text: no handler section. */
#include "handlers/bpf/spin_bpf.h"
int payload(struct spin_ctx *ctx) { return ctx->packet_length ? 2 : 3; }
