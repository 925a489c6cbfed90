#include "dataplane/roce/naaice_session.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace spinnic::roce::naaice {
namespace {

uint8_t Code(mrsp::ErrorCode code) { return static_cast<uint8_t>(code); }

uint8_t ErrorCodeForAlloc(AllocStatus status) {
  switch (status) {
    case AllocStatus::kInvalidAddress:
      return Code(mrsp::ErrorCode::kInvalidAddress);
    case AllocStatus::kTooManyRegions:
      return Code(mrsp::ErrorCode::kTooManyRegions);
    default:
      return Code(mrsp::ErrorCode::kNotEnoughMemory);
  }
}

}  // namespace

const char* SessionStateName(SessionState state) {
  switch (state) {
    case SessionState::kAwaitingMrsp:
      return "awaiting_mrsp";
    case SessionState::kReady:
      return "ready";
    case SessionState::kRunning:
      return "running";
    case SessionState::kWritingBack:
      return "writing_back";
    case SessionState::kFailed:
      return "failed";
    case SessionState::kClosed:
      return "closed";
  }
  return "?";
}

const char* FailReasonName(FailReason reason) {
  switch (reason) {
    case FailReason::kNone:
      return "none";
    case FailReason::kMalformedRequest:
      return "malformed_request";
    case FailReason::kAllocationFailed:
      return "allocation_failed";
    case FailReason::kBadAllocation:
      return "bad_allocation";
    case FailReason::kPeerError:
      return "peer_error";
    case FailReason::kUnexpectedMessage:
      return "unexpected_message";
    case FailReason::kRepeatedMrsp:
      return "repeated_mrsp";
    case FailReason::kRpcBeforeMrsp:
      return "rpc_before_mrsp";
    case FailReason::kRpcWhileRunning:
      return "rpc_while_running";
    case FailReason::kCount:
      break;
  }
  return "?";
}

Session::Session(RegionAllocator* allocator, const FunctionTable* functions)
    : allocator_(allocator), functions_(functions) {}

Session::~Session() { Close(); }

std::span<const uint8_t> Session::Fail(FailReason reason, bool reply,
                                       uint8_t error_code) {
  state_ = SessionState::kFailed;
  fail_reason_ = reason;
  if (!reply) return {};
  ++counters_.mrsp_errors_sent;
  const size_t length =
      mrsp::BuildErrorMessage(error_code, reply_.data(), reply_.size());
  return std::span<const uint8_t>(reply_.data(), length);
}

std::span<const uint8_t> Session::OnSend(std::span<const uint8_t> payload) {
  if (state_ == SessionState::kFailed || state_ == SessionState::kClosed) {
    ++counters_.ignored_events;
    return {};
  }
  ++counters_.mrsp_requests;
  mrsp::MessageType type = mrsp::MessageType::kError;
  const mrsp::ParseError peeked = mrsp::PeekType(payload, &type);
  // A host error message is never answered: two peers answering each
  // other's errors would never stop.
  if (peeked == mrsp::ParseError::kNone && type == mrsp::MessageType::kError) {
    return Fail(FailReason::kPeerError, false, 0);
  }
  const uint8_t generic = Code(mrsp::ErrorCode::kNotEnoughMemory);
  if (state_ != SessionState::kAwaitingMrsp) {
    // naaice_server has only zero-length receives posted after MRSP, so a
    // second SEND is a receive length error there; we say so in words.
    return Fail(FailReason::kRepeatedMrsp, true, generic);
  }
  if (peeked != mrsp::ParseError::kNone) {
    parse_error_ = peeked;
    return Fail(FailReason::kMalformedRequest, true, generic);
  }
  if (type != mrsp::MessageType::kAdvertiseRequest) {
    return Fail(FailReason::kUnexpectedMessage, true, generic);
  }
  return HandleRequest(payload);
}

std::span<const uint8_t> Session::HandleRequest(
    std::span<const uint8_t> payload) {
  const mrsp::ParseError error =
      mrsp::ParseAdvertiseRequest(payload, &request_);
  if (error != mrsp::ParseError::kNone) {
    parse_error_ = error;
    return Fail(FailReason::kMalformedRequest, true,
                Code(mrsp::ErrorCodeFor(error)));
  }
  std::array<mrsp::RegionAdvert, mrsp::kMaxRegions> adverts{};
  size_t advert_count = 0;
  region_count_ = 0;
  input_count_ = 0;
  output_count_ = 0;
  all_inputs_ = 0;
  single_send_inputs_ = 0;
  for (size_t i = 0; i < request_.count; ++i) {
    const mrsp::RegionRequest& entry = request_.regions[i];
    Allocation allocation;
    const AllocStatus status = allocator_->Allocate(entry, &allocation);
    if (status != AllocStatus::kOk) {
      FreeRegions();
      return Fail(FailReason::kAllocationFailed, true,
                  ErrorCodeForAlloc(status));
    }
    regions_[region_count_++] = Region{entry, allocation};
    if (allocation.bytes.size() != entry.size ||
        allocation.bytes.data() == nullptr) {
      FreeRegions();
      return Fail(FailReason::kBadAllocation, true,
                  Code(mrsp::ErrorCode::kNotEnoughMemory));
    }
    counters_.regions++;
    counters_.region_bytes += entry.size;
    if (entry.flags & mrsp::kFlagInternal) continue;
    adverts[advert_count++] = {allocation.address, allocation.rkey, entry.size};
    if (entry.flags & mrsp::kFlagInput) {
      inputs_[input_count_++] = allocation.bytes;
      all_inputs_ |= uint32_t{1} << i;
      if (entry.flags & mrsp::kFlagSingleSend) {
        single_send_inputs_ |= uint32_t{1} << i;
      }
    }
    if (entry.flags & mrsp::kFlagOutput) {
      output_index_[output_count_] = static_cast<uint32_t>(i);
      outputs_[output_count_++] = allocation.bytes;
    }
  }
  const size_t length = mrsp::BuildAdvertise(
      std::span(adverts.data(), advert_count), reply_.data(), reply_.size());
  if (length == 0) {  // e.g. an allocator address + size beyond 2^64
    FreeRegions();
    return Fail(FailReason::kBadAllocation, true,
                Code(mrsp::ErrorCode::kNotEnoughMemory));
  }
  state_ = SessionState::kReady;
  return std::span<const uint8_t>(reply_.data(), length);
}

RpcStep Session::OnWriteImm(uint32_t immediate, uint32_t msn) {
  RpcStep step;
  switch (state_) {
    case SessionState::kReady:
    case SessionState::kWritingBack:
      break;
    case SessionState::kAwaitingMrsp:
      Fail(FailReason::kRpcBeforeMrsp, false, 0);
      return step;
    case SessionState::kRunning:
      // The host overwrote regions a function may still be reading.
      Fail(FailReason::kRpcWhileRunning, false, 0);
      return step;
    case SessionState::kFailed:
    case SessionState::kClosed:
      ++counters_.ignored_events;
      return step;
  }
  state_ = SessionState::kReady;
  mrsp::RequestImmediate request;
  if (!mrsp::ParseRequestImmediate(immediate, &request)) {
    ++counters_.host_error_signals;
    return step;
  }
  ++counters_.rpcs;
  rpc_msn_ = msn;
  params_ = {static_cast<uint8_t>(request.user),
             static_cast<uint8_t>(request.user >> 8),
             static_cast<uint8_t>(request.user >> 16)};
  if (request.function_code == 0) {
    step.kind = RpcStep::Kind::kWriteBack;
    step.write_back = PlanWriteBack(::spinnic::naaice::kSuccess, true);
    return step;
  }
  const Function function = functions_->Find(request.function_code);
  if (function == nullptr) {
    ++counters_.unknown_functions;
    step.kind = RpcStep::Kind::kWriteBack;
    step.write_back =
        PlanWriteBack(::spinnic::naaice::kErrorUnknownFunction, false);
    return step;
  }
  ++counters_.functions_run;
  state_ = SessionState::kRunning;
  step.kind = RpcStep::Kind::kRun;
  step.run.function_code = request.function_code;
  step.run.function = function;
  step.run.inputs = std::span(inputs_.data(), input_count_);
  step.run.outputs = std::span(outputs_.data(), output_count_);
  step.run.params = params_;
  step.run.rpc = counters_.rpcs;
  step.run.host_written =
      counters_.rpcs == 1 ? all_inputs_ : all_inputs_ & ~single_send_inputs_;
  return step;
}

WriteBack Session::OnFunctionDone(uint8_t return_code) {
  if (state_ != SessionState::kRunning) {
    ++counters_.ignored_events;
    return {};
  }
  return PlanWriteBack(return_code, return_code == ::spinnic::naaice::kSuccess);
}

WriteBack Session::PlanWriteBack(uint8_t return_code, bool whole_regions) {
  size_t count = 0;
  if (whole_regions) {
    for (size_t k = 0; k < output_count_; ++k) {
      const Region& region = regions_[output_index_[k]];
      ResultWrite& write = writes_[count++];
      write = ResultWrite{};
      write.region_index = output_index_[k];
      write.region_id = region.allocation.id;
      write.local_address = region.allocation.address;
      write.local_data = region.allocation.bytes.data();
      write.length = region.request.size;
      write.remote_address = region.request.host_address;
      write.rkey = region.request.rkey;
    }
  }
  if (count == 0) {
    // A zero-length WRITE WITH IMMEDIATE needs no valid address or rkey
    // (IBA C9-88); the last output's are used when there is one.
    ResultWrite& write = writes_[count++];
    write = ResultWrite{};
    if (output_count_ > 0) {
      const Region& region = regions_[output_index_[output_count_ - 1]];
      write.region_index = output_index_[output_count_ - 1];
      write.region_id = region.allocation.id;
      write.local_address = region.allocation.address;
      write.local_data = region.allocation.bytes.data();
      write.remote_address = region.request.host_address;
      write.rkey = region.request.rkey;
    }
  }
  ResultWrite& last = writes_[count - 1];
  last.with_immediate = true;
  last.immediate = mrsp::MakeResultImmediate(return_code);
  last.solicited = true;
  for (size_t k = 0; k < count; ++k)
    counters_.result_bytes += writes_[k].length;
  counters_.result_writes += count;
  if (return_code != ::spinnic::naaice::kSuccess) ++counters_.function_errors;
  state_ = SessionState::kWritingBack;
  return WriteBack{rpc_msn_, return_code, std::span(writes_.data(), count)};
}

void Session::OnWriteBackComplete() {
  if (state_ == SessionState::kWritingBack) {
    state_ = SessionState::kReady;
  } else {
    ++counters_.ignored_events;
  }
}

void Session::FreeRegions() {
  while (region_count_ > 0) {
    allocator_->Free(regions_[--region_count_].allocation.id);
  }
  input_count_ = 0;
  output_count_ = 0;
  all_inputs_ = 0;
  single_send_inputs_ = 0;
}

void Session::Close() {
  FreeRegions();
  state_ = SessionState::kClosed;
}

}  // namespace spinnic::roce::naaice
