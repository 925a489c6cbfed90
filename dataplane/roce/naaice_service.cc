#include "dataplane/roce/naaice_service.h"

#include <algorithm>
#include <cstring>

#include "dataplane/common/clock.h"
#include "dataplane/roce/roce_engine.h"

namespace spinnic::roce {

NaaiceService::NaaiceService(uint32_t qpn, uint64_t max_bytes,
                             const ::spinnic::naaice::FunctionTable* functions)
    : QpService(qpn, max_bytes), session_(this, functions) {}

NaaiceService::~NaaiceService() {
  session_.Close();  // frees every region through Free
}

void NaaiceService::OnSend(const ReceivedSend& send, QpActions& qp) {
  const std::span<const uint8_t> reply = session_.OnSend(send.bytes);
  if (session_.state() == naaice::SessionState::kReady) {
    qp.counters().naaice_sessions.Add();
  }
  if (reply.empty()) return;
  const size_t n = std::min(reply.size(), reply_.size());
  std::memcpy(reply_.data(), reply.data(), n);
  qp.PostSend({reply_.data(), n}, kTagReply);
}

void NaaiceService::OnWriteImm(uint32_t immediate, uint32_t msn,
                               QpActions& qp) {
  session_.set_functions(&qp.naaice_functions());
  const naaice::RpcStep step = session_.OnWriteImm(immediate, msn);
  if (step.kind == naaice::RpcStep::Kind::kWriteBack) {
    WriteBack(step.write_back, qp);
    return;
  }
  if (step.kind != naaice::RpcStep::Kind::kRun) return;
  // Functions run here, on HPU 0, to completion: they are bounded by their
  // regions' sizes. (A long kernel delays this HPU's other traffic; running
  // them on a worker of their own is the next step, docs/naaice.md.)
  const naaice::RunRequest& run = step.run;
  RoceCounters& counters = qp.counters();
  const uint64_t start = clock::NowNanos();
  const uint8_t code = run.function(run.inputs, run.outputs, run.params);
  counters.naaice_function_ns.Add(clock::NowNanos() - start);
  counters.naaice_calls.Add();
  if (code != 0) counters.naaice_errors.Add();
  WriteBack(session_.OnFunctionDone(code), qp);
}

void NaaiceService::WriteBack(const naaice::WriteBack& write_back,
                              QpActions& qp) {
  for (const naaice::ResultWrite& w : write_back.writes) {
    const bool posted =
        qp.PostWrite({w.local_data, w.length}, w.remote_address, w.rkey,
                     w.with_immediate ? &w.immediate : nullptr,
                     w.with_immediate ? kTagResultEnd : kTagResult);
    if (!posted) {
      // The send queue cannot take the result: the connection cannot go
      // on consistently (the host would wait forever).
      qp.Fail();
      return;
    }
  }
}

void NaaiceService::OnCompletion(uint32_t tag, CompletionStatus status,
                                 QpActions& qp) {
  (void)qp;
  if (tag == kTagResultEnd && status == CompletionStatus::kSuccess) {
    session_.OnWriteBackComplete();
  }
}

naaice::AllocStatus NaaiceService::Allocate(const mrsp::RegionRequest& request,
                                            naaice::Allocation* out) {
  // The host's requested NAA addresses are ignored, as by the NAAICE
  // library's own software NAA: we advertise where the memory is.
  ConnectionRegions::Region region;
  switch (regions().Allocate(request.size, &region)) {
    case ConnectionRegions::Status::kOk:
      break;
    case ConnectionRegions::Status::kTooManyRegions:
      return naaice::AllocStatus::kTooManyRegions;
    case ConnectionRegions::Status::kNotEnoughMemory:
      return naaice::AllocStatus::kNotEnoughMemory;
  }
  out->id = region.id;
  out->address = region.address;
  // Internal regions are the NAA's scratch: the host gets no key to them.
  out->rkey = (request.flags & mrsp::kFlagInternal) != 0 ? 0 : region.rkey;
  out->bytes = region.bytes;
  return naaice::AllocStatus::kOk;
}

void NaaiceService::Free(uint32_t id) { regions().Free(id); }

}  // namespace spinnic::roce
