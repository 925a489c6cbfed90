#include "dataplane/roce/rping_service.h"

#include <algorithm>
#include <cstring>

#include "dataplane/common/byte_order.h"

namespace spinnic::roce {

bool ParseRpingInfo(std::span<const uint8_t> bytes, RpingInfo* info) {
  if (bytes.size() != kRpingMessageBytes) return false;
  info->buf = LoadBe64(bytes.data());
  info->rkey = LoadBe32(bytes.data() + 8);
  info->size = LoadBe32(bytes.data() + 12);
  return true;
}

void WriteRpingInfo(const RpingInfo& info, std::span<uint8_t, 16> out) {
  StoreBe64(out.data(), info.buf);
  StoreBe32(out.data() + 8, info.rkey);
  StoreBe32(out.data() + 12, info.size);
}

RpingService::RpingService(uint32_t qpn) : QpService(qpn, kRpingBufferBytes) {
  // Allocated with the connection (control path); a failure leaves the
  // buffer empty and the first request fails the connection.
  if (regions().Allocate(kRpingBufferBytes, &buffer_) !=
      ConnectionRegions::Status::kOk) {
    buffer_ = {};
  }
}

void RpingService::OnSend(const ReceivedSend& send, QpActions& qp) {
  RpingInfo info;
  if (!ParseRpingInfo(send.bytes, &info) || info.size == 0 ||
      info.size > buffer_.bytes.size()) {
    Fail(qp);
    return;
  }
  switch (state_) {
    case State::kAwaitSource:
      size_ = info.size;
      state_ = State::kReading;
      if (!qp.PostRead(buffer_.bytes.first(size_), info.buf, info.rkey,
                       kTagRead)) {
        Fail(qp);
      }
      return;
    case State::kAwaitSink:
      // rping's server echoes what it read (client -v prints it back).
      state_ = State::kWriting;
      if (!qp.PostWrite(buffer_.bytes.first(std::min(size_, info.size)),
                        info.buf, info.rkey, nullptr, kTagWrite)) {
        Fail(qp);
      }
      return;
    default:
      // The client sends one message per step and waits for ours: a
      // message now breaks the protocol.
      Fail(qp);
      return;
  }
}

void RpingService::OnCompletion(uint32_t tag, CompletionStatus status,
                                QpActions& qp) {
  if (status != CompletionStatus::kSuccess) {
    state_ = State::kFailed;  // the QP is in error already
    return;
  }
  if (tag == kTagRead && state_ == State::kReading) {
    state_ = State::kAwaitSink;
    SendOurs(qp);
  } else if (tag == kTagWrite && state_ == State::kWriting) {
    state_ = State::kAwaitSource;
    ++iterations_;
    SendOurs(qp);
  }
}

void RpingService::SendOurs(QpActions& qp) {
  // The SEND's bytes stay put until its completion: the client sends
  // nothing that changes them before it has received this message.
  WriteRpingInfo({buffer_.address, buffer_.rkey, size_},
                 std::span<uint8_t, 16>(message_));
  if (!qp.PostSend(message_, kTagSend)) Fail(qp);
}

void RpingService::Fail(QpActions& qp) {
  if (state_ == State::kFailed) return;
  state_ = State::kFailed;
  qp.Fail();
}

}  // namespace spinnic::roce
