#include "dataplane/roce/mrsp.h"

#include "dataplane/common/byte_order.h"

namespace spinnic::roce::mrsp {
namespace {

// Offsets inside an advertise+request entry (24 bytes).
constexpr size_t kRequestFlags = 0;
constexpr size_t kRequestNaaAddress = 1;  // 7 bytes
constexpr size_t kRequestHostAddress = 8;
constexpr size_t kRequestRkey = 16;
constexpr size_t kRequestSize = 20;
static_assert(kRequestSize + 4 == kRequestEntryBytes);
// Offsets inside an advertise entry (16 bytes).
constexpr size_t kAdvertAddress = 0;
constexpr size_t kAdvertRkey = 8;
constexpr size_t kAdvertSize = 12;
static_assert(kAdvertSize + 4 == kAdvertEntryBytes);
static_assert(kMaxRequestRegionsForNaaice == 31);
static_assert(kMaxMessageBytes == 772);

// The checks shared by Parse and Build, so that whatever Build writes
// parses back.
ParseError CheckRequest(const RegionRequest& r) {
  if (r.flags & ~kKnownFlags) return ParseError::kReservedFlags;
  if ((r.flags & kFlagInternal) && r.flags != kFlagInternal) {
    return ParseError::kConflictingFlags;
  }
  if ((r.flags & kFlagInternal) && (r.host_address != 0 || r.rkey != 0)) {
    return ParseError::kInternalHasHostRegion;
  }
  if (r.size == 0) return ParseError::kZeroSize;
  // The last byte of the NAA range must stay within 56 bits.
  if (r.naa_address > kMaxNaaAddress ||
      r.size - 1 > kMaxNaaAddress - r.naa_address) {
    return ParseError::kNaaRangeOverflow;
  }
  if (r.host_address > UINT64_MAX - (r.size - 1)) {
    return ParseError::kHostRangeOverflow;
  }
  return ParseError::kNone;
}

ParseError CheckAdvert(const RegionAdvert& r) {
  if (r.size == 0) return ParseError::kZeroSize;
  if (r.address > UINT64_MAX - (r.size - 1)) {
    return ParseError::kHostRangeOverflow;
  }
  return ParseError::kNone;
}

// Header checks common to both region lists; `count` is byte 1.
ParseError CheckList(std::span<const uint8_t> payload, MessageType type,
                     size_t entry_bytes, uint8_t* count) {
  MessageType actual{};
  const ParseError e = PeekType(payload, &actual);
  if (e != ParseError::kNone) return e;
  if (actual != type) return ParseError::kUnknownType;
  if (payload[2] != 0 || payload[3] != 0) return ParseError::kBadPadding;
  *count = payload[1];
  if (*count > kMaxRegions) return ParseError::kTooManyRegions;
  const size_t body = payload.size() - kHeaderBytes;
  if (size_t{*count} * entry_bytes > body) {
    return ParseError::kCountExceedsPayload;
  }
  if (size_t{*count} * entry_bytes < body) return ParseError::kTrailingBytes;
  return ParseError::kNone;
}

void StoreListHeader(MessageType type, size_t count, uint8_t* out) {
  out[0] = static_cast<uint8_t>(type);
  out[1] = static_cast<uint8_t>(count);
  out[2] = 0;
  out[3] = 0;
}

}  // namespace

const char* ParseErrorName(ParseError error) {
  switch (error) {
    case ParseError::kNone:
      return "none";
    case ParseError::kTruncated:
      return "truncated";
    case ParseError::kUnknownType:
      return "unknown_type";
    case ParseError::kBadPadding:
      return "bad_padding";
    case ParseError::kZeroRegions:
      return "zero_regions";
    case ParseError::kTooManyRegions:
      return "too_many_regions";
    case ParseError::kCountExceedsPayload:
      return "count_exceeds_payload";
    case ParseError::kTrailingBytes:
      return "trailing_bytes";
    case ParseError::kReservedFlags:
      return "reserved_flags";
    case ParseError::kConflictingFlags:
      return "conflicting_flags";
    case ParseError::kInternalHasHostRegion:
      return "internal_has_host_region";
    case ParseError::kZeroSize:
      return "zero_size";
    case ParseError::kNaaRangeOverflow:
      return "naa_range_overflow";
    case ParseError::kHostRangeOverflow:
      return "host_range_overflow";
    case ParseError::kCount:
      break;
  }
  return "?";
}

ErrorCode ErrorCodeFor(ParseError error) {
  switch (error) {
    case ParseError::kTooManyRegions:
      return ErrorCode::kTooManyRegions;
    case ParseError::kNaaRangeOverflow:
      return ErrorCode::kInvalidAddress;
    default:
      return ErrorCode::kNotEnoughMemory;
  }
}

ParseError PeekType(std::span<const uint8_t> payload, MessageType* type) {
  if (payload.size() < kHeaderBytes) return ParseError::kTruncated;
  switch (payload[0]) {
    case static_cast<uint8_t>(MessageType::kError):
    case static_cast<uint8_t>(MessageType::kAdvertiseRequest):
    case static_cast<uint8_t>(MessageType::kAdvertise):
      *type = static_cast<MessageType>(payload[0]);
      return ParseError::kNone;
    default:
      return ParseError::kUnknownType;
  }
}

ParseError ParseAdvertiseRequest(std::span<const uint8_t> payload,
                                 AdvertiseRequest* out) {
  uint8_t count = 0;
  ParseError e = CheckList(payload, MessageType::kAdvertiseRequest,
                           kRequestEntryBytes, &count);
  if (e != ParseError::kNone) return e;
  if (count == 0) return ParseError::kZeroRegions;
  out->count = count;
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* p = payload.data() + kHeaderBytes + i * kRequestEntryBytes;
    RegionRequest& r = out->regions[i];
    r.flags = p[kRequestFlags];
    r.naa_address = LoadBe(p + kRequestNaaAddress, 7);
    r.host_address = LoadBe(p + kRequestHostAddress, 8);
    r.rkey = static_cast<uint32_t>(LoadBe(p + kRequestRkey, 4));
    r.size = static_cast<uint32_t>(LoadBe(p + kRequestSize, 4));
    e = CheckRequest(r);
    if (e != ParseError::kNone) return e;
  }
  return ParseError::kNone;
}

ParseError ParseAdvertise(std::span<const uint8_t> payload, Advertise* out) {
  uint8_t count = 0;
  ParseError e =
      CheckList(payload, MessageType::kAdvertise, kAdvertEntryBytes, &count);
  if (e != ParseError::kNone) return e;
  out->count = count;
  for (size_t i = 0; i < count; ++i) {
    const uint8_t* p = payload.data() + kHeaderBytes + i * kAdvertEntryBytes;
    RegionAdvert& r = out->regions[i];
    r.address = LoadBe(p + kAdvertAddress, 8);
    r.rkey = static_cast<uint32_t>(LoadBe(p + kAdvertRkey, 4));
    r.size = static_cast<uint32_t>(LoadBe(p + kAdvertSize, 4));
    e = CheckAdvert(r);
    if (e != ParseError::kNone) return e;
  }
  return ParseError::kNone;
}

ParseError ParseErrorMessage(std::span<const uint8_t> payload, uint8_t* code) {
  MessageType type{};
  const ParseError e = PeekType(payload, &type);
  if (e != ParseError::kNone) return e;
  if (type != MessageType::kError) return ParseError::kUnknownType;
  if (payload.size() > kErrorMessageBytes) return ParseError::kTrailingBytes;
  *code = payload[1];
  return ParseError::kNone;
}

size_t BuildAdvertiseRequest(std::span<const RegionRequest> regions,
                             uint8_t* out, size_t capacity) {
  if (regions.empty() || regions.size() > kMaxRegions) return 0;
  const size_t length = kHeaderBytes + regions.size() * kRequestEntryBytes;
  if (out == nullptr || capacity < length) return 0;
  for (const RegionRequest& r : regions) {
    if (CheckRequest(r) != ParseError::kNone) return 0;
  }
  StoreListHeader(MessageType::kAdvertiseRequest, regions.size(), out);
  uint8_t* p = out + kHeaderBytes;
  for (const RegionRequest& r : regions) {
    p[kRequestFlags] = r.flags;
    StoreBe(p + kRequestNaaAddress, 7, r.naa_address);
    StoreBe(p + kRequestHostAddress, 8, r.host_address);
    StoreBe(p + kRequestRkey, 4, r.rkey);
    StoreBe(p + kRequestSize, 4, r.size);
    p += kRequestEntryBytes;
  }
  return length;
}

size_t BuildAdvertise(std::span<const RegionAdvert> regions, uint8_t* out,
                      size_t capacity) {
  if (regions.size() > kMaxRegions) return 0;
  const size_t length = kHeaderBytes + regions.size() * kAdvertEntryBytes;
  if (out == nullptr || capacity < length) return 0;
  for (const RegionAdvert& r : regions) {
    if (CheckAdvert(r) != ParseError::kNone) return 0;
  }
  StoreListHeader(MessageType::kAdvertise, regions.size(), out);
  uint8_t* p = out + kHeaderBytes;
  for (const RegionAdvert& r : regions) {
    StoreBe(p + kAdvertAddress, 8, r.address);
    StoreBe(p + kAdvertRkey, 4, r.rkey);
    StoreBe(p + kAdvertSize, 4, r.size);
    p += kAdvertEntryBytes;
  }
  return length;
}

size_t BuildErrorMessage(uint8_t code, uint8_t* out, size_t capacity) {
  if (out == nullptr || capacity < kErrorMessageBytes) return 0;
  out[0] = static_cast<uint8_t>(MessageType::kError);
  out[1] = code;
  out[2] = 0;
  out[3] = 0;
  return kErrorMessageBytes;
}

uint32_t MakeRequestImmediate(uint8_t function_code, uint32_t user) {
  return (user & 0xffffff) << 8 | kStartRpcBit |
         (function_code & kFunctionCodeMask);
}

bool ParseRequestImmediate(uint32_t value, RequestImmediate* out) {
  if (value == 0) return false;
  out->function_code = static_cast<uint8_t>(value & kFunctionCodeMask);
  out->start_rpc = (value & kStartRpcBit) != 0;
  out->user = value >> 8;
  return true;
}

}  // namespace spinnic::roce::mrsp
