// InfiniBand transport facts shared by every part of the RoCEv2 transport
// (docs/roce.md): opcodes and what each carries, PSN arithmetic, AETH
// syndromes, access flags, path MTUs, QP states and completion statuses.
// Values are those of the InfiniBand Architecture Specification, Volume 1,
// Release 1.4 (chapter 9, "Transport layer"), and its RoCEv2 annex A17.
// Header only, no DPDK: the wire code, the queue-pair state machines, the
// connection manager, unit tests and fuzz targets all include it.
#ifndef SPINNIC_DATAPLANE_ROCE_IB_TYPES_H_
#define SPINNIC_DATAPLANE_ROCE_IB_TYPES_H_

#include <array>
#include <cstdint>

namespace spinnic::roce {

// IANA port for RoCEv2 (A17.2.1).
inline constexpr uint16_t kRoceUdpPort = 4791;
// Real RoCE NICs and rxe take the UDP source port from the flow: 0xc000 |
// 14 hashed bits (A17.4.2.1 asks for entropy in the source port).
inline constexpr uint16_t kUdpSourcePortBase = 0xc000;

// Header sizes (9.2 - 9.5).
inline constexpr uint32_t kBthBytes = 12;
inline constexpr uint32_t kRethBytes = 16;
inline constexpr uint32_t kAethBytes = 4;
inline constexpr uint32_t kImmDtBytes = 4;
inline constexpr uint32_t kIethBytes = 4;
inline constexpr uint32_t kDethBytes = 8;
inline constexpr uint32_t kAtomicEthBytes = 28;
inline constexpr uint32_t kAtomicAckEthBytes = 8;
inline constexpr uint32_t kIcrcBytes = 4;

// The GSI (QP1) that carries connection-manager MADs, and its Q_Key.
inline constexpr uint32_t kGsiQp = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;
inline constexpr uint16_t kDefaultPkey = 0xffff;

// ----- Packet sequence numbers: 24 bits, serial arithmetic (9.7.1) -----
inline constexpr uint32_t kPsnMask = 0x00ffffff;
inline constexpr uint32_t PsnAdd(uint32_t psn, uint32_t n) {
  return (psn + n) & kPsnMask;
}
// a - b as a signed 24-bit distance: positive when a is after b. Exactly
// half the PSN space (2^23) apart reads as negative.
inline constexpr int32_t PsnDiff(uint32_t a, uint32_t b) {
  return static_cast<int32_t>((a - b) << 8) >> 8;
}
inline constexpr bool PsnBefore(uint32_t a, uint32_t b) {
  return PsnDiff(a, b) < 0;
}
// Message sequence numbers (AETH MSN) are 24 bits too.
inline constexpr uint32_t kMsnMask = 0x00ffffff;

// ----- Opcodes (9.2.1, table 38): transport in bits 7..5 -----
enum class Opcode : uint8_t {
  // Reliable Connection.
  kRcSendFirst = 0x00,
  kRcSendMiddle = 0x01,
  kRcSendLast = 0x02,
  kRcSendLastImm = 0x03,
  kRcSendOnly = 0x04,
  kRcSendOnlyImm = 0x05,
  kRcWriteFirst = 0x06,
  kRcWriteMiddle = 0x07,
  kRcWriteLast = 0x08,
  kRcWriteLastImm = 0x09,
  kRcWriteOnly = 0x0a,
  kRcWriteOnlyImm = 0x0b,
  kRcReadRequest = 0x0c,
  kRcReadResponseFirst = 0x0d,
  kRcReadResponseMiddle = 0x0e,
  kRcReadResponseLast = 0x0f,
  kRcReadResponseOnly = 0x10,
  kRcAck = 0x11,
  kRcAtomicAck = 0x12,
  kRcCompareSwap = 0x13,
  kRcFetchAdd = 0x14,
  kRcSendLastInvalidate = 0x16,
  kRcSendOnlyInvalidate = 0x17,
  // Unreliable Datagram (the CM's MADs travel this way to QP1).
  kUdSendOnly = 0x64,
  kUdSendOnlyImm = 0x65,
};

// What an opcode's packet is part of.
enum class OpKind : uint8_t {
  kInvalid = 0,  // reserved / unsupported opcode
  kSend,
  kWrite,
  kReadRequest,
  kReadResponse,
  kAck,
  kAtomic,     // COMPARE_SWAP / FETCH_ADD request
  kAtomicAck,  // ATOMIC_ACKNOWLEDGE
  kUdSend,
};

// Position of a packet in its message.
enum class OpPosition : uint8_t { kNone = 0, kFirst, kMiddle, kLast, kOnly };

// Extension headers that follow the BTH, in this order on the wire:
// DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH (9.2, table 38).
inline constexpr uint8_t kHasDeth = 0x01;
inline constexpr uint8_t kHasReth = 0x02;
inline constexpr uint8_t kHasAtomicEth = 0x04;
inline constexpr uint8_t kHasAeth = 0x08;
inline constexpr uint8_t kHasAtomicAckEth = 0x10;
inline constexpr uint8_t kHasImmDt = 0x20;
inline constexpr uint8_t kHasIeth = 0x40;
inline constexpr uint8_t kHasPayload = 0x80;  // may carry payload bytes

struct OpcodeInfo {
  const char* name = nullptr;  // Wireshark's spelling, e.g. "RC Send Only"
  OpKind kind = OpKind::kInvalid;
  OpPosition position = OpPosition::kNone;
  uint8_t headers = 0;  // kHas* bits
  // Bytes of extension headers between the BTH and the payload.
  uint8_t ext_bytes = 0;

  bool valid() const { return kind != OpKind::kInvalid; }
  bool has(uint8_t bit) const { return (headers & bit) != 0; }
  bool starts_message() const {
    return position == OpPosition::kFirst || position == OpPosition::kOnly;
  }
  bool ends_message() const {
    return position == OpPosition::kLast || position == OpPosition::kOnly;
  }
};

namespace internal {
constexpr uint8_t ExtBytes(uint8_t headers) {
  return ((headers & kHasDeth) ? kDethBytes : 0) +
         ((headers & kHasReth) ? kRethBytes : 0) +
         ((headers & kHasAtomicEth) ? kAtomicEthBytes : 0) +
         ((headers & kHasAeth) ? kAethBytes : 0) +
         ((headers & kHasAtomicAckEth) ? kAtomicAckEthBytes : 0) +
         ((headers & kHasImmDt) ? kImmDtBytes : 0) +
         ((headers & kHasIeth) ? kIethBytes : 0);
}
constexpr OpcodeInfo Op(const char* name, OpKind kind, OpPosition position,
                        uint8_t headers) {
  return OpcodeInfo{name, kind, position, headers, ExtBytes(headers)};
}
constexpr std::array<OpcodeInfo, 256> MakeOpcodeTable() {
  using K = OpKind;
  using P = OpPosition;
  constexpr uint8_t kP = kHasPayload;
  std::array<OpcodeInfo, 256> t{};
  t[0x00] = Op("RC Send First", K::kSend, P::kFirst, kP);
  t[0x01] = Op("RC Send Middle", K::kSend, P::kMiddle, kP);
  t[0x02] = Op("RC Send Last", K::kSend, P::kLast, kP);
  t[0x03] = Op("RC Send Last Immediate", K::kSend, P::kLast, kP | kHasImmDt);
  t[0x04] = Op("RC Send Only", K::kSend, P::kOnly, kP);
  t[0x05] = Op("RC Send Only Immediate", K::kSend, P::kOnly, kP | kHasImmDt);
  t[0x06] = Op("RC RDMA Write First", K::kWrite, P::kFirst, kP | kHasReth);
  t[0x07] = Op("RC RDMA Write Middle", K::kWrite, P::kMiddle, kP);
  t[0x08] = Op("RC RDMA Write Last", K::kWrite, P::kLast, kP);
  t[0x09] =
      Op("RC RDMA Write Last Immediate", K::kWrite, P::kLast, kP | kHasImmDt);
  t[0x0a] = Op("RC RDMA Write Only", K::kWrite, P::kOnly, kP | kHasReth);
  t[0x0b] = Op("RC RDMA Write Only Immediate", K::kWrite, P::kOnly,
               kP | kHasReth | kHasImmDt);
  t[0x0c] = Op("RC RDMA Read Request", K::kReadRequest, P::kOnly, kHasReth);
  t[0x0d] = Op("RC RDMA Read Response First", K::kReadResponse, P::kFirst,
               kP | kHasAeth);
  t[0x0e] =
      Op("RC RDMA Read Response Middle", K::kReadResponse, P::kMiddle, kP);
  t[0x0f] = Op("RC RDMA Read Response Last", K::kReadResponse, P::kLast,
               kP | kHasAeth);
  t[0x10] = Op("RC RDMA Read Response Only", K::kReadResponse, P::kOnly,
               kP | kHasAeth);
  t[0x11] = Op("RC Acknowledge", K::kAck, P::kOnly, kHasAeth);
  t[0x12] = Op("RC Atomic Acknowledge", K::kAtomicAck, P::kOnly,
               kHasAeth | kHasAtomicAckEth);
  t[0x13] = Op("RC CmpSwap", K::kAtomic, P::kOnly, kHasAtomicEth);
  t[0x14] = Op("RC FetchAdd", K::kAtomic, P::kOnly, kHasAtomicEth);
  t[0x16] = Op("RC Send Last Invalidate", K::kSend, P::kLast, kP | kHasIeth);
  t[0x17] = Op("RC Send Only Invalidate", K::kSend, P::kOnly, kP | kHasIeth);
  t[0x64] = Op("UD Send Only", K::kUdSend, P::kOnly, kP | kHasDeth);
  t[0x65] = Op("UD Send Only Immediate", K::kUdSend, P::kOnly,
               kP | kHasDeth | kHasImmDt);
  return t;
}
inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable = MakeOpcodeTable();
}  // namespace internal

inline constexpr const OpcodeInfo& GetOpcodeInfo(uint8_t opcode) {
  return internal::kOpcodeTable[opcode];
}
inline constexpr const OpcodeInfo& GetOpcodeInfo(Opcode opcode) {
  return internal::kOpcodeTable[static_cast<uint8_t>(opcode)];
}
static_assert(GetOpcodeInfo(Opcode::kRcWriteOnlyImm).ext_bytes == 20);
static_assert(GetOpcodeInfo(Opcode::kRcAtomicAck).ext_bytes == 12);
static_assert(GetOpcodeInfo(Opcode::kUdSendOnly).ext_bytes == 8);

// ----- AETH (9.3.5, table 43): syndrome byte, then a 24-bit MSN -----
// Syndrome bits 7..5 say what the AETH is; bits 4..0 are a credit count
// (ACK), an RNR timer code (RNR NAK) or a NAK code.
inline constexpr uint8_t kAethTypeMask = 0xe0;
inline constexpr uint8_t kAethAck = 0x00;
inline constexpr uint8_t kAethRnrNak = 0x20;
inline constexpr uint8_t kAethNak = 0x60;
inline constexpr uint8_t kAethValueMask = 0x1f;
// Credit field value meaning "end-to-end flow control not used" (0x1f).
inline constexpr uint8_t kAethInvalidCredits = 0x1f;

enum class NakCode : uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
  kInvalidRdRequest = 4,
};
inline constexpr uint8_t AethNak(NakCode code) {
  return kAethNak | static_cast<uint8_t>(code);
}
inline constexpr uint8_t AethRnrNak(uint8_t timer_code) {
  return kAethRnrNak | (timer_code & kAethValueMask);
}
inline constexpr uint8_t AethAck(uint8_t credits = kAethInvalidCredits) {
  return kAethAck | (credits & kAethValueMask);
}

// RNR NAK timer codes (table 45), in microseconds; code 0 is 655.36 ms.
inline constexpr std::array<uint32_t, 32> kRnrTimerMicros = {
    655360, 10,    20,    30,     40,     60,     80,     120,
    160,    240,   320,   480,    640,    960,    1280,   1920,
    2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
    40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};

// ----- Memory access rights (ibverbs' IBV_ACCESS_* values) -----
inline constexpr uint32_t kAccessLocalWrite = 0x1;
inline constexpr uint32_t kAccessRemoteWrite = 0x2;
inline constexpr uint32_t kAccessRemoteRead = 0x4;
inline constexpr uint32_t kAccessRemoteAtomic = 0x8;

// ----- Path MTU (enum ibv_mtu / IB "PMTU" codes 1..5) -----
inline constexpr uint32_t PathMtuBytes(uint8_t code) {
  return code >= 1 && code <= 5 ? 128u << code : 0;
}
inline constexpr uint8_t PathMtuCode(uint32_t bytes) {
  for (uint8_t code = 1; code <= 5; ++code) {
    if (PathMtuBytes(code) == bytes) return code;
  }
  return 0;
}

// ----- Queue pairs -----
enum class QpState : uint8_t { kReset, kInit, kRtr, kRts, kError };

// How a requester's work request ended (a subset of ibv_wc_status, same
// meanings).
enum class CompletionStatus : uint8_t {
  kSuccess = 0,
  kLocalLengthError,
  kRemoteInvalidRequest,    // NAK invalid request
  kRemoteAccessError,       // NAK remote access error
  kRemoteOperationalError,  // NAK remote operational error
  kRetryExceeded,           // timeouts / sequence NAKs beyond retry_count
  kRnrRetryExceeded,        // RNR NAKs beyond rnr_retry
  kFlushed,                 // the QP went to the error state first
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_IB_TYPES_H_
