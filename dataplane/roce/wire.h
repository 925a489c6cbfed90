// The RoCEv2 wire format (docs/roce-wire.md): Ethernet / IPv4 or IPv6 / UDP
// 4791 / BTH / extension headers / payload / pad / ICRC, byte-exact with the
// InfiniBand Architecture Specification (vol. 1 rel. 1.4, chapter 9 and
// annex A17) and the Linux soft-RoCE driver (rdma_rxe). Pure functions over
// bytes (DPDK only for the CRC) so that unit tests and the fuzz target
// (tests/fuzz/roce_fuzz.cc) link them alone.
//
// Headers are handled as host-order structs with Load*/Store* functions for
// their big-endian wire images; ParseFrame checks a received frame
// completely (lengths, checksums, ICRC) and BuildFrame writes one.
#ifndef SPINNIC_DATAPLANE_ROCE_WIRE_H_
#define SPINNIC_DATAPLANE_ROCE_WIRE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "dataplane/roce/ib_types.h"

namespace spinnic::roce {

inline constexpr uint32_t kEthernetBytes = 14;
inline constexpr uint32_t kVlanTagBytes = 4;
inline constexpr uint32_t kIpv4Bytes = 20;  // RoCE never sends IPv4 options
inline constexpr uint32_t kIpv6Bytes = 40;
inline constexpr uint32_t kUdpBytes = 8;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint8_t kIpProtoUdp = 17;

// ----- Wire images (big-endian fields, no padding) -----

struct BthWire {
  uint8_t opcode;
  uint8_t flags;  // SE(7) M(6) PadCnt(5..4) TVer(3..0)
  uint8_t pkey[2];
  uint8_t fecn_becn;  // FECN(7) BECN(6) reserved(5..0); ICRC-variant
  uint8_t dest_qp[3];
  uint8_t ack_req;  // AckReq(7) reserved(6..0)
  uint8_t psn[3];
};
static_assert(sizeof(BthWire) == kBthBytes);
static_assert(offsetof(BthWire, flags) == 1);
static_assert(offsetof(BthWire, pkey) == 2);
static_assert(offsetof(BthWire, fecn_becn) == 4);
static_assert(offsetof(BthWire, dest_qp) == 5);
static_assert(offsetof(BthWire, ack_req) == 8);
static_assert(offsetof(BthWire, psn) == 9);

struct RethWire {
  uint8_t va[8];
  uint8_t rkey[4];
  uint8_t dma_length[4];
};
static_assert(sizeof(RethWire) == kRethBytes);
static_assert(offsetof(RethWire, rkey) == 8);
static_assert(offsetof(RethWire, dma_length) == 12);

struct AethWire {
  uint8_t syndrome;
  uint8_t msn[3];
};
static_assert(sizeof(AethWire) == kAethBytes);
static_assert(offsetof(AethWire, msn) == 1);

struct AtomicEthWire {
  uint8_t va[8];
  uint8_t rkey[4];
  uint8_t swap_add[8];
  uint8_t compare[8];
};
static_assert(sizeof(AtomicEthWire) == kAtomicEthBytes);
static_assert(offsetof(AtomicEthWire, rkey) == 8);
static_assert(offsetof(AtomicEthWire, swap_add) == 12);
static_assert(offsetof(AtomicEthWire, compare) == 20);

struct AtomicAckEthWire {
  uint8_t original[8];
};
static_assert(sizeof(AtomicAckEthWire) == kAtomicAckEthBytes);

struct DethWire {
  uint8_t qkey[4];
  uint8_t reserved;
  uint8_t src_qp[3];
};
static_assert(sizeof(DethWire) == kDethBytes);
static_assert(offsetof(DethWire, reserved) == 4);
static_assert(offsetof(DethWire, src_qp) == 5);

// ImmDt and IETH are one big-endian 32-bit word each.
static_assert(kImmDtBytes == sizeof(uint32_t) &&
              kIethBytes == sizeof(uint32_t));

// ----- Host-order headers -----

// Reserved bits are kept (not checked: receivers ignore them, IBA 9.2) so
// that Load then Store gives back the same bytes.
struct Bth {
  uint8_t opcode = 0;
  bool solicited = false;
  bool migreq = false;
  uint8_t pad_count = 0;  // 0..3
  uint8_t tver = 0;       // 0..15, must be 0
  uint16_t pkey = kDefaultPkey;
  bool fecn = false;
  bool becn = false;
  uint8_t reserved_6 = 0;  // byte 4 bits 5..0
  uint32_t dest_qp = 0;    // 24 bits
  bool ack_req = false;
  uint8_t reserved_7 = 0;  // byte 8 bits 6..0
  uint32_t psn = 0;        // 24 bits
};

struct Reth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t dma_length = 0;
};

struct Aeth {
  uint8_t syndrome = 0;  // see AethAck/AethNak/AethRnrNak in ib_types.h
  uint32_t msn = 0;      // 24 bits
};

struct AtomicEth {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint64_t swap_add = 0;
  uint64_t compare = 0;
};

struct AtomicAckEth {
  uint64_t original = 0;
};

struct Deth {
  uint32_t qkey = 0;
  uint8_t reserved = 0;
  uint32_t src_qp = 0;  // 24 bits
};

// The extension headers of one packet; which are meaningful is
// GetOpcodeInfo(opcode).headers.
struct ExtHeaders {
  Deth deth;
  Reth reth;
  AtomicEth atomic_eth;
  Aeth aeth;
  AtomicAckEth atomic_ack_eth;
  uint32_t imm_data = 0;  // ImmDt, host order of the big-endian field
  uint32_t ieth = 0;      // IETH (the R_Key to invalidate), host order
};

// Fields wider than the wire allows are truncated by Store (24-bit QPNs,
// PSN, MSN; 2-bit pad; 4-bit TVer).
void LoadBth(const uint8_t* in, Bth* out);
void StoreBth(const Bth& bth, uint8_t* out);
void LoadReth(const uint8_t* in, Reth* out);
void StoreReth(const Reth& reth, uint8_t* out);
void LoadAeth(const uint8_t* in, Aeth* out);
void StoreAeth(const Aeth& aeth, uint8_t* out);
void LoadAtomicEth(const uint8_t* in, AtomicEth* out);
void StoreAtomicEth(const AtomicEth& eth, uint8_t* out);
void LoadAtomicAckEth(const uint8_t* in, AtomicAckEth* out);
void StoreAtomicAckEth(const AtomicAckEth& eth, uint8_t* out);
void LoadDeth(const uint8_t* in, Deth* out);
void StoreDeth(const Deth& deth, uint8_t* out);
uint32_t LoadImmDt(const uint8_t* in);
void StoreImmDt(uint32_t imm_data, uint8_t* out);
uint32_t LoadIeth(const uint8_t* in);
void StoreIeth(uint32_t rkey, uint8_t* out);

// The extension headers selected by `headers` (kHas* bits), in wire order,
// from/to `ext` bytes (GetOpcodeInfo(opcode).ext_bytes of them).
void LoadExtHeaders(const uint8_t* ext, uint8_t headers, ExtHeaders* out);
void StoreExtHeaders(const ExtHeaders& headers_in, uint8_t headers,
                     uint8_t* ext);

// ----- Receive -----

// Why a RoCEv2 frame was refused. Every refusal is counted by its reason;
// names in ParseErrorName (docs/roce-wire.md lists them).
enum class ParseError : uint8_t {
  kNone = 0,
  kBadOffsets,     // ip_offset < 8, or udp_offset not right after the IP header
  kTruncated,      // the IP header does not fit in the frame
  kNotIp,          // IP version nibble is neither 4 nor 6
  kIpOptions,      // IPv4 options or IPv6 extension headers (RoCE sends none)
  kIpFragment,     // IPv4 MF/fragment offset set, or an IPv6 fragment header
  kIpChecksum,     // wrong IPv4 header checksum
  kNotUdp,         // IP protocol / next header is not UDP
  kIpLength,       // IP length below its header or past the frame end
  kUdpLength,      // UDP length disagrees with the IP length
  kNotRocePort,    // UDP destination port is not 4791
  kUdpChecksum,    // nonzero UDP checksum that does not verify
  kTooShort,       // UDP payload shorter than BTH + extension headers + ICRC
  kBadTver,        // BTH transport header version is not 0
  kBadOpcode,      // reserved or unsupported opcode (no GetOpcodeInfo entry)
  kUnexpectedPad,  // pad count on an opcode that carries no payload
  kUnexpectedPayload,  // bytes after the headers on an opcode without payload
  kUnalignedPayload,   // payload + pad is not a multiple of 4 bytes
  kPadTooLong,         // pad count larger than the bytes after the headers
  kBadIcrc,            // ICRC does not verify
  kCount,
};
const char* ParseErrorName(ParseError error);

// A parsed packet. Offsets are from the frame start.
struct Packet {
  uint8_t ip_version = 0;  // 4 or 6
  uint32_t ip_offset = 0;
  uint32_t udp_offset = 0;
  uint32_t bth_offset = 0;
  uint32_t ext_offset = 0;      // first extension header (= payload_offset
                                // when there is none)
  uint32_t payload_offset = 0;  // first payload byte
  uint32_t payload_length = 0;  // excluding pad and ICRC
  uint32_t icrc_offset = 0;     // payload_offset + payload_length + pad_count
  uint8_t pad_count = 0;
  std::array<uint8_t, 16> src_ip{};  // IPv4 as ::ffff:a.b.c.d
  std::array<uint8_t, 16> dst_ip{};
  uint16_t src_port = 0;
  uint16_t dst_port = 0;
  uint16_t udp_checksum = 0;  // as received (0: none)
  // IPv4 TOS or IPv6 traffic class: DSCP << 2 | ECN. The ECN bits say
  // whether a switch marked congestion (CE = 3).
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;    // IPv4 TTL or IPv6 hop limit
  uint32_t flow_label = 0;  // IPv6 only
  Bth bth;
  ExtHeaders ext;  // those of info->headers are filled
  const OpcodeInfo* info = nullptr;

  uint8_t ecn() const { return traffic_class & 0x3; }
};

// ParseFrame's IP and UDP checks on their own (IP header, lengths, UDP
// length, port 4791, the UDP checksum when nonzero), for every parser of
// RoCEv2 frames (ParseFrame, ParseCnp in cnp.h), so that each refuses the
// same frames for the same reasons. On kNone, *ip_end is one past the IP
// datagram (Ethernet padding may follow). Reads only [frame, frame+length).
ParseError ParseIpUdp(const uint8_t* frame, uint32_t length, uint32_t ip_offset,
                      uint32_t udp_offset, uint32_t* ip_end);

// Checks and parses the RoCEv2 frame of `length` bytes whose IP header is at
// `ip_offset` and UDP header at `udp_offset` (spinnic::ParseFrame in
// dataplane/classifier.h finds them, VLAN tags included). Checks, in this
// order (the first failure is returned): offsets, IP header (version,
// options, fragment, IPv4 checksum, protocol, length within the frame;
// Ethernet padding after the IP datagram is allowed), UDP length = IP
// payload length, destination port 4791, the UDP checksum when nonzero (0 is
// accepted over IPv4 and IPv6: rxe and ConnectX send 0), BTH TVer, opcode,
// lengths (payload = UDP payload - BTH - extension headers - pad - ICRC >= 0;
// no pad or payload on opcodes without payload; payload + pad a multiple of
// 4), and last the ICRC. BTH reserved bits are not checked.
//
// The frame is writable only because the ICRC masks its variant fields in
// place (icrc.h); it is byte-identical afterwards. Never touches bytes
// outside [frame, frame + length). `out` is complete only on kNone.
ParseError ParseFrame(uint8_t* frame, uint32_t length, uint32_t ip_offset,
                      uint32_t udp_offset, Packet* out);

// ----- Transmit -----

// What the builder needs besides the transport headers.
struct FrameParams {
  std::array<uint8_t, 6> dst_mac{};
  std::array<uint8_t, 6> src_mac{};
  bool vlan = false;  // one 802.1Q tag with vlan_tci
  uint16_t vlan_tci = 0;
  uint8_t ip_version = 4;            // 4 or 6
  std::array<uint8_t, 16> src_ip{};  // IPv4 as ::ffff:a.b.c.d
  std::array<uint8_t, 16> dst_ip{};
  uint8_t traffic_class = 0;  // IPv4 TOS / IPv6 traffic class (DSCP, ECN)
  uint8_t hop_limit = 64;     // IPv4 TTL / IPv6 hop limit
  uint32_t flow_label = 0;    // IPv6, 20 bits (rxe sends 0; see FlowLabel)
  uint16_t ipv4_id = 0;
  bool ipv4_dont_fragment = true;              // rxe and RoCE NICs set DF
  uint16_t udp_src_port = kUdpSourcePortBase;  // see UdpSourcePort
  // UDP checksum policy: always 0 over IPv4 (every RoCE NIC does so; the
  // ICRC covers the packet end to end). Over IPv6, RFC 8200 wants a
  // checksum, but rxe and ConnectX send 0 and receivers accept it (RFC 6936
  // style zero-checksum for a tunnel-like protocol with its own CRC); true
  // computes a real one.
  bool ipv6_udp_checksum = false;
};

// Pad bytes that bring a payload to a multiple of 4.
inline constexpr uint8_t PadCount(uint32_t payload_length) {
  return static_cast<uint8_t>((4 - (payload_length & 3)) & 3);
}
// Bytes from the Ethernet header to the payload for `opcode`: the headroom a
// packet needs. 0 for an invalid opcode or IP version.
uint32_t HeaderBytes(uint8_t ip_version, uint8_t opcode, bool vlan = false);
// Bytes after the payload: pad and ICRC.
inline constexpr uint32_t TrailerBytes(uint32_t payload_length) {
  return PadCount(payload_length) + kIcrcBytes;
}
// The whole frame; 0 when HeaderBytes is 0. Does not check the IP length
// limit (WriteHeaders does).
uint32_t FrameBytes(uint8_t ip_version, uint8_t opcode, uint32_t payload_length,
                    bool vlan = false);

// Writes Ethernet / IP / UDP / BTH / extension headers into
// [frame, frame + HeaderBytes) for a payload of `payload_length` bytes that
// is (or will be) at frame + HeaderBytes: MACs, IP header with its length
// and (IPv4) checksum, UDP ports and length (checksum 0 for now), BTH with
// pad_count computed from payload_length (bth.pad_count is ignored), the
// extension headers the opcode has. Returns HeaderBytes, or 0 with nothing
// written when: IP version not 4/6, invalid opcode, a payload on an opcode
// without payload, the frame would not fit in `capacity` or the IP length
// exceeds 65535.
uint32_t WriteHeaders(const FrameParams& params, const Bth& bth,
                      const ExtHeaders& ext, uint32_t payload_length,
                      uint8_t* frame, uint32_t capacity);

// Completes a frame whose headers WriteHeaders wrote (same params) and whose
// payload is in place: zero pad bytes, ICRC, then the UDP checksum (0, or a
// real one over IPv6 when asked; it covers the ICRC, which does not cover
// it). Returns the frame length, or 0 when the headers are not a valid
// WriteHeaders result for `capacity`.
uint32_t FinishFrame(const FrameParams& params, uint8_t* frame,
                     uint32_t capacity);

// FinishFrame for a payload that stays where it is (zero-copy: the packet
// is a header mbuf, an mbuf whose data is region memory and a trailer mbuf,
// region_tx.h). `headers` holds the `header_bytes` WriteHeaders wrote (same
// params, payload.size() as its payload length; masked in place for the
// ICRC and restored, nothing after them touched); `trailer` receives
// TrailerBytes(payload.size()) bytes: zero pad and the ICRC, computed over the
// headers and the payload where it lies. Then the UDP checksum, as FinishFrame.
// Returns the frame length, or 0 when the headers are not a valid WriteHeaders
// result for that payload.
uint32_t FinishChainedFrame(const FrameParams& params, uint8_t* headers,
                            uint32_t header_bytes,
                            std::span<const uint8_t> payload, uint8_t* trailer);

// WriteHeaders then FinishFrame.
uint32_t BuildFrame(const FrameParams& params, const Bth& bth,
                    const ExtHeaders& ext, uint32_t payload_length,
                    uint8_t* frame, uint32_t capacity);

// ----- UDP source port and flow label -----

// Linux's rdma_calc_flow_label (include/rdma/ib_verbs.h): a 20-bit label
// from the QP numbers, symmetric so that both ends compute the same one.
inline constexpr uint32_t FlowLabel(uint32_t local_qpn, uint32_t remote_qpn) {
  uint64_t v = uint64_t{local_qpn} * remote_qpn;
  v ^= v >> 20;
  v ^= v >> 40;
  return static_cast<uint32_t>(v & 0xfffff);
}
// Linux's rdma_flow_label_to_udp_sport: the 20 label bits folded to 14,
// above kUdpSourcePortBase.
inline constexpr uint16_t UdpSourcePortFromFlowLabel(uint32_t flow_label) {
  const uint32_t low = flow_label & 0x3fff;
  const uint32_t high = flow_label & 0xfc000;
  return static_cast<uint16_t>((low ^ (high >> 14)) | kUdpSourcePortBase);
}
// The source port rxe (and mlx5) use for an RC QP whose address vector has
// no flow label: rdma_get_udp_sport(0, local_qpn, remote_qpn).
inline constexpr uint16_t UdpSourcePort(uint32_t local_qpn,
                                        uint32_t remote_qpn) {
  return UdpSourcePortFromFlowLabel(FlowLabel(local_qpn, remote_qpn));
}
// Linux's rdma_get_udp_sport(flow_label, local_qpn, remote_qpn): the
// address vector's flow label when it has one, else the QPN label. QPs set
// up through rdma_cm get the flow label of the CM REQ's primary path (both
// ends: the captures' rping and rxe_ops connections use exactly
// UdpSourcePortFromFlowLabel(REQ primary flow label) in both directions).
inline constexpr uint16_t UdpSourcePortWithFlowLabel(uint32_t flow_label,
                                                     uint32_t local_qpn,
                                                     uint32_t remote_qpn) {
  return flow_label != 0 ? UdpSourcePortFromFlowLabel(flow_label)
                         : UdpSourcePort(local_qpn, remote_qpn);
}

// ::ffff:a.b.c.d for the IPv4 address `ipv4` (host order).
std::array<uint8_t, 16> Ipv4Mapped(uint32_t ipv4);

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_WIRE_H_
