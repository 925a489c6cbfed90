// What the files of SpinnicService share (spinnic_service.cc and the
// per-feature RPC files: handler_rpcs.cc, region_rpcs.cc, stats_rpcs.cc,
// control/diad/diad_rpcs.cc, control/roce/roce_rpcs.cc). Internal to the
// service.
#ifndef SPINNIC_CONTROL_GRPC_SERVICE_INTERNAL_H_
#define SPINNIC_CONTROL_GRPC_SERVICE_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "dataplane/dataplane.h"
#include "dataplane/diad/diad_module.h"
#include "dataplane/roce/roce_module.h"
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
// "fd00:d1ad::1".
std::string NodeText(const diad::NodeAddress& node);
// "02:00:00:00:00:0c".
std::string MacText(const diad::MacAddress& m);
// "192.0.2.12" for an IPv4-mapped address, else IPv6 text.
std::string GidText(const roce::Gid& ip);
// A remote operation's timeout (DiAD's and RoCE's) when the request gives
// `timeout_ms`, 0 meaning the default (10 s).
absl::Duration DiadTimeout(uint32_t timeout_ms);
// Nearest-rank percentile of sorted `values` (not empty).
uint64_t Percentile(const std::vector<uint64_t>& values, int percent);
uint64_t ElapsedNs(absl::Time start);

// control/diad/diad_rpcs.cc

// GetInfo's diad part; `config` names the ports.
void FillDiadInfo(const diad::DiadConfig& d, const v1::Config& config,
                  v1::DiadInfo* diad);
bool IsDiadEvent(uint32_t code);
// Event.data of the diad_* events; `peers` names peer slots.
void DecodeDiadEvent(const Event& event,
                     const absl::flat_hash_map<uint32_t, std::string>& peers,
                     v1::DiadEvent* out);

// control/roce/roce_rpcs.cc

// GetInfo's roce part; `config` names the ports.
void FillRoceInfo(const roce::RoceConfig& r, const v1::Config& config,
                  v1::RoceInfo* roce);
bool IsRoceEvent(uint32_t code);
// Event.data of the roce_* events.
void DecodeRoceEvent(const Event& event, v1::RoceEvent* out);

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_SERVICE_INTERNAL_H_
