/* reflect: the eBPF twin of the native `reflect` handler: swaps the MAC
 * addresses, the IPv4/IPv6 addresses and the TCP/UDP ports, turns ICMP and
 * ICMPv6 echo requests into replies (checksum updated, RFC 1624), and sends
 * the packet back out of its ingress port. Frames to a group MAC address go
 * on unchanged. Headers are reached through windows (spin_pkt_ptr): plain
 * loads and stores, checked by the loader, no helper per byte.
 */
#include "handlers/bpf/spin_bpf.h"

#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_ICMPV6 58

#define SWAP(type, a, b)       \
  do {                         \
    type t_ = *(type *)(a);    \
    *(type *)(a) = *(type *)(b); \
    *(type *)(b) = t_;         \
  } while (0)

/* RFC 1624 eqn. 3 on network-order 16-bit words: HC' = ~(~HC + ~m + m'). */
SPIN_INLINE spin_u16 csum_replace16(spin_u16 check, spin_u16 old_word,
                                    spin_u16 new_word) {
  spin_u32 sum = (spin_u16)~check + (spin_u16)~old_word + new_word;
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return (spin_u16)~sum;
}

SPIN_INLINE void answer_echo(struct spin_ctx *ctx, spin_u8 request,
                             spin_u8 reply) {
  spin_u8 *icmp = spin_pkt_ptr(ctx, ctx->l4_offset, 4);
  if (!icmp || icmp[0] != request) return;
  spin_u16 old_word = __builtin_bswap16(*(spin_u16 *)icmp);
  icmp[0] = reply;
  spin_u16 new_word = __builtin_bswap16(*(spin_u16 *)icmp);
  spin_u16 check = __builtin_bswap16(*(spin_u16 *)(icmp + 2));
  *(spin_u16 *)(icmp + 2) =
      __builtin_bswap16(csum_replace16(check, old_word, new_word));
}

SPIN_PAYLOAD(reflect) {
  spin_u8 *eth = spin_pkt_ptr(ctx, 0, 14);
  if (!eth || (eth[0] & 1)) return SPIN_SUCCESS;
  SWAP(spin_u32, eth, eth + 6);
  SWAP(spin_u16, eth + 4, eth + 10);
  spin_u8 *ip4 = 0;
  spin_u8 *ip6 = 0;
  if (ctx->flags & SPIN_IPV4) ip4 = spin_pkt_ptr(ctx, ctx->l3_offset, 20);
  if (ctx->flags & SPIN_IPV6) ip6 = spin_pkt_ptr(ctx, ctx->l3_offset, 40);
  if (ip4) {
    SWAP(spin_u32, ip4 + 12, ip4 + 16);
  } else if (ip6) {
    SWAP(spin_u64, ip6 + 8, ip6 + 24);
    SWAP(spin_u64, ip6 + 16, ip6 + 32);
  } else {
    spin_set_disposition(ctx, SPIN_REPLY);
    return SPIN_SUCCESS;
  }
  if (ctx->l4_offset != SPIN_ABSENT) {
    if (ctx->ip_proto == PROTO_TCP || ctx->ip_proto == PROTO_UDP) {
      spin_u8 *ports = spin_pkt_ptr(ctx, ctx->l4_offset, 4);
      if (ports) SWAP(spin_u16, ports, ports + 2);
    } else if (ctx->ip_proto == PROTO_ICMP && ip4) {
      answer_echo(ctx, 8, 0);
    } else if (ctx->ip_proto == PROTO_ICMPV6 && ip6) {
      answer_echo(ctx, 128, 129);
    }
  }
  spin_set_disposition(ctx, SPIN_REPLY);
  return SPIN_SUCCESS;
}
