// The NAAICE memory-region setup protocol and RPC immediates
// (dataplane/roce/mrsp.h): golden bytes derived from the NAAICE library's
// own source (naaice-greenhpc/naa-communication-library at commit
// f7b72fcae3732080b50d398dd3c3e91812c76982, docs/naaice.md), builder/parser
// round trips, one minimal input per parse error, every prefix of a valid
// message, counts larger than the payload.
#include "dataplane/roce/mrsp.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tests/common/hex.h"

namespace spinnic::roce::mrsp {
namespace {

using testing_hex::FromHex;
using testing_hex::ToHex;

// Golden bytes: this Python 3 script replays what their C code does on a
// little-endian host, independently of mrsp.cc; its output is pasted below.
//
//   import struct
//   def htonll(x): return struct.pack('>Q', x)
//   def htonl(x): return struct.pack('>I', x)
//   def aar_entry(flags, naa, host, rkey, size):
//       arr = bytearray(8); arr[7] = flags
//       arr[0:7] = struct.pack('<Q', naa)[0:7]
//       mr_info = struct.unpack('<Q', bytes(arr))[0]
//       return htonll(mr_info) + htonll(host) + htonl(rkey) + htonl(size)
//   hdr = lambda t, n: bytes([t, n, 0, 0])
//   aar = hdr(1, 3) + aar_entry(0x06, 0x1000, 0x7f0012345000, 0x1234, 1024)
//       + aar_entry(0x0c, 0x2000, 0x7f0012346000, 0x5678, 2048)
//       + aar_entry(0x01, 0, 0, 0, 100)
//   a = hdr(2, 2) + htonll(0x55d0c0de1000) + htonl(0xabcdef) + htonl(1024)
//       + htonll(0x55d0c0de2000) + htonl(0xabcdf0) + htonl(2048)
//   def imm(fn, user3):
//       v = struct.unpack('<I', bytes([fn]) + bytes(user3))[0] | 0x80
//       return htonl(v)
//
// Which of their definitions fixes each byte (lib/ paths of their repo):
//  - byte 0, the type: enum message_id (naaice.h:184-196) written through
//    struct naaice_mr_hdr (naaice.h:295-297) in naaice_send_message
//    (naaice.c:1397-1405);
//  - bytes 1..3, count and two zero padding bytes: struct
//    naaice_mr_dynamic_hdr (naaice.h:299-302), set in naaice.c:1446-1455
//    (count = parameter regions + internal regions);
//  - advertise+request entries, 24 bytes each: struct
//    naaice_mr_advertisement_request (naaice.h:226-245). Byte 0 the flags
//    (mr_info_bytearray[7] before htonll, naaice.c:1473-1488, values from
//    enum naaice_mrflags_value naaice.h:253-266), bytes 1..7 the requested
//    NAA address, big-endian (fpgaaddr[0..6] before htonll,
//    naaice.c:1492-1495), 8..15 host address htonll, 16..19 rkey htonl,
//    20..23 size htonl (naaice.c:1470-1472). Parameter regions first, then
//    internal ones with flags = MRFLAG_INTERNAL, address and rkey 0
//    (naaice.c:1509-1532);
//  - the example NAA addresses 0x1000 and 0x2000 are what
//    get_sequential_naa_addresses (naaice.c:98-109) gives with one
//    internal region of 100 bytes first and 4096-byte pages;
//  - advertise entries, 16 bytes: struct naaice_mr_advertisement
//    (naaice.h:205-214), htonll/htonl per field (naaice_swnaa.c:1214-1222);
//  - the error message: struct naaice_mr_error (naaice.h:285-291) after
//    the type byte (naaice_swnaa.c:1230-1240), code 1 as naaice_server
//    sends it (naaice_swnaa.c:737);
//  - request immediate: immediate_bytearr[0] = fncode, [1..3] user bytes
//    (naaice_set_immediate, naaice.c:811-824), sent as
//    htonl(immediate | START_RPC_MASK 0x80) (naaice.c:1702).
constexpr char kGoldenAdvertiseRequest[] =
    "01030000"
    "06"
    "00000000001000"
    "00007f0012345000"
    "00001234"
    "00000400"
    "0c"
    "00000000002000"
    "00007f0012346000"
    "00005678"
    "00000800"
    "01"
    "00000000000000"
    "0000000000000000"
    "00000000"
    "00000064";
constexpr char kGoldenAdvertise[] =
    "02020000"
    "000055d0c0de100000abcdef00000400"
    "000055d0c0de200000abcdf000000800";
constexpr char kGoldenError[] = "00010000";

std::array<RegionRequest, 3> GoldenRequests() {
  return {{
      {kFlagSingleSend | kFlagInput, 0x1000, 0x00007f0012345000, 0x1234, 1024},
      {kFlagInput | kFlagOutput, 0x2000, 0x00007f0012346000, 0x5678, 2048},
      {kFlagInternal, 0, 0, 0, 100},
  }};
}

std::array<RegionAdvert, 2> GoldenAdverts() {
  return {{
      {0x000055d0c0de1000, 0x00abcdef, 1024},
      {0x000055d0c0de2000, 0x00abcdf0, 2048},
  }};
}

bool Same(const RegionRequest& a, const RegionRequest& b) {
  return a.flags == b.flags && a.naa_address == b.naa_address &&
         a.host_address == b.host_address && a.rkey == b.rkey &&
         a.size == b.size;
}

bool Same(const RegionAdvert& a, const RegionAdvert& b) {
  return a.address == b.address && a.rkey == b.rkey && a.size == b.size;
}

TEST(MrspGolden, AdvertiseRequestBuildsTheirBytes) {
  const auto regions = GoldenRequests();
  std::array<uint8_t, kMaxMessageBytes> out{};
  const size_t n = BuildAdvertiseRequest(regions, out.data(), out.size());
  ASSERT_EQ(n, 4u + 3 * 24);
  EXPECT_EQ(ToHex(out.data(), n), kGoldenAdvertiseRequest);
}

TEST(MrspGolden, AdvertiseRequestParsesTheirBytes) {
  const std::vector<uint8_t> bytes = FromHex(kGoldenAdvertiseRequest);
  AdvertiseRequest m;
  ASSERT_EQ(ParseAdvertiseRequest(bytes, &m), ParseError::kNone);
  ASSERT_EQ(m.count, 3);
  const auto regions = GoldenRequests();
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_TRUE(Same(m.regions[i], regions[i])) << i;
  }
  MessageType type{};
  EXPECT_EQ(PeekType(bytes, &type), ParseError::kNone);
  EXPECT_EQ(type, MessageType::kAdvertiseRequest);
}

TEST(MrspGolden, AdvertiseBuildsAndParsesTheirBytes) {
  const auto regions = GoldenAdverts();
  std::array<uint8_t, kMaxMessageBytes> out{};
  const size_t n = BuildAdvertise(regions, out.data(), out.size());
  ASSERT_EQ(n, 4u + 2 * 16);
  EXPECT_EQ(ToHex(out.data(), n), kGoldenAdvertise);

  const std::vector<uint8_t> bytes = FromHex(kGoldenAdvertise);
  Advertise m;
  ASSERT_EQ(ParseAdvertise(bytes, &m), ParseError::kNone);
  ASSERT_EQ(m.count, 2);
  for (size_t i = 0; i < regions.size(); ++i) {
    EXPECT_TRUE(Same(m.regions[i], regions[i])) << i;
  }
}

TEST(MrspGolden, ErrorBuildsAndParsesTheirBytes) {
  std::array<uint8_t, 8> out{};
  ASSERT_EQ(BuildErrorMessage(0x01, out.data(), out.size()), 4u);
  EXPECT_EQ(ToHex(out.data(), 4), kGoldenError);
  uint8_t code = 0;
  ASSERT_EQ(ParseErrorMessage(FromHex(kGoldenError), &code), ParseError::kNone);
  EXPECT_EQ(code, 0x01);
  // Their senders never write the padding: whatever it holds is accepted.
  ASSERT_EQ(ParseErrorMessage(FromHex("0003abcd"), &code), ParseError::kNone);
  EXPECT_EQ(code, static_cast<uint8_t>(ErrorCode::kTooManyRegions));
}

// The request `naaice_client 10.0.0.1 10.0.0.2 3 "1024 1024 1024"` sends
// (examples/naaice_client.c:162-182: all three regions input, region 0
// single-send, region 2 output; NAA addresses 0, 0x1000, 0x2000 from
// get_sequential_naa_addresses). Host addresses and rkeys are made up:
// aar_entry(0x06, 0x0, 0x55550000a000, 0x101, 1024) etc. in the script.
TEST(MrspGolden, TheirAp1ExampleRequest) {
  const RegionRequest regions[] = {
      {kFlagSingleSend | kFlagInput, 0x0, 0x55550000a000, 0x101, 1024},
      {kFlagInput, 0x1000, 0x55550000b000, 0x102, 1024},
      {kFlagInput | kFlagOutput, 0x2000, 0x55550000c000, 0x103, 1024},
  };
  std::array<uint8_t, kNaaiceReceiveBytes> out{};
  const size_t n = BuildAdvertiseRequest(regions, out.data(), out.size());
  EXPECT_EQ(ToHex(out.data(), n),
            "01030000"
            "06"
            "00000000000000"
            "000055550000a000"
            "00000101"
            "00000400"
            "04"
            "00000000001000"
            "000055550000b000"
            "00000102"
            "00000400"
            "0c"
            "00000000002000"
            "000055550000c000"
            "00000103"
            "00000400");
}

TEST(MrspImmediate, RequestMatchesTheirEncoding) {
  // Golden values from the script: imm(3, [0, 0, 0]) = 00000083 and
  // imm(3, [0x11, 0x22, 0x33]) = 33221183 (ImmDt bytes, big-endian).
  EXPECT_EQ(MakeRequestImmediate(3, 0), 0x00000083u);
  EXPECT_EQ(MakeRequestImmediate(3, 0x332211), 0x33221183u);
  // The function code keeps 7 bits; bit 7 is the start bit.
  EXPECT_EQ(MakeRequestImmediate(0xff, 0), 0x000000ffu);
  EXPECT_EQ(MakeRequestImmediate(1, 0xff000000), 0x00000081u);

  RequestImmediate r;
  ASSERT_TRUE(ParseRequestImmediate(0x33221183, &r));
  EXPECT_EQ(r.function_code, 3);
  EXPECT_EQ(r.user, 0x332211u);
  EXPECT_TRUE(r.start_rpc);
  // naaice_server does not check bit 7: 0x05 is function 5 all the same.
  ASSERT_TRUE(ParseRequestImmediate(0x05, &r));
  EXPECT_EQ(r.function_code, 5);
  EXPECT_FALSE(r.start_rpc);
  // 0 is the host's error signal (naaice_write_data with fncode 0).
  EXPECT_FALSE(ParseRequestImmediate(0, &r));
}

TEST(MrspImmediate, ResultCodeSitsAboveTheLowByte) {
  // naaice_client: naa_return_code = ntohl(imm_data) >> IMMEDIATE_OFFSET (8).
  EXPECT_EQ(MakeResultImmediate(0), 0u);
  EXPECT_EQ(MakeResultImmediate(0x10), 0x1000u);
  EXPECT_EQ(ResultReturnCode(MakeResultImmediate(0x7f)), 0x7fu);
  EXPECT_EQ(ResultReturnCode(0x000002ff),
            static_cast<uint32_t>(ReturnCode::kKernelTimeout));
  // A code in the low byte alone (what naaice_swnaa_write_data would send
  // for an error) reads as success on their client.
  EXPECT_EQ(ResultReturnCode(0x00000001), 0u);
}

std::vector<RegionRequest> ManyRequests(size_t n) {
  std::vector<RegionRequest> v(n);
  for (size_t i = 0; i < n; ++i) {
    v[i] = {static_cast<uint8_t>(i % 3 == 0 ? kFlagInternal
                                            : kFlagInput | kFlagOutput),
            0x1000 * i + 0x00a1b2c3d4e5f0, i % 3 == 0 ? 0 : 0x7f00000000 + i,
            i % 3 == 0 ? 0 : static_cast<uint32_t>(0x100 + i),
            static_cast<uint32_t>(1 + i * 977)};
  }
  return v;
}

TEST(MrspRoundTrip, AdvertiseRequestUpToTheLimit) {
  for (size_t n = 1; n <= kMaxRegions; ++n) {
    const auto regions = ManyRequests(n);
    std::array<uint8_t, kMaxMessageBytes> out{};
    const size_t len = BuildAdvertiseRequest(regions, out.data(), out.size());
    ASSERT_EQ(len, kHeaderBytes + n * kRequestEntryBytes) << n;
    AdvertiseRequest m;
    ASSERT_EQ(ParseAdvertiseRequest({out.data(), len}, &m), ParseError::kNone);
    ASSERT_EQ(m.count, n);
    for (size_t i = 0; i < n; ++i) EXPECT_TRUE(Same(m.regions[i], regions[i]));
  }
  // 31 regions fit their 768-byte receive, 32 do not.
  EXPECT_LE(kHeaderBytes + kMaxRequestRegionsForNaaice * kRequestEntryBytes,
            kNaaiceReceiveBytes);
  EXPECT_GT(kHeaderBytes + kMaxRegions * kRequestEntryBytes,
            kNaaiceReceiveBytes);
}

TEST(MrspRoundTrip, AdvertiseUpToTheLimitAndEmpty) {
  for (size_t n = 0; n <= kMaxRegions; ++n) {
    std::vector<RegionAdvert> regions(n);
    for (size_t i = 0; i < n; ++i) {
      regions[i] = {0xffff000000000000 + (i << 20),
                    static_cast<uint32_t>(0xdead0000 + i),
                    static_cast<uint32_t>(0xfffff + i)};
    }
    std::array<uint8_t, kMaxMessageBytes> out{};
    const size_t len = BuildAdvertise(regions, out.data(), out.size());
    ASSERT_EQ(len, kHeaderBytes + n * kAdvertEntryBytes) << n;
    Advertise m;
    ASSERT_EQ(ParseAdvertise({out.data(), len}, &m), ParseError::kNone);
    ASSERT_EQ(m.count, n);
    for (size_t i = 0; i < n; ++i) EXPECT_TRUE(Same(m.regions[i], regions[i]));
  }
}

TEST(MrspRoundTrip, ExtremeButValidRanges) {
  // Last NAA byte at 2^56 - 1 and last host byte at 2^64 - 1, with the
  // largest and a small size.
  const RegionRequest largest{kFlagOutput, kMaxNaaAddress - 0xfffffffe,
                              UINT64_MAX - 0xfffffffe, 1, 0xffffffff};
  const RegionRequest small{kFlagInput, kMaxNaaAddress - 1, UINT64_MAX - 1, 1,
                            2};
  for (const RegionRequest& r : {largest, small}) {
    const RegionRequest one[] = {r};
    std::array<uint8_t, 28> out{};
    ASSERT_EQ(BuildAdvertiseRequest(one, out.data(), out.size()), 28u);
    AdvertiseRequest m;
    ASSERT_EQ(ParseAdvertiseRequest(out, &m), ParseError::kNone);
    EXPECT_TRUE(Same(m.regions[0], r));
    // One byte further is refused.
    RegionRequest further = r;
    ++further.naa_address;
    const RegionRequest naa_over[] = {further};
    EXPECT_EQ(BuildAdvertiseRequest(naa_over, out.data(), out.size()), 0u);
    further = r;
    ++further.host_address;
    const RegionRequest host_over[] = {further};
    EXPECT_EQ(BuildAdvertiseRequest(host_over, out.data(), out.size()), 0u);
  }
}

// One minimal input per parse error.
struct BadCase {
  const char* name;
  const char* hex;
  MessageType parser;  // which Parse* function
  ParseError expected;
};

// A valid advertise+request entry: input, NAA 0x1000, host 0x2000, rkey 7,
// size 16.
#define ENTRY_TAIL   \
  "00000000001000"   \
  "0000000000002000" \
  "00000007"         \
  "00000010"
#define GOOD_ENTRY "04" ENTRY_TAIL

const BadCase kBadCases[] = {
    {"empty", "", MessageType::kAdvertiseRequest, ParseError::kTruncated},
    {"three_bytes", "010100", MessageType::kAdvertiseRequest,
     ParseError::kTruncated},
    {"error_three_bytes", "000100", MessageType::kError,
     ParseError::kTruncated},
    {"type_3", "03000000", MessageType::kAdvertiseRequest,
     ParseError::kUnknownType},
    {"type_ff", "ff000000", MessageType::kAdvertise, ParseError::kUnknownType},
    {"advertise_as_request", "02000000", MessageType::kAdvertiseRequest,
     ParseError::kUnknownType},
    {"request_as_advertise", "01000000", MessageType::kAdvertise,
     ParseError::kUnknownType},
    {"request_as_error", "01000000", MessageType::kError,
     ParseError::kUnknownType},
    {"padding_2", "01010100" GOOD_ENTRY, MessageType::kAdvertiseRequest,
     ParseError::kBadPadding},
    {"padding_3", "02000001", MessageType::kAdvertise, ParseError::kBadPadding},
    {"zero_regions", "01000000", MessageType::kAdvertiseRequest,
     ParseError::kZeroRegions},
    {"too_many_request", "01210000", MessageType::kAdvertiseRequest,
     ParseError::kTooManyRegions},
    {"too_many_advertise", "02ff0000", MessageType::kAdvertise,
     ParseError::kTooManyRegions},
    {"count_exceeds", "01020000" GOOD_ENTRY, MessageType::kAdvertiseRequest,
     ParseError::kCountExceedsPayload},
    {"count_exceeds_advertise", "02010000", MessageType::kAdvertise,
     ParseError::kCountExceedsPayload},
    {"trailing", "01010000" GOOD_ENTRY "00", MessageType::kAdvertiseRequest,
     ParseError::kTrailingBytes},
    {"trailing_advertise", "0200000000", MessageType::kAdvertise,
     ParseError::kTrailingBytes},
    {"trailing_error", "0001000000", MessageType::kError,
     ParseError::kTrailingBytes},
    {"reserved_flag",
     "01010000"
     "14" ENTRY_TAIL,
     MessageType::kAdvertiseRequest, ParseError::kReservedFlags},
    {"internal_and_input",
     "01010000"
     "05" ENTRY_TAIL,
     MessageType::kAdvertiseRequest, ParseError::kConflictingFlags},
    {"internal_with_host",
     "01010000"
     "01" ENTRY_TAIL,
     MessageType::kAdvertiseRequest, ParseError::kInternalHasHostRegion},
    {"internal_with_rkey",
     "01010000"
     "01"
     "00000000000000"
     "0000000000000000"
     "00000001"
     "00000010",
     MessageType::kAdvertiseRequest, ParseError::kInternalHasHostRegion},
    {"zero_size",
     "01010000"
     "04"
     "00000000001000"
     "0000000000002000"
     "00000007"
     "00000000",
     MessageType::kAdvertiseRequest, ParseError::kZeroSize},
    {"zero_size_advertise",
     "02010000"
     "0000000000002000"
     "00000007"
     "00000000",
     MessageType::kAdvertise, ParseError::kZeroSize},
    // 0xfffffffffffff1 + 16 bytes ends at 2^56.
    {"naa_overflow",
     "01010000"
     "04"
     "fffffffffffff1"
     "0000000000002000"
     "00000007"
     "00000010",
     MessageType::kAdvertiseRequest, ParseError::kNaaRangeOverflow},
    {"host_overflow",
     "01010000"
     "04"
     "00000000001000"
     "fffffffffffffff1"
     "00000007"
     "00000010",
     MessageType::kAdvertiseRequest, ParseError::kHostRangeOverflow},
    {"host_overflow_advertise",
     "02010000"
     "fffffffffffffff1"
     "00000007"
     "00000010",
     MessageType::kAdvertise, ParseError::kHostRangeOverflow},
    {"second_entry_bad",
     "01020000" GOOD_ENTRY "04"
     "00000000001000"
     "0000000000002000"
     "00000007"
     "00000000",
     MessageType::kAdvertiseRequest, ParseError::kZeroSize},
};

ParseError RunParser(MessageType parser, const std::vector<uint8_t>& bytes) {
  switch (parser) {
    case MessageType::kAdvertiseRequest: {
      AdvertiseRequest m;
      return ParseAdvertiseRequest(bytes, &m);
    }
    case MessageType::kAdvertise: {
      Advertise m;
      return ParseAdvertise(bytes, &m);
    }
    case MessageType::kError: {
      uint8_t code = 0;
      return ParseErrorMessage(bytes, &code);
    }
  }
  return ParseError::kCount;
}

TEST(MrspParse, EveryErrorHasAMinimalInput) {
  std::set<ParseError> seen;
  for (const BadCase& c : kBadCases) {
    const std::vector<uint8_t> bytes = FromHex(c.hex);
    EXPECT_EQ(RunParser(c.parser, bytes), c.expected)
        << c.name << ": got " << ParseErrorName(RunParser(c.parser, bytes));
    seen.insert(c.expected);
  }
  for (int e = 1; e < static_cast<int>(ParseError::kCount); ++e) {
    EXPECT_TRUE(seen.count(static_cast<ParseError>(e)))
        << "no case for " << ParseErrorName(static_cast<ParseError>(e));
  }
}

TEST(MrspParse, GoodEntryIsGood) {
  // The cases above differ from this valid message in one field only.
  AdvertiseRequest m;
  ASSERT_EQ(ParseAdvertiseRequest(FromHex("01010000" GOOD_ENTRY), &m),
            ParseError::kNone);
  EXPECT_TRUE(
      Same(m.regions[0], RegionRequest{kFlagInput, 0x1000, 0x2000, 7, 16}));
}

TEST(MrspParse, EveryPrefixIsRefused) {
  for (const char* hex :
       {kGoldenAdvertiseRequest, kGoldenAdvertise, kGoldenError}) {
    const std::vector<uint8_t> full = FromHex(hex);
    for (size_t len = 0; len < full.size(); ++len) {
      const std::vector<uint8_t> prefix(full.begin(), full.begin() + len);
      const ParseError expected = len < kHeaderBytes
                                      ? ParseError::kTruncated
                                      : ParseError::kCountExceedsPayload;
      AdvertiseRequest request;
      Advertise advert;
      uint8_t code = 0;
      ParseError got = ParseError::kNone;
      switch (full[0]) {
        case 0x01:
          got = ParseAdvertiseRequest(prefix, &request);
          break;
        case 0x02:
          got = ParseAdvertise(prefix, &advert);
          break;
        default:
          got = ParseErrorMessage(prefix, &code);
          break;
      }
      EXPECT_EQ(got, expected) << hex << " prefix " << len;
    }
  }
}

TEST(MrspParse, CountsLargerThanThePayloadAreRefused) {
  std::vector<uint8_t> request = FromHex(kGoldenAdvertiseRequest);
  std::vector<uint8_t> advert = FromHex(kGoldenAdvertise);
  for (int count = 0; count <= 255; ++count) {
    request[1] = static_cast<uint8_t>(count);
    advert[1] = static_cast<uint8_t>(count);
    AdvertiseRequest r;
    Advertise a;
    const ParseError er = ParseAdvertiseRequest(request, &r);
    const ParseError ea = ParseAdvertise(advert, &a);
    if (count > static_cast<int>(kMaxRegions)) {
      EXPECT_EQ(er, ParseError::kTooManyRegions) << count;
      EXPECT_EQ(ea, ParseError::kTooManyRegions) << count;
    } else if (count > 3) {
      EXPECT_EQ(er, ParseError::kCountExceedsPayload) << count;
    } else if (count == 0) {
      EXPECT_EQ(er, ParseError::kTrailingBytes) << count;
    }
    if (count > 2 && count <= static_cast<int>(kMaxRegions)) {
      EXPECT_EQ(ea, ParseError::kCountExceedsPayload) << count;
    } else if (count < 2) {
      EXPECT_EQ(ea, ParseError::kTrailingBytes) << count;
    }
  }
}

TEST(MrspBuild, RefusesWhatWouldNotParseOrFit) {
  const auto good = GoldenRequests();
  std::array<uint8_t, kMaxMessageBytes + 24> out{};
  const size_t need = 4 + 3 * 24;
  EXPECT_EQ(BuildAdvertiseRequest(good, out.data(), need - 1), 0u);
  EXPECT_EQ(BuildAdvertiseRequest(good, out.data(), need), need);
  EXPECT_EQ(BuildAdvertiseRequest(good, nullptr, need), 0u);
  EXPECT_EQ(BuildAdvertiseRequest({}, out.data(), out.size()), 0u);
  const auto too_many = ManyRequests(kMaxRegions + 1);
  EXPECT_EQ(BuildAdvertiseRequest(too_many, out.data(), out.size()), 0u);

  auto bad = good;
  bad[1].flags = 0x10;
  EXPECT_EQ(BuildAdvertiseRequest(bad, out.data(), out.size()), 0u);
  bad = good;
  bad[2].rkey = 1;  // internal
  EXPECT_EQ(BuildAdvertiseRequest(bad, out.data(), out.size()), 0u);
  bad = good;
  bad[0].naa_address = kMaxNaaAddress + 1;
  EXPECT_EQ(BuildAdvertiseRequest(bad, out.data(), out.size()), 0u);
  bad = good;
  bad[0].size = 0;
  EXPECT_EQ(BuildAdvertiseRequest(bad, out.data(), out.size()), 0u);

  const auto adverts = GoldenAdverts();
  EXPECT_EQ(BuildAdvertise(adverts, out.data(), 4 + 2 * 16 - 1), 0u);
  std::vector<RegionAdvert> many(kMaxRegions + 1, adverts[0]);
  EXPECT_EQ(BuildAdvertise(many, out.data(), out.size()), 0u);
  auto bad_advert = adverts;
  bad_advert[1].address = UINT64_MAX;
  bad_advert[1].size = 2;
  EXPECT_EQ(BuildAdvertise(bad_advert, out.data(), out.size()), 0u);

  EXPECT_EQ(BuildErrorMessage(1, out.data(), 3), 0u);
  EXPECT_EQ(BuildErrorMessage(1, nullptr, 4), 0u);
}

TEST(MrspParse, ErrorCodeForARefusedRequest) {
  EXPECT_EQ(ErrorCodeFor(ParseError::kTooManyRegions),
            ErrorCode::kTooManyRegions);
  EXPECT_EQ(ErrorCodeFor(ParseError::kNaaRangeOverflow),
            ErrorCode::kInvalidAddress);
  EXPECT_EQ(ErrorCodeFor(ParseError::kZeroSize), ErrorCode::kNotEnoughMemory);
  EXPECT_EQ(ErrorCodeFor(ParseError::kCountExceedsPayload),
            ErrorCode::kNotEnoughMemory);
}

TEST(MrspParse, ErrorNamesAreDistinct) {
  std::set<std::string> names;
  for (int e = 0; e < static_cast<int>(ParseError::kCount); ++e) {
    names.insert(ParseErrorName(static_cast<ParseError>(e)));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(ParseError::kCount));
  EXPECT_EQ(names.count("?"), 0u);
}

}  // namespace
}  // namespace spinnic::roce::mrsp
