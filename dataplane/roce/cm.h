// The InfiniBand Communication Manager (IB spec vol. 1, chapter 12) as
// librdmacm uses it over RoCEv2, so that unmodified rdma_cm clients (rping,
// rdma_client, ...) connect to the appliance (docs/roce-cm.md).
//
// Two layers, both pure logic with no DPDK:
//  - the wire format: the 24-byte common MAD header and the CM messages REQ,
//    MRA, REJ, REP, RTU, DREQ and DREP (host-order structs with every field,
//    Parse/Build with static_asserted offsets), and rdma_cm's REQ private-data
//    header and service IDs;
//  - CmService, the passive side: listening ports, per-connection state in a
//    fixed table, REP retransmission, disconnection, time-wait. It decides;
//    the engine executes the CmActions it returns (create/destroy QPs, send
//    MADs). The engine also strips the RoCEv2 headers: the MAD is the 256-byte
//    payload of a UD SEND ONLY to QP1 whose DETH carries Q_Key kGsiQkey.
//
// This header gathers both: cm_messages.h (the wire format) and
// cm_service.h (CmService).
#ifndef SPINNIC_DATAPLANE_ROCE_CM_H_
#define SPINNIC_DATAPLANE_ROCE_CM_H_

#include "dataplane/roce/cm_messages.h"  // IWYU pragma: export
#include "dataplane/roce/cm_service.h"   // IWYU pragma: export

#endif  // SPINNIC_DATAPLANE_ROCE_CM_H_
