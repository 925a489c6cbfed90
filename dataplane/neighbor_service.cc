#include "dataplane/neighbor_service.h"

#include <rte_mbuf.h>

#include "dataplane/hpu.h"

namespace spinnic {

NeighborOutcome AnswerNeighbor(rte_mbuf* request, const ParsedFrame& frame,
                               const LocalAddresses& local, rte_mempool* pool,
                               Hpu& hpu, uint16_t in_port) {
  rte_mbuf* reply = rte_pktmbuf_alloc(pool);
  uint8_t* out = reply == nullptr
                     ? nullptr
                     : reinterpret_cast<uint8_t*>(
                           rte_pktmbuf_append(reply, kMaxNeighborReplyBytes));
  if (out == nullptr) {
    if (reply != nullptr) rte_pktmbuf_free(reply);
    rte_pktmbuf_free(request);
    return NeighborOutcome::kNoBuffer;
  }
  const NeighborResult result = HandleNeighborFrame(
      {rte_pktmbuf_mtod(request, const uint8_t*), request->data_len}, frame,
      local, {out, kMaxNeighborReplyBytes});
  rte_pktmbuf_free(request);
  if (result.verdict != NeighborVerdict::kAnswer) {
    rte_pktmbuf_free(reply);
    return result.verdict == NeighborVerdict::kMalformed
               ? NeighborOutcome::kMalformed
               : NeighborOutcome::kIgnored;
  }
  rte_pktmbuf_trim(reply, static_cast<uint16_t>(kMaxNeighborReplyBytes -
                                                result.reply_length));
  hpu.Transmit(in_port, reply);
  return NeighborOutcome::kAnswered;
}

}  // namespace spinnic
