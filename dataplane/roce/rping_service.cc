#include "dataplane/roce/rping_service.h"

#include <rte_byteorder.h>

#include <algorithm>
#include <cstring>

namespace spinnic::roce {

bool ParseRpingInfo(std::span<const uint8_t> bytes, RpingInfo* info) {
  if (bytes.size() != kRpingMessageBytes) return false;
  uint64_t buf;
  uint32_t rkey;
  uint32_t size;
  std::memcpy(&buf, bytes.data(), 8);
  std::memcpy(&rkey, bytes.data() + 8, 4);
  std::memcpy(&size, bytes.data() + 12, 4);
  info->buf = rte_be_to_cpu_64(buf);
  info->rkey = rte_be_to_cpu_32(rkey);
  info->size = rte_be_to_cpu_32(size);
  return true;
}

void WriteRpingInfo(const RpingInfo& info, std::span<uint8_t, 16> out) {
  const uint64_t buf = rte_cpu_to_be_64(info.buf);
  const uint32_t rkey = rte_cpu_to_be_32(info.rkey);
  const uint32_t size = rte_cpu_to_be_32(info.size);
  std::memcpy(out.data(), &buf, 8);
  std::memcpy(out.data() + 8, &rkey, 4);
  std::memcpy(out.data() + 12, &size, 4);
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
