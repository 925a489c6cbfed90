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

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_SERVICE_INTERNAL_H_
