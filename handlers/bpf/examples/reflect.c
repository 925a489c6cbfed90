/* reflect: the eBPF twin of the native `reflect` handler: swaps the MAC
 * addresses, the IPv4/IPv6 addresses and the TCP/UDP ports, turns ICMP and
 * ICMPv6 echo requests into replies (checksum updated, RFC 1624), and sends
 * the packet back out of its ingress port. Frames to a group MAC address go
 * on unchanged.
 */
#include "handlers/bpf/spin_bpf.h"

#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_ICMPV6 58

/* Swaps `size` (1, 2, 4 or 8) bytes at a and b. */
SPIN_INLINE void swap(struct spin_ctx *ctx, spin_u32 a, spin_u32 b,
                        spin_u32 size) {
  spin_u64 x = spin_pkt_load(ctx, a, size);
  spin_u64 y = spin_pkt_load(ctx, b, size);
  spin_pkt_store(ctx, a, size, y);
  spin_pkt_store(ctx, b, size, x);
}

SPIN_INLINE void answer_echo(struct spin_ctx *ctx, spin_u32 l4,
                               spin_u64 request, spin_u64 reply) {
  if (l4 + 4 > ctx->packet_length) return;
  spin_u64 old_word = spin_pkt_load(ctx, l4, 2);
  if ((old_word >> 8) != request) return;
  spin_u64 new_word = (reply << 8) | (old_word & 0xff);
  spin_pkt_store(ctx, l4, 2, new_word);
  spin_pkt_store(ctx, l4 + 2, 2,
                 spin_csum_replace16(spin_pkt_load(ctx, l4 + 2, 2), old_word,
                                     new_word));
}

SPIN_PAYLOAD(reflect) {
  if (ctx->packet_length < 14) return SPIN_SUCCESS;
  if (spin_pkt_load(ctx, 0, 1) & 1) return SPIN_SUCCESS;
  swap(ctx, 0, 6, 4);
  swap(ctx, 4, 10, 2);
  spin_u32 l3 = ctx->l3_offset;
  if ((ctx->flags & SPIN_IPV4) && l3 + 20 <= ctx->packet_length) {
    swap(ctx, l3 + 12, l3 + 16, 4);
  } else if ((ctx->flags & SPIN_IPV6) && l3 + 40 <= ctx->packet_length) {
    swap(ctx, l3 + 8, l3 + 24, 8);
    swap(ctx, l3 + 16, l3 + 32, 8);
  } else {
    spin_set_disposition(ctx, SPIN_REPLY);
    return SPIN_SUCCESS;
  }
  spin_u32 l4 = ctx->l4_offset;
  if (l4 != SPIN_ABSENT) {
    if (ctx->ip_proto == PROTO_TCP || ctx->ip_proto == PROTO_UDP) {
      if (l4 + 4 <= ctx->packet_length) swap(ctx, l4, l4 + 2, 2);
    } else if (ctx->ip_proto == PROTO_ICMP && (ctx->flags & SPIN_IPV4)) {
      answer_echo(ctx, l4, 8, 0);
    } else if (ctx->ip_proto == PROTO_ICMPV6 && (ctx->flags & SPIN_IPV6)) {
      answer_echo(ctx, l4, 128, 129);
    }
  }
  spin_set_disposition(ctx, SPIN_REPLY);
  return SPIN_SUCCESS;
}
