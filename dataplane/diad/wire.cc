#include "dataplane/diad/wire.h"

#include <bit>
#include <cstdint>
#include <cstring>

#include "dataplane/common/byte_order.h"
#include "dataplane/common/checksum.h"
#include "handlers/api/net.h"

// Every read is preceded by a bounds check in 64-bit arithmetic (offsets
// from the caller are untrusted: the fuzz target passes arbitrary ones), and
// nothing here allocates or throws, so that ParseFrame runs per packet on an
// HPU and under libFuzzer alike. docs/diad.md documents the format.

namespace spinnic::diad {
namespace {

constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint8_t kHopLimit = 64;
// Smallest UDP datagram that holds a DiAD header.
constexpr uint32_t kMinUdpLength = kUdpBytes + kHeaderBytes;

// Sum of the IPv6 pseudo-header (RFC 8200 8.1: source, destination,
// upper-layer length, next header 17) and the `udp_length` bytes of the UDP
// datagram at `udp`, checksum field as it is. The caller proved both ranges.
uint16_t UdpSum(const uint8_t* ip, const uint8_t* udp, uint32_t udp_length) {
  uint64_t sum = checksum::Add(0, ip + 8, 32);
  sum = checksum::AddBe32(sum, udp_length);
  sum = checksum::AddBe32(sum, net::kProtoUdp);
  sum = checksum::Add(sum, udp, udp_length);
  return checksum::Fold(sum);
}

// The flow label of a channel's packets (RFC 6437): a 20-bit hash of the
// channel, the same for every packet of the channel so that ECMP keeps it
// on one path (reordering inside a channel costs go-back-N retransmissions),
// and different across channels so that they spread. Never 0 (unlabelled).
inline uint32_t FlowLabel(uint16_t channel) {
  uint32_t h = (uint32_t{channel} + 1) * 0x9e3779b1u;  // Fibonacci hashing
  h ^= h >> 15;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  const uint32_t label = h & 0xfffffu;
  return label == 0 ? 1 : label;
}

inline bool CarriesPayload(PacketType type) {
  return type == PacketType::kWriteRequest ||
         type == PacketType::kReadResponse || type == PacketType::kStream;
}

}  // namespace

const char* PacketTypeName(PacketType type) {
  switch (type) {
    case PacketType::kReadRequest:
      return "read_request";
    case PacketType::kWriteRequest:
      return "write_request";
    case PacketType::kReadResponse:
      return "read_response";
    case PacketType::kWriteResponse:
      return "write_response";
    case PacketType::kStream:
      return "stream";
    case PacketType::kAck:
      return "ack";
    case PacketType::kNack:
      return "nack";
    case PacketType::kUnack:
      return "unack";
  }
  return "unknown";
}

const char* StatusName(Status status) {
  switch (status) {
    case Status::kOk:
      return "ok";
    case Status::kBadKey:
      return "bad_key";
    case Status::kOutOfBounds:
      return "out_of_bounds";
    case Status::kNoAccess:
      return "no_access";
    case Status::kBadLength:
      return "bad_length";
    case Status::kRejected:
      return "rejected";
    case Status::kPeerDown:
      return "peer_down";
    case Status::kPeerReset:
      return "peer_reset";
    case Status::kAborted:
      return "aborted";
    case Status::kDeadlineExceeded:
      return "deadline_exceeded";
  }
  return "unknown";
}

const char* ParseErrorName(ParseError error) {
  switch (error) {
    case ParseError::kNone:
      return "none";
    case ParseError::kTruncated:
      return "truncated";
    case ParseError::kBadVersion:
      return "bad_version";
    case ParseError::kBadType:
      return "bad_type";
    case ParseError::kBadFlags:
      return "bad_flags";
    case ParseError::kBadReserved:
      return "bad_reserved";
    case ParseError::kBadLength:
      return "bad_length";
    case ParseError::kBadChecksum:
      return "bad_checksum";
    case ParseError::kChannelMismatch:
      return "channel_mismatch";
    case ParseError::kCount:
      break;
  }
  // Counter arrays are indexed by error: a name that stands out beats a
  // crash for out-of-range values.
  return "unknown";
}

void StoreHeader(const Header& header, uint8_t* out) {
  out[0] = static_cast<uint8_t>(kVersion << 4 |
                                (static_cast<uint8_t>(header.type) & 0x0f));
  out[1] = header.flags;
  StoreBe16(out + offsetof(WireHeader, channel), header.channel);
  StoreBe32(out + offsetof(WireHeader, src_epoch), header.src_epoch);
  StoreBe32(out + offsetof(WireHeader, dst_epoch), header.dst_epoch);
  StoreBe32(out + offsetof(WireHeader, seq), header.seq);
  StoreBe32(out + offsetof(WireHeader, ack), header.ack);
  StoreBe32(out + offsetof(WireHeader, txn), header.txn);
  StoreBe32(out + offsetof(WireHeader, key), header.key);
  StoreBe64(out + offsetof(WireHeader, address), header.address);
  StoreBe32(out + offsetof(WireHeader, msg_length), header.msg_length);
  StoreBe32(out + offsetof(WireHeader, msg_offset), header.msg_offset);
  StoreBe16(out + offsetof(WireHeader, payload_length), header.payload_length);
  out[offsetof(WireHeader, status)] = static_cast<uint8_t>(header.status);
  out[offsetof(WireHeader, reserved)] = 0;
}

void LoadHeader(const uint8_t* in, Header* out) {
  out->type = static_cast<PacketType>(in[0] & 0x0f);
  out->flags = in[1];
  out->channel = LoadBe16(in + offsetof(WireHeader, channel));
  out->src_epoch = LoadBe32(in + offsetof(WireHeader, src_epoch));
  out->dst_epoch = LoadBe32(in + offsetof(WireHeader, dst_epoch));
  out->seq = LoadBe32(in + offsetof(WireHeader, seq));
  out->ack = LoadBe32(in + offsetof(WireHeader, ack));
  out->txn = LoadBe32(in + offsetof(WireHeader, txn));
  out->key = LoadBe32(in + offsetof(WireHeader, key));
  out->address = LoadBe64(in + offsetof(WireHeader, address));
  out->msg_length = LoadBe32(in + offsetof(WireHeader, msg_length));
  out->msg_offset = LoadBe32(in + offsetof(WireHeader, msg_offset));
  out->payload_length = LoadBe16(in + offsetof(WireHeader, payload_length));
  out->status = static_cast<Status>(in[offsetof(WireHeader, status)]);
}

ParseError ParseFrame(const uint8_t* frame, uint32_t length, uint32_t ip_offset,
                      uint32_t udp_offset, Header* out,
                      uint32_t* payload_offset) {
  // Offsets are caller-supplied: prove them in 64 bits before any read.
  const uint64_t ip = ip_offset;
  const uint64_t udp = udp_offset;
  if (ip + kIpv6Bytes > udp || udp + kMinUdpLength > length) {
    return ParseError::kTruncated;
  }
  const uint8_t* ip6 = frame + ip_offset;
  const uint8_t* u = frame + udp_offset;
  const uint8_t* h = u + kUdpBytes;
  const uint32_t udp_length = LoadBe16(u + 4);
  const uint64_t ip_end = ip + kIpv6Bytes + LoadBe16(ip6 + 4);
  if (ip_end > length || udp_length < kMinUdpLength ||
      udp + udp_length > ip_end) {
    return ParseError::kTruncated;
  }
  // IPv6 has no UDP checksum-less mode (RFC 8200 8.1): 0 is refused.
  if (LoadBe16(u + 6) == 0 || UdpSum(ip6, u, udp_length) != 0xffff) {
    return ParseError::kBadChecksum;
  }
  if ((h[0] >> 4) != kVersion) return ParseError::kBadVersion;
  const uint8_t type = h[0] & 0x0f;
  if (type < 1 || type > kMaxPacketType) return ParseError::kBadType;
  const PacketType packet_type = static_cast<PacketType>(type);
  const uint8_t flags = h[1];
  if ((flags & ~kKnownFlags) != 0 ||
      ((flags & (kFlagFirst | kFlagLast)) != 0 && !IsSequenced(packet_type)) ||
      ((flags & (kFlagProbeReply | kFlagEcnEcho)) != 0 &&
       packet_type != PacketType::kAck) ||
      // SACK: only an ACK, and only one that carries its bitmap.
      ((flags & kFlagSack) != 0 &&
       (packet_type != PacketType::kAck || udp_length == kMinUdpLength))) {
    return ParseError::kBadFlags;
  }
  if (h[offsetof(WireHeader, reserved)] != 0) return ParseError::kBadReserved;
  LoadHeader(h, out);
  const bool sack = (flags & kFlagSack) != 0;
  if (out->payload_length != udp_length - kMinUdpLength ||
      uint64_t{out->msg_offset} + out->payload_length > out->msg_length ||
      (out->payload_length != 0 && !sack && !CarriesPayload(packet_type))) {
    return ParseError::kBadLength;
  }
  // A SACK's payload is its bitmap: present, bounded, and described the one
  // way docs/diad.md allows.
  if (sack &&
      (out->payload_length == 0 || out->payload_length > kMaxSackBytes ||
       out->msg_offset != 0 || out->msg_length != out->payload_length)) {
    return ParseError::kBadLength;
  }
  if (out->channel >= kMaxChannels ||
      LoadBe16(u) != kChannelPortBase + out->channel) {
    return ParseError::kChannelMismatch;
  }
  *payload_offset = udp_offset + kMinUdpLength;
  return ParseError::kNone;
}

void SetUdpChecksum(uint8_t* frame, uint32_t length) {
  constexpr uint32_t kIp = kEthernetBytes;
  constexpr uint32_t kUdp = kEthernetBytes + kIpv6Bytes;
  if (length < kUdp + kUdpBytes) return;
  uint8_t* u = frame + kUdp;
  const uint32_t udp_length = LoadBe16(u + 4);
  if (udp_length < kUdpBytes || udp_length > length - kUdp) return;
  StoreBe16(u + 6, 0);
  const uint16_t sum =
      static_cast<uint16_t>(~UdpSum(frame + kIp, u, udp_length));
  // A computed 0 goes out as 0xffff: 0 would mean "no checksum".
  StoreBe16(u + 6, sum == 0 ? 0xffff : sum);
}

namespace {

// BuildFrame's headers for a payload of `payload_bytes`, checksum field 0.
void WriteFrameHeaders(const Endpoint& src, const Endpoint& dst,
                       uint16_t udp_port, const Header& header,
                       uint32_t payload_bytes, uint8_t* out) {
  const uint32_t udp_length = kMinUdpLength + payload_bytes;
  uint8_t* eth = out;
  std::memcpy(eth, dst.mac.data(), 6);
  std::memcpy(eth + 6, src.mac.data(), 6);
  StoreBe16(eth + 12, kEtherTypeIpv6);

  uint8_t* ip6 = eth + kEthernetBytes;
  // Version 6, traffic class (DSCP 0, the ECN codepoint), flow label.
  StoreBe32(ip6, uint32_t{6} << 28 | uint32_t{src.ecn & 3u} << 20 |
                     FlowLabel(header.channel));
  StoreBe16(ip6 + 4, static_cast<uint16_t>(udp_length));
  ip6[6] = net::kProtoUdp;
  ip6[7] = kHopLimit;
  std::memcpy(ip6 + 8, src.ip.data(), 16);
  std::memcpy(ip6 + 24, dst.ip.data(), 16);

  uint8_t* u = ip6 + kIpv6Bytes;
  StoreBe16(u, static_cast<uint16_t>(kChannelPortBase + header.channel));
  StoreBe16(u + 2, udp_port);
  StoreBe16(u + 4, static_cast<uint16_t>(udp_length));
  StoreBe16(u + 6, 0);

  Header copy = header;
  copy.payload_length = static_cast<uint16_t>(payload_bytes);
  StoreHeader(copy, u + kUdpBytes);
}

// The checksum sum of the pseudo-header and the UDP and DiAD headers that
// WriteFrameHeaders wrote at `out` (checksum field 0). The headers are an
// even number of bytes, so the payload's words continue the sum.
uint64_t HeadersSum(const uint8_t* out) {
  static_assert((kUdpBytes + kHeaderBytes) % 2 == 0);
  const uint8_t* ip6 = out + kEthernetBytes;
  const uint8_t* u = ip6 + kIpv6Bytes;
  uint64_t sum = checksum::Add(0, ip6 + 8, 32);
  sum = checksum::AddBe32(sum, LoadBe16(u + 4));
  sum = checksum::AddBe32(sum, net::kProtoUdp);
  return checksum::Add(sum, u, kUdpBytes + kHeaderBytes);
}

// Stores the checksum of `sum` in the UDP header at `out`.
void StoreUdpChecksum(uint8_t* out, uint64_t sum) {
  const uint16_t value = static_cast<uint16_t>(~checksum::Fold(sum));
  // A computed 0 goes out as 0xffff: 0 would mean "no checksum".
  StoreBe16(out + kEthernetBytes + kIpv6Bytes + 6, value == 0 ? 0xffff : value);
}

bool Buildable(const Header& header, std::span<const uint8_t> payload) {
  return payload.size() <= kMaxPayloadBytes && header.channel < kMaxChannels;
}

}  // namespace

uint32_t BuildFrame(const Endpoint& src, const Endpoint& dst, uint16_t udp_port,
                    const Header& header, std::span<const uint8_t> payload,
                    uint8_t* out) {
  if (!Buildable(header, payload)) return 0;
  const uint32_t payload_bytes = static_cast<uint32_t>(payload.size());
  WriteFrameHeaders(src, dst, udp_port, header, payload_bytes, out);
  uint8_t* body = out + kFrameOverhead;
  uint64_t sum = HeadersSum(out);
  const uint8_t* from = payload.data();
  const bool overlaps = payload_bytes != 0 && from < body + payload_bytes &&
                        body < from + payload_bytes;
  if (payload_bytes == 0 || from == body) {
    sum = checksum::Add(sum, body, payload_bytes);
  } else if (overlaps) {
    // A payload that overlaps the frame (a header rebuilt in front of bytes
    // already in the buffer) is moved, then summed.
    std::memmove(body, from, payload_bytes);
    sum = checksum::Add(sum, body, payload_bytes);
  } else {
    // The usual case: one pass copies and sums (checksum::AddCopy).
    sum = checksum::AddCopy(sum, body, from, payload_bytes);
  }
  StoreUdpChecksum(out, sum);
  return static_cast<uint32_t>(kFrameOverhead) + payload_bytes;
}

uint32_t BuildFrameHeaders(const Endpoint& src, const Endpoint& dst,
                           uint16_t udp_port, const Header& header,
                           std::span<const uint8_t> payload, uint8_t* out) {
  if (!Buildable(header, payload)) return 0;
  WriteFrameHeaders(src, dst, udp_port, header,
                    static_cast<uint32_t>(payload.size()), out);
  StoreUdpChecksum(
      out, checksum::Add(HeadersSum(out), payload.data(), payload.size()));
  return static_cast<uint32_t>(kFrameOverhead);
}

}  // namespace spinnic::diad
