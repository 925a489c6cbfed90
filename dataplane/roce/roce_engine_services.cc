// RoceEngine's services (roce_engine.h, qp_service.h): which service a
// connection runs, SENDs delivered to it (or to the QP's handler), and the
// actions a service takes on its QP.
#include <cstring>
#include <memory>

#include "dataplane/ectx_table.h"
#include "dataplane/roce/echo_service.h"
#include "dataplane/roce/naaice_service.h"
#include "dataplane/roce/perftest_service.h"
#include "dataplane/roce/roce_engine.h"
#include "dataplane/roce/roce_engine_internal.h"
#include "dataplane/roce/rping_service.h"
#include "dataplane/roce/verbs_service.h"

namespace spinnic::roce {

const ::spinnic::naaice::FunctionTable& RoceEngine::FunctionsFor(
    const EctxTable& table) {
  if (table.version() != functions_version_) {
    installed_functions_ = functions_;
    for (const auto& ectx : table.ectxs()) {
      if (ectx->binding().kind != kBindNaaiceFunction) continue;
      // Install checked the kind (naaice_function) and its `function`.
      installed_functions_.Register(static_cast<uint8_t>(ectx->binding().key),
                                    ::spinnic::naaice::FindFunction(
                                        ectx->params().GetString("function")));
    }
    functions_version_ = table.version();
  }
  return installed_functions_;
}

std::unique_ptr<QpService> RoceEngine::NewService(uint32_t qpn,
                                                  uint16_t cm_port,
                                                  const Gid& local_ip,
                                                  bool perftest_later) const {
  // Made when a connection is accepted or a QP created: the control path's
  // pace, not the packets'.
  if (cm_port == 0) return std::make_unique<VerbsService>(qpn, 0);
  ServiceSlot slot = ServiceSlot::kVerbs;
  services_.Lookup(cm_port, &slot);
  switch (slot) {
    case ServiceSlot::kNaaice:
      return std::make_unique<NaaiceService>(qpn, config_.naaice_max_bytes,
                                             &functions_);
    case ServiceSlot::kRping:
      return std::make_unique<RpingService>(qpn);
    case ServiceSlot::kEcho:
      return std::make_unique<EchoService>(qpn);
    case ServiceSlot::kPerftest:
    case ServiceSlot::kPerftestWriteLat: {
      // On perftest_write_lat's port the data connections play
      // ib_write_lat's server (with the config's size and iterations); on
      // perftest_port they follow the client.
      PerftestWriteLatConfig write_lat;
      if (slot == ServiceSlot::kPerftestWriteLat) {
        write_lat = config_.perftest_write_lat;
        write_lat.port = cm_port;
      }
      return std::make_unique<PerftestService>(
          qpn, config_.perftest_region_bytes, local_ip, config_.max_rd_atomic,
          perftest_later ? PerftestService::Role::kUndecided
                         : PerftestService::Role::kControl,
          write_lat);
    }
    case ServiceSlot::kVerbs:
    case ServiceSlot::kCount:
      break;
  }
  return std::make_unique<VerbsService>(qpn, config_.connection_region_bytes);
}

bool RoceEngine::ReceiveSend(Qp& qp, const ResponderPlan& plan,
                             const Arrival& arrival, const uint8_t* payload) {
  if (plan.starts_message) {
    qp.send_to_handler = arrival.table->FindBound(kBindQp, qp.qpn) != nullptr;
  }
  if (qp.send_to_handler) {
    // sPIN: the QP's handler takes the SEND in place, packet by packet,
    // after the transport accepted it; the service does not see it.
    RunHandlers(qp, plan, arrival, nullptr);
    counters_.sends.Add(plan.ends_message ? 1 : 0);
    counters_.send_bytes.Add(plan.length);
    Queue(qp, qp.responder.Accept(plan));
    return true;
  }
  QpService* service = qp.service.get();
  if (service == nullptr || (plan.starts_message && !service->CanReceive())) {
    // No receive for it: the requester waits and retries (RNR), as with a
    // QP whose receive queue is empty.
    counters_.refused_rnr.Add();
    Queue(qp, qp.responder.Rnr(plan));
    return false;
  }
  if (plan.send_offset > qp.receive_area.size() ||
      plan.length > qp.receive_area.size() - plan.send_offset) {
    // Larger than the service takes: the receive buffer is too small.
    counters_.refused_naks[static_cast<size_t>(NakCode::kInvalidRequest)].Add();
    Queue(qp, qp.responder.Fail(plan, NakCode::kInvalidRequest));
    RaiseQpError(qp);
    return false;
  }
  if (plan.length != 0) {
    std::memcpy(qp.receive_area.data() + plan.send_offset, payload,
                plan.length);
  }
  qp.receive_length = static_cast<uint32_t>(plan.send_offset + plan.length);
  Queue(qp, qp.responder.Accept(plan));
  if (plan.ends_message) {
    counters_.sends.Add();
    counters_.send_bytes.Add(qp.receive_length);
    ReceivedSend send;
    send.bytes = {qp.receive_area.data(), qp.receive_length};
    send.has_immediate = plan.has_immediate;
    send.immediate = plan.immediate;
    send.msn = qp.responder.msn();
    qp.receive_length = 0;
    ServiceActions actions(this, qp, arrival.table);
    counters_.service_sends[static_cast<size_t>(service->kind())].Add();
    service->OnSend(send, actions);
    // A perftest connection that turned out a control one: its next SEND
    // lands in a buffer of the control messages' size, and its region goes
    // back unless a READ response queued still reads it (a client that
    // guessed its rkey; then it goes with the connection).
    if (service->kind() == ServiceKind::kPerftest) {
      auto* perftest = static_cast<PerftestService*>(service);
      if (perftest->TakeReceiveAreaChange()) {
        SetReceiveArea(qp);
        bool reading = false;
        for (uint32_t i = 0; i < qp.reply_count; ++i) {
          reading |=
              qp.replies[(qp.reply_head + i) % kReplyQueue].data != nullptr;
        }
        if (!reading) perftest->ReleaseRegion();
      }
    }
  }
  return true;
}

QpService* RoceEngine::Sibling(const Qp& qp, uint32_t remote_qpn) {
  // A scan of this HPU's QPs (the CM places a client's connections on one
  // port together, PlaceCmQp): perftest asks once per exchange, not per
  // packet.
  Qp* newest = nullptr;
  for (std::unique_ptr<Qp>& slot : qps_) {
    Qp* other = slot.get();
    if (other == nullptr || !other->in_use || other == &qp ||
        other->service == nullptr || other->cm_port != qp.cm_port ||
        other->spec.remote_ip != qp.spec.remote_ip ||
        (remote_qpn != 0 && other->spec.remote_qpn != remote_qpn)) {
      continue;
    }
    if (newest == nullptr || other->generation > newest->generation) {
      newest = other;
    }
  }
  return newest != nullptr ? newest->service.get() : nullptr;
}

void RoceEngine::StartSibling(const Qp& qp, QpService* sibling,
                              const EctxTable* table) {
  for (std::unique_ptr<Qp>& slot : qps_) {
    Qp* other = slot.get();
    if (other == nullptr || !other->in_use || other == &qp ||
        other->service.get() != sibling) {
      continue;
    }
    ServiceActions actions(this, *other, table);
    sibling->OnStart(actions);
    return;
  }
}

void RoceEngine::FailQp(Qp& qp) {
  // Both halves stop; the requester's flushed work completes (and the
  // error event is raised) in the next poll.
  qp.responder.SetState(QpState::kError);
  if (qp.requester == nullptr) return;
  qp.requester->SetError();
  if (!qp.requesting) {
    qp.requesting = true;
    requesting_.push_back(qp.qpn - kFirstQpn);
  }
}

}  // namespace spinnic::roce
