#include "dataplane/roce/verbs_service.h"

#include <rte_byteorder.h>

#include <cstring>

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
  const uint64_t address = rte_cpu_to_be_64(region_.address);
  const uint32_t rkey = rte_cpu_to_be_32(region_.rkey);
  std::memcpy(out.data(), &address, 8);
  std::memcpy(out.data() + 8, &rkey, 4);
  return kVerbsPrivateDataBytes;
}

void VerbsService::OnSend(const ReceivedSend& send, QpActions& qp) {
  qp.ReportSend(send);
}

}  // namespace spinnic::roce
