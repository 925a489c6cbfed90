// Helpers the gRPC services share (service_internal.h).
#include <arpa/inet.h>
#include <malloc.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "control/grpc/service_internal.h"

namespace spinnic {
namespace {

// A remote operation's timeout when the request gives none.
constexpr absl::Duration kDefaultRemoteTimeout = absl::Seconds(10);

// After giving back a reservation this large, trim the heap: glibc keeps
// freed memory in its arenas otherwise, and RSS would stay at the peak.
constexpr uint64_t kTrimAfterBytes = uint64_t{64} << 20;

absl::Mutex generate_mu;
uint64_t generate_in_flight ABSL_GUARDED_BY(generate_mu) = 0;

}  // namespace

// absl and gRPC share the canonical code numbering.
grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

std::string MacText(const std::array<uint8_t, 6>& m) {
  return absl::StrFormat("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2],
                         m[3], m[4], m[5]);
}

std::string AddressText(const std::array<uint8_t, 16>& ip) {
  char text[INET6_ADDRSTRLEN];
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0,    0,
                                          0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(ip.data(), kMapped, sizeof kMapped) == 0) {
    return inet_ntop(AF_INET, ip.data() + 12, text, sizeof text) ? text : "?";
  }
  return inet_ntop(AF_INET6, ip.data(), text, sizeof text) ? text : "?";
}

absl::Duration RemoteTimeout(uint32_t timeout_ms) {
  return timeout_ms == 0 ? kDefaultRemoteTimeout
                         : absl::Milliseconds(timeout_ms);
}

// Nearest-rank percentile of sorted `values` (not empty).
uint64_t Percentile(const std::vector<uint64_t>& values, int percent) {
  size_t rank = (values.size() * static_cast<size_t>(percent) + 99) / 100;
  return values[std::max<size_t>(rank, 1) - 1];
}

uint64_t ElapsedNs(absl::Time start) {
  return static_cast<uint64_t>(absl::ToInt64Nanoseconds(absl::Now() - start));
}

absl::StatusOr<GenerateReservation> GenerateReservation::Acquire(
    uint64_t bytes) {
  absl::MutexLock lock(&generate_mu);
  if (bytes > kMaxGenerateBytes - generate_in_flight) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "generating ", bytes, " bytes: other requests hold ",
        generate_in_flight,
        " bytes of generated operations and all together "
        "may hold at most ",
        kMaxGenerateBytes, "; retry when they are done, or generate fewer"));
  }
  generate_in_flight += bytes;
  return GenerateReservation(bytes);
}

GenerateReservation::~GenerateReservation() {
  if (bytes_ == 0) return;
  {
    absl::MutexLock lock(&generate_mu);
    generate_in_flight -= bytes_;
  }
  if (bytes_ >= kTrimAfterBytes) malloc_trim(0);
}

uint64_t GenerateReservation::InFlight() {
  absl::MutexLock lock(&generate_mu);
  return generate_in_flight;
}

}  // namespace spinnic
