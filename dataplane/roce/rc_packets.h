// A parsed RC packet (wire.h) as the queue-pair state machines take it: a
// request for the responder, a response for the requester. One mapping for
// the engine and for the test clients built from the same state machines.
#ifndef SPINNIC_DATAPLANE_ROCE_RC_PACKETS_H_
#define SPINNIC_DATAPLANE_ROCE_RC_PACKETS_H_

#include "dataplane/roce/requester.h"
#include "dataplane/roce/responder.h"
#include "dataplane/roce/wire.h"

namespace spinnic::roce {

inline RcRequest RcRequestOf(const Packet& p) {
  RcRequest request;
  request.opcode = p.bth.opcode;
  request.psn = p.bth.psn;
  request.ack_req = p.bth.ack_req;
  request.solicited = p.bth.solicited;
  request.payload_length = p.payload_length;
  request.pad = p.pad_count;
  if (p.info->has(kHasReth)) {
    request.has_reth = true;
    request.reth_va = p.ext.reth.va;
    request.reth_rkey = p.ext.reth.rkey;
    request.reth_dma_length = p.ext.reth.dma_length;
  }
  if (p.info->has(kHasAtomicEth)) {
    request.has_atomic_eth = true;
    request.atomic_va = p.ext.atomic_eth.va;
    request.atomic_rkey = p.ext.atomic_eth.rkey;
    request.atomic_swap_add = p.ext.atomic_eth.swap_add;
    request.atomic_compare = p.ext.atomic_eth.compare;
  }
  if (p.info->has(kHasImmDt)) {
    request.has_immediate = true;
    request.immediate = p.ext.imm_data;
  }
  if (p.info->has(kHasIeth)) {
    request.has_invalidate = true;
    request.invalidate_rkey = p.ext.ieth;
  }
  return request;
}

inline ResponsePacket ResponsePacketOf(const Packet& p) {
  ResponsePacket response;
  response.opcode = p.bth.opcode;
  response.psn = p.bth.psn;
  response.syndrome = p.ext.aeth.syndrome;
  response.msn = p.ext.aeth.msn;
  response.payload_length = p.payload_length;
  response.atomic_original = p.ext.atomic_ack_eth.original;
  return response;
}

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_RC_PACKETS_H_
