// The log-level RPCs of SpinnicService: SetLogLevel, ListLogLevels
// (control/log_levels.h does the work; docs/logs.md).
#include <rte_log.h>

#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"
#include "control/log_levels.h"

namespace spinnic {

grpc::Status SpinnicService::SetLogLevel(grpc::ServerContext*,
                                         const v1::SetLogLevelRequest* request,
                                         v1::SetLogLevelResponse* response) {
  absl::StatusOr<std::vector<LogTypeLevel>> changed =
      spinnic::SetLogLevel(request->component(), request->level());
  if (!changed.ok()) return ToGrpc(changed.status());
  for (const LogTypeLevel& type : *changed) {
    v1::LogTypeLevel* out = response->add_changed();
    out->set_name(type.name);
    out->set_level(LogLevelName(type.level));
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ListLogLevels(
    grpc::ServerContext*, const v1::ListLogLevelsRequest* request,
    v1::ListLogLevelsResponse* response) {
  response->set_global_level(LogLevelName(rte_log_get_global_level()));
  for (const LogTypeLevel& type :
       spinnic::ListLogLevels(request->include_dpdk())) {
    v1::LogTypeLevel* out = response->add_levels();
    out->set_name(type.name);
    out->set_level(LogLevelName(type.level));
  }
  return grpc::Status::OK;
}

}  // namespace spinnic
