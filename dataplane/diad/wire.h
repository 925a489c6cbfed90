// The DiAD wire format, defined once (docs/diad.md documents it byte by
// byte): Ethernet / IPv6 / UDP / DiAD header / payload. Pure functions over
// bytes (no DPDK) so that unit tests and the fuzz target (tests/fuzz/
// diad_fuzz.cc) link them alone.
//
// DiAD (Lant et al., FPL23) sends raw IPv6 payloads; we carry the header in
// UDP so that RSS can spread a peer's channels over HPU lcores: the UDP
// source port is kChannelPortBase + channel in both directions, the
// destination port the configured DiAD port.
#ifndef SPINNIC_DATAPLANE_DIAD_WIRE_H_
#define SPINNIC_DATAPLANE_DIAD_WIRE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace spinnic::diad {

inline constexpr uint16_t kDefaultUdpPort = 4792;
inline constexpr uint8_t kVersion = 1;
// UDP source ports 49152 + channel: the IANA dynamic range.
inline constexpr uint16_t kChannelPortBase = 0xc000;
inline constexpr uint16_t kMaxChannels = 1024;

inline constexpr size_t kEthernetBytes = 14;
inline constexpr size_t kIpv6Bytes = 40;
inline constexpr size_t kUdpBytes = 8;

enum class PacketType : uint8_t {
  // Sequenced (reliable) packets: carry a sequence number of their
  // direction of the channel and are delivered exactly once, in order.
  kReadRequest = 1,
  kWriteRequest = 2,
  kReadResponse = 3,
  kWriteResponse = 4,
  kStream = 5,
  // Unsequenced control packets: never retransmitted, never acknowledged.
  kAck = 6,    // cumulative: every sequence number below `ack` arrived
  kNack = 7,   // a gap: `ack` is the sequence number the receiver expects
  kUnack = 8,  // the sender asks for an ACK now (window full, timer fired)
};
inline constexpr uint8_t kMaxPacketType = 8;

inline bool IsSequenced(PacketType type) {
  return type >= PacketType::kReadRequest && type <= PacketType::kStream;
}
const char* PacketTypeName(PacketType type);

// Flag bits (header byte 1).
inline constexpr uint8_t kFlagFirst = 0x01;  // first packet of a message
inline constexpr uint8_t kFlagLast = 0x02;   // last packet of a message
// The receiver should acknowledge now rather than coalesce (the sender's
// window is about to fill, or the message ends).
inline constexpr uint8_t kFlagAckNow = 0x04;
// On an ACK: it answers an UNACK (the sender may retransmit from `ack`).
inline constexpr uint8_t kFlagProbeReply = 0x08;
// On an ACK (SELECTIVE recovery only, never sent to a GO_BACK_N peer): the
// payload is a selective acknowledgement bitmap (see SACK below).
inline constexpr uint8_t kFlagSack = 0x10;
// On an ACK (congestion control, never sent to a peer that did not
// advertise kEcnEchoCapable): at least one packet this ACK acknowledges
// arrived CE-marked (docs/congestion.md, "ECN echo").
inline constexpr uint8_t kFlagEcnEcho = 0x20;
inline constexpr uint8_t kKnownFlags = 0x3f;

// ECN echo (docs/congestion.md). An endpoint with congestion control on
// puts kEcnEchoCapable in the `address` field of every control packet
// (ACK, NACK, UNACK) it sends; the paper's wire, and spinnic without
// congestion control, ignore `address` there. Only a peer that saw it in
// this session gets ACKs with kFlagEcnEcho.
inline constexpr uint64_t kEcnEchoCapable = 0x45434e4543484f31;  // "ECNECHO1"

// SELECTIVE recovery (docs/diad.md, "Selective repeat"). A SELECTIVE
// endpoint puts kSackCapable in the `key` field of every control packet
// (ACK, NACK, UNACK) it sends. The paper's wire ignores `key` on control
// packets, so a GO_BACK_N peer is not affected; a SELECTIVE peer that sees
// it knows it may send SACKs for the rest of the session.
inline constexpr uint32_t kSackCapable = 0x5341434b;  // "SACK"
// A SACK is an ACK with kFlagSack whose payload is a bitmap: bit j (byte
// j / 8, most significant bit first) set means sequence number `ack` + j
// arrived and is held by the receiver. Bit 0 is `ack` itself, which the
// cumulative ack says is missing: it must be 0. `msg_length` equals
// `payload_length`, `msg_offset` is 0. 1..kMaxSackBytes bytes: the bitmap
// covers at most the largest window (32768 packets).
inline constexpr uint32_t kMaxSackBytes = 4096;

// Result of a remote access (Read/Write Response `status`), and of a
// transaction as the initiator sees it. Values on the wire are < 0x80;
// kPeer* are local outcomes that never travel.
enum class Status : uint8_t {
  kOk = 0,
  kBadKey = 1,        // no region with that rkey / no such stream
  kOutOfBounds = 2,   // address range outside the region
  kNoAccess = 3,      // the region lacks remote read / remote write
  kBadLength = 4,     // length 0, or above the responder's limit
  kRejected = 5,      // a handler dropped or failed the message
  kPeerDown = 0x80,   // retries exhausted; the transaction failed locally
  kPeerReset = 0x81,  // the peer restarted (new epoch) before it answered
  kAborted = 0x82,    // the initiator gave up (shutdown, deregistration)
  // No response within the transaction deadline (ChannelConfig::
  // txn_deadline_ns) although the peer acknowledged the request: the
  // transaction's slot is released, the channel stays up.
  kDeadlineExceeded = 0x83,
};
const char* StatusName(Status status);

// The header as it travels: 48 bytes, every field big-endian, no padding.
// Accessors in Header/ParseHeader below; offsets are fixed by the
// static_asserts and documented in docs/diad.md.
struct WireHeader {
  uint8_t version_type;  // version << 4 | type
  uint8_t flags;
  uint8_t channel[2];
  uint8_t src_epoch[4];   // the sender's epoch of this channel's session
  uint8_t dst_epoch[4];   // the receiver's epoch as the sender knows it, or 0
  uint8_t seq[4];         // sequenced types: this packet's sequence number
  uint8_t ack[4];         // next sequence number expected from the receiver
  uint8_t txn[4];         // transaction id (requests and their responses)
  uint8_t key[4];         // rkey (read/write) or stream id (stream)
  uint8_t address[8];     // remote address of this packet's first byte
  uint8_t msg_length[4];  // bytes in the whole message / read length
  uint8_t msg_offset[4];  // this packet's payload offset in the message
  uint8_t payload_length[2];  // payload bytes after the header in this packet
  uint8_t status;
  uint8_t reserved;  // zero
};
static_assert(sizeof(WireHeader) == 48);
static_assert(offsetof(WireHeader, channel) == 2);
static_assert(offsetof(WireHeader, src_epoch) == 4);
static_assert(offsetof(WireHeader, dst_epoch) == 8);
static_assert(offsetof(WireHeader, seq) == 12);
static_assert(offsetof(WireHeader, ack) == 16);
static_assert(offsetof(WireHeader, txn) == 20);
static_assert(offsetof(WireHeader, key) == 24);
static_assert(offsetof(WireHeader, address) == 28);
static_assert(offsetof(WireHeader, msg_length) == 36);
static_assert(offsetof(WireHeader, msg_offset) == 40);
static_assert(offsetof(WireHeader, payload_length) == 44);
static_assert(offsetof(WireHeader, status) == 46);
static_assert(offsetof(WireHeader, reserved) == 47);
inline constexpr size_t kHeaderBytes = sizeof(WireHeader);
// Ethernet + IPv6 + UDP + DiAD: what a packet costs besides its payload.
inline constexpr size_t kFrameOverhead =
    kEthernetBytes + kIpv6Bytes + kUdpBytes + kHeaderBytes;

// The header in host order.
struct Header {
  PacketType type = PacketType::kAck;
  uint8_t flags = 0;
  uint16_t channel = 0;
  uint32_t src_epoch = 0;
  uint32_t dst_epoch = 0;
  uint32_t seq = 0;
  uint32_t ack = 0;
  uint32_t txn = 0;
  uint32_t key = 0;
  uint64_t address = 0;
  uint32_t msg_length = 0;
  uint32_t msg_offset = 0;
  uint16_t payload_length = 0;
  Status status = Status::kOk;

  bool first() const { return (flags & kFlagFirst) != 0; }
  bool last() const { return (flags & kFlagLast) != 0; }
};

// Why a DiAD frame was refused; every refusal is counted by its reason
// (docs/diad.md lists them).
enum class ParseError : uint8_t {
  kNone = 0,
  kTruncated,        // shorter than the headers, or UDP length past the frame
  kBadVersion,       // version is not kVersion
  kBadType,          // type outside 1..8
  kBadFlags,         // unknown flag bits, or FIRST/LAST on a control packet
  kBadReserved,      // reserved byte not zero
  kBadLength,        // payload_length disagrees with the UDP length, or
                     // msg_offset + payload_length > msg_length, or a payload
                     // on a type that carries none
  kBadChecksum,      // UDP checksum zero or wrong
  kChannelMismatch,  // UDP source port is not kChannelPortBase + channel
  kCount,
};
const char* ParseErrorName(ParseError error);

// Reads the DiAD header at `udp_offset` + 8 of an Ethernet frame whose IPv6
// header starts at `ip_offset` and whose UDP header starts at `udp_offset`
// (as the classifier found them), verifies the UDP checksum over the IPv6
// pseudo-header and the header's own consistency. On success fills `out`
// and `payload_offset` (frame offset of the first payload byte). Never reads
// outside [frame, frame + length).
ParseError ParseFrame(const uint8_t* frame, uint32_t length, uint32_t ip_offset,
                      uint32_t udp_offset, Header* out,
                      uint32_t* payload_offset);

// Addresses of one end of a DiAD path.
struct Endpoint {
  std::array<uint8_t, 6> mac{};
  std::array<uint8_t, 16> ip{};
  // The ECN codepoint (RFC 3168: 0 Not-ECT, 2 ECT(0)) of the frames this
  // end sends, in the IPv6 traffic class; BuildFrame takes it from `src`.
  uint8_t ecn = 0;
};

// Payload bytes one frame can carry: the UDP length is 16 bits.
inline constexpr size_t kMaxPayloadBytes = 0xffff - kUdpBytes - kHeaderBytes;

// Writes Ethernet / IPv6 / UDP / DiAD header for `header` into `out` and
// `payload` after them (not copied when it already is at
// out + kFrameOverhead), sets header.payload_length from payload.size() and
// the UDP checksum. `out` must hold kFrameOverhead + payload.size() bytes.
// Returns the frame length, or 0 (nothing written) when the payload exceeds
// kMaxPayloadBytes or header.channel >= kMaxChannels.
uint32_t BuildFrame(const Endpoint& src, const Endpoint& dst, uint16_t udp_port,
                    const Header& header, std::span<const uint8_t> payload,
                    uint8_t* out);

// BuildFrame for a payload that stays where it is (zero-copy: the packet is
// a header mbuf chained to the payload's bytes, region_tx.h): writes only
// the kFrameOverhead header bytes into `out`, with the UDP checksum
// covering `payload` where it lies. Returns kFrameOverhead, or 0 as
// BuildFrame.
uint32_t BuildFrameHeaders(const Endpoint& src, const Endpoint& dst,
                           uint16_t udp_port, const Header& header,
                           std::span<const uint8_t> payload, uint8_t* out);

// Only the fixed 48 header bytes, big-endian (tests, and rewriting a header
// in place before the checksum is set).
void StoreHeader(const Header& header, uint8_t* out);
void LoadHeader(const uint8_t* in, Header* out);

// Sets the UDP checksum of an Ethernet/IPv6/UDP frame of `length` bytes
// whose IPv6 header is at 14 (no VLAN) over the UDP length in the header.
void SetUdpChecksum(uint8_t* frame, uint32_t length);

// Serial-number arithmetic on 32-bit sequence numbers (RFC 1982 style).
inline int32_t SeqDiff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>(a - b);
}
inline bool SeqBefore(uint32_t a, uint32_t b) { return SeqDiff(a, b) < 0; }

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_WIRE_H_
