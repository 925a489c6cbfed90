// The region RPCs of SpinnicService: RegisterRegion, DeregisterRegion,
// ListRegions, ReadRegion, WriteRegion.
#include <string>

#include "control/grpc/service_internal.h"
#include "control/grpc/spinnic_service.h"

namespace spinnic {
namespace {

// Largest ReadRegion answer: well inside the default message limit.
constexpr uint64_t kMaxRegionRead = 1 << 20;

uint32_t AccessBits(const v1::RegionAccess& access) {
  return (access.local_read() ? kLocalRead : 0) |
         (access.local_write() ? kLocalWrite : 0) |
         (access.remote_read() ? kRemoteRead : 0) |
         (access.remote_write() ? kRemoteWrite : 0);
}

void FillRegionInfo(const RegionInfo& info, v1::RegionInfo* out) {
  out->set_id(info.id);
  out->set_name(info.name);
  out->set_rkey(info.rkey);
  out->set_base_address(info.base_address);
  out->set_length(info.length);
  v1::RegionAccess* access = out->mutable_access();
  access->set_local_read(info.access & kLocalRead);
  access->set_local_write(info.access & kLocalWrite);
  access->set_remote_read(info.access & kRemoteRead);
  access->set_remote_write(info.access & kRemoteWrite);
  for (const std::string& name : info.bound_to) out->add_bound_to(name);
}

}  // namespace

grpc::Status SpinnicService::RegisterRegion(
    grpc::ServerContext*, const v1::RegisterRegionRequest* request,
    v1::RegisterRegionResponse* response) {
  RegionConfig config;
  config.name = request->name();
  config.length = request->length();
  config.access = AccessBits(request->access());
  config.stream_id = request->stream_id();
  absl::MutexLock lock(&mu_);
  absl::StatusOr<RegionInfo> region = dataplane_->RegisterRegion(config);
  if (!region.ok()) return ToGrpc(region.status());
  response->set_id(region->id);
  response->set_rkey(region->rkey);
  response->set_base_address(region->base_address);
  response->set_length(region->length);
  return grpc::Status::OK;
}

grpc::Status SpinnicService::DeregisterRegion(
    grpc::ServerContext*, const v1::DeregisterRegionRequest* request,
    v1::DeregisterRegionResponse*) {
  // The dataplane checks bindings and deregisters under one lock.
  absl::MutexLock lock(&mu_);
  return ToGrpc(dataplane_->DeregisterRegion(request->id()));
}

grpc::Status SpinnicService::ListRegions(grpc::ServerContext*,
                                         const v1::ListRegionsRequest*,
                                         v1::ListRegionsResponse* response) {
  absl::MutexLock lock(&mu_);
  for (const RegionInfo& region : dataplane_->ListRegions()) {
    v1::RegionInfo* info = response->add_regions();
    FillRegionInfo(region, info);
    info->set_stream_id(region.stream_id);
  }
  return grpc::Status::OK;
}

grpc::Status SpinnicService::ReadRegion(grpc::ServerContext*,
                                        const v1::ReadRegionRequest* request,
                                        v1::ReadRegionResponse* response) {
  absl::StatusOr<std::string> data = dataplane_->ReadRegion(
      request->id(), request->offset(), request->length(), kMaxRegionRead);
  if (!data.ok()) return ToGrpc(data.status());
  response->set_data(*std::move(data));
  return grpc::Status::OK;
}

grpc::Status SpinnicService::WriteRegion(grpc::ServerContext*,
                                         const v1::WriteRegionRequest* request,
                                         v1::WriteRegionResponse*) {
  const std::string& data = request->data();
  return ToGrpc(dataplane_->WriteRegion(
      request->id(), request->offset(),
      {reinterpret_cast<const uint8_t*>(data.data()), data.size()}));
}

}  // namespace spinnic
