#include "dataplane/roce/verbs_service.h"

#include "dataplane/common/byte_order.h"

namespace spinnic::roce {

VerbsService::VerbsService(uint32_t qpn, uint64_t region_bytes)
    : QpService(qpn, region_bytes) {
  if (region_bytes != 0 && regions().Allocate(region_bytes, &region_) !=
                               ConnectionRegions::Status::kOk) {
    region_ = {};  // no region: the REP carries no private data
  }
}

size_t VerbsService::RepPrivateData(std::span<uint8_t> out) {
  if (region_.id == 0 || out.size() < kVerbsPrivateDataBytes) return 0;
  StoreBe64(out.data(), region_.address);
  StoreBe32(out.data() + 8, region_.rkey);
  return kVerbsPrivateDataBytes;
}

void VerbsService::OnSend(const ReceivedSend& send, QpActions& qp) {
  qp.ReportSend(send);
}

}  // namespace spinnic::roce
