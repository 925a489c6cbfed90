// What the files of the gRPC services share (spinnic_service.cc, the
// per-feature RPC files handler_rpcs.cc, region_rpcs.cc, stats_rpcs.cc, and
// the features' services, control/<feature>/<feature>_rpcs.cc). Internal to
// spinnicd's server.
#ifndef SPINNIC_CONTROL_GRPC_SERVICE_INTERNAL_H_
#define SPINNIC_CONTROL_GRPC_SERVICE_INTERNAL_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dataplane/dataplane.h"
#include "grpcpp/support/status.h"
#include "spinnic/v1/control.pb.h"

namespace spinnic {

// Generation limits (RemoteWrite, StreamSend, QpExecute): at most this many
// generated operations per request, and their bytes together at most this
// much (the server holds them all).
inline constexpr uint32_t kMaxGenerateCount = 1000000;
inline constexpr uint64_t kMaxGenerateBytes = uint64_t{1} << 30;

// service_util.cc

// absl and gRPC share the canonical code numbering.
grpc::Status ToGrpc(const absl::Status& status);
// "192.0.2.12" for an IPv4-mapped address, else IPv6 text ("fd00:d1ad::1").
std::string AddressText(const std::array<uint8_t, 16>& address);
// "02:00:00:00:00:0c".
std::string MacText(const std::array<uint8_t, 6>& mac);
// A remote operation's timeout (DiAD's and RoCE's) when the request gives
// `timeout_ms`, 0 meaning the default (10 s).
absl::Duration RemoteTimeout(uint32_t timeout_ms);
// Nearest-rank percentile of sorted `values` (not empty).
uint64_t Percentile(const std::vector<uint64_t>& values, int percent);
uint64_t ElapsedNs(absl::Time start);

// The bytes of generated operations (RemoteWrite's and StreamSend's
// generate_count x generate_size, held until the request is done) of all
// requests at once: at most kMaxGenerateBytes together, so that concurrent
// clients cannot make spinnicd hold N x 1 GiB. A reservation that would go
// beyond fails with RESOURCE_EXHAUSTED; its destructor gives the bytes back
// and, after a large one, returns the freed heap to the system (malloc_trim),
// so that RSS goes back down after a burst of large generated requests.
class GenerateReservation {
 public:
  static absl::StatusOr<GenerateReservation> Acquire(uint64_t bytes);
  GenerateReservation(GenerateReservation&& other) noexcept
      : bytes_(other.bytes_) {
    other.bytes_ = 0;
  }
  GenerateReservation& operator=(GenerateReservation&&) = delete;
  ~GenerateReservation();
  // Bytes reserved by every live reservation (for tests).
  static uint64_t InFlight();

 private:
  explicit GenerateReservation(uint64_t bytes) : bytes_(bytes) {}
  uint64_t bytes_;
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_SERVICE_INTERNAL_H_
