/* Header, payload and completion, each leaving a trace in state:
 * offset 0 headers, 8 payloads, 16 completions, 24 last dropped_bytes. */
#include "handlers/bpf/spin_bpf.h"
SPIN_HEADER(header) {
  spin_state_add(ctx, 0, 1);
  return ctx->packet_length > 1000 ? SPIN_DROP : SPIN_PROCESS_DATA;
}
SPIN_PAYLOAD(payload) {
  spin_state_add(ctx, 8, 1);
  spin_event(ctx, 0x1234, ctx->packet_length);
  return SPIN_SUCCESS;
}
SPIN_COMPLETION(completion) {
  spin_state_add(ctx, 16, 1);
  spin_state_store(ctx, 24, 8, ctx->dropped_bytes);
  return ctx->flow_control ? SPIN_FAIL : SPIN_SUCCESS;
}
