// What answers the SEND messages of a queue pair (docs/roce.md,
// "Services"). A reliable connection's SENDs need a consumer: on a NIC the
// application posts receives and reacts to them. On the appliance each QP
// has a service, chosen by the rdma_cm port the client connected to:
//
//   kVerbs     plain listen ports and QPs created over gRPC: SENDs become
//              roce_send events; a CM connection gets a region of its own
//              advertised in the REP's private data ({be64 addr, be32 rkey},
//              as rdma_cm servers commonly do)
//   kNaaice    roce.naaice_port: the NAAICE memory-region setup protocol and
//              function calls (naaice_service.h)
//   kRping     roce.rping_port: the server side of rdma-core's rping
//              (rping_service.h)
//   kPerftest  roce.perftest_port: the server side of perftest's -R
//              (rdma_cm) control exchange (perftest_service.h)
//   kEcho      roce.echo_port: every SEND sent back (echo_service.h)
//
// A service runs on HPU 0 with the QP. It is called once per complete SEND
// message, per WRITE WITH IMMEDIATE and per completion of its own work
// requests, never per packet: the engine gathers a SEND's packets into the
// QP's receive buffer and resolves the service's regions itself.
#ifndef SPINNIC_DATAPLANE_ROCE_QP_SERVICE_H_
#define SPINNIC_DATAPLANE_ROCE_QP_SERVICE_H_

#include <cstdint>
#include <span>

#include "dataplane/roce/connection_regions.h"
#include "dataplane/roce/ib_types.h"
#include "handlers/naaice/function.h"

namespace spinnic::roce {

struct RoceCounters;

enum class ServiceKind : uint8_t {
  kVerbs = 0,
  kNaaice,
  kRping,
  kPerftest,
  kEcho,
  kCount,
};
inline constexpr size_t kServiceKinds =
    static_cast<size_t>(ServiceKind::kCount);
const char* ServiceKindName(ServiceKind kind);

class QpService;

// A complete SEND message as the service sees it; the bytes are valid
// during the call only.
struct ReceivedSend {
  std::span<const uint8_t> bytes;
  bool has_immediate = false;
  uint32_t immediate = 0;  // host order
  uint32_t msn = 0;
};

// What a service may do on its QP (the engine implements it). Every post
// is one signaled work request whose `tag` comes back in OnCompletion; the
// local bytes must stay valid until then. A post returns false when the
// send queue refused it (the QP is in the error state, or full).
class QpActions {
 public:
  virtual bool PostSend(std::span<const uint8_t> bytes, uint32_t tag) = 0;
  virtual bool PostRead(std::span<uint8_t> local, uint64_t remote_va,
                        uint32_t rkey, uint32_t tag) = 0;
  // `immediate` null: a plain WRITE.
  virtual bool PostWrite(std::span<const uint8_t> local, uint64_t remote_va,
                         uint32_t rkey, const uint32_t* immediate,
                         uint32_t tag) = 0;
  // Tells the control plane (event roce_send).
  virtual void ReportSend(const ReceivedSend& send) = 0;
  // The service of another connection from the same peer on the same
  // rdma_cm port (perftest's data connections): the one connected to the
  // peer's QP `remote_qpn`, or with 0 the newest; nullptr if none.
  virtual QpService* Sibling(uint32_t remote_qpn) = 0;
  // Calls `sibling`'s OnStart (one that Sibling returned) with actions on
  // its own QP: a control connection starting the test on its data
  // connection (ib_write_lat's server writes first).
  virtual void Start(QpService* sibling) { (void)sibling; }
  // The connection cannot go on: the QP enters the error state and every
  // work request is flushed.
  virtual void Fail() = 0;
  virtual uint32_t qpn() const = 0;
  virtual RoceCounters& counters() = 0;
  // NAAICE functions by code: the built-ins and the installed
  // naaice_function handlers of the ECTX table in effect.
  virtual const ::spinnic::naaice::FunctionTable& naaice_functions() = 0;

 protected:
  ~QpActions() = default;
};

class QpService {
 public:
  QpService(uint32_t qpn, uint64_t max_region_bytes)
      : regions_(qpn, max_region_bytes) {}
  virtual ~QpService() = default;
  QpService(const QpService&) = delete;
  QpService& operator=(const QpService&) = delete;

  virtual ServiceKind kind() const = 0;
  // The largest SEND message taken; a larger one is refused with an
  // invalid request NAK (the receive buffer is too small, as on a NIC).
  virtual uint32_t max_message_bytes() const = 0;
  // Whether a receive is available for the next SEND (else RNR NAK).
  virtual bool CanReceive() const { return true; }
  // Bytes of the CM REP's private data (called once, when the connection
  // is accepted); 0 for none.
  virtual size_t RepPrivateData(std::span<uint8_t> out) {
    (void)out;
    return 0;
  }
  virtual void OnSend(const ReceivedSend& send, QpActions& qp) = 0;
  // An RDMA WRITE WITH IMMEDIATE into the connection completed.
  virtual void OnWriteImm(uint32_t immediate, uint32_t msn, QpActions& qp) {
    (void)immediate, (void)msn, (void)qp;
  }
  virtual void OnCompletion(uint32_t tag, CompletionStatus status,
                            QpActions& qp) {
    (void)tag, (void)status, (void)qp;
  }
  // A sibling connection started this one (QpActions::Start).
  virtual void OnStart(QpActions& qp) { (void)qp; }
  // Where the connection's SEND messages land instead of a buffer of
  // max_message_bytes() that the engine keeps (perftest's data connection:
  // its region, which holds the largest message the client sends). Asked
  // once, when the QP is created; must stay valid while the QP exists.
  virtual std::span<uint8_t> ReceiveArea() { return {}; }
  // Whether OnWrite is called (asked once, when the QP is created: the
  // engine pays nothing per WRITE for the services that do not want it).
  virtual bool wants_writes() const { return false; }
  // An RDMA WRITE message without immediate into this connection's memory
  // completed (its last packet was accepted): [va, va + length).
  virtual void OnWrite(uint64_t va, uint64_t length, QpActions& qp) {
    (void)va, (void)length, (void)qp;
  }

  // The memory this connection gives its peer (resolved before the
  // registered regions, only on this QP).
  ConnectionRegions& regions() { return regions_; }
  const ConnectionRegions& regions() const { return regions_; }

 private:
  ConnectionRegions regions_;
};

}  // namespace spinnic::roce

#endif  // SPINNIC_DATAPLANE_ROCE_QP_SERVICE_H_
