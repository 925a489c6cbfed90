// Fuzz target for AddressPrefix::Parse: the input is the text a user put in
// a config file or a gRPC request. Besides "no crash", it checks that an
// accepted prefix is canonical (no host bits, length in range, IPv4 in the
// mapped block), contains its own address and survives a print-and-parse
// round trip, and that a rejection is INVALID_ARGUMENT with a short message.
// Seeds: tests/fuzz/corpus/prefix/.

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dataplane/match_rule.h"

namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

bool HostBitsClear(const spinnic::AddressPrefix& p) {
  for (int bit = p.length; bit < 128; ++bit) {
    if (p.address[bit / 8] & (0x80 >> (bit % 8))) return false;
  }
  return true;
}

std::string Format(const spinnic::AddressPrefix& p) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (p.is_ipv4) {
    FUZZ_CHECK(inet_ntop(AF_INET, p.address.data() + 12, buf, sizeof(buf)));
    return absl::StrCat(buf, "/", p.length - 96);
  }
  FUZZ_CHECK(inet_ntop(AF_INET6, p.address.data(), buf, sizeof(buf)));
  return absl::StrCat(buf, "/", p.length);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<spinnic::AddressPrefix> prefix =
      spinnic::AddressPrefix::Parse(text);
  if (!prefix.ok()) {
    FUZZ_CHECK(prefix.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(!prefix.status().message().empty());
    // Input is echoed only in part, so a huge input gives a short error.
    FUZZ_CHECK(prefix.status().message().size() < 600);
    return 0;
  }
  const spinnic::AddressPrefix& p = *prefix;
  FUZZ_CHECK(p.length <= 128);
  FUZZ_CHECK(HostBitsClear(p));
  FUZZ_CHECK(p.Contains(p.address));
  if (p.is_ipv4) {
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0,    0,
                                            0, 0, 0, 0, 0xff, 0xff};
    FUZZ_CHECK(p.length >= 96);
    FUZZ_CHECK(std::memcmp(p.address.data(), kMapped, 12) == 0);
  }
  // An accepted text has only address characters and one optional '/'.
  FUZZ_CHECK(text.find_first_not_of("0123456789abcdefABCDEF:./") ==
             absl::string_view::npos);

  const std::string again_text = Format(p);
  const absl::StatusOr<spinnic::AddressPrefix> again =
      spinnic::AddressPrefix::Parse(again_text);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->address == p.address);
  FUZZ_CHECK(again->length == p.length);
  FUZZ_CHECK(again->is_ipv4 == p.is_ipv4);
  return 0;
}
