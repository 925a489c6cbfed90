// The NAA side of a NAAICE connection (dataplane/roce/naaice_session.h)
// driven as the RoCE engine will drive it: MRSP requests built with mrsp.h
// answered byte for byte, every MRSP error code, RPCs from the host's
// WRITE WITH IMMEDIATE to the exact result writes, single-send regions over
// two RPCs, unknown function codes and protocol violations; and the NAAICE
// functions of handlers/naaice with exact results and error codes.
#include "dataplane/roce/naaice_session.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dataplane/roce/mrsp.h"
#include "handlers/naaice/function.h"
#include "tests/common/hex.h"

namespace spinnic::roce::naaice {
namespace {

using ::spinnic::naaice::BuiltinFunctions;

std::string ToHex(std::span<const uint8_t> bytes) {
  return testing_hex::ToHex(bytes.data(), bytes.size());
}
namespace fn = ::spinnic::naaice;

// Gives region `id` (1, 2, ...) the NAA address 0x200000000 + id * 0x10000
// and rkey 0xabc000 + id (0 for internal), zeroed memory; can refuse the
// n-th request; regions above 1 MiB do not fit.
class FakeAllocator : public RegionAllocator {
 public:
  static constexpr uint32_t kMaxRegionBytes = 1 << 20;

  AllocStatus Allocate(const mrsp::RegionRequest& request,
                       Allocation* out) override {
    requests.push_back(request);
    if (requests.size() == fail_at) return fail_with;
    if (request.size > kMaxRegionBytes) return AllocStatus::kNotEnoughMemory;
    const uint32_t id = next_id++;
    memory.push_back(
        std::make_unique<std::vector<uint8_t>>(request.size + size_error, 0));
    out->id = id;
    out->address = 0x200000000 + uint64_t{id} * 0x10000;
    out->rkey = (request.flags & mrsp::kFlagInternal) ? 0 : 0xabc000 + id;
    out->bytes = std::span(*memory.back());
    live++;
    return AllocStatus::kOk;
  }
  void Free(uint32_t id) override {
    freed.push_back(id);
    live--;
  }

  std::vector<mrsp::RegionRequest> requests;
  std::vector<uint32_t> freed;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> memory;
  uint32_t next_id = 1;
  size_t fail_at = 0;  // 1-based; 0: never
  AllocStatus fail_with = AllocStatus::kOk;
  size_t size_error = 0;  // extra bytes returned (a broken allocator)
  int live = 0;
};

mrsp::RegionRequest Entry(uint8_t flags, uint64_t naa, uint64_t host,
                          uint32_t rkey, uint32_t size) {
  return mrsp::RegionRequest{flags, naa, host, rkey, size};
}

std::vector<uint8_t> Request(const std::vector<mrsp::RegionRequest>& regions) {
  std::vector<uint8_t> bytes(mrsp::kMaxMessageBytes);
  const size_t length =
      mrsp::BuildAdvertiseRequest(regions, bytes.data(), bytes.size());
  EXPECT_NE(length, 0u);
  bytes.resize(length);
  return bytes;
}

// naaice_client 10.0.0.1 10.0.0.2 3 "1024 1024 1024" (docs/naaice.md 4)
// plus one internal region of 100 bytes, as their library orders it:
// parameters first, internal last.
std::vector<mrsp::RegionRequest> ClientExampleRegions() {
  return {Entry(0x06, 0x0000, 0x7f0012345000, 0x1234, 1024),
          Entry(0x04, 0x1000, 0x7f0012346000, 0x1235, 1024),
          Entry(0x0c, 0x2000, 0x7f0012347000, 0x1236, 1024),
          Entry(0x01, 0x3000, 0, 0, 100)};
}

class SessionTest : public testing::Test {
 protected:
  SessionTest() : functions_(BuiltinFunctions()) {}

  std::string Send(const std::vector<uint8_t>& payload) {
    return ToHex(session_.OnSend(payload));
  }
  std::span<uint8_t> Bytes(size_t region) {
    return session_.region(region).allocation.bytes;
  }

  FakeAllocator allocator_;
  fn::FunctionTable functions_;
  Session session_{&allocator_, &functions_};
};

// ----- MRSP -----

TEST_F(SessionTest, AdvertisesEveryNonInternalRegionInRequestOrder) {
  // Golden: header 02 03 00 00, then per non-internal entry address (8),
  // rkey (4), size (4), big-endian; ids 1..3 are regions 0..2.
  EXPECT_EQ(Send(Request(ClientExampleRegions())),
            "02030000"
            "0000000200010000"
            "00abc001"
            "00000400"
            "0000000200020000"
            "00abc002"
            "00000400"
            "0000000200030000"
            "00abc003"
            "00000400");
  EXPECT_EQ(session_.state(), SessionState::kReady);
  // Allocated in request order with the request's flags, size and
  // requested address; the internal region too (the NAA's scratch).
  ASSERT_EQ(allocator_.requests.size(), 4u);
  const uint8_t flags[] = {0x06, 0x04, 0x0c, 0x01};
  const uint32_t sizes[] = {1024, 1024, 1024, 100};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(allocator_.requests[i].flags, flags[i]) << i;
    EXPECT_EQ(allocator_.requests[i].size, sizes[i]) << i;
    EXPECT_EQ(allocator_.requests[i].naa_address, 0x1000 * i) << i;
  }
  // The host's regions are remembered for the results.
  ASSERT_EQ(session_.region_count(), 4u);
  EXPECT_EQ(session_.region(2).request.host_address, 0x7f0012347000u);
  EXPECT_EQ(session_.region(2).request.rkey, 0x1236u);
  EXPECT_EQ(session_.counters().regions, 4u);
  EXPECT_EQ(session_.counters().region_bytes, 3 * 1024u + 100);
}

TEST_F(SessionTest, AllInternalRequestGetsAnEmptyAdvertisement) {
  EXPECT_EQ(Send(Request({Entry(0x01, 0, 0, 0, 64)})), "02000000");
  EXPECT_EQ(session_.state(), SessionState::kReady);
}

TEST_F(SessionTest, ThirtyThreeRegionsAreTooMany) {
  std::vector<mrsp::RegionRequest> regions(
      32, Entry(0x04, 0, 0x7f0000000000, 1, 8));
  std::vector<uint8_t> payload = Request(regions);
  payload[1] = 33;
  payload.insert(payload.end(), payload.begin() + 4, payload.begin() + 28);
  EXPECT_EQ(Send(payload), "00030000");
  EXPECT_EQ(session_.state(), SessionState::kFailed);
  EXPECT_EQ(session_.fail_reason(), FailReason::kMalformedRequest);
  EXPECT_EQ(session_.parse_error(), mrsp::ParseError::kTooManyRegions);
  EXPECT_TRUE(allocator_.requests.empty());
  EXPECT_EQ(session_.counters().mrsp_errors_sent, 1u);
}

TEST_F(SessionTest, ThirtyTwoRegionsAreServed) {
  std::vector<mrsp::RegionRequest> regions(
      32, Entry(0x04, 0, 0x7f0000000000, 1, 8));
  const std::string reply = Send(Request(regions));
  EXPECT_EQ(reply.substr(0, 8), "02200000");
  EXPECT_EQ(reply.size(), 2 * (4 + 32 * 16u));
  EXPECT_EQ(session_.state(), SessionState::kReady);
}

TEST_F(SessionTest, NaaRangeBeyond56BitsIsAnInvalidAddress) {
  std::vector<uint8_t> payload = Request({Entry(0x04, 0, 0x1000, 1, 0x100)});
  // Requested NAA address 0xffffffffffffff (bytes 5..11) + 0x100 > 2^56.
  std::memset(payload.data() + 5, 0xff, 7);
  EXPECT_EQ(Send(payload), "00020000");
  EXPECT_EQ(session_.parse_error(), mrsp::ParseError::kNaaRangeOverflow);
  EXPECT_EQ(session_.state(), SessionState::kFailed);
}

TEST_F(SessionTest, RefusedAllocationFreesTheRegionsSoFarLastFirst) {
  const struct {
    AllocStatus status;
    const char* reply;
  } cases[] = {{AllocStatus::kNotEnoughMemory, "00010000"},
               {AllocStatus::kInvalidAddress, "00020000"},
               {AllocStatus::kTooManyRegions, "00030000"}};
  for (const auto& c : cases) {
    FakeAllocator allocator;
    allocator.fail_at = 3;
    allocator.fail_with = c.status;
    Session session(&allocator, &functions_);
    EXPECT_EQ(ToHex(session.OnSend(Request(ClientExampleRegions()))), c.reply);
    EXPECT_EQ(session.state(), SessionState::kFailed);
    EXPECT_EQ(session.fail_reason(), FailReason::kAllocationFailed);
    EXPECT_EQ(allocator.freed, (std::vector<uint32_t>{2, 1}));
    EXPECT_EQ(allocator.live, 0);
    EXPECT_EQ(session.region_count(), 0u);
  }
}

TEST_F(SessionTest, WrongSizedAllocationIsRefused) {
  allocator_.size_error = 1;
  EXPECT_EQ(Send(Request(ClientExampleRegions())), "00010000");
  EXPECT_EQ(session_.fail_reason(), FailReason::kBadAllocation);
  EXPECT_EQ(allocator_.freed, (std::vector<uint32_t>{1}));
}

TEST_F(SessionTest, MalformedOrUnexpectedMessages) {
  {
    Session session(&allocator_, &functions_);
    EXPECT_EQ(ToHex(session.OnSend(std::vector<uint8_t>{0x01, 0x01})),
              "00010000");
    EXPECT_EQ(session.parse_error(), mrsp::ParseError::kTruncated);
    EXPECT_EQ(session.fail_reason(), FailReason::kMalformedRequest);
  }
  {
    Session session(&allocator_, &functions_);
    EXPECT_EQ(ToHex(session.OnSend(std::vector<uint8_t>{0x03, 0, 0, 0})),
              "00010000");
    EXPECT_EQ(session.parse_error(), mrsp::ParseError::kUnknownType);
  }
  {
    Session session(&allocator_, &functions_);
    EXPECT_EQ(ToHex(session.OnSend(std::vector<uint8_t>{0x02, 0, 0, 0})),
              "00010000");
    EXPECT_EQ(session.fail_reason(), FailReason::kUnexpectedMessage);
  }
  {
    // Flag bits 4..7 set.
    Session session(&allocator_, &functions_);
    std::vector<uint8_t> payload = Request({Entry(0x04, 0, 0x1000, 1, 8)});
    payload[4] = 0x14;
    EXPECT_EQ(ToHex(session.OnSend(payload)), "00010000");
    EXPECT_EQ(session.parse_error(), mrsp::ParseError::kReservedFlags);
  }
  {
    // A host's error message is not answered.
    Session session(&allocator_, &functions_);
    EXPECT_EQ(ToHex(session.OnSend(std::vector<uint8_t>{0x00, 0x01, 0, 0})),
              "");
    EXPECT_EQ(session.state(), SessionState::kFailed);
    EXPECT_EQ(session.fail_reason(), FailReason::kPeerError);
  }
  EXPECT_TRUE(allocator_.requests.empty());
}

TEST_F(SessionTest, SecondMrspFailsTheSessionAndCloseFreesEverything) {
  ASSERT_EQ(Send(Request(ClientExampleRegions())).substr(0, 4), "0203");
  EXPECT_EQ(Send(Request(ClientExampleRegions())), "00010000");
  EXPECT_EQ(session_.state(), SessionState::kFailed);
  EXPECT_EQ(session_.fail_reason(), FailReason::kRepeatedMrsp);
  EXPECT_EQ(allocator_.requests.size(), 4u);  // nothing allocated again
  // Events after the failure are ignored.
  EXPECT_EQ(Send(Request(ClientExampleRegions())), "");
  EXPECT_EQ(session_.OnWriteImm(0x83, 1).kind, RpcStep::Kind::kNothing);
  EXPECT_EQ(session_.counters().ignored_events, 2u);
  session_.Close();
  EXPECT_EQ(session_.state(), SessionState::kClosed);
  EXPECT_EQ(allocator_.freed, (std::vector<uint32_t>{4, 3, 2, 1}));
  session_.Close();  // idempotent
  EXPECT_EQ(allocator_.freed.size(), 4u);
}

TEST_F(SessionTest, DestructorFreesTheRegions) {
  {
    Session session(&allocator_, &functions_);
    session.OnSend(Request(ClientExampleRegions()));
    EXPECT_EQ(allocator_.live, 4);
  }
  EXPECT_EQ(allocator_.live, 0);
}

// ----- RPCs -----

TEST_F(SessionTest, RpcBeforeMrspFails) {
  EXPECT_EQ(session_.OnWriteImm(0x83, 0).kind, RpcStep::Kind::kNothing);
  EXPECT_EQ(session_.state(), SessionState::kFailed);
  EXPECT_EQ(session_.fail_reason(), FailReason::kRpcBeforeMrsp);
}

// naaice_client's one RPC: function 3, immediate 0x00000083; the NAA
// writes back region 2 (the only output), whole, with immediate 0.
TEST_F(SessionTest, ClientExampleRpc) {
  session_.OnSend(Request(ClientExampleRegions()));
  for (size_t i = 0; i < 3; ++i) {
    std::memset(Bytes(i).data(), 10 + static_cast<int>(i), Bytes(i).size());
  }
  const RpcStep step = session_.OnWriteImm(0x00000083, 7);
  ASSERT_EQ(step.kind, RpcStep::Kind::kRun);
  EXPECT_EQ(session_.state(), SessionState::kRunning);
  EXPECT_EQ(step.run.function_code, 3);
  EXPECT_EQ(step.run.function, &fn::Empty);
  EXPECT_EQ(step.run.rpc, 1u);
  EXPECT_EQ(step.run.host_written, 0b111u);
  ASSERT_EQ(step.run.inputs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(step.run.inputs[i].data(), Bytes(i).data()) << i;
    EXPECT_EQ(step.run.inputs[i].size(), 1024u) << i;
  }
  ASSERT_EQ(step.run.outputs.size(), 1u);
  EXPECT_EQ(step.run.outputs[0].data(), Bytes(2).data());
  EXPECT_EQ(step.run.params.size(), 3u);
  EXPECT_EQ(ToHex(step.run.params), "000000");

  const uint8_t code =
      step.run.function(step.run.inputs, step.run.outputs, step.run.params);
  ASSERT_EQ(code, 0);
  const WriteBack result = session_.OnFunctionDone(code);
  EXPECT_EQ(session_.state(), SessionState::kWritingBack);
  EXPECT_EQ(result.ack_msn, 7u);
  EXPECT_EQ(result.return_code, 0);
  ASSERT_EQ(result.writes.size(), 1u);
  const ResultWrite& w = result.writes[0];
  EXPECT_EQ(w.region_index, 2u);
  EXPECT_EQ(w.region_id, 3u);
  EXPECT_EQ(w.local_address, 0x200030000u);
  EXPECT_EQ(w.local_data, Bytes(2).data());
  EXPECT_EQ(w.length, 1024u);
  EXPECT_EQ(w.remote_address, 0x7f0012347000u);
  EXPECT_EQ(w.rkey, 0x1236u);
  EXPECT_TRUE(w.with_immediate);
  EXPECT_EQ(w.immediate, 0u);
  EXPECT_TRUE(w.solicited);
  EXPECT_EQ(w.local_data[0], 12);  // function 3 changed nothing
  session_.OnWriteBackComplete();
  EXPECT_EQ(session_.state(), SessionState::kReady);
  EXPECT_EQ(session_.counters().rpcs, 1u);
  EXPECT_EQ(session_.counters().functions_run, 1u);
  EXPECT_EQ(session_.counters().result_writes, 1u);
  EXPECT_EQ(session_.counters().result_bytes, 1024u);
}

// naaice_client_ap2: 4 regions filled with byte i, flags 0x0c 0x0c 0x04
// 0x0c, function 1. Outputs 0, 1, 3 come back incremented, in order, the
// last one with the immediate.
TEST_F(SessionTest, MiddlewareExampleRpcWritesEveryOutputInOrder) {
  session_.OnSend(Request({Entry(0x0c, 0x0000, 0x7f0000010000, 0x11, 64),
                           Entry(0x0c, 0x1000, 0x7f0000020000, 0x22, 128),
                           Entry(0x04, 0x2000, 0x7f0000030000, 0x33, 64),
                           Entry(0x0c, 0x3000, 0x7f0000040000, 0x44, 32)}));
  for (size_t i = 0; i < 4; ++i) {
    std::memset(Bytes(i).data(), static_cast<int>(i), Bytes(i).size());
  }
  const RpcStep step = session_.OnWriteImm(mrsp::MakeRequestImmediate(1, 0), 4);
  ASSERT_EQ(step.kind, RpcStep::Kind::kRun);
  EXPECT_EQ(step.run.inputs.size(), 4u);
  ASSERT_EQ(step.run.outputs.size(), 3u);
  const WriteBack result = session_.OnFunctionDone(
      step.run.function(step.run.inputs, step.run.outputs, step.run.params));
  ASSERT_EQ(result.writes.size(), 3u);
  const uint32_t regions[] = {0, 1, 3};
  const uint64_t remote[] = {0x7f0000010000, 0x7f0000020000, 0x7f0000040000};
  const uint32_t rkeys[] = {0x11, 0x22, 0x44};
  const uint32_t lengths[] = {64, 128, 32};
  for (size_t k = 0; k < 3; ++k) {
    const ResultWrite& w = result.writes[k];
    EXPECT_EQ(w.region_index, regions[k]) << k;
    EXPECT_EQ(w.local_address, 0x200000000 + (regions[k] + 1) * 0x10000) << k;
    EXPECT_EQ(w.remote_address, remote[k]) << k;
    EXPECT_EQ(w.rkey, rkeys[k]) << k;
    EXPECT_EQ(w.length, lengths[k]) << k;
    EXPECT_EQ(w.with_immediate, k == 2) << k;
    EXPECT_EQ(w.solicited, k == 2) << k;
    EXPECT_EQ(w.local_data[0], regions[k] + 1) << k;
  }
  EXPECT_EQ(result.writes[2].immediate, 0u);
  EXPECT_EQ(Bytes(2)[0], 2);  // input only: untouched
}

// A single-send matrix (0x06) and a new vector per RPC: the second RPC's
// function still sees the first RPC's matrix.
TEST_F(SessionTest, TwoRpcsWithASingleSendRegion) {
  session_.OnSend(Request({Entry(0x06, 0x0000, 0x7f0000010000, 0x11, 8 + 32),
                           Entry(0x04, 0x1000, 0x7f0000020000, 0x22, 16),
                           Entry(0x08, 0x2000, 0x7f0000030000, 0x33, 16)}));
  uint8_t* m = Bytes(0).data();
  m[0] = 2;  // rows
  m[4] = 2;  // cols
  const double a[] = {1, 2, 3, 4};
  for (size_t k = 0; k < 4; ++k) fn::StoreF64Le(m + 8 + 8 * k, a[k]);
  fn::StoreF64Le(Bytes(1).data(), 1);
  fn::StoreF64Le(Bytes(1).data() + 8, 10);

  const uint32_t imm = mrsp::MakeRequestImmediate(fn::kCodeMatVec, 0);
  RpcStep step = session_.OnWriteImm(imm, 1);
  ASSERT_EQ(step.kind, RpcStep::Kind::kRun);
  EXPECT_EQ(step.run.rpc, 1u);
  EXPECT_EQ(step.run.host_written, 0b011u);
  ASSERT_EQ(
      step.run.function(step.run.inputs, step.run.outputs, step.run.params), 0);
  EXPECT_EQ(fn::LoadF64Le(Bytes(2).data()), 21.0);
  EXPECT_EQ(fn::LoadF64Le(Bytes(2).data() + 8), 43.0);
  WriteBack result = session_.OnFunctionDone(0);
  ASSERT_EQ(result.writes.size(), 1u);
  EXPECT_EQ(result.writes[0].remote_address, 0x7f0000030000u);
  EXPECT_EQ(result.writes[0].length, 16u);
  EXPECT_EQ(result.ack_msn, 1u);

  // RPC 2: the host writes only the vector; its WRITE WITH IMMEDIATE may
  // arrive before the engine reported our write-back complete.
  fn::StoreF64Le(Bytes(1).data(), -1);
  fn::StoreF64Le(Bytes(1).data() + 8, 0.5);
  step = session_.OnWriteImm(imm, 2);
  ASSERT_EQ(step.kind, RpcStep::Kind::kRun);
  EXPECT_EQ(step.run.rpc, 2u);
  EXPECT_EQ(step.run.host_written, 0b010u);
  ASSERT_EQ(
      step.run.function(step.run.inputs, step.run.outputs, step.run.params), 0);
  EXPECT_EQ(fn::LoadF64Le(Bytes(2).data()), 0.0);       // -1 + 2 * 0.5
  EXPECT_EQ(fn::LoadF64Le(Bytes(2).data() + 8), -1.0);  // -3 + 4 * 0.5
  result = session_.OnFunctionDone(0);
  EXPECT_EQ(result.ack_msn, 2u);
  ASSERT_EQ(result.writes.size(), 1u);
  EXPECT_EQ(result.writes[0].immediate, 0u);
  session_.OnWriteBackComplete();
  EXPECT_EQ(session_.state(), SessionState::kReady);
  EXPECT_EQ(session_.counters().rpcs, 2u);
}

TEST_F(SessionTest, UnknownFunctionGetsAZeroLengthErrorResult) {
  session_.OnSend(Request(ClientExampleRegions()));
  std::memset(Bytes(2).data(), 0x5a, Bytes(2).size());
  const RpcStep step = session_.OnWriteImm(0x000000d5, 9);  // code 0x55
  ASSERT_EQ(step.kind, RpcStep::Kind::kWriteBack);
  EXPECT_EQ(session_.state(), SessionState::kWritingBack);
  EXPECT_EQ(step.write_back.ack_msn, 9u);
  EXPECT_EQ(step.write_back.return_code, 0x7f);
  ASSERT_EQ(step.write_back.writes.size(), 1u);
  const ResultWrite& w = step.write_back.writes[0];
  EXPECT_EQ(w.length, 0u);
  EXPECT_EQ(w.region_index, 2u);
  EXPECT_EQ(w.remote_address, 0x7f0012347000u);
  EXPECT_EQ(w.rkey, 0x1236u);
  EXPECT_TRUE(w.with_immediate);
  EXPECT_EQ(w.immediate, 0x00007f00u);
  EXPECT_EQ(mrsp::ResultReturnCode(w.immediate), 0x7fu);
  EXPECT_TRUE(w.solicited);
  EXPECT_EQ(Bytes(2)[0], 0x5a);
  EXPECT_EQ(session_.counters().unknown_functions, 1u);
  EXPECT_EQ(session_.counters().function_errors, 1u);
  EXPECT_EQ(session_.counters().functions_run, 0u);
  session_.OnWriteBackComplete();
  EXPECT_EQ(session_.state(), SessionState::kReady);
}

TEST_F(SessionTest, FunctionErrorAndTimeoutSendOnlyTheCode) {
  session_.OnSend(Request(ClientExampleRegions()));
  for (uint8_t code : {uint8_t{0x12}, uint8_t{0x02}}) {
    ASSERT_EQ(session_.OnWriteImm(0x83, 3).kind, RpcStep::Kind::kRun);
    const WriteBack result = session_.OnFunctionDone(code);
    ASSERT_EQ(result.writes.size(), 1u);
    EXPECT_EQ(result.return_code, code);
    EXPECT_EQ(result.writes[0].length, 0u);
    EXPECT_EQ(result.writes[0].region_index, 2u);
    EXPECT_EQ(result.writes[0].immediate, uint32_t{code} << 8);
    EXPECT_TRUE(result.writes[0].solicited);
    session_.OnWriteBackComplete();
  }
  EXPECT_EQ(session_.counters().function_errors, 2u);
}

TEST_F(SessionTest, FunctionCodeZeroWritesBackWithoutRunning) {
  session_.OnSend(Request(ClientExampleRegions()));
  const RpcStep step = session_.OnWriteImm(0x00000100, 5);  // user byte 1
  ASSERT_EQ(step.kind, RpcStep::Kind::kWriteBack);
  ASSERT_EQ(step.write_back.writes.size(), 1u);
  EXPECT_EQ(step.write_back.writes[0].length, 1024u);
  EXPECT_EQ(step.write_back.writes[0].immediate, 0u);
  EXPECT_EQ(session_.counters().functions_run, 0u);
}

TEST_F(SessionTest, ImmediateZeroIsTheHostsErrorSignal) {
  session_.OnSend(Request(ClientExampleRegions()));
  EXPECT_EQ(session_.OnWriteImm(0, 1).kind, RpcStep::Kind::kNothing);
  EXPECT_EQ(session_.state(), SessionState::kReady);
  EXPECT_EQ(session_.counters().host_error_signals, 1u);
  EXPECT_EQ(session_.counters().rpcs, 0u);
}

TEST_F(SessionTest, UserBytesBecomeParams) {
  session_.OnSend(Request(ClientExampleRegions()));
  const RpcStep step =
      session_.OnWriteImm(mrsp::MakeRequestImmediate(3, 0x030201), 1);
  ASSERT_EQ(step.kind, RpcStep::Kind::kRun);
  EXPECT_EQ(ToHex(step.run.params), "010203");
}

TEST_F(SessionTest, RpcWhileRunningFails) {
  session_.OnSend(Request(ClientExampleRegions()));
  ASSERT_EQ(session_.OnWriteImm(0x83, 1).kind, RpcStep::Kind::kRun);
  EXPECT_EQ(session_.OnWriteImm(0x83, 2).kind, RpcStep::Kind::kNothing);
  EXPECT_EQ(session_.state(), SessionState::kFailed);
  EXPECT_EQ(session_.fail_reason(), FailReason::kRpcWhileRunning);
  EXPECT_TRUE(session_.OnFunctionDone(0).writes.empty());
}

TEST_F(SessionTest, OutOfStateCompletionsAreIgnored) {
  session_.OnSend(Request(ClientExampleRegions()));
  EXPECT_TRUE(session_.OnFunctionDone(0).writes.empty());
  session_.OnWriteBackComplete();
  EXPECT_EQ(session_.state(), SessionState::kReady);
  EXPECT_EQ(session_.counters().ignored_events, 2u);
}

TEST_F(SessionTest, NoOutputRegionStillCompletesTheRpc) {
  session_.OnSend(Request({Entry(0x04, 0, 0x7f0000010000, 0x11, 64)}));
  ASSERT_EQ(session_.OnWriteImm(0x83, 1).kind, RpcStep::Kind::kRun);
  const WriteBack result = session_.OnFunctionDone(0);
  ASSERT_EQ(result.writes.size(), 1u);
  EXPECT_EQ(result.writes[0].region_index, kNoRegion);
  EXPECT_EQ(result.writes[0].length, 0u);
  EXPECT_EQ(result.writes[0].remote_address, 0u);
  EXPECT_EQ(result.writes[0].rkey, 0u);
  EXPECT_TRUE(result.writes[0].with_immediate);
  EXPECT_TRUE(result.writes[0].solicited);
}

// Random payloads (mutated valid requests, every prefix) and random event
// orders: every reply is an advertisement or a 4-byte error, and the
// allocator gets back exactly what it gave (ASan/UBSan builds catch reads
// outside the payload).
TEST_F(SessionTest, RandomInputsKeepRepliesWellFormedAndMemoryBalanced) {
  const std::vector<uint8_t> valid = Request(ClientExampleRegions());
  uint64_t seed = 0x9e3779b97f4a7c15;
  auto next = [&seed] {
    seed = seed * 6364136223846793005 + 1442695040888963407;
    return static_cast<uint32_t>(seed >> 33);
  };
  for (int round = 0; round < 3000; ++round) {
    FakeAllocator allocator;
    allocator.fail_at = next() % 8;  // 0: never
    allocator.fail_with = static_cast<AllocStatus>(1 + next() % 3);
    {
      Session session(&allocator, &functions_);
      std::vector<uint8_t> payload = valid;
      if (round < static_cast<int>(valid.size())) {
        payload.resize(round);  // every prefix
      } else {
        for (uint32_t k = next() % 4; k > 0; --k) {
          payload[next() % payload.size()] = static_cast<uint8_t>(next());
        }
      }
      const std::span<const uint8_t> reply = session.OnSend(payload);
      if (session.state() == SessionState::kReady) {
        ASSERT_GE(reply.size(), 4u);
        EXPECT_EQ(reply[0], 0x02);
        EXPECT_EQ(reply.size(), 4 + 16u * reply[1]);
      } else if (!reply.empty()) {
        ASSERT_EQ(reply.size(), 4u);
        EXPECT_EQ(reply[0], 0x00);
        EXPECT_GE(reply[1], 1);
        EXPECT_LE(reply[1], 3);
      }
      for (int e = 0; e < 8; ++e) {
        switch (next() % 4) {
          case 0: {
            const RpcStep step = session.OnWriteImm(next() % 0x100, e);
            if (step.kind == RpcStep::Kind::kRun) {
              session.OnFunctionDone(step.run.function(
                  step.run.inputs, step.run.outputs, step.run.params));
            } else if (step.kind == RpcStep::Kind::kWriteBack) {
              EXPECT_FALSE(step.write_back.writes.empty());
              EXPECT_TRUE(step.write_back.writes.back().with_immediate);
            }
            break;
          }
          case 1:
            session.OnFunctionDone(static_cast<uint8_t>(next()));
            break;
          case 2:
            session.OnWriteBackComplete();
            break;
          default:
            session.OnSend(payload);
            break;
        }
      }
    }
    EXPECT_EQ(allocator.live, 0) << round;
    EXPECT_EQ(allocator.freed.size(), allocator.next_id - 1) << round;
  }
}

// ----- Functions -----

std::vector<uint8_t> F64s(std::initializer_list<double> values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  size_t k = 0;
  for (double v : values) fn::StoreF64Le(bytes.data() + 8 * k++, v);
  return bytes;
}

std::vector<double> Doubles(std::span<const uint8_t> bytes) {
  std::vector<double> values;
  for (size_t k = 0; k + 8 <= bytes.size(); k += 8) {
    values.push_back(fn::LoadF64Le(bytes.data() + k));
  }
  return values;
}

std::vector<uint8_t> Matrix(uint32_t rows, uint32_t cols,
                            std::initializer_list<double> values,
                            size_t extra = 0) {
  std::vector<uint8_t> bytes(8);
  std::memcpy(bytes.data(), &rows, 4);  // little-endian test host
  std::memcpy(bytes.data() + 4, &cols, 4);
  const std::vector<uint8_t> a = F64s(values);
  bytes.insert(bytes.end(), a.begin(), a.end());
  bytes.resize(bytes.size() + extra, 0xee);
  return bytes;
}

TEST(NaaiceFunctionsTest, RegistryHasTheBuiltins) {
  const fn::FunctionTable table = BuiltinFunctions();
  EXPECT_EQ(table.Find(1), &fn::AddOne);
  EXPECT_EQ(table.Find(2), &fn::AddTwo);
  EXPECT_EQ(table.Find(3), &fn::Empty);
  EXPECT_EQ(table.Find(16), &fn::VectorSum);
  EXPECT_EQ(table.Find(17), &fn::MatVec);
  EXPECT_EQ(table.Find(0), nullptr);
  EXPECT_EQ(table.Find(4), nullptr);
  EXPECT_EQ(table.Find(127), nullptr);
  EXPECT_EQ(table.Find(200), nullptr);
  fn::FunctionTable t;
  EXPECT_FALSE(t.Register(0, &fn::Empty));
  EXPECT_FALSE(t.Register(128, &fn::Empty));
  EXPECT_FALSE(t.Register(5, nullptr));
  EXPECT_TRUE(t.Register(127, &fn::Empty));
  EXPECT_EQ(t.Find(127), &fn::Empty);
}

TEST(NaaiceFunctionsTest, ExampleKernelsAddToEveryOutputByte) {
  std::vector<uint8_t> in = {1, 2, 3};
  std::vector<uint8_t> out1 = {0x00, 0x7f, 0xff};
  std::vector<uint8_t> out2 = {0xfe};
  const std::span<const uint8_t> inputs[] = {in};
  const std::span<uint8_t> outputs[] = {out1, out2};
  EXPECT_EQ(fn::AddOne(inputs, outputs, {}), 0);
  EXPECT_EQ(out1, (std::vector<uint8_t>{0x01, 0x80, 0x00}));
  EXPECT_EQ(out2, (std::vector<uint8_t>{0xff}));
  EXPECT_EQ(fn::AddTwo(inputs, outputs, {}), 0);
  EXPECT_EQ(out1, (std::vector<uint8_t>{0x03, 0x82, 0x02}));
  EXPECT_EQ(out2, (std::vector<uint8_t>{0x01}));
  EXPECT_EQ(fn::Empty(inputs, outputs, {}), 0);
  EXPECT_EQ(out1, (std::vector<uint8_t>{0x03, 0x82, 0x02}));
  EXPECT_EQ(in, (std::vector<uint8_t>{1, 2, 3}));
}

TEST(NaaiceFunctionsTest, VectorSumIsElementWise) {
  const std::vector<uint8_t> a = F64s({1, 2, 3});
  const std::vector<uint8_t> b = F64s({10, 20, 30.5});
  const std::vector<uint8_t> c = F64s({0.25, -2, 0});
  std::vector<uint8_t> out(24, 0xcc);
  const std::span<const uint8_t> inputs[] = {a, b, c};
  const std::span<uint8_t> outputs[] = {out};
  ASSERT_EQ(fn::VectorSum(inputs, outputs, {}), 0);
  EXPECT_EQ(Doubles(out), (std::vector<double>{11.25, 20, 33.5}));
  // 11.25 = 0x4026800000000000, little-endian.
  EXPECT_EQ(ToHex(std::span(out).first(8)), "0000000000802640");
}

TEST(NaaiceFunctionsTest, VectorSumAccumulatesIntoAnInOutRegion) {
  std::vector<uint8_t> acc = F64s({1, 2});
  const std::vector<uint8_t> x = F64s({0.5, 4});
  const std::span<const uint8_t> inputs[] = {acc, x};
  const std::span<uint8_t> outputs[] = {acc};
  ASSERT_EQ(fn::VectorSum(inputs, outputs, {}), 0);
  EXPECT_EQ(Doubles(acc), (std::vector<double>{1.5, 6}));
}

TEST(NaaiceFunctionsTest, VectorSumErrors) {
  const std::vector<uint8_t> a = F64s({1, 2});
  const std::vector<uint8_t> short_input = F64s({1});
  std::vector<uint8_t> out(16, 0xcc);
  std::vector<uint8_t> odd(12, 0xcc);
  const std::vector<uint8_t> untouched = out;
  const std::span<const uint8_t> one[] = {a};
  const std::span<const uint8_t> mismatched[] = {a, short_input};
  const std::span<uint8_t> outputs[] = {out};
  const std::span<uint8_t> two_outputs[] = {out, out};
  const std::span<uint8_t> odd_output[] = {odd};
  EXPECT_EQ(fn::VectorSum({}, outputs, {}), fn::kErrorRegionCount);
  EXPECT_EQ(fn::VectorSum(one, {}, {}), fn::kErrorRegionCount);
  EXPECT_EQ(fn::VectorSum(one, two_outputs, {}), fn::kErrorRegionCount);
  EXPECT_EQ(fn::VectorSum(one, odd_output, {}), fn::kErrorRegionSize);
  EXPECT_EQ(fn::VectorSum(mismatched, outputs, {}), fn::kErrorSizeMismatch);
  // The output shifted by one element over an input.
  std::vector<uint8_t> shared(24, 0);
  const std::span<const uint8_t> shifted_in[] = {
      std::span<const uint8_t>(shared).first(16)};
  const std::span<uint8_t> shifted_out[] = {std::span(shared).last(16)};
  EXPECT_EQ(fn::VectorSum(shifted_in, shifted_out, {}), fn::kErrorAliasing);
  EXPECT_EQ(out, untouched);
}

TEST(NaaiceFunctionsTest, MatVecMultiplies) {
  // [[1 2 3] [4 5 6]] * [1 0.5 -1] = [-1 0.5]; regions larger than the
  // shape: the tails are neither read nor written.
  const std::vector<uint8_t> m = Matrix(2, 3, {1, 2, 3, 4, 5, 6}, 16);
  std::vector<uint8_t> x = F64s({1, 0.5, -1, 99});
  std::vector<uint8_t> y(24, 0xcc);
  const std::span<const uint8_t> inputs[] = {m, x};
  const std::span<uint8_t> outputs[] = {y};
  ASSERT_EQ(fn::MatVec(inputs, outputs, {}), 0);
  EXPECT_EQ(fn::LoadF64Le(y.data()), -1.0);
  EXPECT_EQ(fn::LoadF64Le(y.data() + 8), 0.5);
  EXPECT_EQ(ToHex(std::span(y).last(8)), "cccccccccccccccc");
}

TEST(NaaiceFunctionsTest, MatVecErrors) {
  const std::vector<uint8_t> m = Matrix(2, 3, {1, 2, 3, 4, 5, 6});
  const std::vector<uint8_t> x = F64s({1, 2, 3});
  std::vector<uint8_t> y(16, 0xcc);
  const std::vector<uint8_t> untouched = y;
  const std::span<uint8_t> outputs[] = {y};
  auto run = [&](std::span<const uint8_t> matrix,
                 std::span<const uint8_t> vector, std::span<uint8_t> out) {
    const std::span<const uint8_t> in[] = {matrix, vector};
    const std::span<uint8_t> o[] = {out};
    return fn::MatVec(in, o, {});
  };
  const std::span<const uint8_t> only_matrix[] = {m};
  EXPECT_EQ(fn::MatVec(only_matrix, outputs, {}), fn::kErrorRegionCount);
  const std::span<const uint8_t> both[] = {m, x};
  EXPECT_EQ(fn::MatVec(both, {}, {}), fn::kErrorRegionCount);
  EXPECT_EQ(run(std::span(m).first(7), x, y), fn::kErrorRegionSize);
  EXPECT_EQ(run(Matrix(0, 3, {}), x, y), fn::kErrorShape);
  EXPECT_EQ(run(Matrix(2, 0, {}), x, y), fn::kErrorShape);
  EXPECT_EQ(run(std::span(m).first(m.size() - 1), x, y),
            fn::kErrorSizeMismatch);
  EXPECT_EQ(run(m, std::span(x).first(16), y), fn::kErrorSizeMismatch);
  EXPECT_EQ(run(m, x, std::span(y).first(8)), fn::kErrorSizeMismatch);
  // rows * cols * 8 beyond 64 bits must not wrap into "fits".
  EXPECT_EQ(run(Matrix(0xffffffff, 0xffffffff, {1, 2}), x, y),
            fn::kErrorSizeMismatch);
  EXPECT_EQ(y, untouched);
  // y over x (an output region also marked input, passed as the vector).
  std::vector<uint8_t> xy = F64s({1, 2, 3});
  const std::span<const uint8_t> aliased_in[] = {m, xy};
  const std::span<uint8_t> aliased_out[] = {xy};
  EXPECT_EQ(fn::MatVec(aliased_in, aliased_out, {}), fn::kErrorAliasing);
}

}  // namespace
}  // namespace spinnic::roce::naaice
