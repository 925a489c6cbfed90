// The NAAICE memory-region setup protocol (MRSP) and the RPC immediates of
// the NAAICE communication library (github.com/naaice-greenhpc/
// naa-communication-library, docs/naaice.md cites file and line of every
// fact): the SEND payloads a host (naaice_client, naaice_client_ap2) and a
// network-attached accelerator (naaice_server) exchange after the RC
// connection is up, and the 32-bit immediates of the RDMA WRITE WITH
// IMMEDIATE that start an RPC and return its result.
//
// Every multi-byte field travels big-endian (their code applies htonl /
// htobe64 to each field). The structs below are host-order views; Parse*
// reads them from a SEND payload and Build* writes one. Pure functions over
// bytes, no allocation, no DPDK: the RoCE engine, the unit tests and the
// fuzz target (tests/fuzz/mrsp_fuzz.cc) link this alone.
#ifndef SPINNIC_DATAPLANE_ROCE_MRSP_H_
#define SPINNIC_DATAPLANE_ROCE_MRSP_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace spinnic::roce::mrsp {

// rdma_cm (RDMA_PS_TCP) port naaice_server listens on and the examples
// connect to (SERVER_CONNECTION_PORT); the middleware's NAA_SPEC may name
// another.
inline constexpr uint16_t kDefaultCmPort = 12345;

// Byte 0 of every MRSP message.
enum class MessageType : uint8_t {
  kError = 0x00,
  kAdvertiseRequest = 0x01,  // host -> NAA: its regions + requested NAA ones
  kAdvertise = 0x02,         // NAA -> host: the regions it allocated
  // 0x03 (MSG_MR_R) is defined by their header but never sent nor accepted;
  // we refuse it as an unknown type.
};

// Fixed sizes on the wire.
inline constexpr size_t kHeaderBytes = 4;  // type, count (or code), 2 padding
inline constexpr size_t kErrorMessageBytes = 4;
inline constexpr size_t kRequestEntryBytes = 24;  // advertise+request entry
inline constexpr size_t kAdvertEntryBytes = 16;   // advertise entry

// Regions one message may describe. The count byte allows 255; their
// clients and the FPGA NAA stop at 32 (MAX_MRS), and so do we.
inline constexpr size_t kMaxRegions = 32;
// Their peers post a 768-byte receive for MRSP (MR_SIZE_MRSP = 24 * 32), so
// a message longer than this never reaches naaice_server or naaice_client:
// an advertise+request for them carries at most 31 regions.
inline constexpr size_t kNaaiceReceiveBytes = 768;
inline constexpr size_t kMaxRequestRegionsForNaaice =
    (kNaaiceReceiveBytes - kHeaderBytes) / kRequestEntryBytes;
inline constexpr size_t kMaxMessageBytes =
    kHeaderBytes + kMaxRegions * kRequestEntryBytes;

// Region flags (byte 0 of an advertise+request entry).
inline constexpr uint8_t kFlagInternal = 0x01;    // NAA scratch, never sent
inline constexpr uint8_t kFlagSingleSend = 0x02;  // written on the 1st RPC only
inline constexpr uint8_t kFlagInput = 0x04;       // host writes it to the NAA
inline constexpr uint8_t kFlagOutput = 0x08;      // NAA writes it back
inline constexpr uint8_t kKnownFlags = 0x0f;

// Requested NAA addresses travel in 7 bytes.
inline constexpr uint64_t kMaxNaaAddress = (uint64_t{1} << 56) - 1;
// Their clients place requested NAA addresses one after the other, each
// region rounded up to this page (get_sequential_naa_addresses).
inline constexpr uint64_t kNaaPageBytes = 4096;

// Error message codes (documented by them; naaice_server sends only 0x01,
// for any failure). Any byte parses: the code is the peer's to choose.
enum class ErrorCode : uint8_t {
  kNotEnoughMemory = 0x01,  // address + size beyond the NAA's memory
  kInvalidAddress = 0x02,   // requested address out of bounds
  kTooManyRegions = 0x03,
};

// One entry of an advertise+request: a host region the NAA may write
// (output) and the NAA region of the same size the host asks for.
struct RegionRequest {
  uint8_t flags = 0;          // kFlag*
  uint64_t naa_address = 0;   // requested NAA address, <= kMaxNaaAddress
  uint64_t host_address = 0;  // host virtual address (0 for internal)
  uint32_t rkey = 0;          // host rkey (0 for internal)
  uint32_t size = 0;          // bytes, of both regions
};

// One entry of an advertise: an NAA region the host writes into.
struct RegionAdvert {
  uint64_t address = 0;  // NAA virtual address
  uint32_t rkey = 0;
  uint32_t size = 0;
};

struct AdvertiseRequest {
  uint8_t count = 0;
  std::array<RegionRequest, kMaxRegions> regions{};
};

struct Advertise {
  uint8_t count = 0;
  std::array<RegionAdvert, kMaxRegions> regions{};
};

enum class ParseError : uint8_t {
  kNone = 0,
  kTruncated,              // shorter than the 4-byte header
  kUnknownType,            // byte 0 not 0x00, 0x01 or 0x02
  kBadPadding,             // advertise(+request) padding bytes 2..3 not zero
  kZeroRegions,            // advertise+request with count 0
  kTooManyRegions,         // count above kMaxRegions
  kCountExceedsPayload,    // count entries do not fit in the payload
  kTrailingBytes,          // payload longer than header + count entries
  kReservedFlags,          // flag bits outside kKnownFlags
  kConflictingFlags,       // internal together with another flag
  kInternalHasHostRegion,  // internal entry with host address or rkey set
  kZeroSize,               // a region of 0 bytes
  kNaaRangeOverflow,       // naa_address + size beyond 2^56
  kHostRangeOverflow,      // address + size beyond 2^64
  kCount,
};
const char* ParseErrorName(ParseError error);

// What an NAA answers (ErrorCode) to an advertise+request it refuses for
// `error`: kTooManyRegions for a count above our limit, kInvalidAddress for
// a requested range beyond 56 bits, kNotEnoughMemory otherwise (their NAA's
// only code).
ErrorCode ErrorCodeFor(ParseError error);

// The message type of a payload (kNone), or why it has none.
ParseError PeekType(std::span<const uint8_t> payload, MessageType* type);

// Each parser takes the whole SEND payload (exactly its byte_len) and reads
// nothing outside it. On kNone `out` holds the message; otherwise `out` is
// unspecified.
ParseError ParseAdvertiseRequest(std::span<const uint8_t> payload,
                                 AdvertiseRequest* out);
ParseError ParseAdvertise(std::span<const uint8_t> payload, Advertise* out);
// Bytes 2..3 of an error message are not checked: their senders never
// write them.
ParseError ParseErrorMessage(std::span<const uint8_t> payload, uint8_t* code);

// Builders write the message into out[0, capacity) and return its length,
// or 0 (nothing promised about `out`) when it does not fit or when the
// message would not parse (the Parse* rules above).
size_t BuildAdvertiseRequest(std::span<const RegionRequest> regions,
                             uint8_t* out, size_t capacity);
size_t BuildAdvertise(std::span<const RegionAdvert> regions, uint8_t* out,
                      size_t capacity);
size_t BuildErrorMessage(uint8_t code, uint8_t* out, size_t capacity);

// ----- RPC immediates -----
// The values below are host-order: the BTH ImmDt field carries them
// big-endian (ImmDt byte 3 is the low byte), exactly as ntohl(imm_data).
//
// Request (last host -> NAA WRITE WITH IMMEDIATE): bits 0..6 the function
// code, bit 7 set ("host to NAA"), bits 8..31 three user bytes
// (naaice_set_immediate; zero in every shipped example). Value 0 is the
// host's error signal (fncode 0: a zero-length write, no RPC).
inline constexpr uint32_t kStartRpcBit = 0x80;
inline constexpr uint8_t kFunctionCodeMask = 0x7f;

struct RequestImmediate {
  uint8_t function_code = 0;  // 0..127
  uint32_t user = 0;          // 24 bits; user byte i is bits 8i..8i+7
  bool start_rpc = false;     // bit 7
};

// function_code & 0x7f | kStartRpcBit | (user & 0xffffff) << 8.
uint32_t MakeRequestImmediate(uint8_t function_code, uint32_t user);
// False for value 0 (the host's error signal); otherwise fills `out` as
// naaice_server reads it (it does not check bit 7).
bool ParseRequestImmediate(uint32_t value, RequestImmediate* out);

// Result (last NAA -> host WRITE WITH IMMEDIATE): naaice_client takes the
// NAA's return code from bits 8..31 (ntohl(imm) >> 8) and ignores bits
// 0..7; 0 is success. (naaice_server itself only ever sends 0; see the open
// questions in docs/naaice.md.)
enum class ReturnCode : uint8_t {
  kSuccess = 0x00,
  kSocketUnavailable = 0x01,
  kKernelTimeout = 0x02,
  // 0x03..0x0f reserved, 0x10..0x7f application errors.
};
inline constexpr uint8_t kFirstApplicationError = 0x10;
inline constexpr uint8_t kLastApplicationError = 0x7f;

inline constexpr uint32_t MakeResultImmediate(uint8_t return_code) {
  return uint32_t{return_code} << 8;
}
inline constexpr uint32_t ResultReturnCode(uint32_t value) {
  return value >> 8;
}

}  // namespace spinnic::roce::mrsp

#endif  // SPINNIC_DATAPLANE_ROCE_MRSP_H_
