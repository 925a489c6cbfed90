/* spin_bpf.h: the one header a spinnic eBPF handler includes.
 *
 * A handler is a C file compiled with stock clang:
 *
 *   clang -O2 -target bpf -mcpu=v2 -ffreestanding -c my.c -o my.o
 *
 * and installed with `spinctl install --bpf my.o NAME ...` (docs/bpf.md).
 * It defines up to three functions, one per sPIN handler, each in the ELF
 * section its macro names, each taking the one context below:
 *
 *   SPIN_HEADER(my_header)    { ... }  first packet of a message:
 *       SPIN_PROCESS_DATA (run the payload handler on every packet),
 *       SPIN_DROP (drop the message), SPIN_SUCCESS (no payload handler),
 *       SPIN_FAIL.
 *   SPIN_PAYLOAD(my_payload)  { ... }  every packet: SPIN_SUCCESS (the
 *       packet goes on per its disposition), SPIN_DROP, SPIN_FAIL.
 *   SPIN_COMPLETION(my_done)  { ... }  after the last packet: SPIN_SUCCESS
 *       or SPIN_FAIL; ctx->dropped_bytes and ctx->flow_control are set.
 *
 * These are the native handlers' codes and ordering (handlers/api/handler.h).
 *
 * Rules the loader enforces (INVALID_ARGUMENT naming the section and the
 * instruction otherwise): no loops (every jump goes forward), at most
 * SPIN_MAX_INSNS instructions per handler, no calls but to the helpers
 * below (mark your own functions SPIN_INLINE), no global variables, and
 * every memory access provably inside the context or the stack. Packet
 * bytes, state memory and bound regions are reached through helpers that
 * check every offset: an access outside them makes the invocation FAIL
 * (counted; past disable_after_overruns the handler is disabled).
 */
#ifndef SPINNIC_HANDLERS_BPF_SPIN_BPF_H_
#define SPINNIC_HANDLERS_BPF_SPIN_BPF_H_

typedef __UINT8_TYPE__ spin_u8;
typedef __UINT16_TYPE__ spin_u16;
typedef __UINT32_TYPE__ spin_u32;
typedef __UINT64_TYPE__ spin_u64;
typedef __INT64_TYPE__ spin_s64;

#define SPIN_MAX_INSNS 4096

/* Handler results. */
#define SPIN_PROCESS_DATA 0
#define SPIN_DROP 1
#define SPIN_SUCCESS 2
#define SPIN_FAIL 3

/* Packet dispositions (spin_set_disposition). */
#define SPIN_FORWARD 0 /* default: out of the paired port */
#define SPIN_REPLY 1   /* back out of the port it arrived on */
#define SPIN_DISCARD 2 /* freed, counted as a handler drop */
#define SPIN_CONSUME                                    \
  3 /* the handler took its bytes (spin_dma_to_region): \
       the transport keeps it, no drop is counted */

/* A layer offset the classifier did not find. */
#define SPIN_ABSENT 0xffff

/* ctx->transport: who delivered the message. */
#define SPIN_PASSTHROUGH 0 /* a frame a match rule sent: one packet */
#define SPIN_DIAD_STREAM 1
#define SPIN_DIAD_WRITE 2
#define SPIN_ROCE_SEND 3
#define SPIN_ROCE_WRITE 4

/* ctx->flags */
#define SPIN_IPV4 1
#define SPIN_IPV6 2

/* What every handler function receives. Read-only by convention: the
 * helpers never trust what a program wrote here. */
struct spin_ctx {
  spin_u32 packet_length;  /* bytes of the frame, Ethernet header on */
  spin_u16 l3_offset;      /* IPv4/IPv6 header, or SPIN_ABSENT */
  spin_u16 l4_offset;      /* TCP/UDP/ICMP header, or SPIN_ABSENT */
  spin_u16 payload_offset; /* first byte after the L4 header, or ABSENT */
  spin_u16 l3_end;         /* one past the IP datagram, or SPIN_ABSENT */
  spin_u16 ethertype;      /* innermost ethertype, host order */
  spin_u8 ip_proto;        /* IPv4 protocol / IPv6 next header */
  spin_u8 flags;           /* SPIN_IPV4, SPIN_IPV6 */
  spin_u16 in_port;        /* DPDK port id the packet arrived on */
  spin_u16 vlan_tags;      /* 0, 1 or 2 */
  spin_u32 state_size;     /* bytes of ECTX state memory */
  spin_u32 hpu;            /* which HPU runs this call (0-based) */
  spin_u32 ectx_id;        /* the installed handler's id */
  spin_u32 flow_control;   /* completion: 1 if flow control triggered */
  spin_u32 reserved;       /* 0 */
  spin_u64 dropped_bytes;  /* completion: bytes the message dropped */
  spin_u64 param;          /* the install's `arg` parameter (default 0) */
  /* The message this packet is part of, as its transport knows it
   * (docs/handlers.md, "The packet"). */
  spin_u64 message_offset;  /* of the payload's first byte in the message */
  spin_u64 message_length;  /* the whole message; 0 while unknown (a RoCE
                               SEND before its last packet) */
  spin_u64 message_address; /* DiAD write / RoCE WRITE target address of the
                               payload's first byte; else 0 */
  spin_u32 message_source;  /* DiAD peer slot, RoCE source QPN; else 0 */
  spin_u8 transport;        /* SPIN_PASSTHROUGH ... SPIN_ROCE_WRITE */
  spin_u8 reserved2[3];     /* 0 */
};

/* Helpers: the eBPF faces of HandlerContext's actions (docs/bpf.md). Sizes
 * are 1, 2, 4 or 8 bytes; anything else, or an offset outside the buffer,
 * makes the invocation FAIL. */

/* Windows: direct access at JIT speed. A pointer to `length` bytes at
 * `offset` of the packet (the frame from its Ethernet header on) or of the
 * ECTX state memory, or 0 when they are not all there (a short packet, the
 * completion handler for spin_pkt_ptr). `length` must be a constant from 1
 * to SPIN_WINDOW_MAX; the loader proves that the program compares the
 * pointer with 0 before using it and that every access through it, at
 * constant offsets, stays inside `length`. For a variable offset use the
 * load/store helpers below. Packet bytes are in network order
 * (__builtin_bswap16/32/64); state in host order; __sync_fetch_and_add on
 * a state word is an atomic add. */
#define SPIN_WINDOW_MAX 4096
void *spin_pkt_ptr(struct spin_ctx *ctx, spin_u32 offset, spin_u32 length);
void *spin_state_ptr(struct spin_ctx *ctx, spin_u32 offset, spin_u32 length);

/* Packet bytes, read and written in network (big-endian) order. */
spin_u64 spin_pkt_load(struct spin_ctx *ctx, spin_u32 offset, spin_u32 size);
spin_u64 spin_pkt_store(struct spin_ctx *ctx, spin_u32 offset, spin_u32 size,
                        spin_u64 value);
/* ECTX state memory, in host (little-endian) order, shared by all HPUs. */
spin_u64 spin_state_load(struct spin_ctx *ctx, spin_u32 offset, spin_u32 size);
spin_u64 spin_state_store(struct spin_ctx *ctx, spin_u32 offset, spin_u32 size,
                          spin_u64 value);
/* Atomic 64-bit add to an 8-byte aligned state word; returns the new
 * value. */
spin_u64 spin_state_add(struct spin_ctx *ctx, spin_u32 offset, spin_u64 delta);
/* The first bound region's bytes (bounds and access rights checked). */
spin_u64 spin_region_load(struct spin_ctx *ctx, spin_u64 offset, spin_u32 size);
spin_u64 spin_region_store(struct spin_ctx *ctx, spin_u64 offset, spin_u32 size,
                           spin_u64 value);
/* Copies `length` packet bytes at `packet_offset` into the first bound
 * region at `region_offset` (sPIN's DMA to host memory): 0 when done; both
 * ranges are checked and the region must be writable, else the invocation
 * FAILs and nothing is copied. `length` 0 copies nothing and always
 * succeeds. */
spin_u64 spin_dma_to_region(struct spin_ctx *ctx, spin_u64 region_offset,
                            spin_u32 packet_offset, spin_u32 length);
/* Sends a copy of the current packet, as the program has left it so far,
 * out of SPIN_EMIT_INGRESS (the port it arrived on) or SPIN_EMIT_PAIRED;
 * returns 1 when queued, 0 when no buffer was free (counted). */
#define SPIN_EMIT_INGRESS 0
#define SPIN_EMIT_PAIRED 1
spin_u64 spin_emit_packet(struct spin_ctx *ctx, spin_u32 port);
/* DiAD from the NIC (sPIN's put and get), to the peer the install names
 * (parameter `peer`), on this HPU's own channel so that one HPU's messages
 * arrive in order. Each returns 1 when the transfer started, 0 when it
 * could not start now (DiAD off, unknown peer, the channel busy, window
 * full; counted by the transport, try again on a later packet). Packet
 * ranges are checked; no `peer` parameter makes the invocation FAIL.
 *   put_stream: `length` packet bytes at `packet_offset` as a stream
 *     message to `stream_id`;
 *   put_write: the same bytes written at `address` in the peer's region
 *     with `rkey`;
 *   get: `length` bytes at `address` of the peer's region `rkey` into the
 *     first bound region at `region_offset` (write a flag last to learn of
 *     completion; failures raise the ECTX's events). */
spin_u64 spin_diad_put_stream(struct spin_ctx *ctx, spin_u32 stream_id,
                              spin_u32 packet_offset, spin_u32 length);
spin_u64 spin_diad_put_write(struct spin_ctx *ctx, spin_u32 rkey,
                             spin_u64 address, spin_u32 packet_offset,
                             spin_u32 length);
spin_u64 spin_diad_get(struct spin_ctx *ctx, spin_u32 rkey, spin_u64 address,
                       spin_u32 length, spin_u64 region_offset);
/* SPIN_FORWARD, SPIN_REPLY, SPIN_DISCARD or SPIN_CONSUME for the current
 * packet. */
spin_u64 spin_set_disposition(struct spin_ctx *ctx, spin_u32 disposition);
/* Raises an event (spinctl events) with `value` as its 8 data bytes;
 * returns 1 when queued, 0 when the event ring was full. */
spin_u64 spin_event(struct spin_ctx *ctx, spin_u32 code, spin_u64 value);
/* The one's-complement sum update for a 16-bit field that changed from
 * `old_value` to `new_value` (RFC 1624): the new checksum. */
spin_u64 spin_csum_replace16(spin_u64 checksum, spin_u64 old_value,
                             spin_u64 new_value);
/* The CPU's cycle counter. */
spin_u64 spin_cycles(void);

/* For a function of your own: the loader runs one function per handler, so
 * every other function must be inlined into it. */
#define SPIN_INLINE static inline __attribute__((always_inline))

#define SPIN_SECTION(name) __attribute__((section(name), used))
#define SPIN_HEADER(fn) SPIN_SECTION("spin/header") int fn(struct spin_ctx *ctx)
#define SPIN_PAYLOAD(fn) \
  SPIN_SECTION("spin/payload") int fn(struct spin_ctx *ctx)
#define SPIN_COMPLETION(fn) \
  SPIN_SECTION("spin/completion") int fn(struct spin_ctx *ctx)

#endif /* SPINNIC_HANDLERS_BPF_SPIN_BPF_H_ */
