// Answering ARP requests and IPv6 neighbour solicitations for the
// appliance's own addresses, on the HPU, for every transport that owns
// addresses (DiAD's node address, RoCE's IPv4/IPv6 addresses): one reply
// mbuf from the pool, the pure answer logic of neighbor.h, one transmit out
// of the port the request came in on. The transports only count.
#ifndef SPINNIC_DATAPLANE_NEIGHBOR_SERVICE_H_
#define SPINNIC_DATAPLANE_NEIGHBOR_SERVICE_H_

#include <cstdint>

#include "dataplane/classifier.h"
#include "dataplane/neighbor.h"

struct rte_mbuf;
struct rte_mempool;

namespace spinnic {

class Hpu;

enum class NeighborOutcome : uint8_t {
  kAnswered,   // the reply is queued for the ingress port's TX batch
  kIgnored,    // not a request for one of `local`'s addresses
  kMalformed,  // refused by neighbor.h (counted there by reason)
  kNoBuffer,   // no mbuf for the reply
};

// Answers `request` for `local` and always consumes it.
NeighborOutcome AnswerNeighbor(rte_mbuf* request, const ParsedFrame& frame,
                               const LocalAddresses& local, rte_mempool* pool,
                               Hpu& hpu, uint16_t in_port);

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_NEIGHBOR_SERVICE_H_
