// The handler RPCs of SpinnicService: ListHandlerKinds, InstallHandler,
// RemoveHandler, ListHandlers, ReadHandlerState.
#include <string>

#include "absl/strings/match.h"
#include "control/config_loader.h"
#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"
#include "control/stats_format.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

v1::ParamSchema::Type SchemaType(ParamType type) {
  switch (type) {
    case ParamType::kUint:
      return v1::ParamSchema::TYPE_UINT;
    case ParamType::kBool:
      return v1::ParamSchema::TYPE_BOOL;
    case ParamType::kString:
      return v1::ParamSchema::TYPE_STRING;
    case ParamType::kBytes:
      return v1::ParamSchema::TYPE_BYTES;
  }
  return v1::ParamSchema::TYPE_UNSPECIFIED;
}

}  // namespace

grpc::Status SpinnicService::ListHandlerKinds(
    grpc::ServerContext*, const v1::ListHandlerKindsRequest*,
    v1::ListHandlerKindsResponse* response) {
  for (const HandlerKind& kind : RegisteredHandlerKinds()) {
    v1::HandlerKindInfo* info = response->add_kinds();
    info->set_name(std::string(kind.name));
    info->set_description(std::string(kind.description));
    info->set_min_state_size(kind.min_state_size);
    info->set_min_regions(kind.min_regions);
    info->set_has_header(kind.has_header);
    info->set_has_payload(kind.has_payload);
    info->set_has_completion(kind.has_completion);
    for (const ParamSpec& spec : kind.params) {
      v1::ParamSchema* param = info->add_params();
      param->set_name(std::string(spec.name));
      param->set_type(SchemaType(spec.type));
      param->set_required(spec.required);
      param->set_default_value(std::string(spec.default_value));
      param->set_help(std::string(spec.help));
      param->set_min(spec.min);
      param->set_max(spec.max);
    }
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::InstallHandler(
    grpc::ServerContext*, const v1::InstallHandlerRequest* request,
    v1::InstallHandlerResponse* response) {
  // Validated as a config file's handlers entry is: this handler alone,
  // against the running config's ports and DiAD/RoCE sections.
  absl::StatusOr<HandlerConfig> converted =
      ToHandlerConfig(request->handler(), config_);
  if (!converted.ok()) {
    // The checks speak of a config's path; the caller sent
    // InstallHandlerRequest.handler.
    std::string message(converted.status().message());
    if (absl::StartsWith(message, "handlers[0]")) {
      message.replace(0, std::string_view("handlers[0]").size(), "handler");
    }
    return grpc::Status(
        static_cast<grpc::StatusCode>(converted.status().code()), message);
  }
  converted->bound_regions.assign(request->bound_regions().begin(),
                                  request->bound_regions().end());

  absl::MutexLock lock(&mu_);
  absl::StatusOr<uint32_t> id =
      dataplane_->InstallEctx(*converted, request->replace());
  if (!id.ok()) return ToGrpc(id.status());
  installed_[request->handler().name()] = request->handler();
  // Kept for ListHandlers (a fleet rollback reinstalls with them) and for a
  // reload that replaces or restores the handler.
  if (converted->bound_regions.empty()) {
    bound_regions_.erase(request->handler().name());
  } else {
    bound_regions_[request->handler().name()] = converted->bound_regions;
  }
  response->set_id(*id);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::RemoveHandler(
    grpc::ServerContext*, const v1::RemoveHandlerRequest* request,
    v1::RemoveHandlerResponse*) {
  absl::MutexLock lock(&mu_);
  absl::Status removed = dataplane_->RemoveEctx(request->name());
  if (!removed.ok()) return ToGrpc(removed);
  installed_.erase(request->name());
  bound_regions_.erase(request->name());
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ListHandlers(grpc::ServerContext*,
                                          const v1::ListHandlersRequest*,
                                          v1::ListHandlersResponse* response) {
  absl::MutexLock lock(&mu_);
  StatsSnapshot snapshot = dataplane_->Snapshot(Dataplane::StateCopy::kOmit);
  for (const EctxStats& e : snapshot.ectxs) {
    auto it = installed_.find(e.name);
    if (it != installed_.end()) *response->add_handlers() = it->second;
    auto bound = bound_regions_.find(e.name);
    if (bound != bound_regions_.end()) {
      (*response->mutable_bound_regions())[e.name].mutable_ids()->Add(
          bound->second.begin(), bound->second.end());
    }
    FillHandlerStats(e, response->add_stats());
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ReadHandlerState(
    grpc::ServerContext*, const v1::ReadHandlerStateRequest* request,
    v1::ReadHandlerStateResponse* response) {
  absl::StatusOr<std::string> data = dataplane_->ReadEctxState(
      request->name(), request->offset(), request->length());
  if (!data.ok()) return ToGrpc(data.status());
  response->set_data(*std::move(data));
  return grpc::Status::OK;
}

}  // namespace spinnic
