// The RC requester (dataplane/roce/requester.h): rule by rule, then paired
// with a model responder (written here, from IB vol. 1 9.7) through a
// seeded lossy, reordering, duplicating link in simulated time.
#include "dataplane/roce/requester.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "dataplane/roce/ib_types.h"
#include "dataplane/roce/responder.h"

namespace spinnic::roce {
namespace {

using Kind = WorkRequest::Kind;

RequesterConfig TestConfig() {
  RequesterConfig config;
  config.pmtu = 1024;
  config.sq_depth = 64;
  config.initial_psn = 100;
  config.max_rd_atomic = 4;
  config.retry_count = 7;
  config.rnr_retry = 7;
  config.ack_timeout_ns = 1'000'000;
  config.max_inflight_psns = 1024;
  // The rule-by-rule tests check the IB timer as specified; the adaptive
  // one has its own tests (RequesterAdaptiveTimer) and runs in the
  // simulations.
  config.adaptive_timeout = false;
  return config;
}

WorkRequest Wr(uint64_t wr_id, Kind kind, uint32_t length,
               uint64_t local_offset = 0x10000, uint64_t remote_va = 0x200000) {
  WorkRequest wr;
  wr.wr_id = wr_id;
  wr.kind = kind;
  wr.length = length;
  wr.local_offset = local_offset;
  wr.remote_va = remote_va;
  wr.rkey = 0xabcd;
  return wr;
}

std::vector<PacketPlan> Drain(Requester& requester, uint64_t now = 0) {
  std::vector<PacketPlan> plans;
  PacketPlan plan;
  while (requester.NextPacket(now, &plan)) plans.push_back(plan);
  return plans;
}

std::vector<Completion> Completions(Requester& requester) {
  std::vector<Completion> out;
  Completion completion;
  while (requester.PollCompletion(&completion)) out.push_back(completion);
  return out;
}

ResponsePacket Ack(uint32_t psn) {
  return ResponsePacket{
      static_cast<uint8_t>(Opcode::kRcAck), psn, AethAck(), 0, 0, 0};
}
ResponsePacket Nak(NakCode code, uint32_t psn) {
  return ResponsePacket{
      static_cast<uint8_t>(Opcode::kRcAck), psn, AethNak(code), 0, 0, 0};
}
ResponsePacket Rnr(uint8_t timer_code, uint32_t psn) {
  return ResponsePacket{static_cast<uint8_t>(Opcode::kRcAck),
                        psn,
                        AethRnrNak(timer_code),
                        0,
                        0,
                        0};
}
ResponsePacket ReadResponse(Opcode opcode, uint32_t psn, uint32_t length) {
  return ResponsePacket{
      static_cast<uint8_t>(opcode), psn, AethAck(), 0, length, 0};
}
ResponsePacket AtomicAck(uint32_t psn, uint64_t original) {
  return ResponsePacket{static_cast<uint8_t>(Opcode::kRcAtomicAck),
                        psn,
                        AethAck(),
                        0,
                        0,
                        original};
}

ResponseVerdict Respond(Requester& requester, const ResponsePacket& packet,
                        uint64_t now = 0, Placement* placement = nullptr) {
  Placement ignored;
  return requester.OnResponse(packet, now,
                              placement != nullptr ? placement : &ignored);
}

// ------------------------------------------------------------ conversions

TEST(RequesterTimers, LocalAckTimeoutEncoding) {
  EXPECT_EQ(LocalAckTimeoutNs(0), 0u);  // no timeout
  EXPECT_EQ(LocalAckTimeoutNs(1), 8192u);
  EXPECT_EQ(LocalAckTimeoutNs(14), 67'108'864u);  // ~67 ms
  EXPECT_EQ(LocalAckTimeoutNs(31), uint64_t{4096} << 31);
  EXPECT_EQ(RnrWaitNs(0), 655'360'000u);
  EXPECT_EQ(RnrWaitNs(1), 10'000u);
  EXPECT_EQ(RnrWaitNs(14), 1'280'000u);
  EXPECT_EQ(RnrWaitNs(AethRnrNak(31)), 491'520'000u);
}

TEST(RequesterConfig, RejectsBadConfigAndStartsInError) {
  RequesterConfig config = TestConfig();
  EXPECT_EQ(RequesterConfigError(config), nullptr);
  config.pmtu = 128;
  EXPECT_NE(RequesterConfigError(config), nullptr);
  config = TestConfig();
  config.sq_depth = 48;
  EXPECT_NE(RequesterConfigError(config), nullptr);
  config = TestConfig();
  config.max_rd_atomic = 17;
  EXPECT_NE(RequesterConfigError(config), nullptr);
  config = TestConfig();
  config.retry_count = 8;
  EXPECT_NE(RequesterConfigError(config), nullptr);
  config.retry_count = 7;
  config.max_inflight_psns = kMaxInflightPsns + 1;
  EXPECT_NE(RequesterConfigError(config), nullptr);
  Requester requester(config);
  EXPECT_EQ(requester.state(), QpState::kError);
  EXPECT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kQpError);
}

// ------------------------------------------------------------ posting

TEST(RequesterPost, ValidatesLengthsAndAtomics) {
  Requester requester(TestConfig());
  EXPECT_EQ(requester.Post(Wr(1, Kind::kSend, kRequesterMaxMessageBytes + 1)),
            PostResult::kInvalid);
  EXPECT_EQ(requester.Post(Wr(2, Kind::kCompareSwap, 4)), PostResult::kInvalid);
  EXPECT_EQ(requester.Post(Wr(3, Kind::kFetchAdd, 8, 0, 0x1004)),
            PostResult::kInvalid);
  WorkRequest bad_kind = Wr(4, Kind::kSend, 1);
  bad_kind.kind = static_cast<Kind>(42);
  EXPECT_EQ(requester.Post(bad_kind), PostResult::kInvalid);
  EXPECT_EQ(requester.Post(Wr(5, Kind::kFetchAdd, 8, 0, 0x1008)),
            PostResult::kOk);
  EXPECT_EQ(requester.Post(Wr(6, Kind::kWrite, kRequesterMaxMessageBytes)),
            PostResult::kOk);
  EXPECT_EQ(requester.counters().post_rejected, 4u);
}

TEST(RequesterPost, MessageBeyondHalfThePsnSpaceIsInvalid) {
  RequesterConfig config = TestConfig();
  config.pmtu = 256;
  Requester requester(config);
  // 2^31 bytes at PMTU 256 would take 2^23 PSNs.
  EXPECT_EQ(requester.Post(Wr(1, Kind::kRead, kRequesterMaxMessageBytes)),
            PostResult::kInvalid);
  EXPECT_EQ(requester.Post(Wr(2, Kind::kRead, kRequesterMaxMessageBytes - 256)),
            PostResult::kOk);
}

TEST(RequesterPost, QueueFullCountsUndrainedCompletions) {
  RequesterConfig config = TestConfig();
  config.sq_depth = 4;
  Requester requester(config);
  for (uint64_t i = 0; i < 4; ++i) {
    ASSERT_EQ(requester.Post(Wr(i, Kind::kSend, 8)), PostResult::kOk);
  }
  EXPECT_EQ(requester.Post(Wr(9, Kind::kSend, 8)), PostResult::kQueueFull);
  ASSERT_EQ(Drain(requester).size(), 4u);
  EXPECT_EQ(Respond(requester, Ack(103)), ResponseVerdict::kAck);
  // Four completions wait to be drained: still full.
  EXPECT_EQ(requester.Post(Wr(9, Kind::kSend, 8)), PostResult::kQueueFull);
  EXPECT_EQ(Completions(requester).size(), 4u);
  EXPECT_EQ(requester.Post(Wr(9, Kind::kSend, 8)), PostResult::kOk);
}

// ------------------------------------------------------------ segmentation

TEST(RequesterSegmentation, TenThousandByteWriteAtPmtu1024) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(7, Kind::kWrite, 10000, 0x4000, 0x9000)),
            PostResult::kOk);
  const std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    const PacketPlan& plan = plans[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(plan.psn, 100 + i);
    EXPECT_EQ(plan.opcode, i == 0   ? Opcode::kRcWriteFirst
                           : i == 9 ? Opcode::kRcWriteLast
                                    : Opcode::kRcWriteMiddle);
    EXPECT_EQ(plan.payload_offset, 0x4000u + i * 1024);
    EXPECT_EQ(plan.payload_length, i == 9 ? 10000u - 9 * 1024 : 1024u);
    EXPECT_EQ(plan.ack_req, i == 9);
    EXPECT_FALSE(plan.retransmission);
    EXPECT_EQ(plan.wr_id, 7u);
    if (i == 0) {
      EXPECT_EQ(plan.reth_va, 0x9000u);
      EXPECT_EQ(plan.reth_rkey, 0xabcdu);
      EXPECT_EQ(plan.reth_length, 10000u);
    } else {
      EXPECT_EQ(plan.reth_va, 0u);
      EXPECT_EQ(plan.reth_length, 0u);
    }
  }
  EXPECT_EQ(requester.next_new_psn(), 110u);
}

TEST(RequesterSegmentation, OnlyPacketsAndImmediates) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kWrite, 1024)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kWrite, 0)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(3, Kind::kSend, 0)), PostResult::kOk);
  WorkRequest send_imm = Wr(4, Kind::kSendImm, 100);
  send_imm.imm = 0x11223344;
  ASSERT_EQ(requester.Post(send_imm), PostResult::kOk);
  WorkRequest write_imm = Wr(5, Kind::kWriteImm, 2049);
  write_imm.imm = 0x55667788;
  ASSERT_EQ(requester.Post(write_imm), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(6, Kind::kSend, 1025)), PostResult::kOk);

  const std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 9u);
  EXPECT_EQ(plans[0].opcode, Opcode::kRcWriteOnly);
  EXPECT_EQ(plans[0].reth_length, 1024u);
  EXPECT_EQ(plans[0].payload_length, 1024u);
  EXPECT_TRUE(plans[0].ack_req);
  EXPECT_EQ(plans[1].opcode, Opcode::kRcWriteOnly);
  EXPECT_EQ(plans[1].reth_length, 0u);
  EXPECT_EQ(plans[1].payload_length, 0u);
  EXPECT_EQ(plans[2].opcode, Opcode::kRcSendOnly);
  EXPECT_EQ(plans[2].payload_length, 0u);
  EXPECT_EQ(plans[3].opcode, Opcode::kRcSendOnlyImm);
  EXPECT_EQ(plans[3].imm, 0x11223344u);
  EXPECT_EQ(plans[4].opcode, Opcode::kRcWriteFirst);
  EXPECT_EQ(plans[4].imm, 0u);
  EXPECT_EQ(plans[4].reth_length, 2049u);
  EXPECT_EQ(plans[5].opcode, Opcode::kRcWriteMiddle);
  EXPECT_EQ(plans[6].opcode, Opcode::kRcWriteLastImm);
  EXPECT_EQ(plans[6].imm, 0x55667788u);
  EXPECT_EQ(plans[6].payload_length, 1u);
  EXPECT_EQ(plans[7].opcode, Opcode::kRcSendFirst);
  EXPECT_EQ(plans[7].reth_length, 0u);
  EXPECT_EQ(plans[8].opcode, Opcode::kRcSendLast);
  EXPECT_EQ(plans[8].payload_length, 1u);
  for (uint32_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(plans[i].psn, 100 + i);
  }
}

TEST(RequesterSegmentation, ReadAndAtomicRequests) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kRead, 3000, 0x100, 0x7000)),
            PostResult::kOk);
  WorkRequest cas = Wr(2, Kind::kCompareSwap, 8, 0, 0x8008);
  cas.compare = 5;
  cas.swap_add = 6;
  ASSERT_EQ(requester.Post(cas), PostResult::kOk);
  WorkRequest fadd = Wr(3, Kind::kFetchAdd, 8, 0, 0x8010);
  fadd.compare = 99;  // not carried by FETCH_ADD
  fadd.swap_add = 7;
  ASSERT_EQ(requester.Post(fadd), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(4, Kind::kSend, 1)), PostResult::kOk);

  const std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 4u);
  EXPECT_EQ(plans[0].opcode, Opcode::kRcReadRequest);
  EXPECT_EQ(plans[0].psn, 100u);
  EXPECT_EQ(plans[0].reth_va, 0x7000u);
  EXPECT_EQ(plans[0].reth_length, 3000u);
  EXPECT_EQ(plans[0].payload_length, 0u);
  EXPECT_TRUE(plans[0].ack_req);
  // The READ takes three PSNs, one per response packet.
  EXPECT_EQ(plans[1].opcode, Opcode::kRcCompareSwap);
  EXPECT_EQ(plans[1].psn, 103u);
  EXPECT_EQ(plans[1].atomic_va, 0x8008u);
  EXPECT_EQ(plans[1].atomic_rkey, 0xabcdu);
  EXPECT_EQ(plans[1].atomic_compare, 5u);
  EXPECT_EQ(plans[1].atomic_swap_add, 6u);
  EXPECT_EQ(plans[2].opcode, Opcode::kRcFetchAdd);
  EXPECT_EQ(plans[2].psn, 104u);
  EXPECT_EQ(plans[2].atomic_compare, 0u);
  EXPECT_EQ(plans[2].atomic_swap_add, 7u);
  EXPECT_EQ(plans[3].opcode, Opcode::kRcSendOnly);
  EXPECT_EQ(plans[3].psn, 105u);
}

TEST(RequesterSegmentation, AckReqEveryIntervalPackets) {
  RequesterConfig config = TestConfig();
  config.ack_request_interval = 4;
  config.pmtu = 256;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 256 * 10)), PostResult::kOk);
  const std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 10u);
  for (uint32_t i = 0; i < 10; ++i) {
    EXPECT_EQ(plans[i].ack_req, i == 3 || i == 7 || i == 9) << i;
  }
}

TEST(RequesterPsn, WrapsAt24Bits) {
  RequesterConfig config = TestConfig();
  config.initial_psn = 0xfffffe;
  config.pmtu = 256;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 1024)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kRead, 512)), PostResult::kOk);
  const std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 5u);
  EXPECT_EQ(plans[0].psn, 0xfffffeu);
  EXPECT_EQ(plans[1].psn, 0xffffffu);
  EXPECT_EQ(plans[2].psn, 0u);
  EXPECT_EQ(plans[3].psn, 1u);
  EXPECT_EQ(plans[4].psn, 2u);  // the READ, taking PSNs 2 and 3
  EXPECT_EQ(requester.next_new_psn(), 4u);
  // An ACK before the wrap acknowledges part of the SEND only.
  EXPECT_EQ(Respond(requester, Ack(0xffffff)), ResponseVerdict::kAck);
  EXPECT_EQ(requester.oldest_unacked_psn(), 0u);
  EXPECT_TRUE(Completions(requester).empty());
  EXPECT_EQ(Respond(requester, Ack(1)), ResponseVerdict::kAck);
  std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseFirst, 2, 256)),
      ResponseVerdict::kReadData);
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseLast, 3, 256)),
      ResponseVerdict::kReadData);
  done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 2u);
  EXPECT_EQ(done[0].byte_len, 512u);
}

// ------------------------------------------------------------ limits

TEST(RequesterLimits, WindowHoldsNewPackets) {
  RequesterConfig config = TestConfig();
  config.max_inflight_psns = 4;
  config.pmtu = 256;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 256 * 10)), PostResult::kOk);
  std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 4u);
  EXPECT_TRUE(plans[1].ack_req);  // interval = window / 2
  EXPECT_TRUE(plans[3].ack_req);
  EXPECT_GT(requester.counters().window_stalls, 0u);
  EXPECT_EQ(Respond(requester, Ack(101)), ResponseVerdict::kAck);
  plans = Drain(requester);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].psn, 104u);
  EXPECT_EQ(plans[1].psn, 105u);
}

TEST(RequesterLimits, ReadLargerThanWindowGoesAlone) {
  RequesterConfig config = TestConfig();
  config.max_inflight_psns = 4;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kRead, 8 * 1024)), PostResult::kOk);
  std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 1u);  // the READ waits for the SEND's ACK
  EXPECT_EQ(Respond(requester, Ack(100)), ResponseVerdict::kAck);
  plans = Drain(requester);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].opcode, Opcode::kRcReadRequest);
  EXPECT_EQ(requester.next_new_psn(), 109u);
}

TEST(RequesterLimits, MaxRdAtomicOutstanding) {
  RequesterConfig config = TestConfig();
  config.max_rd_atomic = 2;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kRead, 100)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kFetchAdd, 8, 0, 0x8000)),
            PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(3, Kind::kRead, 100)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(4, Kind::kSend, 100)), PostResult::kOk);
  std::vector<PacketPlan> plans = Drain(requester);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(requester.counters().rd_atomic_stalls, 1u);
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseOnly, 100, 100)),
      ResponseVerdict::kReadData);
  plans = Drain(requester);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].opcode, Opcode::kRcReadRequest);
  EXPECT_EQ(plans[0].psn, 102u);
  EXPECT_EQ(plans[1].opcode, Opcode::kRcSendOnly);
  // Retransmitting an outstanding READ does not take another slot.
  ASSERT_TRUE(requester.OnTimer(1'000'000));
  plans = Drain(requester, 1'000'000);
  ASSERT_EQ(plans.size(), 3u);
  EXPECT_EQ(plans[0].opcode, Opcode::kRcFetchAdd);
  EXPECT_TRUE(plans[0].retransmission);
}

// ------------------------------------------------------------ ACKs

TEST(RequesterAck, CumulativeAndCoalesced) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 2000)), PostResult::kOk);
  WorkRequest silent = Wr(2, Kind::kWrite, 10);
  silent.signaled = false;
  ASSERT_EQ(requester.Post(silent), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(3, Kind::kWriteImm, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(4, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 5u);  // PSNs 100..104
  // Half of the first message: nothing completes.
  EXPECT_EQ(Respond(requester, Ack(100)), ResponseVerdict::kAck);
  EXPECT_TRUE(Completions(requester).empty());
  EXPECT_EQ(requester.oldest_unacked_psn(), 101u);
  // One ACK for PSN 103 completes three messages, the silent one silently.
  EXPECT_EQ(Respond(requester, Ack(103)), ResponseVerdict::kAck);
  std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(done[0].status, CompletionStatus::kSuccess);
  EXPECT_EQ(done[0].byte_len, 2000u);
  EXPECT_EQ(done[0].kind, Kind::kSend);
  EXPECT_EQ(done[1].wr_id, 3u);
  EXPECT_EQ(done[1].kind, Kind::kWriteImm);
  EXPECT_EQ(requester.outstanding(), 1u);
  EXPECT_EQ(requester.counters().completions[0], 3u);
  // Older and repeated ACKs change nothing.
  EXPECT_EQ(Respond(requester, Ack(101)), ResponseVerdict::kDuplicate);
  EXPECT_EQ(Respond(requester, Ack(103)), ResponseVerdict::kDuplicate);
  EXPECT_TRUE(Completions(requester).empty());
  // An ACK for a PSN never sent is ignored.
  EXPECT_EQ(Respond(requester, Ack(105)), ResponseVerdict::kUnexpected);
  EXPECT_EQ(Respond(requester, Ack(104)), ResponseVerdict::kAck);
  done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 4u);
  EXPECT_EQ(requester.NextDeadline(), UINT64_MAX);  // nothing outstanding
}

TEST(RequesterAck, ReadResponseAndAtomicAckImplicitlyAcknowledge) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kWrite, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(3, Kind::kRead, 10, 0x300)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(4, Kind::kWrite, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(5, Kind::kCompareSwap, 8, 0, 0x40)),
            PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 5u);  // 100..104
  Placement placement;
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseOnly, 102, 10), 0,
              &placement),
      ResponseVerdict::kReadData);
  EXPECT_EQ(placement.local_offset, 0x300u);
  EXPECT_EQ(placement.length, 10u);
  EXPECT_EQ(Respond(requester, AtomicAck(104, 0x1234567890abcdefull)),
            ResponseVerdict::kAtomicAck);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(done[i].wr_id, i + 1);
  EXPECT_EQ(done[4].kind, Kind::kCompareSwap);
  EXPECT_EQ(done[4].atomic_original, 0x1234567890abcdefull);
  EXPECT_EQ(done[4].byte_len, 8u);
}

TEST(RequesterAck, ReadResponsesPlacedAtExactOffsets) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kRead, 2500, 0x5000)), PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 1u);
  Placement placement;
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseFirst, 100, 1024),
              0, &placement),
      ResponseVerdict::kReadData);
  EXPECT_EQ(placement.local_offset, 0x5000u);
  EXPECT_EQ(placement.length, 1024u);
  // A copy of the FIRST: ignored.
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseFirst, 100, 1024)),
      ResponseVerdict::kDuplicate);
  // LAST before MIDDLE: ignored, nothing completes.
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseLast, 102, 452)),
      ResponseVerdict::kOutOfOrder);
  // A LAST where the MIDDLE belongs: wrong position.
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseLast, 101, 1024)),
      ResponseVerdict::kUnexpected);
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseMiddle, 101, 1024),
              0, &placement),
      ResponseVerdict::kReadData);
  EXPECT_EQ(placement.local_offset, 0x5400u);
  EXPECT_TRUE(Completions(requester).empty());
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseLast, 102, 452), 0,
              &placement),
      ResponseVerdict::kReadData);
  EXPECT_EQ(placement.local_offset, 0x5800u);
  EXPECT_EQ(placement.length, 452u);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].kind, Kind::kRead);
  EXPECT_EQ(done[0].byte_len, 2500u);
  EXPECT_EQ(requester.counters().read_responses, 3u);
}

TEST(RequesterAck, ReadResponseOfWrongLengthFailsTheRead) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kRead, 2000)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kSend, 1)), PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 2u);
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseFirst, 100, 1000)),
      ResponseVerdict::kBadLength);
  EXPECT_EQ(requester.state(), QpState::kError);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].status, CompletionStatus::kLocalLengthError);
  EXPECT_EQ(done[1].status, CompletionStatus::kFlushed);
}

TEST(RequesterAck, UnexpectedResponsesIgnored) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kWrite, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kFetchAdd, 8, 0, 0x10)),
            PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 2u);
  // A READ response where a WRITE was sent.
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseOnly, 100, 10)),
      ResponseVerdict::kUnexpected);
  // A request opcode, a reserved AETH type, a READ response with a NAK.
  ResponsePacket request = Ack(100);
  request.opcode = static_cast<uint8_t>(Opcode::kRcSendOnly);
  EXPECT_EQ(Respond(requester, request), ResponseVerdict::kUnexpected);
  ResponsePacket reserved = Ack(100);
  reserved.syndrome = 0x40;
  EXPECT_EQ(Respond(requester, reserved), ResponseVerdict::kUnexpected);
  EXPECT_EQ(Respond(requester, ResponsePacket{0xff, 100, 0, 0, 0, 0}),
            ResponseVerdict::kUnexpected);
  EXPECT_EQ(Respond(requester, AtomicAck(105, 1)),
            ResponseVerdict::kUnexpected);
  EXPECT_EQ(Respond(requester, AtomicAck(101, 77)),
            ResponseVerdict::kAtomicAck);
  EXPECT_EQ(Respond(requester, AtomicAck(101, 77)),
            ResponseVerdict::kDuplicate);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].atomic_original, 77u);
  EXPECT_EQ(requester.state(), QpState::kRts);
}

// ------------------------------------------------------------ NAKs

TEST(RequesterNak, SequenceErrorRetransmitsFromTheMiddleOfAMessage) {
  RequesterConfig config = TestConfig();
  config.pmtu = 256;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kWrite, 1200, 0x1000, 0x9000)),
            PostResult::kOk);  // 100..104
  ASSERT_EQ(requester.Post(Wr(2, Kind::kRead, 1000, 0x3000, 0x7000)),
            PostResult::kOk);  // 105..108
  ASSERT_EQ(requester.Post(Wr(3, Kind::kSend, 10, 0x2000)),
            PostResult::kOk);  // 109
  ASSERT_EQ(Drain(requester).size(), 7u);
  EXPECT_EQ(Respond(requester, Nak(NakCode::kPsnSequenceError, 102), 5),
            ResponseVerdict::kNakSequence);
  EXPECT_EQ(requester.oldest_unacked_psn(), 102u);
  // A copy of the NAK does not start a second go-back.
  EXPECT_EQ(Respond(requester, Nak(NakCode::kPsnSequenceError, 102), 6),
            ResponseVerdict::kDuplicate);
  const std::vector<PacketPlan> plans = Drain(requester, 10);
  ASSERT_EQ(plans.size(), 5u);
  EXPECT_EQ(plans[0].opcode, Opcode::kRcWriteMiddle);
  EXPECT_EQ(plans[0].psn, 102u);
  EXPECT_EQ(plans[0].payload_offset, 0x1000u + 2 * 256);
  EXPECT_EQ(plans[0].payload_length, 256u);
  EXPECT_EQ(plans[0].reth_length, 0u);
  EXPECT_EQ(plans[1].opcode, Opcode::kRcWriteMiddle);
  EXPECT_EQ(plans[1].psn, 103u);
  EXPECT_EQ(plans[2].opcode, Opcode::kRcWriteLast);
  EXPECT_EQ(plans[2].psn, 104u);
  EXPECT_EQ(plans[2].payload_offset, 0x1000u + 4 * 256);
  EXPECT_EQ(plans[2].payload_length, 176u);
  EXPECT_EQ(plans[3].opcode, Opcode::kRcReadRequest);
  EXPECT_EQ(plans[3].psn, 105u);
  EXPECT_EQ(plans[3].reth_va, 0x7000u);
  EXPECT_EQ(plans[3].reth_length, 1000u);
  EXPECT_EQ(plans[4].opcode, Opcode::kRcSendOnly);
  EXPECT_EQ(plans[4].psn, 109u);
  EXPECT_TRUE(plans[4].ack_req);
  for (const PacketPlan& plan : plans) EXPECT_TRUE(plan.retransmission);
  EXPECT_EQ(requester.counters().nak_sequence, 2u);
  EXPECT_EQ(requester.counters().packets_retransmitted, 5u);

  // Two READ responses arrive, then the SEND's ACK: the READ's last two
  // responses were lost, so the READ is re-issued for what is missing.
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseFirst, 105, 256)),
      ResponseVerdict::kReadData);
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseMiddle, 106, 256)),
      ResponseVerdict::kReadData);
  EXPECT_EQ(Respond(requester, Ack(109)), ResponseVerdict::kImpliedNak);
  std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);  // the WRITE, implicitly
  EXPECT_EQ(done[0].wr_id, 1u);
  std::vector<PacketPlan> again = Drain(requester, 20);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].opcode, Opcode::kRcReadRequest);
  EXPECT_EQ(again[0].psn, 107u);
  EXPECT_EQ(again[0].reth_va, 0x7000u + 512);
  EXPECT_EQ(again[0].reth_length, 1000u - 512);
  EXPECT_EQ(again[1].psn, 109u);
  EXPECT_EQ(requester.counters().read_requests_reissued, 2u);
  // The responder answers the re-issued READ as a new one: FIRST at 107.
  Placement placement;
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseFirst, 107, 256),
              30, &placement),
      ResponseVerdict::kReadData);
  EXPECT_EQ(placement.local_offset, 0x3000u + 512);
  EXPECT_EQ(
      Respond(requester, ReadResponse(Opcode::kRcReadResponseLast, 108, 232),
              30, &placement),
      ResponseVerdict::kReadData);
  EXPECT_EQ(placement.local_offset, 0x3000u + 768);
  EXPECT_EQ(placement.length, 232u);
  EXPECT_EQ(Respond(requester, Ack(109), 31), ResponseVerdict::kAck);
  done = Completions(requester);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].wr_id, 2u);
  EXPECT_EQ(done[0].byte_len, 1000u);
  EXPECT_EQ(done[1].wr_id, 3u);
}

TEST(RequesterNak, SequenceErrorsExhaustRetryCount) {
  RequesterConfig config = TestConfig();
  config.retry_count = 1;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 1u);
  EXPECT_EQ(Respond(requester, Nak(NakCode::kPsnSequenceError, 100)),
            ResponseVerdict::kNakSequence);
  ASSERT_EQ(Drain(requester).size(), 1u);
  // No progress since: a second NAK for the same PSN needs the timer...
  EXPECT_EQ(Respond(requester, Nak(NakCode::kPsnSequenceError, 100)),
            ResponseVerdict::kDuplicate);
  ASSERT_TRUE(requester.OnTimer(config.ack_timeout_ns));
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, CompletionStatus::kRetryExceeded);
}

TEST(RequesterNak, RnrWaitsThenResends) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kWrite, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kSend, 10, 0x2000)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(3, Kind::kSend, 10, 0x3000)), PostResult::kOk);
  ASSERT_EQ(Drain(requester, 0).size(), 3u);
  // RNR NAK for the first SEND: it acknowledges the WRITE before it.
  EXPECT_EQ(Respond(requester, Rnr(14, 101), 1000), ResponseVerdict::kNakRnr);
  EXPECT_EQ(Completions(requester).size(), 1u);
  EXPECT_EQ(requester.counters().rnr_waits, 1u);
  EXPECT_EQ(requester.NextDeadline(), 1000 + 1'280'000u);
  EXPECT_EQ(Respond(requester, Rnr(14, 101), 2000),
            ResponseVerdict::kDuplicate);
  PacketPlan plan;
  EXPECT_FALSE(requester.NextPacket(1000 + 1'279'999, &plan));
  const std::vector<PacketPlan> plans = Drain(requester, 1000 + 1'280'000);
  ASSERT_EQ(plans.size(), 2u);
  EXPECT_EQ(plans[0].psn, 101u);
  EXPECT_EQ(plans[0].payload_offset, 0x2000u);
  EXPECT_TRUE(plans[0].retransmission);
  EXPECT_EQ(plans[1].psn, 102u);
  EXPECT_EQ(Respond(requester, Ack(102)), ResponseVerdict::kAck);
  EXPECT_EQ(Completions(requester).size(), 2u);
}

TEST(RequesterNak, RnrRetryExhausted) {
  RequesterConfig config = TestConfig();
  config.rnr_retry = 2;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  WorkRequest silent = Wr(2, Kind::kSend, 10);
  silent.signaled = false;
  ASSERT_EQ(requester.Post(silent), PostResult::kOk);
  uint64_t now = 0;
  for (int round = 0; round < 2; ++round) {
    ASSERT_FALSE(Drain(requester, now).empty());
    EXPECT_EQ(Respond(requester, Rnr(1, 100), now), ResponseVerdict::kNakRnr);
    now += RnrWaitNs(1);
  }
  ASSERT_FALSE(Drain(requester, now).empty());
  EXPECT_EQ(Respond(requester, Rnr(1, 100), now), ResponseVerdict::kNakRnr);
  EXPECT_EQ(requester.state(), QpState::kError);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 2u);  // the unsignaled error is reported too
  EXPECT_EQ(done[0].status, CompletionStatus::kRnrRetryExceeded);
  EXPECT_EQ(done[1].status, CompletionStatus::kFlushed);
  EXPECT_EQ(done[1].wr_id, 2u);
  EXPECT_EQ(requester.counters().nak_rnr, 3u);
}

TEST(RequesterNak, RnrRetrySevenIsInfinite) {
  RequesterConfig config = TestConfig();
  config.rnr_retry = 7;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  uint64_t now = 0;
  for (int round = 0; round < 50; ++round) {
    ASSERT_EQ(Drain(requester, now).size(), 1u);
    ASSERT_EQ(Respond(requester, Rnr(1, 100), now), ResponseVerdict::kNakRnr);
    now += RnrWaitNs(1);
  }
  EXPECT_EQ(requester.state(), QpState::kRts);
}

// rxe without a receive posted: an RNR NAK for the message's first PSN,
// then a sequence NAK for the same PSN (for the packets after it). The
// wait alone resends; the ACK timer is stopped during it; retry_count is
// not charged, however many rounds it takes.
TEST(RequesterNak, SequenceNakDuringRnrWaitIsADuplicate) {
  RequesterConfig config = TestConfig();
  config.retry_count = 1;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 4 * 1024)), PostResult::kOk);
  uint64_t now = 0;
  for (int round = 0; round < 10; ++round) {
    const std::vector<PacketPlan> plans = Drain(requester, now);
    ASSERT_EQ(plans.size(), 4u) << "round " << round;
    EXPECT_EQ(plans[0].psn, 100u);
    ASSERT_EQ(Respond(requester, Rnr(0, 100), now), ResponseVerdict::kNakRnr);
    ASSERT_EQ(Respond(requester, Nak(NakCode::kPsnSequenceError, 100), now),
              ResponseVerdict::kDuplicate);
    EXPECT_EQ(requester.NextDeadline(), now + RnrWaitNs(0));
    // Many ACK timeouts' worth of the wait: nothing times out or is sent.
    for (uint64_t t = now; t < now + RnrWaitNs(0); t += 10'000'000) {
      EXPECT_FALSE(requester.OnTimer(t));
      PacketPlan plan;
      EXPECT_FALSE(requester.NextPacket(t, &plan));
    }
    now += RnrWaitNs(0);
  }
  EXPECT_EQ(requester.state(), QpState::kRts);
  EXPECT_EQ(requester.counters().retries, 0u);
  EXPECT_EQ(requester.counters().timeouts, 0u);
  ASSERT_EQ(Drain(requester, now).size(), 4u);
  EXPECT_EQ(Respond(requester, Ack(103), now), ResponseVerdict::kAck);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, CompletionStatus::kSuccess);
}

// A sequence NAK past the RNR NAKed PSN: the responder took that packet
// after all (an earlier copy), so the wait is moot and the NAK goes back.
TEST(RequesterNak, SequenceNakPastTheRnrPsnEndsTheWait) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kSend, 10, 0x2000)), PostResult::kOk);
  ASSERT_EQ(Drain(requester, 0).size(), 2u);
  ASSERT_EQ(Respond(requester, Rnr(0, 100), 0), ResponseVerdict::kNakRnr);
  EXPECT_EQ(Respond(requester, Nak(NakCode::kPsnSequenceError, 101), 10),
            ResponseVerdict::kNakSequence);
  EXPECT_EQ(Completions(requester).size(), 1u);
  const std::vector<PacketPlan> plans = Drain(requester, 10);
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].psn, 101u);
  EXPECT_TRUE(plans[0].retransmission);
  EXPECT_EQ(requester.NextDeadline(), 10 + TestConfig().ack_timeout_ns);
}

TEST(RequesterNak, RemoteAccessErrorFailsThatWrAndFlushes) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kWrite, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kRead, 10)), PostResult::kOk);
  WorkRequest silent = Wr(3, Kind::kSend, 10);
  silent.signaled = false;
  ASSERT_EQ(requester.Post(silent), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(4, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 4u);
  EXPECT_EQ(Respond(requester, Nak(NakCode::kRemoteAccessError, 101)),
            ResponseVerdict::kNakFatal);
  EXPECT_EQ(requester.state(), QpState::kError);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(done[0].status, CompletionStatus::kSuccess);
  EXPECT_EQ(done[1].wr_id, 2u);
  EXPECT_EQ(done[1].status, CompletionStatus::kRemoteAccessError);
  EXPECT_EQ(done[1].byte_len, 0u);
  EXPECT_EQ(done[2].status, CompletionStatus::kFlushed);
  EXPECT_EQ(done[3].status, CompletionStatus::kFlushed);
  EXPECT_EQ(requester.counters().nak_remote_access, 1u);
  PacketPlan plan;
  EXPECT_FALSE(requester.NextPacket(0, &plan));
  EXPECT_EQ(requester.Post(Wr(5, Kind::kSend, 1)), PostResult::kQpError);
  EXPECT_EQ(Respond(requester, Ack(103)), ResponseVerdict::kQpError);
}

TEST(RequesterNak, EveryFatalCodeHasItsStatus) {
  const std::pair<NakCode, CompletionStatus> cases[] = {
      {NakCode::kInvalidRequest, CompletionStatus::kRemoteInvalidRequest},
      {NakCode::kRemoteAccessError, CompletionStatus::kRemoteAccessError},
      {NakCode::kRemoteOperationalError,
       CompletionStatus::kRemoteOperationalError},
      {NakCode::kInvalidRdRequest, CompletionStatus::kRemoteInvalidRequest},
      {static_cast<NakCode>(9), CompletionStatus::kRemoteOperationalError},
  };
  for (const auto& [code, status] : cases) {
    Requester requester(TestConfig());
    ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
    ASSERT_EQ(Drain(requester).size(), 1u);
    EXPECT_EQ(Respond(requester, Nak(code, 100)), ResponseVerdict::kNakFatal);
    const std::vector<Completion> done = Completions(requester);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, status) << static_cast<int>(code);
  }
}

// ------------------------------------------------------------ timer

TEST(RequesterTimer, TimeoutGoesBackToOldestThenExceeds) {
  RequesterConfig config = TestConfig();
  config.retry_count = 2;
  config.ack_timeout_ns = 1000;
  config.pmtu = 256;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 512)), PostResult::kOk);
  WorkRequest silent = Wr(2, Kind::kWrite, 10);
  silent.signaled = false;
  ASSERT_EQ(requester.Post(silent), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(3, Kind::kRead, 10)), PostResult::kOk);
  EXPECT_EQ(requester.NextDeadline(), UINT64_MAX);
  ASSERT_EQ(Drain(requester, 50).size(), 4u);
  EXPECT_EQ(requester.NextDeadline(), 1050u);
  EXPECT_FALSE(requester.OnTimer(1049));
  // The first packet is acknowledged: progress restarts the timer.
  EXPECT_EQ(Respond(requester, Ack(100), 500), ResponseVerdict::kAck);
  EXPECT_EQ(requester.NextDeadline(), 1500u);
  uint64_t now = 1500;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(requester.OnTimer(now));
    const std::vector<PacketPlan> plans = Drain(requester, now);
    ASSERT_EQ(plans.size(), 3u);
    EXPECT_EQ(plans[0].psn, 101u);
    EXPECT_EQ(plans[0].opcode, Opcode::kRcSendLast);
    EXPECT_EQ(plans[1].opcode, Opcode::kRcWriteOnly);
    EXPECT_EQ(plans[2].opcode, Opcode::kRcReadRequest);
    for (const PacketPlan& plan : plans) EXPECT_TRUE(plan.retransmission);
    EXPECT_EQ(requester.NextDeadline(), now + 1000);
    now += 1000;
  }
  ASSERT_TRUE(requester.OnTimer(now));
  EXPECT_EQ(requester.state(), QpState::kError);
  EXPECT_EQ(requester.counters().timeouts, 3u);
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].wr_id, 1u);
  EXPECT_EQ(done[0].status, CompletionStatus::kRetryExceeded);
  EXPECT_EQ(done[1].wr_id, 2u);
  EXPECT_EQ(done[1].status, CompletionStatus::kFlushed);
  EXPECT_EQ(done[2].status, CompletionStatus::kFlushed);
  EXPECT_EQ(requester.NextDeadline(), UINT64_MAX);
}

TEST(RequesterTimer, ProgressRestoresRetryBudget) {
  RequesterConfig config = TestConfig();
  config.retry_count = 1;
  config.ack_timeout_ns = 1000;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester, 0).size(), 2u);
  ASSERT_TRUE(requester.OnTimer(1000));
  ASSERT_EQ(Drain(requester, 1000).size(), 2u);
  EXPECT_EQ(Respond(requester, Ack(100), 1500), ResponseVerdict::kAck);
  ASSERT_TRUE(requester.OnTimer(2500));
  EXPECT_EQ(requester.state(), QpState::kRts);
  ASSERT_EQ(Drain(requester, 2500).size(), 1u);
}

TEST(RequesterTimer, ZeroTimeoutNeverFires) {
  RequesterConfig config = TestConfig();
  config.ack_timeout_ns = 0;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester, 0).size(), 1u);
  EXPECT_EQ(requester.NextDeadline(), UINT64_MAX);
  EXPECT_FALSE(requester.OnTimer(UINT64_MAX - 1));
}

TEST(RequesterTimer, LateAckAfterGoBackSkipsAcknowledgedPackets) {
  RequesterConfig config = TestConfig();
  config.ack_timeout_ns = 1000;
  Requester requester(config);
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10 * 1024)), PostResult::kOk);
  ASSERT_EQ(Drain(requester, 0).size(), 10u);
  ASSERT_TRUE(requester.OnTimer(1000));
  PacketPlan plan;
  ASSERT_TRUE(requester.NextPacket(1000, &plan));
  EXPECT_EQ(plan.psn, 100u);
  EXPECT_EQ(Respond(requester, Ack(105), 1001), ResponseVerdict::kAck);
  ASSERT_TRUE(requester.NextPacket(1001, &plan));
  EXPECT_EQ(plan.psn, 106u);
  EXPECT_EQ(plan.opcode, Opcode::kRcSendMiddle);
}

// ------------------------------------------------------------ adaptive

// TestConfig with the adaptive timer, the default negotiated timeout (code
// 14, 67 ms) as its ceiling and a 10 us floor.
RequesterConfig AdaptiveConfig() {
  RequesterConfig config = TestConfig();
  config.adaptive_timeout = true;
  config.ack_timeout_ns = LocalAckTimeoutNs(14);
  config.min_ack_timeout_ns = 10'000;
  return config;
}

// Sends one 10-byte SEND at `now`, acknowledged `rtt` later.
void SendAndAck(Requester& requester, uint64_t wr_id, uint64_t now,
                uint64_t rtt) {
  ASSERT_EQ(requester.Post(Wr(wr_id, Kind::kSend, 10)), PostResult::kOk);
  const std::vector<PacketPlan> plans = Drain(requester, now);
  ASSERT_EQ(plans.size(), 1u);
  ASSERT_TRUE(plans[0].ack_req);
  ASSERT_EQ(Respond(requester, Ack(plans[0].psn), now + rtt),
            ResponseVerdict::kAck);
  ASSERT_EQ(Completions(requester).size(), 1u);
}

TEST(RequesterAdaptiveTimer, AdaptsBelowTheNegotiatedTimeout) {
  const RequesterConfig config = AdaptiveConfig();
  Requester requester(config);
  EXPECT_EQ(requester.ack_timeout_ns(), config.ack_timeout_ns);
  uint64_t now = 0;
  for (uint64_t i = 0; i < 50; ++i, now += 100'000) {
    SendAndAck(requester, i, now, 20'000);
  }
  EXPECT_EQ(requester.counters().rtt_samples, 50u);
  EXPECT_EQ(requester.rtt().srtt_ns(), 20'000u);
  // SRTT + 4 RTTVAR with RTTVAR decayed: just above 20 us, three thousand
  // times below the negotiated 67 ms.
  EXPECT_GE(requester.ack_timeout_ns(), 20'000u);
  EXPECT_LT(requester.ack_timeout_ns(), 25'000u);
  // A lost READ response is asked for again after that, not after 67 ms.
  ASSERT_EQ(requester.Post(Wr(100, Kind::kRead, 4096)), PostResult::kOk);
  const std::vector<PacketPlan> read = Drain(requester, now);
  ASSERT_EQ(read.size(), 1u);
  const uint64_t timeout = requester.ack_timeout_ns();
  EXPECT_EQ(requester.NextDeadline(), now + timeout);
  ASSERT_TRUE(requester.OnTimer(now + timeout));
  const std::vector<PacketPlan> again = Drain(requester, now + timeout);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].opcode, Opcode::kRcReadRequest);
  EXPECT_TRUE(again[0].retransmission);
  EXPECT_EQ(requester.counters().fast_timeouts, 1u);
  // Backoff: the next expiry waits twice as long.
  EXPECT_EQ(requester.ack_timeout_ns(), 2 * timeout);
  EXPECT_EQ(requester.NextDeadline(), now + 3 * timeout);
  // The re-asked READ's answer is no sample (Karn), but it is progress:
  // the timer goes back to the estimate.
  const uint64_t samples = requester.counters().rtt_samples;
  for (uint32_t i = 0; i < 4; ++i) {
    const Opcode op = i == 0   ? Opcode::kRcReadResponseFirst
                      : i == 3 ? Opcode::kRcReadResponseLast
                               : Opcode::kRcReadResponseMiddle;
    ASSERT_EQ(Respond(requester, ReadResponse(op, read[0].psn + i, 1024),
                      now + timeout + 20'000),
              ResponseVerdict::kReadData);
  }
  EXPECT_EQ(requester.counters().rtt_samples, samples);
  EXPECT_EQ(requester.ack_timeout_ns(), timeout);
  EXPECT_EQ(requester.state(), QpState::kRts);
}

TEST(RequesterAdaptiveTimer, NeverAboveTheNegotiatedTimeout) {
  RequesterConfig config = AdaptiveConfig();
  config.ack_timeout_ns = LocalAckTimeoutNs(8);  // 1.05 ms
  Requester requester(config);
  uint64_t now = 0;
  // Round trips of 5 ms: the estimate would be far above; the negotiated
  // timeout caps it.
  for (uint64_t i = 0; i < 20; ++i, now += 10'000'000) {
    SendAndAck(requester, i, now, 5'000'000);
    EXPECT_LE(requester.ack_timeout_ns(), config.ack_timeout_ns);
  }
  EXPECT_EQ(requester.ack_timeout_ns(), config.ack_timeout_ns);
  // Instant answers: the floor holds.
  for (uint64_t i = 0; i < 100; ++i, now += 1'000) {
    SendAndAck(requester, 100 + i, now, 0);
    EXPECT_GE(requester.ack_timeout_ns(), config.min_ack_timeout_ns);
  }
  EXPECT_EQ(requester.ack_timeout_ns(), config.min_ack_timeout_ns);
}

TEST(RequesterAdaptiveTimer, KarnNoSampleFromAResentPsn) {
  Requester requester(AdaptiveConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester, 0).size(), 1u);
  // A sequence NAK for it: it goes again; its ACK may answer either copy.
  ASSERT_EQ(Respond(requester, Nak(NakCode::kPsnSequenceError, 100), 5'000),
            ResponseVerdict::kNakSequence);
  const std::vector<PacketPlan> resent = Drain(requester, 5'000);
  ASSERT_EQ(resent.size(), 1u);
  EXPECT_TRUE(resent[0].retransmission);
  ASSERT_EQ(Respond(requester, Ack(100), 9'000), ResponseVerdict::kAck);
  ASSERT_EQ(Completions(requester).size(), 1u);
  EXPECT_EQ(requester.counters().rtt_samples, 0u);
  EXPECT_EQ(requester.ack_timeout_ns(), LocalAckTimeoutNs(14));
  // The next new packet is timed again.
  SendAndAck(requester, 2, 10'000, 30'000);
  EXPECT_EQ(requester.counters().rtt_samples, 1u);
  EXPECT_EQ(requester.rtt().srtt_ns(), 30'000u);
}

TEST(RequesterAdaptiveTimer, EarlyExpiriesBackOffAndDoNotSpendRetries) {
  // A silent responder: the adaptive timer expires after 20-odd us, then
  // doubles up to the negotiated timeout; only expiries at that timeout
  // count against retry_count, so the QP fails no sooner than retry_count
  // + 1 negotiated timeouts after it went silent, as with the IB timer.
  RequesterConfig config = AdaptiveConfig();
  config.ack_timeout_ns = LocalAckTimeoutNs(8);  // 1.05 ms
  config.retry_count = 2;
  Requester requester(config);
  uint64_t now = 0;
  for (uint64_t i = 0; i < 30; ++i, now += 100'000) {
    SendAndAck(requester, i, now, 20'000);
  }
  uint64_t timeout = requester.ack_timeout_ns();
  ASSERT_LT(timeout, config.ack_timeout_ns / 16);
  ASSERT_EQ(requester.Post(Wr(99, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester, now).size(), 1u);
  const uint64_t silent_from = now;
  uint32_t expiries = 0;
  while (requester.state() == QpState::kRts) {
    ASSERT_LT(expiries, 50u);
    const uint64_t deadline = requester.NextDeadline();
    ASSERT_EQ(deadline, now + timeout) << expiries;
    EXPECT_FALSE(requester.OnTimer(deadline - 1));
    now = deadline;
    ASSERT_TRUE(requester.OnTimer(now));
    ++expiries;
    if (requester.state() != QpState::kRts) break;
    ASSERT_EQ(Drain(requester, now).size(), 1u);  // resent
    // Doubled, up to the negotiated timeout.
    EXPECT_EQ(requester.ack_timeout_ns(),
              std::min(2 * timeout, config.ack_timeout_ns));
    timeout = requester.ack_timeout_ns();
  }
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, CompletionStatus::kRetryExceeded);
  const RequesterCounters& c = requester.counters();
  EXPECT_GT(c.fast_timeouts, 0u);
  EXPECT_EQ(c.timeouts - c.fast_timeouts, config.retry_count + 1u);
  // The early expiries add less than two negotiated timeouts (a doubling
  // series that stops below the timeout).
  EXPECT_GE(now - silent_from,
            (config.retry_count + 1u) * config.ack_timeout_ns);
  EXPECT_LT(now - silent_from,
            (config.retry_count + 3u) * config.ack_timeout_ns);
}

TEST(RequesterAdaptiveTimer, FixedTimerKeepsTheNegotiatedTimeout) {
  RequesterConfig config = AdaptiveConfig();
  config.adaptive_timeout = false;
  Requester requester(config);
  for (uint64_t i = 0; i < 10; ++i) SendAndAck(requester, i, i * 1000, 20);
  EXPECT_EQ(requester.counters().rtt_samples, 0u);
  EXPECT_EQ(requester.ack_timeout_ns(), config.ack_timeout_ns);
}

TEST(RequesterError, SetErrorFlushesEverything) {
  Requester requester(TestConfig());
  ASSERT_EQ(requester.Post(Wr(1, Kind::kSend, 10)), PostResult::kOk);
  ASSERT_EQ(requester.Post(Wr(2, Kind::kRead, 10)), PostResult::kOk);
  ASSERT_EQ(Drain(requester).size(), 2u);
  requester.SetError();
  const std::vector<Completion> done = Completions(requester);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].status, CompletionStatus::kFlushed);
  EXPECT_EQ(done[1].status, CompletionStatus::kFlushed);
  EXPECT_EQ(requester.counters()
                .completions[static_cast<int>(CompletionStatus::kFlushed)],
            2u);
}

// ------------------------------------------------------------ robustness

// Random responses (any opcode, PSNs around the window, any syndrome and
// length) never break the invariants: completions in WR order, each WR at
// most once, nothing outstanding beyond sq_depth, error state sticky.
TEST(RequesterRobustness, RandomResponsesKeepInvariants) {
  std::mt19937 rng(7);
  for (int run = 0; run < 20; ++run) {
    RequesterConfig config = TestConfig();
    config.pmtu = 256;
    config.sq_depth = 16;
    config.initial_psn = rng() & kPsnMask;
    config.max_inflight_psns = 1 + rng() % 64;
    config.retry_count = rng() % 8;
    config.rnr_retry = rng() % 8;
    config.ack_timeout_ns = 1000;
    Requester requester(config);
    uint64_t next_id = 0;
    uint64_t next_completion = 0;
    uint64_t now = 0;
    bool was_error = false;
    for (int step = 0; step < 5000; ++step) {
      now += rng() % 300;
      WorkRequest wr = Wr(next_id, static_cast<Kind>(rng() % 7), rng() % 3000,
                          rng() % 4096, (rng() % 512) * 8);
      if (wr.kind == Kind::kCompareSwap || wr.kind == Kind::kFetchAdd) {
        wr.length = 8;
      }
      wr.signaled = rng() % 4 != 0;
      if (requester.Post(wr) == PostResult::kOk) ++next_id;
      PacketPlan plan;
      for (int i = rng() % 4; i > 0 && requester.NextPacket(now, &plan); --i) {
        ASSERT_LT(plan.wr_id, next_id);
        ASSERT_LE(plan.payload_length, config.pmtu);
      }
      ResponsePacket packet;
      static constexpr uint8_t kOpcodes[] = {0x0d, 0x0e, 0x0f, 0x10,
                                             0x11, 0x12, 0x04, 0xff};
      packet.opcode = kOpcodes[rng() % 8];
      packet.psn =
          (PsnAdd(requester.oldest_unacked_psn(), rng() % 80) - 10) & kPsnMask;
      packet.syndrome = rng() % 4 == 0 ? rng() & 0xff : AethAck();
      packet.payload_length = rng() % 2 == 0 ? config.pmtu : rng() % 300;
      packet.atomic_original = rng();
      Placement placement;
      if (requester.OnResponse(packet, now, &placement) ==
          ResponseVerdict::kReadData) {
        ASSERT_LE(placement.length, config.pmtu);
      }
      if (rng() % 8 == 0) requester.OnTimer(now);
      ASSERT_LE(requester.outstanding(), config.sq_depth);
      Completion completion;
      while (requester.PollCompletion(&completion)) {
        ASSERT_GE(completion.wr_id, next_completion);
        ASSERT_LT(completion.wr_id, next_id);
        next_completion = completion.wr_id + 1;
      }
      if (was_error) {
        ASSERT_EQ(requester.state(), QpState::kError);
      }
      was_error = requester.state() == QpState::kError;
    }
  }
}

// ------------------------------------------------------------ simulation

struct RequestOnWire {
  PacketPlan plan;
  std::vector<uint8_t> payload;
};
struct ResponseOnWire {
  ResponsePacket packet;
  std::vector<uint8_t> payload;
};

struct LinkModel {
  double loss = 0.02;
  double duplicate = 0.01;
  double reorder = 0.05;
  uint64_t delay_ns = 2000;
  uint64_t reorder_extra_ns = 20'000;
};

// A one-way link: loses, duplicates and reorders (a late copy) packets.
template <typename Packet>
class Link {
 public:
  Link(const LinkModel& model, std::mt19937& rng) : model_(model), rng_(rng) {}

  void Send(uint64_t now, const Packet& packet) {
    if (Chance(model_.loss)) {
      ++lost_;
      return;
    }
    Enqueue(now, packet);
    if (Chance(model_.duplicate)) {
      ++duplicated_;
      Enqueue(now, packet);
    }
  }
  // The next packet due at `now`, in arrival order.
  bool Receive(uint64_t now, Packet* out) {
    if (queue_.empty() || queue_.begin()->first.first > now) return false;
    *out = std::move(queue_.begin()->second);
    queue_.erase(queue_.begin());
    return true;
  }
  uint64_t NextArrival() const {
    return queue_.empty() ? UINT64_MAX : queue_.begin()->first.first;
  }
  uint64_t lost() const { return lost_; }
  uint64_t duplicated() const { return duplicated_; }

 private:
  bool Chance(double p) {
    return std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  void Enqueue(uint64_t now, const Packet& packet) {
    uint64_t at = now + model_.delay_ns;
    if (Chance(model_.reorder)) {
      at += std::uniform_int_distribution<uint64_t>(
          1, model_.reorder_extra_ns)(rng_);
    }
    queue_.emplace(std::make_pair(at, sequence_++), packet);
  }

  LinkModel model_;
  std::mt19937& rng_;
  std::map<std::pair<uint64_t, uint64_t>, Packet> queue_;
  uint64_t sequence_ = 0;
  uint64_t lost_ = 0;
  uint64_t duplicated_ = 0;
};

// The responder side of IB vol. 1 9.7, as small as it can be: accepts
// exactly the expected PSN, NAKs a gap once until the expected PSN
// arrives, answers duplicates (re-ACK, re-read, cached atomic result),
// sometimes refuses a SEND with an RNR NAK.
class ModelResponder {
 public:
  ModelResponder(uint32_t pmtu, uint32_t initial_psn, size_t memory_bytes,
                 std::mt19937& rng, double rnr_chance)
      : pmtu_(pmtu),
        expected_psn_(initial_psn),
        memory_(memory_bytes),
        rng_(rng),
        rnr_chance_(rnr_chance) {}

  std::vector<uint8_t>& memory() { return memory_; }
  const std::vector<std::vector<uint8_t>>& sends() const { return sends_; }
  uint64_t naks() const { return naks_; }
  uint64_t rnr_naks() const { return rnr_naks_; }
  uint64_t duplicates() const { return duplicates_; }
  // Answers every AckReq at once: nothing is left for an idle flush.
  void Idle(std::vector<ResponseOnWire>* /*out*/) {}

  void Handle(const RequestOnWire& request, std::vector<ResponseOnWire>* out) {
    const PacketPlan& plan = request.plan;
    const OpcodeInfo& info = GetOpcodeInfo(plan.opcode);
    ASSERT_TRUE(info.valid());
    ASSERT_EQ(request.payload.size(), plan.payload_length);
    const int32_t distance = PsnDiff(plan.psn, expected_psn_);
    if (distance > 0) {
      if (!nak_sent_) {
        nak_sent_ = true;
        ++naks_;
        out->push_back(
            AckPacket(AethNak(NakCode::kPsnSequenceError), expected_psn_));
      }
      return;
    }
    if (distance < 0) {
      ++duplicates_;
      if (info.kind == OpKind::kReadRequest) {
        ServeRead(plan, out);
      } else if (info.kind == OpKind::kAtomic) {
        auto it = atomic_results_.find(plan.psn);
        ASSERT_NE(it, atomic_results_.end());
        out->push_back(AtomicPacket(plan.psn, it->second));
      } else {
        out->push_back(AckPacket(AethAck(), PsnAdd(expected_psn_, kPsnMask)));
      }
      return;
    }
    nak_sent_ = false;
    if (info.kind == OpKind::kSend && info.starts_message() &&
        std::uniform_real_distribution<double>(0, 1)(rng_) < rnr_chance_) {
      ++rnr_naks_;
      out->push_back(AckPacket(AethRnrNak(1), plan.psn));
      return;
    }
    switch (info.kind) {
      case OpKind::kSend:
      case OpKind::kWrite: {
        if (info.starts_message()) {
          ASSERT_FALSE(in_message_) << plan.psn;
          in_message_ = true;
          message_kind_ = info.kind;
          message_.clear();
          if (info.kind == OpKind::kWrite) {
            write_va_ = plan.reth_va;
            write_length_ = plan.reth_length;
          }
        } else {
          ASSERT_TRUE(in_message_) << plan.psn;
          ASSERT_EQ(message_kind_, info.kind);
        }
        if (!info.ends_message()) {
          ASSERT_EQ(plan.payload_length, pmtu_);
        }
        message_.insert(message_.end(), request.payload.begin(),
                        request.payload.end());
        if (info.ends_message()) {
          in_message_ = false;
          if (info.kind == OpKind::kSend) {
            sends_.push_back(message_);
          } else {
            ASSERT_EQ(message_.size(), write_length_);
            ASSERT_LE(write_va_ + write_length_, memory_.size());
            std::copy(message_.begin(), message_.end(),
                      memory_.begin() + write_va_);
          }
        }
        expected_psn_ = PsnAdd(expected_psn_, 1);
        if (plan.ack_req) out->push_back(AckPacket(AethAck(), plan.psn));
        break;
      }
      case OpKind::kReadRequest:
        ASSERT_FALSE(in_message_);
        ServeRead(plan, out);
        expected_psn_ = PsnAdd(expected_psn_, PacketsOf(plan.reth_length));
        break;
      case OpKind::kAtomic: {
        ASSERT_FALSE(in_message_);
        ASSERT_LE(plan.atomic_va + 8, memory_.size());
        uint64_t original;
        std::memcpy(&original, &memory_[plan.atomic_va], 8);
        uint64_t result = original;
        if (plan.opcode == Opcode::kRcCompareSwap) {
          if (original == plan.atomic_compare) result = plan.atomic_swap_add;
        } else {
          result = original + plan.atomic_swap_add;
        }
        std::memcpy(&memory_[plan.atomic_va], &result, 8);
        atomic_results_[plan.psn] = original;
        out->push_back(AtomicPacket(plan.psn, original));
        expected_psn_ = PsnAdd(expected_psn_, 1);
        break;
      }
      default:
        FAIL() << "request opcode " << static_cast<int>(plan.opcode);
    }
  }

 private:
  uint32_t PacketsOf(uint32_t length) const {
    return length == 0 ? 1 : (length + pmtu_ - 1) / pmtu_;
  }
  static ResponseOnWire AckPacket(uint8_t syndrome, uint32_t psn) {
    ResponseOnWire response;
    response.packet.opcode = static_cast<uint8_t>(Opcode::kRcAck);
    response.packet.psn = psn;
    response.packet.syndrome = syndrome;
    return response;
  }
  static ResponseOnWire AtomicPacket(uint32_t psn, uint64_t original) {
    ResponseOnWire response;
    response.packet.opcode = static_cast<uint8_t>(Opcode::kRcAtomicAck);
    response.packet.psn = psn;
    response.packet.syndrome = AethAck();
    response.packet.atomic_original = original;
    return response;
  }
  void ServeRead(const PacketPlan& plan, std::vector<ResponseOnWire>* out) {
    ASSERT_LE(plan.reth_va + plan.reth_length, memory_.size());
    const uint32_t packets = PacketsOf(plan.reth_length);
    for (uint32_t i = 0; i < packets; ++i) {
      ResponseOnWire response;
      Opcode opcode = Opcode::kRcReadResponseMiddle;
      if (packets == 1) {
        opcode = Opcode::kRcReadResponseOnly;
      } else if (i == 0) {
        opcode = Opcode::kRcReadResponseFirst;
      } else if (i + 1 == packets) {
        opcode = Opcode::kRcReadResponseLast;
      }
      response.packet.opcode = static_cast<uint8_t>(opcode);
      response.packet.psn = PsnAdd(plan.psn, i);
      response.packet.syndrome = AethAck();
      const uint64_t begin = plan.reth_va + uint64_t{i} * pmtu_;
      const uint64_t end =
          std::min<uint64_t>(begin + pmtu_, plan.reth_va + plan.reth_length);
      response.payload.assign(memory_.begin() + begin, memory_.begin() + end);
      response.packet.payload_length =
          static_cast<uint32_t>(response.payload.size());
      out->push_back(std::move(response));
    }
  }

  uint32_t pmtu_;
  uint32_t expected_psn_;
  bool nak_sent_ = false;
  std::vector<uint8_t> memory_;
  std::mt19937& rng_;
  double rnr_chance_;
  bool in_message_ = false;
  OpKind message_kind_ = OpKind::kInvalid;
  std::vector<uint8_t> message_;
  uint64_t write_va_ = 0;
  uint32_t write_length_ = 0;
  std::map<uint32_t, uint64_t> atomic_results_;
  std::vector<std::vector<uint8_t>> sends_;
  uint64_t naks_ = 0;
  uint64_t rnr_naks_ = 0;
  uint64_t duplicates_ = 0;
};

// The same contract against the real responder (dataplane/roce/
// responder.h): Check, then Accept or Rnr, with the memory work done here.
class RealResponder {
 public:
  RealResponder(uint32_t pmtu, uint32_t initial_psn, size_t memory_bytes,
                std::mt19937& rng, double rnr_chance)
      : responder_(MakeConfig(pmtu, initial_psn)),
        pmtu_(pmtu),
        memory_(memory_bytes),
        rng_(rng),
        rnr_chance_(rnr_chance) {
    responder_.SetState(QpState::kRts);
  }

  std::vector<uint8_t>& memory() { return memory_; }
  const std::vector<std::vector<uint8_t>>& sends() const { return sends_; }
  uint64_t naks() const {
    return responder_.counters()
        .naks[static_cast<size_t>(NakCode::kPsnSequenceError)];
  }
  uint64_t rnr_naks() const { return responder_.counters().rnr_naks; }
  const ResponderCounters& counters() const { return responder_.counters(); }

  void Idle(std::vector<ResponseOnWire>* out) {
    Emit(responder_.FlushAck(), out);
  }

  void Handle(const RequestOnWire& request, std::vector<ResponseOnWire>* out) {
    const PacketPlan& sent = request.plan;
    const OpcodeInfo& info = GetOpcodeInfo(sent.opcode);
    RcRequest packet;
    packet.opcode = static_cast<uint8_t>(sent.opcode);
    packet.psn = sent.psn;
    packet.ack_req = sent.ack_req;
    packet.payload_length = sent.payload_length;
    packet.pad = (4 - sent.payload_length % 4) % 4;
    packet.has_reth = info.has(kHasReth);
    packet.reth_va = sent.reth_va;
    packet.reth_rkey = sent.reth_rkey;
    packet.reth_dma_length = sent.reth_length;
    packet.has_atomic_eth = info.has(kHasAtomicEth);
    packet.atomic_va = sent.atomic_va;
    packet.atomic_rkey = sent.atomic_rkey;
    packet.atomic_swap_add = sent.atomic_swap_add;
    packet.atomic_compare = sent.atomic_compare;
    packet.has_immediate = info.has(kHasImmDt);
    packet.immediate = sent.imm;
    const ResponderPlan plan = responder_.Check(packet);
    if (!plan.needs_commit) {
      Emit(plan.reply, out);
      return;
    }
    if (plan.consumes_receive &&
        std::uniform_real_distribution<double>(0, 1)(rng_) < rnr_chance_) {
      Emit(responder_.Rnr(plan), out);
      return;
    }
    uint64_t original = 0;
    switch (plan.action) {
      case ResponderAction::kSend:
        if (plan.starts_message) message_.clear();
        ASSERT_EQ(plan.send_offset, message_.size());
        message_.insert(message_.end(), request.payload.begin(),
                        request.payload.end());
        if (plan.ends_message) sends_.push_back(message_);
        break;
      case ResponderAction::kWrite:
        ASSERT_EQ(plan.length, request.payload.size());
        ASSERT_LE(plan.va + plan.length, memory_.size());
        std::copy(request.payload.begin(), request.payload.end(),
                  memory_.begin() + plan.va);
        break;
      case ResponderAction::kCompareSwap:
      case ResponderAction::kFetchAdd: {
        ASSERT_LE(plan.va + 8, memory_.size());
        std::memcpy(&original, &memory_[plan.va], 8);
        uint64_t value = original + plan.swap_add;
        if (plan.action == ResponderAction::kCompareSwap) {
          value = original == plan.compare ? plan.swap_add : original;
        }
        std::memcpy(&memory_[plan.va], &value, 8);
        break;
      }
      default:
        break;  // READs are answered from the reply
    }
    Emit(responder_.Accept(plan, original), out);
  }

 private:
  static ResponderConfig MakeConfig(uint32_t pmtu, uint32_t initial_psn) {
    ResponderConfig config;
    config.pmtu = pmtu;
    config.initial_epsn = initial_psn;
    config.min_rnr_timer = 1;
    return config;
  }
  void Emit(const ResponderReply& reply, std::vector<ResponseOnWire>* out) {
    ResponseOnWire response;
    response.packet.psn = reply.psn;
    response.packet.msn = reply.msn;
    response.packet.syndrome = reply.syndrome;
    switch (reply.kind) {
      case ResponderReplyKind::kNone:
        return;
      case ResponderReplyKind::kAck:
      case ResponderReplyKind::kNak:
      case ResponderReplyKind::kRnrNak:
        response.packet.opcode = static_cast<uint8_t>(Opcode::kRcAck);
        out->push_back(response);
        return;
      case ResponderReplyKind::kAtomicAck:
        response.packet.opcode = static_cast<uint8_t>(Opcode::kRcAtomicAck);
        response.packet.atomic_original = reply.original_value;
        out->push_back(response);
        return;
      case ResponderReplyKind::kReadResponse:
        break;
    }
    ASSERT_LE(reply.va + reply.length, memory_.size());
    for (uint32_t i = 0; i < reply.packets; ++i) {
      Opcode opcode = Opcode::kRcReadResponseMiddle;
      if (reply.packets == 1) {
        opcode = Opcode::kRcReadResponseOnly;
      } else if (i == 0) {
        opcode = Opcode::kRcReadResponseFirst;
      } else if (i + 1 == reply.packets) {
        opcode = Opcode::kRcReadResponseLast;
      }
      ResponseOnWire packet = response;
      packet.packet.opcode = static_cast<uint8_t>(opcode);
      packet.packet.psn = PsnAdd(reply.psn, i);
      const uint64_t begin = reply.va + uint64_t{i} * pmtu_;
      const uint64_t end =
          std::min<uint64_t>(begin + pmtu_, reply.va + reply.length);
      packet.payload.assign(memory_.begin() + begin, memory_.begin() + end);
      packet.packet.payload_length = static_cast<uint32_t>(end - begin);
      out->push_back(std::move(packet));
    }
  }

  Responder responder_;
  uint32_t pmtu_;
  std::vector<uint8_t> memory_;
  std::mt19937& rng_;
  double rnr_chance_;
  std::vector<uint8_t> message_;
  std::vector<std::vector<uint8_t>> sends_;
};

struct SimulationResult {
  RequesterCounters counters;
  uint64_t completed = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t model_naks = 0;
  uint64_t model_rnr_naks = 0;
  uint64_t end_ns = 0;
};

// `count` random WRs through a lossy link; every check of the end-to-end
// contract is an EXPECT/ASSERT in here.
template <typename ResponderModel = ModelResponder>
SimulationResult Simulate(uint32_t seed, uint32_t count,
                          const LinkModel& link_model, uint32_t initial_psn) {
  constexpr uint32_t kMaxLength = 20'000;
  constexpr size_t kRemoteBytes = 256 * 1024;
  constexpr size_t kSourceBytes = 1 << 20;
  std::mt19937 rng(seed);
  RequesterConfig config;
  config.pmtu = 1024;
  config.sq_depth = 64;
  config.initial_psn = initial_psn;
  config.max_rd_atomic = 4;
  config.retry_count = 7;
  config.rnr_retry = 7;
  config.ack_timeout_ns = 200'000;
  config.max_inflight_psns = 128;
  Requester requester(config);

  // Local memory: immutable random source bytes, then one READ landing
  // slot per send-queue entry.
  std::vector<uint8_t> local(kSourceBytes + config.sq_depth * kMaxLength);
  for (size_t i = 0; i < kSourceBytes; ++i) local[i] = rng() & 0xff;
  ResponderModel responder(config.pmtu, initial_psn, kRemoteBytes, rng,
                           /*rnr_chance=*/0.01);
  std::vector<uint8_t> reference(kRemoteBytes);
  for (size_t i = 0; i < kRemoteBytes; ++i) {
    reference[i] = responder.memory()[i] = rng() & 0xff;
  }
  Link<RequestOnWire> to_responder(link_model, rng);
  Link<ResponseOnWire> to_requester(link_model, rng);

  struct Expected {
    WorkRequest wr;
    std::vector<uint8_t> read_data;  // READ: the remote bytes at post time
    uint64_t atomic_original = 0;
  };
  std::map<uint64_t, Expected> expected;  // by wr_id
  std::vector<std::vector<uint8_t>> expected_sends;
  uint64_t posted = 0;
  uint64_t next_completion = 0;
  SimulationResult result;

  auto overlaps_pending_read = [&](uint64_t va, uint64_t length) {
    for (uint64_t id = next_completion; id < posted; ++id) {
      const WorkRequest& wr = expected[id].wr;
      if (wr.kind != Kind::kRead) continue;
      if (va < wr.remote_va + wr.length && wr.remote_va < va + length) {
        return true;
      }
    }
    return false;
  };
  auto make_wr = [&](uint64_t id) {
    WorkRequest wr;
    wr.wr_id = id;
    wr.rkey = 0x1234;
    const uint32_t pick = rng() % 100;
    wr.kind = pick < 30   ? Kind::kSend
              : pick < 35 ? Kind::kSendImm
              : pick < 60 ? Kind::kWrite
              : pick < 65 ? Kind::kWriteImm
              : pick < 90 ? Kind::kRead
              : pick < 95 ? Kind::kCompareSwap
                          : Kind::kFetchAdd;
    wr.imm = rng();
    if (wr.kind == Kind::kCompareSwap || wr.kind == Kind::kFetchAdd) {
      wr.length = 8;
      wr.remote_va = (rng() % (kRemoteBytes / 8)) * 8;
      wr.compare = rng() % 2 == 0 ? 0 : rng();
      wr.swap_add = (uint64_t{rng()} << 32) | rng();
    } else {
      wr.length = rng() % (kMaxLength + 1);
      wr.remote_va = rng() % (kRemoteBytes - wr.length + 1);
    }
    if (wr.kind == Kind::kRead) {
      wr.local_offset = kSourceBytes + (id % config.sq_depth) * kMaxLength;
    } else {
      wr.local_offset = rng() % (kSourceBytes - wr.length + 1);
    }
    // A READ re-executed after a later WRITE or atomic to its bytes would
    // see them (IB orders those only with a fence): keep them apart.
    if (wr.kind != Kind::kRead && wr.kind != Kind::kSend &&
        wr.kind != Kind::kSendImm &&
        overlaps_pending_read(wr.remote_va, wr.length)) {
      wr.kind = Kind::kSend;
      wr.length = std::min<uint32_t>(wr.length, 64);
    }
    return wr;
  };
  auto apply_to_reference = [&](Expected& entry) {
    const WorkRequest& wr = entry.wr;
    switch (wr.kind) {
      case Kind::kSend:
      case Kind::kSendImm:
        expected_sends.emplace_back(
            local.begin() + wr.local_offset,
            local.begin() + wr.local_offset + wr.length);
        break;
      case Kind::kWrite:
      case Kind::kWriteImm:
        std::copy(local.begin() + wr.local_offset,
                  local.begin() + wr.local_offset + wr.length,
                  reference.begin() + wr.remote_va);
        break;
      case Kind::kRead:
        entry.read_data.assign(reference.begin() + wr.remote_va,
                               reference.begin() + wr.remote_va + wr.length);
        break;
      case Kind::kCompareSwap:
      case Kind::kFetchAdd: {
        uint64_t original;
        std::memcpy(&original, &reference[wr.remote_va], 8);
        entry.atomic_original = original;
        const uint64_t value = wr.kind == Kind::kFetchAdd
                                   ? original + wr.swap_add
                               : original == wr.compare ? wr.swap_add
                                                        : original;
        std::memcpy(&reference[wr.remote_va], &value, 8);
        break;
      }
    }
  };

  uint64_t now = 0;
  uint64_t steps = 0;
  std::vector<ResponseOnWire> responses;
  while (next_completion < count) {
    if (++steps > 50'000'000) {
      ADD_FAILURE() << "simulation did not finish";
      break;
    }
    while (posted < count) {
      Expected entry{make_wr(posted), {}, 0};
      const PostResult post = requester.Post(entry.wr);
      if (post == PostResult::kQueueFull) break;
      EXPECT_EQ(post, PostResult::kOk);
      if (post != PostResult::kOk) return result;
      apply_to_reference(entry);
      expected[posted] = std::move(entry);
      ++posted;
    }
    PacketPlan plan;
    while (requester.NextPacket(now, &plan)) {
      RequestOnWire request;
      request.plan = plan;
      request.payload.assign(
          local.begin() + plan.payload_offset,
          local.begin() + plan.payload_offset + plan.payload_length);
      to_responder.Send(now, request);
    }
    RequestOnWire request;
    while (to_responder.Receive(now, &request)) {
      responses.clear();
      responder.Handle(request, &responses);
      if (testing::Test::HasFatalFailure()) return result;
      for (const ResponseOnWire& response : responses) {
        to_requester.Send(now, response);
      }
    }
    responses.clear();
    responder.Idle(&responses);
    for (const ResponseOnWire& response : responses) {
      to_requester.Send(now, response);
    }
    ResponseOnWire response;
    bool responded = false;
    while (to_requester.Receive(now, &response)) {
      responded = true;
      Placement placement;
      const ResponseVerdict verdict =
          requester.OnResponse(response.packet, now, &placement);
      EXPECT_NE(verdict, ResponseVerdict::kBadLength);
      EXPECT_NE(verdict, ResponseVerdict::kNakFatal);
      EXPECT_NE(verdict, ResponseVerdict::kRetryExceeded);
      EXPECT_NE(verdict, ResponseVerdict::kQpError);
      if (verdict == ResponseVerdict::kReadData) {
        EXPECT_EQ(placement.length, response.payload.size());
        std::copy(response.payload.begin(), response.payload.end(),
                  local.begin() + placement.local_offset);
      }
    }
    Completion completion;
    while (requester.PollCompletion(&completion)) {
      ++result.completed;
      EXPECT_EQ(completion.wr_id, next_completion);
      EXPECT_EQ(completion.status, CompletionStatus::kSuccess);
      const Expected& entry = expected[completion.wr_id];
      EXPECT_EQ(completion.kind, entry.wr.kind);
      EXPECT_EQ(completion.byte_len, entry.wr.length);
      if (entry.wr.kind == Kind::kRead) {
        EXPECT_TRUE(std::equal(entry.read_data.begin(), entry.read_data.end(),
                               local.begin() + entry.wr.local_offset))
            << "READ " << completion.wr_id;
      } else if (entry.wr.kind == Kind::kCompareSwap ||
                 entry.wr.kind == Kind::kFetchAdd) {
        EXPECT_EQ(completion.atomic_original, entry.atomic_original);
      }
      next_completion = completion.wr_id + 1;
    }
    if (requester.state() != QpState::kRts) {
      ADD_FAILURE() << "QP in error";
      break;
    }
    if (testing::Test::HasFailure()) break;
    if (requester.OnTimer(now)) continue;  // resend at once
    // A response may have let the requester send (an ACK that freed the
    // window or max_rd_atomic): ask at once, not at its next deadline.
    if (responded) continue;
    // Jump to the next thing that can happen.
    const uint64_t next =
        std::min({to_responder.NextArrival(), to_requester.NextArrival(),
                  requester.NextDeadline()});
    if (next == UINT64_MAX) {
      if (next_completion < count) {
        ADD_FAILURE() << "stalled at " << now << " una "
                      << requester.oldest_unacked_psn() << " next "
                      << requester.next_new_psn() << " outstanding "
                      << requester.outstanding() << " posted " << posted
                      << " can send " << requester.NextPacket(now, &plan)
                      << " psn " << plan.psn << " timeouts "
                      << requester.counters().timeouts << " rnr "
                      << requester.counters().rnr_waits << " retries "
                      << requester.counters().retries << " stalls "
                      << requester.counters().window_stalls << "/"
                      << requester.counters().rd_atomic_stalls;
      }
      break;
    }
    now = std::max(now, next);
  }
  EXPECT_EQ(result.completed, count);
  EXPECT_TRUE(reference == responder.memory()) << "remote memory differs";
  EXPECT_TRUE(expected_sends == responder.sends()) << "SENDs differ";
  result.counters = requester.counters();
  result.lost = to_responder.lost() + to_requester.lost();
  result.duplicated = to_responder.duplicated() + to_requester.duplicated();
  result.model_naks = responder.naks();
  result.model_rnr_naks = responder.rnr_naks();
  result.end_ns = now;
  return result;
}

TEST(RequesterSimulation, TenThousandRandomWrsOverALossyLink) {
  const SimulationResult result =
      Simulate(/*seed=*/20261122, /*count=*/10'000, LinkModel{},
               /*initial_psn=*/0xfff000);
  EXPECT_EQ(result.completed, 10'000u);
  std::printf(
      "lost %llu duplicated %llu | sent %llu retransmitted %llu timeouts "
      "%llu nak_seq %llu rnr %llu implied %llu reissued_reads %llu "
      "duplicates %llu out_of_order %llu | simulated %.3f ms\n",
      static_cast<unsigned long long>(result.lost),
      static_cast<unsigned long long>(result.duplicated),
      static_cast<unsigned long long>(result.counters.packets_sent),
      static_cast<unsigned long long>(result.counters.packets_retransmitted),
      static_cast<unsigned long long>(result.counters.timeouts),
      static_cast<unsigned long long>(result.counters.nak_sequence),
      static_cast<unsigned long long>(result.counters.rnr_waits),
      static_cast<unsigned long long>(result.counters.implied_naks),
      static_cast<unsigned long long>(result.counters.read_requests_reissued),
      static_cast<unsigned long long>(result.counters.duplicates),
      static_cast<unsigned long long>(result.counters.out_of_order),
      result.end_ns / 1e6);
  // The link did its job: every recovery path ran.
  EXPECT_GT(result.lost, 0u);
  EXPECT_GT(result.duplicated, 0u);
  EXPECT_GT(result.counters.packets_retransmitted, 0u);
  EXPECT_GT(result.counters.nak_sequence, 0u);
  EXPECT_GT(result.counters.rnr_waits, 0u);
  EXPECT_GT(result.counters.timeouts, 0u);
  EXPECT_GT(result.counters.implied_naks, 0u);
  EXPECT_GT(result.counters.read_requests_reissued, 0u);
  EXPECT_GT(result.counters.duplicates, 0u);
  EXPECT_GT(result.counters.out_of_order, 0u);
  EXPECT_EQ(result.counters.completions[0], 10'000u);
}

TEST(RequesterSimulation, SeveralSeedsAndHeavierLoss) {
  LinkModel heavy;
  heavy.loss = 0.08;
  heavy.duplicate = 0.05;
  heavy.reorder = 0.2;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    const SimulationResult result = Simulate(seed, 2'000, heavy, seed * 7919);
    EXPECT_EQ(result.completed, 2'000u);
    if (testing::Test::HasFailure()) break;
  }
}

TEST(RequesterSimulation, Deterministic) {
  const SimulationResult a = Simulate(99, 500, LinkModel{}, 0);
  const SimulationResult b = Simulate(99, 500, LinkModel{}, 0);
  EXPECT_EQ(a.end_ns, b.end_ns);
  EXPECT_EQ(a.counters.packets_sent, b.counters.packets_sent);
  EXPECT_EQ(a.counters.timeouts, b.counters.timeouts);
}

TEST(RequesterSimulation, AgainstTheRealResponder) {
  const SimulationResult result = Simulate<RealResponder>(
      /*seed=*/4791, /*count=*/10'000, LinkModel{}, /*initial_psn=*/0xffff00);
  EXPECT_EQ(result.completed, 10'000u);
  EXPECT_GT(result.counters.packets_retransmitted, 0u);
  EXPECT_GT(result.counters.nak_sequence, 0u);
  EXPECT_GT(result.counters.rnr_waits, 0u);
  EXPECT_GT(result.counters.read_requests_reissued, 0u);
  EXPECT_EQ(result.counters.completions[0], 10'000u);
}

}  // namespace
}  // namespace spinnic::roce
