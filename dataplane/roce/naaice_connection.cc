#include "dataplane/roce/naaice_connection.h"

#include <rte_malloc.h>

#include <algorithm>
#include <cstring>

namespace spinnic::roce {

NaaiceConnection::NaaiceConnection(
    uint32_t qpn, uint64_t max_bytes,
    const ::spinnic::naaice::FunctionTable* functions)
    : qpn_(qpn), max_bytes_(max_bytes), session_(this, functions) {}

NaaiceConnection::~NaaiceConnection() {
  session_.Close();  // frees every region through Free
}

uint8_t* NaaiceConnection::Resolve(uint32_t rkey, uint64_t va,
                                   uint32_t length) const {
  for (const Region& r : regions_) {
    if (r.data == nullptr || r.rkey != rkey) continue;
    const uint64_t base = reinterpret_cast<uint64_t>(r.data);
    if (va < base || va - base > r.length || length > r.length - (va - base)) {
      return nullptr;
    }
    return r.data + (va - base);
  }
  return nullptr;
}

bool NaaiceConnection::Receive(uint64_t offset,
                               std::span<const uint8_t> payload) {
  if (offset > receive_.size() || payload.size() > receive_.size() - offset) {
    return false;
  }
  std::memcpy(receive_.data() + offset, payload.data(), payload.size());
  receive_length_ = static_cast<uint32_t>(offset + payload.size());
  return true;
}

std::span<const uint8_t> NaaiceConnection::KeepReply(
    std::span<const uint8_t> reply) {
  const size_t n = std::min(reply.size(), reply_.size());
  std::memcpy(reply_.data(), reply.data(), n);
  return {reply_.data(), n};
}

naaice::AllocStatus NaaiceConnection::Allocate(
    const mrsp::RegionRequest& request, naaice::Allocation* out) {
  // The host's requested NAA addresses are ignored, as by the NAAICE
  // library's own software NAA: we advertise where the memory is.
  if (request.size == 0 || request.size > max_bytes_ - bytes_) {
    return naaice::AllocStatus::kNotEnoughMemory;
  }
  auto free_slot =
      std::find_if(regions_.begin(), regions_.end(),
                   [](const Region& r) { return r.data == nullptr; });
  if (free_slot == regions_.end()) return naaice::AllocStatus::kTooManyRegions;
  uint8_t* data = static_cast<uint8_t*>(
      rte_zmalloc("spinnic_naaice", request.size, RTE_CACHE_LINE_SIZE));
  if (data == nullptr) return naaice::AllocStatus::kNotEnoughMemory;
  const uint32_t index = static_cast<uint32_t>(free_slot - regions_.begin());
  free_slot->data = data;
  free_slot->length = request.size;
  // Unique per connection (the QP number) and region; the host uses it
  // only on this QP, where it is looked up before the registered regions.
  free_slot->rkey = (qpn_ << 8) | (index + 1);
  bytes_ += request.size;
  out->id = index + 1;
  out->address = reinterpret_cast<uint64_t>(data);
  out->rkey = (request.flags & mrsp::kFlagInternal) != 0 ? 0 : free_slot->rkey;
  out->bytes = {data, request.size};
  return naaice::AllocStatus::kOk;
}

void NaaiceConnection::Free(uint32_t id) {
  if (id == 0 || id > regions_.size()) return;
  Region& r = regions_[id - 1];
  if (r.data == nullptr) return;
  rte_free(r.data);
  bytes_ -= r.length;
  r = Region();
}

}  // namespace spinnic::roce
