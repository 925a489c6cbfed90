// Fuzz target for the NAAICE MRSP parsers (dataplane/roce/mrsp.h): the input
// is one SEND payload. Every parser runs on it (whatever its type byte says)
// and must not read outside it (ASan). Every accepted message must satisfy:
//   - PeekType agrees with the parser that accepted it, and no other
//     parser accepts it;
//   - building the parsed message gives back the input byte for byte (for
//     an error message: its type and code; the padding is not checked by
//     the parser), and needs exactly that many bytes of capacity.
// The request immediate is fuzzed from the first four bytes: parse then
// make gives back the value with bit 7 set.
// Seeds: tests/fuzz/corpus/mrsp/.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "dataplane/roce/mrsp.h"

namespace spinnic::roce::mrsp {
namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

void CheckRebuilt(std::span<const uint8_t> in, const uint8_t* out,
                  size_t length) {
  FUZZ_CHECK(length == in.size());
  FUZZ_CHECK(std::memcmp(out, in.data(), length) == 0);
}

void Check(std::span<const uint8_t> in) {
  MessageType type{};
  const ParseError peek = PeekType(in, &type);
  FUZZ_CHECK(peek < ParseError::kCount);

  static AdvertiseRequest request;
  static Advertise advert;
  uint8_t code = 0;
  const ParseError er = ParseAdvertiseRequest(in, &request);
  const ParseError ea = ParseAdvertise(in, &advert);
  const ParseError ee = ParseErrorMessage(in, &code);
  FUZZ_CHECK(er < ParseError::kCount && ea < ParseError::kCount &&
             ee < ParseError::kCount);
  const int accepted = (er == ParseError::kNone) + (ea == ParseError::kNone) +
                       (ee == ParseError::kNone);
  FUZZ_CHECK(accepted <= 1);
  if (accepted == 1) FUZZ_CHECK(peek == ParseError::kNone);

  uint8_t out[kMaxMessageBytes + 8];
  if (er == ParseError::kNone) {
    FUZZ_CHECK(type == MessageType::kAdvertiseRequest);
    FUZZ_CHECK(request.count >= 1 && request.count <= kMaxRegions);
    const std::span<const RegionRequest> regions(request.regions.data(),
                                                 request.count);
    const size_t n = BuildAdvertiseRequest(regions, out, sizeof(out));
    CheckRebuilt(in, out, n);
    FUZZ_CHECK(BuildAdvertiseRequest(regions, out, n - 1) == 0);
  }
  if (ea == ParseError::kNone) {
    FUZZ_CHECK(type == MessageType::kAdvertise);
    FUZZ_CHECK(advert.count <= kMaxRegions);
    const std::span<const RegionAdvert> regions(advert.regions.data(),
                                                advert.count);
    const size_t n = BuildAdvertise(regions, out, sizeof(out));
    CheckRebuilt(in, out, n);
    FUZZ_CHECK(BuildAdvertise(regions, out, n - 1) == 0);
  }
  if (ee == ParseError::kNone) {
    FUZZ_CHECK(type == MessageType::kError);
    const size_t n = BuildErrorMessage(code, out, sizeof(out));
    FUZZ_CHECK(n == in.size() && n == kErrorMessageBytes);
    FUZZ_CHECK(out[0] == in[0] && out[1] == in[1]);
  }

  if (in.size() >= 4) {
    const uint32_t value = uint32_t{in[0]} << 24 | uint32_t{in[1]} << 16 |
                           uint32_t{in[2]} << 8 | in[3];
    RequestImmediate imm;
    if (ParseRequestImmediate(value, &imm)) {
      FUZZ_CHECK(imm.function_code <= kFunctionCodeMask);
      FUZZ_CHECK(MakeRequestImmediate(imm.function_code, imm.user) ==
                 (value | kStartRpcBit));
    } else {
      FUZZ_CHECK(value == 0);
    }
  }
}

}  // namespace
}  // namespace spinnic::roce::mrsp

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  spinnic::roce::mrsp::Check({data, size});
  return 0;
}
