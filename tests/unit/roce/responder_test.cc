// The RC responder (dataplane/roce/responder.h): one test per rule with the
// exact plan and reply, the request stream of a real rxe capture replayed
// with rxe's answers as the expected ones, and a seeded random-input
// property test.
#include "dataplane/roce/responder.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>

#include "dataplane/roce/ib_types.h"

namespace spinnic::roce {
namespace {

constexpr uint32_t kPmtu = 1024;
constexpr uint32_t kEpsn = 100;
constexpr uint32_t kRkey = 0x272;

ResponderConfig TestConfig(uint32_t epsn = kEpsn) {
  ResponderConfig config;
  config.pmtu = kPmtu;
  config.initial_epsn = epsn;
  config.max_dest_rd_atomic = 4;
  config.min_rnr_timer = 12;
  config.ack_every = 4;
  return config;
}

Responder Ready(const ResponderConfig& config = TestConfig()) {
  Responder responder(config);
  responder.SetState(QpState::kRts);
  return responder;
}

uint8_t Op(Opcode opcode) { return static_cast<uint8_t>(opcode); }

RcRequest Packet(Opcode opcode, uint32_t psn, uint32_t payload,
                 bool ack_req = false) {
  RcRequest packet;
  packet.opcode = Op(opcode);
  packet.psn = psn;
  packet.payload_length = payload;
  packet.pad = static_cast<uint8_t>((4 - payload % 4) % 4);
  packet.ack_req = ack_req;
  const OpcodeInfo& info = GetOpcodeInfo(opcode);
  packet.has_immediate = info.has(kHasImmDt);
  packet.has_invalidate = info.has(kHasIeth);
  return packet;
}

RcRequest WithReth(RcRequest packet, uint64_t va, uint32_t rkey,
                   uint32_t dma_length) {
  packet.has_reth = true;
  packet.reth_va = va;
  packet.reth_rkey = rkey;
  packet.reth_dma_length = dma_length;
  return packet;
}

RcRequest Read(uint32_t psn, uint64_t va, uint32_t length,
               uint32_t rkey = kRkey) {
  return WithReth(Packet(Opcode::kRcReadRequest, psn, 0, true), va, rkey,
                  length);
}

RcRequest WriteOnly(uint32_t psn, uint64_t va, uint32_t length,
                    bool ack_req = false) {
  return WithReth(Packet(Opcode::kRcWriteOnly, psn, length, ack_req), va, kRkey,
                  length);
}

RcRequest Atomic(Opcode opcode, uint32_t psn, uint64_t va, uint64_t swap_add,
                 uint64_t compare = 0) {
  RcRequest packet = Packet(opcode, psn, 0, true);
  packet.has_atomic_eth = true;
  packet.atomic_va = va;
  packet.atomic_rkey = kRkey;
  packet.atomic_swap_add = swap_add;
  packet.atomic_compare = compare;
  return packet;
}

// Check must execute the packet; the engine's checks pass.
ResponderReply Execute(Responder& responder, const RcRequest& packet,
                       uint64_t atomic_original = 0) {
  const ResponderPlan plan = responder.Check(packet);
  EXPECT_EQ(plan.verdict, ResponderVerdict::kExecute)
      << Describe(plan.verdict) << " " << Describe(plan.drop_reason);
  EXPECT_TRUE(plan.needs_commit);
  return responder.Accept(plan, atomic_original);
}

void ExpectReply(const ResponderReply& reply, ResponderReplyKind kind,
                 uint32_t psn, uint32_t msn, uint8_t syndrome) {
  EXPECT_EQ(reply.kind, kind) << Describe(reply.kind);
  EXPECT_EQ(reply.psn, psn);
  EXPECT_EQ(reply.msn, msn);
  EXPECT_EQ(reply.syndrome, syndrome);
}

// The NAK invalid request (class C) a malformed packet gets, after which
// the QP is in the Error state.
void ExpectInvalidRequest(Responder& responder, const RcRequest& packet) {
  const uint32_t msn = responder.msn();
  const ResponderPlan plan = responder.Check(packet);
  EXPECT_EQ(plan.verdict, ResponderVerdict::kNak) << Describe(plan.verdict);
  EXPECT_EQ(plan.nak, NakCode::kInvalidRequest);
  EXPECT_FALSE(plan.needs_commit);
  ExpectReply(plan.reply, ResponderReplyKind::kNak, packet.psn, msn, 0x61);
  EXPECT_EQ(responder.state(), QpState::kError);
  EXPECT_EQ(responder.counters().naks[1], 1u);
  EXPECT_EQ(responder.counters().errors_entered, 1u);
}

// ------------------------------------------------------------- execution

TEST(ResponderTest, WriteFirstMiddleLastTargetsEachPacketsBytes) {
  Responder responder = Ready();
  const RcRequest first = WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu),
                                   0x7f0000001000, kRkey, 3000);
  ResponderPlan plan = responder.Check(first);
  EXPECT_EQ(plan.verdict, ResponderVerdict::kExecute);
  EXPECT_EQ(plan.action, ResponderAction::kWrite);
  EXPECT_EQ(plan.va, 0x7f0000001000u);
  EXPECT_EQ(plan.rkey, kRkey);
  EXPECT_EQ(plan.length, kPmtu);
  EXPECT_TRUE(plan.validate_range);
  EXPECT_EQ(plan.range_va, 0x7f0000001000u);
  EXPECT_EQ(plan.range_length, 3000u);
  EXPECT_TRUE(plan.starts_message);
  EXPECT_FALSE(plan.ends_message);
  EXPECT_FALSE(plan.consumes_receive);
  EXPECT_EQ(responder.Accept(plan).kind, ResponderReplyKind::kNone);
  EXPECT_TRUE(responder.message_in_progress());

  plan = responder.Check(Packet(Opcode::kRcWriteMiddle, 101, kPmtu));
  EXPECT_EQ(plan.action, ResponderAction::kWrite);
  EXPECT_EQ(plan.va, 0x7f0000001400u);
  EXPECT_EQ(plan.rkey, kRkey);
  EXPECT_EQ(plan.length, kPmtu);
  EXPECT_FALSE(plan.validate_range);
  EXPECT_FALSE(plan.starts_message);
  EXPECT_FALSE(plan.ends_message);
  EXPECT_EQ(responder.Accept(plan).kind, ResponderReplyKind::kNone);

  plan = responder.Check(Packet(Opcode::kRcWriteLast, 102, 952, true));
  EXPECT_EQ(plan.action, ResponderAction::kWrite);
  EXPECT_EQ(plan.va, 0x7f0000001800u);
  EXPECT_EQ(plan.length, 952u);
  EXPECT_TRUE(plan.ends_message);
  EXPECT_FALSE(plan.consumes_receive);
  ExpectReply(responder.Accept(plan), ResponderReplyKind::kAck, 102, 1, 0x1f);
  EXPECT_EQ(responder.expected_psn(), 103u);
  EXPECT_EQ(responder.msn(), 1u);
  EXPECT_FALSE(responder.message_in_progress());
  EXPECT_EQ(responder.counters().accepted, 3u);
  EXPECT_EQ(responder.counters().messages, 1u);
}

TEST(ResponderTest, WriteOnlyWithImmediateConsumesAReceive) {
  Responder responder = Ready();
  RcRequest packet = WithReth(Packet(Opcode::kRcWriteOnlyImm, 100, 64, true),
                              0x5000, kRkey, 64);
  packet.immediate = 0x55667788;
  const ResponderPlan plan = responder.Check(packet);
  EXPECT_EQ(plan.verdict, ResponderVerdict::kExecute);
  EXPECT_EQ(plan.action, ResponderAction::kWrite);
  EXPECT_EQ(plan.va, 0x5000u);
  EXPECT_EQ(plan.length, 64u);
  EXPECT_TRUE(plan.validate_range);
  EXPECT_EQ(plan.range_length, 64u);
  EXPECT_TRUE(plan.starts_message);
  EXPECT_TRUE(plan.ends_message);
  EXPECT_TRUE(plan.has_immediate);
  EXPECT_EQ(plan.immediate, 0x55667788u);
  EXPECT_TRUE(plan.consumes_receive);
  ExpectReply(responder.Accept(plan), ResponderReplyKind::kAck, 100, 1, 0x1f);
}

TEST(ResponderTest, ZeroLengthWriteNeedsNoRkeyCheck) {
  Responder responder = Ready();
  const ResponderPlan plan = responder.Check(WriteOnly(100, 0, 0, true));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kExecute);
  EXPECT_EQ(plan.length, 0u);
  EXPECT_FALSE(plan.validate_range);
  ExpectReply(responder.Accept(plan), ResponderReplyKind::kAck, 100, 1, 0x1f);
}

TEST(ResponderTest, SendFirstMiddleLastOffsets) {
  Responder responder = Ready();
  ResponderPlan plan =
      responder.Check(Packet(Opcode::kRcSendFirst, 100, kPmtu));
  EXPECT_EQ(plan.action, ResponderAction::kSend);
  EXPECT_EQ(plan.send_offset, 0u);
  EXPECT_EQ(plan.length, kPmtu);
  EXPECT_TRUE(plan.consumes_receive);
  EXPECT_TRUE(plan.starts_message);
  responder.Accept(plan);
  plan = responder.Check(Packet(Opcode::kRcSendMiddle, 101, kPmtu));
  EXPECT_EQ(plan.send_offset, 1024u);
  EXPECT_FALSE(plan.consumes_receive);
  responder.Accept(plan);
  EXPECT_EQ(responder.msn(), 0u);
  RcRequest last = Packet(Opcode::kRcSendLastImm, 102, 10, true);
  last.immediate = 0x11223344;
  last.solicited = true;
  plan = responder.Check(last);
  EXPECT_EQ(plan.action, ResponderAction::kSend);
  EXPECT_EQ(plan.send_offset, 2048u);
  EXPECT_EQ(plan.length, 10u);
  EXPECT_TRUE(plan.ends_message);
  EXPECT_TRUE(plan.has_immediate);
  EXPECT_EQ(plan.immediate, 0x11223344u);
  EXPECT_TRUE(plan.solicited);
  ExpectReply(responder.Accept(plan), ResponderReplyKind::kAck, 102, 1, 0x1f);
  // The next SEND starts at offset 0 again.
  plan = responder.Check(Packet(Opcode::kRcSendOnly, 103, 5));
  EXPECT_EQ(plan.send_offset, 0u);
  EXPECT_TRUE(plan.consumes_receive);
}

TEST(ResponderTest, SendWithInvalidateCarriesTheRkey) {
  Responder responder = Ready();
  RcRequest packet = Packet(Opcode::kRcSendOnlyInvalidate, 100, 8);
  packet.invalidate_rkey = 0x1234;
  const ResponderPlan plan = responder.Check(packet);
  EXPECT_EQ(plan.verdict, ResponderVerdict::kExecute);
  EXPECT_TRUE(plan.has_invalidate);
  EXPECT_EQ(plan.invalidate_rkey, 0x1234u);
}

TEST(ResponderTest, ReadTakesOnePsnPerResponsePacket) {
  Responder responder = Ready();
  ResponderPlan plan = responder.Check(Read(100, 0x10000, 4096));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kExecute);
  EXPECT_EQ(plan.action, ResponderAction::kRead);
  EXPECT_EQ(plan.va, 0x10000u);
  EXPECT_EQ(plan.rkey, kRkey);
  EXPECT_EQ(plan.length, 4096u);
  EXPECT_TRUE(plan.validate_range);
  EXPECT_EQ(plan.response_psn, 100u);
  EXPECT_EQ(plan.response_packets, 4u);
  EXPECT_FALSE(plan.consumes_receive);
  const ResponderReply reply = responder.Accept(plan);
  // C9-148: the READ counts in the MSN its responses carry (rxe: msn 1 on
  // the first READ RESPONSE of ib_read_bw_v4.pcap).
  ExpectReply(reply, ResponderReplyKind::kReadResponse, 100, 1, 0x1f);
  EXPECT_EQ(reply.va, 0x10000u);
  EXPECT_EQ(reply.length, 4096u);
  EXPECT_EQ(reply.packets, 4u);
  EXPECT_EQ(responder.expected_psn(), 104u);

  // 4097 bytes need five responses; 0 bytes one empty ONLY, no R_Key check.
  plan = responder.Check(Read(104, 0x10000, 4097));
  EXPECT_EQ(plan.response_packets, 5u);
  responder.Accept(plan);
  plan = responder.Check(Read(109, 0, 0));
  EXPECT_EQ(plan.response_packets, 1u);
  EXPECT_FALSE(plan.validate_range);
  responder.Accept(plan);
  EXPECT_EQ(responder.expected_psn(), 110u);
  EXPECT_EQ(responder.msn(), 3u);
}

TEST(ResponderTest, AtomicsExecuteOnceAndDuplicatesReplayTheOriginal) {
  Responder responder = Ready();
  ResponderPlan plan =
      responder.Check(Atomic(Opcode::kRcFetchAdd, 100, 0x560d730b1000, 5));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kExecute);
  EXPECT_EQ(plan.action, ResponderAction::kFetchAdd);
  EXPECT_EQ(plan.va, 0x560d730b1000u);
  EXPECT_EQ(plan.rkey, kRkey);
  EXPECT_EQ(plan.swap_add, 5u);
  EXPECT_TRUE(plan.validate_range);
  EXPECT_EQ(plan.range_length, 8u);
  ResponderReply reply = responder.Accept(plan, 100);
  ExpectReply(reply, ResponderReplyKind::kAtomicAck, 100, 1, 0x1f);
  EXPECT_EQ(reply.original_value, 100u);

  plan = responder.Check(
      Atomic(Opcode::kRcCompareSwap, 101, 0x560d730b1008, 0x2222, 0x1111));
  EXPECT_EQ(plan.action, ResponderAction::kCompareSwap);
  EXPECT_EQ(plan.swap_add, 0x2222u);
  EXPECT_EQ(plan.compare, 0x1111u);
  reply = responder.Accept(plan, 0x1111);
  EXPECT_EQ(reply.original_value, 0x1111u);

  // The FETCH_ADD again: not executed (no commit), the saved value returns.
  plan = responder.Check(Atomic(Opcode::kRcFetchAdd, 100, 0x560d730b1000, 5));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDuplicate);
  EXPECT_EQ(plan.action, ResponderAction::kReplayAtomic);
  EXPECT_FALSE(plan.needs_commit);
  ExpectReply(plan.reply, ResponderReplyKind::kAtomicAck, 100, 2, 0x1f);
  EXPECT_EQ(plan.reply.original_value, 100u);
  EXPECT_EQ(responder.Accept(plan, 999).kind, ResponderReplyKind::kNone);
  EXPECT_EQ(responder.counters().accepted, 2u);
  EXPECT_EQ(responder.counters().atomic_replays, 1u);
  EXPECT_EQ(responder.expected_psn(), 102u);
}

// ------------------------------------------------------------- duplicates

TEST(ResponderTest, DuplicateReadIsExecutedAgainFromItsOwnPsn) {
  Responder responder = Ready();
  responder.Accept(responder.Check(Read(100, 0x10000, 4096)));
  Execute(responder, Packet(Opcode::kRcSendOnly, 104, 8, true));
  // The requester lost the last two responses and asks for the rest.
  ResponderPlan plan = responder.Check(Read(102, 0x10800, 2048));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDuplicate);
  EXPECT_EQ(plan.action, ResponderAction::kReplayRead);
  EXPECT_TRUE(plan.needs_commit);
  EXPECT_EQ(plan.va, 0x10800u);
  EXPECT_EQ(plan.rkey, kRkey);
  EXPECT_EQ(plan.length, 2048u);
  EXPECT_TRUE(plan.validate_range);
  EXPECT_EQ(plan.response_psn, 102u);
  EXPECT_EQ(plan.response_packets, 2u);
  const ResponderReply reply = responder.Accept(plan);
  ExpectReply(reply, ResponderReplyKind::kReadResponse, 102, 2, 0x1f);
  EXPECT_EQ(reply.packets, 2u);
  // Nothing advanced: the SEND at 104 stays the last thing accepted.
  EXPECT_EQ(responder.expected_psn(), 105u);
  EXPECT_EQ(responder.msn(), 2u);
  EXPECT_EQ(responder.counters().read_replays, 1u);
  EXPECT_EQ(responder.counters().accepted, 2u);

  // The whole request again.
  plan = responder.Check(Read(100, 0x10000, 4096));
  EXPECT_EQ(plan.action, ResponderAction::kReplayRead);
  EXPECT_EQ(plan.response_psn, 100u);
  EXPECT_EQ(plan.response_packets, 4u);
}

TEST(ResponderTest, DuplicateReadOutsideItsRecordIsDropped) {
  Responder responder = Ready();
  responder.Accept(responder.Check(Read(100, 0x10000, 4096)));
  const RcRequest mismatches[] = {
      Read(100, 0x10000, 4096, kRkey + 1),  // other R_Key
      Read(100, 0xf000, 4096),              // starts before
      Read(101, 0x10400, 4096),             // ends after
      Read(103, 0x10000, 2048),             // responses past the record
  };
  for (const RcRequest& packet : mismatches) {
    const ResponderPlan plan = responder.Check(packet);
    EXPECT_EQ(plan.verdict, ResponderVerdict::kDrop);
    EXPECT_EQ(plan.drop_reason, ResponderDropReason::kDuplicateReadMismatch);
  }
  EXPECT_EQ(responder.counters().drops[static_cast<std::size_t>(
                ResponderDropReason::kDuplicateReadMismatch)],
            4u);
  EXPECT_EQ(responder.state(), QpState::kRts);
}

TEST(ResponderTest, DuplicateReadOlderThanTheRecordsIsDropped) {
  ResponderConfig config = TestConfig();
  config.max_dest_rd_atomic = 2;
  Responder responder = Ready(config);
  responder.Accept(responder.Check(Read(100, 0x1000, 16)));
  responder.Accept(responder.Check(Read(101, 0x2000, 16)));
  responder.Accept(responder.Check(Read(102, 0x3000, 16)));
  // rxe (duplicate_request): no resource for the PSN, class D: drop.
  ResponderPlan plan = responder.Check(Read(100, 0x1000, 16));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDrop);
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kDuplicateNoRecord);
  plan = responder.Check(Read(101, 0x2000, 16));
  EXPECT_EQ(plan.action, ResponderAction::kReplayRead);
  EXPECT_EQ(plan.response_psn, 101u);
  // A duplicate atomic never executed here, or a duplicate READ at an
  // atomic's PSN, has no record either.
  plan = responder.Check(Atomic(Opcode::kRcFetchAdd, 99, 0x1000, 1));
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kDuplicateNoRecord);
}

TEST(ResponderTest, DuplicateWriteIsAcknowledgedAgainNotExecuted) {
  Responder responder = Ready();
  Execute(responder, WriteOnly(100, 0x1000, 8));
  Execute(responder, WriteOnly(101, 0x1000, 8));
  const ResponderPlan plan = responder.Check(WriteOnly(100, 0x1000, 8));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDuplicate);
  EXPECT_EQ(plan.action, ResponderAction::kAckAgain);
  EXPECT_FALSE(plan.needs_commit);
  // The latest PSN and MSN, so the requester sees both writes done.
  ExpectReply(plan.reply, ResponderReplyKind::kAck, 101, 2, 0x1f);
  EXPECT_EQ(responder.Accept(plan).kind, ResponderReplyKind::kNone);
  EXPECT_EQ(responder.expected_psn(), 102u);
  EXPECT_EQ(responder.counters().accepted, 2u);
  EXPECT_EQ(responder.counters().duplicates, 1u);
  EXPECT_EQ(responder.counters().acks_again, 1u);
  EXPECT_EQ(responder.counters().bad_commits, 1u);
  EXPECT_EQ(responder.unacknowledged(), 0u);
}

TEST(ResponderTest, DuplicateSendDoesNotDisturbTheMessageInProgress) {
  Responder responder = Ready();
  Execute(responder, Packet(Opcode::kRcSendOnly, 100, 8));
  Execute(responder, Packet(Opcode::kRcSendFirst, 101, kPmtu));
  const ResponderPlan plan =
      responder.Check(Packet(Opcode::kRcSendOnly, 100, 8));
  ExpectReply(plan.reply, ResponderReplyKind::kAck, 101, 1, 0x1f);
  const ResponderPlan last =
      responder.Check(Packet(Opcode::kRcSendLast, 102, 8));
  EXPECT_EQ(last.verdict, ResponderVerdict::kExecute);
  EXPECT_EQ(last.send_offset, 1024u);
}

// ---------------------------------------------------------------- errors

TEST(ResponderTest, PsnAheadNaksOnceThenDropsUntilTheSequenceRecovers) {
  Responder responder = Ready();
  Execute(responder, WriteOnly(100, 0x1000, 8));
  ResponderPlan plan = responder.Check(WriteOnly(103, 0x1000, 8));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kNak);
  EXPECT_EQ(plan.nak, NakCode::kPsnSequenceError);
  // The NAK names the expected PSN (and so acknowledges 100).
  ExpectReply(plan.reply, ResponderReplyKind::kNak, 101, 1, 0x60);
  EXPECT_TRUE(responder.nak_outstanding());
  EXPECT_EQ(responder.unacknowledged(), 0u);

  plan = responder.Check(WriteOnly(104, 0x1000, 8));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDrop);
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kNakOutstanding);
  // Duplicates are still answered meanwhile.
  plan = responder.Check(WriteOnly(100, 0x1000, 8));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDuplicate);
  plan = responder.Check(WriteOnly(102, 0x1000, 8));
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kNakOutstanding);

  Execute(responder, WriteOnly(101, 0x1000, 8));
  EXPECT_FALSE(responder.nak_outstanding());
  // A new gap gets its own NAK.
  plan = responder.Check(WriteOnly(105, 0x1000, 8));
  ExpectReply(plan.reply, ResponderReplyKind::kNak, 102, 2, 0x60);
  EXPECT_EQ(responder.counters().naks[0], 2u);
  EXPECT_EQ(responder.state(), QpState::kRts);
}

TEST(ResponderTest, MiddleWithoutFirstIsInvalidRequest) {
  Responder responder = Ready();
  ExpectInvalidRequest(responder, Packet(Opcode::kRcWriteMiddle, 100, kPmtu));
  // Error state: everything is dropped, nothing answered.
  const ResponderPlan plan = responder.Check(WriteOnly(100, 0x1000, 8));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDrop);
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kQpError);
  EXPECT_EQ(responder.FlushAck().kind, ResponderReplyKind::kNone);
}

TEST(ResponderTest, OpcodeSequenceViolationsAreInvalidRequests) {
  {
    Responder responder = Ready();  // LAST without FIRST
    ExpectInvalidRequest(responder, Packet(Opcode::kRcSendLast, 100, 8));
  }
  {
    Responder responder = Ready();  // FIRST while a SEND is in progress
    Execute(responder, Packet(Opcode::kRcSendFirst, 100, kPmtu));
    ExpectInvalidRequest(responder, Packet(Opcode::kRcSendFirst, 101, kPmtu));
  }
  {
    Responder responder = Ready();  // SEND while a WRITE is in progress
    Execute(responder, WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu),
                                0x1000, kRkey, 4096));
    ExpectInvalidRequest(responder, Packet(Opcode::kRcSendMiddle, 101, kPmtu));
  }
  {
    Responder responder = Ready();  // WRITE ONLY inside a WRITE
    Execute(responder, WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu),
                                0x1000, kRkey, 4096));
    ExpectInvalidRequest(responder, WriteOnly(101, 0x1000, 8));
  }
  {
    Responder responder = Ready();  // READ inside a SEND
    Execute(responder, Packet(Opcode::kRcSendFirst, 100, kPmtu));
    ExpectInvalidRequest(responder, Read(101, 0x1000, 8));
  }
}

TEST(ResponderTest, WrongLengthsAreInvalidRequests) {
  RcRequest misaligned_atomic = Atomic(Opcode::kRcFetchAdd, 100, 0x1004, 1);
  RcRequest read_with_payload = Read(100, 0x1000, 16);
  read_with_payload.payload_length = 4;
  RcRequest first_with_pad =
      WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu), 0, kRkey, 4096);
  first_with_pad.pad = 2;
  RcRequest missing_reth = Packet(Opcode::kRcWriteOnly, 100, 8);
  const RcRequest cases[] = {
      WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu - 4), 0, kRkey, 4096),
      first_with_pad,
      Packet(Opcode::kRcSendFirst, 100, kPmtu + 4),
      Packet(Opcode::kRcSendOnly, 100, kPmtu + 1),
      WithReth(Packet(Opcode::kRcWriteOnly, 100, 8), 0x1000, kRkey, 16),
      WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu), 0, kRkey, 512),
      Read(100, 0x1000, 0x80000001),
      WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu), 0, kRkey, 0x80000001),
      misaligned_atomic,
      read_with_payload,
      missing_reth,
  };
  int index = 0;
  for (const RcRequest& packet : cases) {
    SCOPED_TRACE(index++);
    Responder responder = Ready();
    ExpectInvalidRequest(responder, packet);
  }
  // 2^31 exactly is allowed.
  Responder responder = Ready();
  EXPECT_EQ(responder.Check(Read(100, 0x1000, 0x80000000)).verdict,
            ResponderVerdict::kExecute);
}

TEST(ResponderTest, WrongLengthsInsideAMessageAreInvalidRequests) {
  const auto write_first =
      WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu), 0x1000, kRkey, 2500);
  {
    Responder responder = Ready();  // MIDDLE shorter than the PMTU
    Execute(responder, write_first);
    ExpectInvalidRequest(responder, Packet(Opcode::kRcWriteMiddle, 101, 1000));
  }
  {
    Responder responder = Ready();  // LAST with no payload
    Execute(responder, write_first);
    ExpectInvalidRequest(responder, Packet(Opcode::kRcWriteLast, 101, 0));
  }
  {
    Responder responder = Ready();  // LAST longer than the PMTU
    Execute(responder, write_first);
    ExpectInvalidRequest(responder,
                         Packet(Opcode::kRcWriteLast, 101, kPmtu + 4));
  }
  {
    Responder responder = Ready();  // total short of the RETH length
    Execute(responder, write_first);
    ExpectInvalidRequest(responder, Packet(Opcode::kRcWriteLast, 101, 400));
  }
  {
    Responder responder = Ready();  // past the RETH length
    Execute(responder, write_first);
    Execute(responder, Packet(Opcode::kRcWriteMiddle, 101, kPmtu));
    ExpectInvalidRequest(responder, Packet(Opcode::kRcWriteMiddle, 102, kPmtu));
  }
  {
    Responder responder = Ready();  // exactly the RETH length: fine
    Execute(responder, write_first);
    Execute(responder, Packet(Opcode::kRcWriteMiddle, 101, kPmtu));
    const ResponderReply reply =
        Execute(responder, Packet(Opcode::kRcWriteLast, 102, 452, true));
    ExpectReply(reply, ResponderReplyKind::kAck, 102, 1, 0x1f);
  }
}

TEST(ResponderTest, UnsupportedOpcodes) {
  {
    Responder responder = Ready();  // reserved RC opcode: class C
    ExpectInvalidRequest(responder, Packet(static_cast<Opcode>(0x15), 100, 0));
  }
  {
    Responder responder = Ready();
    ExpectInvalidRequest(responder, Packet(static_cast<Opcode>(0x1f), 100, 0));
  }
  {
    ResponderConfig config = TestConfig();  // the QP allows no READ
    config.qp_access = kAccessRemoteWrite;
    Responder responder = Ready(config);
    ExpectInvalidRequest(responder, Read(100, 0x1000, 8));
  }
  {
    ResponderConfig config = TestConfig();  // nor atomics
    config.qp_access = kAccessRemoteWrite | kAccessRemoteRead;
    Responder responder = Ready(config);
    ExpectInvalidRequest(responder, Atomic(Opcode::kRcFetchAdd, 100, 0, 1));
  }
  {
    ResponderConfig config = TestConfig();  // nor writes
    config.qp_access = kAccessRemoteRead;
    Responder responder = Ready(config);
    ExpectInvalidRequest(responder, WriteOnly(100, 0x1000, 8));
  }
  Responder responder = Ready();
  // Another transport (UD here) or a response opcode: not ours, dropped.
  ResponderPlan plan = responder.Check(Packet(Opcode::kUdSendOnly, 100, 8));
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kWrongTransport);
  plan = responder.Check(Packet(Opcode::kRcReadResponseOnly, 100, 8));
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kNotARequest);
  plan = responder.Check(Packet(Opcode::kRcAck, 100, 0));
  EXPECT_EQ(plan.drop_reason, ResponderDropReason::kNotARequest);
  EXPECT_EQ(responder.state(), QpState::kRts);
}

TEST(ResponderTest, MemoryFailureNaksRemoteAccessAndErrorsTheQp) {
  Responder responder = Ready();
  Execute(responder, WriteOnly(100, 0x1000, 8));
  const ResponderPlan plan = responder.Check(WithReth(
      Packet(Opcode::kRcWriteFirst, 101, kPmtu), 0xdead0000, 0x99, 4096));
  ASSERT_EQ(plan.verdict, ResponderVerdict::kExecute);
  const ResponderReply reply =
      responder.Fail(plan, NakCode::kRemoteAccessError);
  ExpectReply(reply, ResponderReplyKind::kNak, 101, 1, 0x62);
  EXPECT_EQ(responder.state(), QpState::kError);
  EXPECT_EQ(responder.counters().naks[2], 1u);
  EXPECT_EQ(responder.counters().errors_entered, 1u);
  EXPECT_EQ(responder.expected_psn(), 101u);
  // Everything after is dropped, the in-sequence retry too.
  for (const RcRequest& packet :
       {WithReth(Packet(Opcode::kRcWriteFirst, 101, kPmtu), 0, 0, 4096),
        Packet(Opcode::kRcWriteMiddle, 102, kPmtu), WriteOnly(100, 0, 8)}) {
    const ResponderPlan dropped = responder.Check(packet);
    EXPECT_EQ(dropped.verdict, ResponderVerdict::kDrop);
    EXPECT_EQ(dropped.drop_reason, ResponderDropReason::kQpError);
  }
  // Until the QP is set up again.
  responder.Reset(TestConfig(500));
  responder.SetState(QpState::kRtr);
  Execute(responder, WriteOnly(500, 0x1000, 8));
}

TEST(ResponderTest, FailedReadNaksWithTheRequestPsn) {
  Responder responder = Ready();
  const ResponderPlan plan = responder.Check(Read(100, 0x1000, 4096));
  const ResponderReply reply =
      responder.Fail(plan, NakCode::kRemoteAccessError);
  ExpectReply(reply, ResponderReplyKind::kNak, 100, 0, 0x62);
  EXPECT_EQ(responder.state(), QpState::kError);
}

TEST(ResponderTest, FailWithASequenceErrorBecomesRemoteOperationalError) {
  Responder responder = Ready();
  const ResponderPlan plan = responder.Check(WriteOnly(100, 0x1000, 8));
  const ResponderReply reply = responder.Fail(plan, NakCode::kPsnSequenceError);
  EXPECT_EQ(reply.syndrome, 0x63);
  EXPECT_EQ(responder.counters().bad_commits, 1u);
  EXPECT_EQ(responder.state(), QpState::kError);
}

TEST(ResponderTest, RnrNakThenTheRetryIsAccepted) {
  Responder responder = Ready();
  Execute(responder, WriteOnly(100, 0x1000, 8));
  ResponderPlan plan = responder.Check(Packet(Opcode::kRcSendOnly, 101, 8));
  ASSERT_TRUE(plan.consumes_receive);
  ExpectReply(responder.Rnr(plan), ResponderReplyKind::kRnrNak, 101, 1,
              0x20 | 12);
  EXPECT_EQ(responder.expected_psn(), 101u);
  EXPECT_EQ(responder.msn(), 1u);
  EXPECT_EQ(responder.state(), QpState::kRts);
  EXPECT_EQ(responder.counters().rnr_naks, 1u);
  EXPECT_EQ(responder.unacknowledged(), 0u);
  const ResponderReply reply =
      Execute(responder, Packet(Opcode::kRcSendOnly, 101, 8, true));
  ExpectReply(reply, ResponderReplyKind::kAck, 101, 2, 0x1f);
}

TEST(ResponderTest, RnrSilencesPipelinedPacketsUntilTheRetry) {
  Responder responder = Ready();
  ResponderPlan plan = responder.Check(Packet(Opcode::kRcSendOnly, 100, 8));
  EXPECT_EQ(responder.Rnr(plan).kind, ResponderReplyKind::kRnrNak);
  EXPECT_TRUE(responder.nak_outstanding());
  // What the requester had sent behind it: no PSN sequence NAK.
  for (uint32_t psn = 101; psn < 104; ++psn) {
    plan = responder.Check(WriteOnly(psn, 0x1000, 8));
    EXPECT_EQ(plan.verdict, ResponderVerdict::kDrop);
    EXPECT_EQ(plan.drop_reason, ResponderDropReason::kNakOutstanding);
  }
  EXPECT_EQ(responder.counters().naks[0], 0u);
  Execute(responder, Packet(Opcode::kRcSendOnly, 100, 8));
  EXPECT_FALSE(responder.nak_outstanding());
  Execute(responder, WriteOnly(101, 0x1000, 8));
}

TEST(ResponderTest, RnrOnWriteLastWithImmediateKeepsTheMessage) {
  Responder responder = Ready();
  Execute(responder, WithReth(Packet(Opcode::kRcWriteFirst, 100, kPmtu), 0x1000,
                              kRkey, 1100));
  RcRequest last = Packet(Opcode::kRcWriteLastImm, 101, 76, true);
  ResponderPlan plan = responder.Check(last);
  ASSERT_TRUE(plan.consumes_receive);
  EXPECT_EQ(responder.Rnr(plan).kind, ResponderReplyKind::kRnrNak);
  EXPECT_TRUE(responder.message_in_progress());
  plan = responder.Check(last);
  EXPECT_EQ(plan.va, 0x1400u);
  ExpectReply(responder.Accept(plan), ResponderReplyKind::kAck, 101, 1, 0x1f);
}

TEST(ResponderTest, RnrIsOnlyForPacketsThatNeedAReceive) {
  Responder responder = Ready();
  const ResponderPlan plan = responder.Check(WriteOnly(100, 0x1000, 8));
  EXPECT_FALSE(plan.consumes_receive);
  EXPECT_EQ(responder.Rnr(plan).kind, ResponderReplyKind::kNone);
  EXPECT_EQ(responder.counters().bad_commits, 1u);
  EXPECT_EQ(responder.counters().rnr_naks, 0u);
  EXPECT_EQ(responder.expected_psn(), 100u);
}

TEST(ResponderTest, PsnWrapsFromFfffffToZero) {
  Responder responder = Ready(TestConfig(0xfffffe));
  Execute(responder, Packet(Opcode::kRcSendFirst, 0xfffffe, kPmtu));
  Execute(responder, Packet(Opcode::kRcSendMiddle, 0xffffff, kPmtu));
  const ResponderReply reply =
      Execute(responder, Packet(Opcode::kRcSendLast, 0, 8, true));
  ExpectReply(reply, ResponderReplyKind::kAck, 0, 1, 0x1f);
  EXPECT_EQ(responder.expected_psn(), 1u);
  // Before the wrap is a duplicate, not a PSN far ahead.
  ResponderPlan plan =
      responder.Check(Packet(Opcode::kRcSendMiddle, 0xffffff, kPmtu));
  EXPECT_EQ(plan.verdict, ResponderVerdict::kDuplicate);
  ExpectReply(plan.reply, ResponderReplyKind::kAck, 0, 1, 0x1f);

  // A READ whose responses wrap, then a duplicate inside it.
  Responder reader = Ready(TestConfig(0xffffff));
  reader.Accept(reader.Check(Read(0xffffff, 0x1000, 3 * kPmtu)));
  EXPECT_EQ(reader.expected_psn(), 2u);
  plan = reader.Check(Read(1, 0x1000 + 2 * kPmtu, kPmtu));
  EXPECT_EQ(plan.action, ResponderAction::kReplayRead);
  EXPECT_EQ(plan.response_psn, 1u);
  EXPECT_EQ(plan.response_packets, 1u);
  // Half the PSN space ahead is still "ahead": a sequence NAK.
  plan = reader.Check(WriteOnly(PsnAdd(2, (1u << 23) - 1), 0, 0));
  EXPECT_EQ(plan.nak, NakCode::kPsnSequenceError);
}

// ------------------------------------------------------------------- ACKs

TEST(ResponderTest, AcksAreCoalescedEveryNPackets) {
  Responder responder = Ready();  // ack_every 4
  for (uint32_t psn = 100; psn < 103; ++psn) {
    EXPECT_EQ(Execute(responder, WriteOnly(psn, 0x1000, 8)).kind,
              ResponderReplyKind::kNone);
  }
  EXPECT_EQ(responder.unacknowledged(), 3u);
  ExpectReply(Execute(responder, WriteOnly(103, 0x1000, 8)),
              ResponderReplyKind::kAck, 103, 4, 0x1f);
  EXPECT_EQ(responder.unacknowledged(), 0u);
  // The idle hook acknowledges what is left, once.
  Execute(responder, WriteOnly(104, 0x1000, 8));
  Execute(responder, WriteOnly(105, 0x1000, 8));
  ExpectReply(responder.FlushAck(), ResponderReplyKind::kAck, 105, 6, 0x1f);
  EXPECT_EQ(responder.FlushAck().kind, ResponderReplyKind::kNone);
  EXPECT_EQ(responder.counters().acks, 2u);
}

TEST(ResponderTest, AckReqForcesAnAckAndRestartsTheCount) {
  Responder responder = Ready();
  Execute(responder, WriteOnly(100, 0x1000, 8));
  ExpectReply(Execute(responder, WriteOnly(101, 0x1000, 8, true)),
              ResponderReplyKind::kAck, 101, 2, 0x1f);
  for (uint32_t psn = 102; psn < 105; ++psn) {
    EXPECT_EQ(Execute(responder, WriteOnly(psn, 0x1000, 8)).kind,
              ResponderReplyKind::kNone);
  }
  EXPECT_EQ(Execute(responder, WriteOnly(105, 0x1000, 8)).kind,
            ResponderReplyKind::kAck);
}

TEST(ResponderTest, ReadAndAtomicResponsesAcknowledgeEarlierRequests) {
  Responder responder = Ready();
  Execute(responder, WriteOnly(100, 0x1000, 8));
  Execute(responder, WriteOnly(101, 0x1000, 8));
  Execute(responder, Read(102, 0x1000, 8));
  EXPECT_EQ(responder.FlushAck().kind, ResponderReplyKind::kNone);
  Execute(responder, WriteOnly(103, 0x1000, 8));
  Execute(responder, Atomic(Opcode::kRcFetchAdd, 104, 0x1000, 1), 7);
  EXPECT_EQ(responder.unacknowledged(), 0u);
}

TEST(ResponderTest, AckEveryOneAcknowledgesEachPacket) {
  ResponderConfig config = TestConfig();
  config.ack_every = 1;
  Responder responder = Ready(config);
  ExpectReply(Execute(responder, Packet(Opcode::kRcSendFirst, 100, kPmtu)),
              ResponderReplyKind::kAck, 100, 0, 0x1f);
}

// --------------------------------------------------------- state, commits

TEST(ResponderTest, OnlyRtrAndRtsTakeRequests) {
  Responder responder(TestConfig());
  EXPECT_EQ(responder.state(), QpState::kReset);
  EXPECT_EQ(responder.Check(WriteOnly(100, 0, 8)).drop_reason,
            ResponderDropReason::kQpNotReady);
  responder.SetState(QpState::kInit);
  EXPECT_EQ(responder.Check(WriteOnly(100, 0, 8)).drop_reason,
            ResponderDropReason::kQpNotReady);
  responder.SetState(QpState::kRtr);
  EXPECT_EQ(responder.Check(WriteOnly(100, 0, 8)).verdict,
            ResponderVerdict::kExecute);
  responder.SetState(QpState::kError);
  EXPECT_EQ(responder.Check(WriteOnly(100, 0, 8)).drop_reason,
            ResponderDropReason::kQpError);
  EXPECT_EQ(
      responder.counters()
          .drops[static_cast<std::size_t>(ResponderDropReason::kQpNotReady)],
      2u);
}

TEST(ResponderTest, APlanIsCommittedAtMostOnce) {
  Responder responder = Ready();
  const ResponderPlan first = responder.Check(WriteOnly(100, 0x1000, 8));
  const ResponderPlan second = responder.Check(WriteOnly(100, 0x1000, 8));
  // The first plan was abandoned by the second Check.
  EXPECT_EQ(responder.Accept(first).kind, ResponderReplyKind::kNone);
  EXPECT_EQ(responder.expected_psn(), 100u);
  responder.Accept(second);
  EXPECT_EQ(responder.expected_psn(), 101u);
  EXPECT_EQ(responder.Accept(second).kind, ResponderReplyKind::kNone);
  EXPECT_EQ(responder.Fail(second, NakCode::kRemoteAccessError).kind,
            ResponderReplyKind::kNone);
  EXPECT_EQ(responder.expected_psn(), 101u);
  EXPECT_EQ(responder.state(), QpState::kRts);
  EXPECT_EQ(responder.counters().accepted, 1u);
  EXPECT_EQ(responder.counters().bad_commits, 3u);
  // A state change abandons the pending plan as well.
  const ResponderPlan third = responder.Check(WriteOnly(101, 0x1000, 8));
  responder.SetState(QpState::kRtr);
  EXPECT_EQ(responder.Accept(third).kind, ResponderReplyKind::kNone);
  EXPECT_EQ(responder.expected_psn(), 101u);
}

TEST(ResponderTest, ConfigIsValidatedAndClamped) {
  EXPECT_EQ(ValidateResponderConfig(TestConfig()), nullptr);
  ResponderConfig config = TestConfig();
  config.pmtu = 1500;
  EXPECT_NE(ValidateResponderConfig(config), nullptr);
  EXPECT_EQ(Responder(config).config().pmtu, 1024u);
  config.pmtu = 100;
  EXPECT_EQ(Responder(config).config().pmtu, 256u);
  config.pmtu = 9000;
  EXPECT_EQ(Responder(config).config().pmtu, 4096u);
  config = TestConfig();
  config.max_dest_rd_atomic = 0;
  EXPECT_NE(ValidateResponderConfig(config), nullptr);
  EXPECT_EQ(Responder(config).config().max_dest_rd_atomic, 1u);
  config.max_dest_rd_atomic = 17;
  EXPECT_EQ(Responder(config).config().max_dest_rd_atomic, 16u);
  config = TestConfig();
  config.ack_every = 0;
  EXPECT_NE(ValidateResponderConfig(config), nullptr);
  EXPECT_EQ(Responder(config).config().ack_every, 1u);
  config = TestConfig(0x1234567);
  EXPECT_NE(ValidateResponderConfig(config), nullptr);
  EXPECT_EQ(Responder(config).expected_psn(), 0x234567u);
  config = TestConfig();
  config.min_rnr_timer = 32;
  EXPECT_NE(ValidateResponderConfig(config), nullptr);
}

TEST(ResponderTest, NamesAreDistinct) {
  std::set<std::string> names;
  for (int i = 0; i <= 3; ++i) {
    names.insert(Describe(static_cast<ResponderVerdict>(i)));
  }
  for (int i = 0; i <= 8; ++i) {
    names.insert(Describe(static_cast<ResponderAction>(i)));
  }
  EXPECT_EQ(names.size(), 4u + 9u);
  std::set<std::string> drops;
  for (int i = 0; i < static_cast<int>(ResponderDropReason::kCount); ++i) {
    drops.insert(Describe(static_cast<ResponderDropReason>(i)));
  }
  EXPECT_EQ(drops.size(),
            static_cast<std::size_t>(ResponderDropReason::kCount));
  std::set<std::string> naks;
  for (int i = 0; i <= 4; ++i) {
    naks.insert(ResponderNakName(static_cast<NakCode>(i)));
  }
  EXPECT_EQ(naks.size(), 5u);
  EXPECT_STREQ(ResponderNakName(NakCode::kRemoteAccessError),
               "remote_access_error");
  EXPECT_STREQ(Describe(ResponderReplyKind::kRnrNak), "rnr_nak");
}

// -------------------------------------------------- a real rxe exchange

// The requests of tests/fixtures/roce/rxe_ops_imm_atomic_v4.pcap (frames
// 15..33, rxe on kernel 6.1, PMTU 1024) and the answers rxe's responder
// sent: every PSN, MSN and syndrome byte (0x1f: "invalid credits", which
// rxe sends on every ACK, READ response and atomic ACK of the fixtures).
TEST(ResponderTest, AnswersTheRxeCaptureLikeRxe) {
  Responder responder = Ready(TestConfig(10988812));
  RcRequest send_imm = Packet(Opcode::kRcSendOnlyImm, 10988812, 32, true);
  send_imm.immediate = 0x11223344;
  ExpectReply(Execute(responder, send_imm), ResponderReplyKind::kAck, 10988812,
              1, 0x1f);
  RcRequest write_imm =
      WithReth(Packet(Opcode::kRcWriteOnlyImm, 10988813, 64, true),
               0x560d730b3000, 0x267, 64);
  write_imm.immediate = 0x55667788;
  ExpectReply(Execute(responder, write_imm), ResponderReplyKind::kAck, 10988813,
              2, 0x1f);
  EXPECT_EQ(
      Execute(responder, WithReth(Packet(Opcode::kRcWriteFirst, 10988814, 1024),
                                  0x560d730b4000, 0x267, 3000))
          .kind,
      ResponderReplyKind::kNone);
  EXPECT_EQ(
      Execute(responder, Packet(Opcode::kRcWriteMiddle, 10988815, 1024)).kind,
      ResponderReplyKind::kNone);
  RcRequest write_last = Packet(Opcode::kRcWriteLastImm, 10988816, 952, true);
  write_last.immediate = 0x99aabbcc;
  ExpectReply(Execute(responder, write_last), ResponderReplyKind::kAck,
              10988816, 3, 0x1f);
  RcRequest write_only =
      WithReth(Packet(Opcode::kRcWriteOnly, 10988817, 16, true), 0x560d730b5000,
               0x267, 16);
  ExpectReply(Execute(responder, write_only), ResponderReplyKind::kAck,
              10988817, 4, 0x1f);
  ResponderReply reply = Execute(
      responder, Atomic(Opcode::kRcFetchAdd, 10988818, 0x560d730b1000, 5), 100);
  ExpectReply(reply, ResponderReplyKind::kAtomicAck, 10988818, 5, 0x1f);
  EXPECT_EQ(reply.original_value, 100u);
  reply = Execute(
      responder,
      Atomic(Opcode::kRcCompareSwap, 10988819, 0x560d730b1008, 0x2222, 0x1111),
      0x1111);
  ExpectReply(reply, ResponderReplyKind::kAtomicAck, 10988819, 6, 0x1f);
  reply = Execute(responder,
                  WithReth(Packet(Opcode::kRcReadRequest, 10988820, 0, true),
                           0x560d730af000, 0x267, 3000));
  // rxe: READ RESPONSE FIRST/MIDDLE/LAST at 10988820..22, MSN 7.
  ExpectReply(reply, ResponderReplyKind::kReadResponse, 10988820, 7, 0x1f);
  EXPECT_EQ(reply.packets, 3u);
  ExpectReply(
      Execute(responder, Packet(Opcode::kRcSendOnly, 10988823, 8, true)),
      ResponderReplyKind::kAck, 10988823, 8, 0x1f);
}

// ib_write_bw_v4.pcap: 4 KiB WRITEs in FIRST/MIDDLE/MIDDLE/LAST with AckReq
// on LAST only; rxe ACKs each LAST with MSN 1, 2, ... (ack_every 16 is
// never reached in four packets).
TEST(ResponderTest, AnswersIbWriteBwLikeRxe) {
  ResponderConfig config = TestConfig(2454909);
  config.ack_every = 16;
  Responder responder = Ready(config);
  uint32_t psn = 2454909;
  for (uint32_t message = 1; message <= 10; ++message) {
    EXPECT_EQ(
        Execute(responder, WithReth(Packet(Opcode::kRcWriteFirst, psn++, 1024),
                                    0x562431cf1000, 0x272, 4096))
            .kind,
        ResponderReplyKind::kNone);
    Execute(responder, Packet(Opcode::kRcWriteMiddle, psn++, 1024));
    Execute(responder, Packet(Opcode::kRcWriteMiddle, psn++, 1024));
    const uint32_t last_psn = psn++;
    ExpectReply(
        Execute(responder, Packet(Opcode::kRcWriteLast, last_psn, 1024, true)),
        ResponderReplyKind::kAck, last_psn, message, 0x1f);
  }
  EXPECT_EQ(responder.expected_psn(), 2454949u);
}

// ------------------------------------------------------ property test

// Random requests (mostly near the expected PSN, sometimes malformed) and
// random engine decisions; the invariants hold for every step.
TEST(ResponderTest, RandomInputKeepsTheInvariants) {
  static constexpr Opcode kOpcodes[] = {
      Opcode::kRcSendFirst,         Opcode::kRcSendMiddle,
      Opcode::kRcSendLast,          Opcode::kRcSendLastImm,
      Opcode::kRcSendOnly,          Opcode::kRcSendOnlyImm,
      Opcode::kRcWriteFirst,        Opcode::kRcWriteMiddle,
      Opcode::kRcWriteLast,         Opcode::kRcWriteLastImm,
      Opcode::kRcWriteOnly,         Opcode::kRcWriteOnlyImm,
      Opcode::kRcReadRequest,       Opcode::kRcCompareSwap,
      Opcode::kRcFetchAdd,          Opcode::kRcSendLastInvalidate,
      Opcode::kRcSendOnlyInvalidate};
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    auto uniform = [&rng](uint32_t n) {
      return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng);
    };
    ResponderConfig config = TestConfig(uniform(1u << 24));
    config.pmtu = 256u << uniform(5);
    config.max_dest_rd_atomic = 1 + uniform(16);
    config.ack_every = 1 + uniform(20);
    Responder responder = Ready(config);
    // PSNs executed, as a count of PSNs since the last Reset plus a
    // generation so that a reset starts a fresh space.
    uint64_t generation = 0;
    uint64_t advanced = 0;
    std::set<std::pair<uint64_t, uint64_t>> executed;
    std::map<uint32_t, uint64_t> atomic_originals;  // psn -> value
    uint32_t msn = 0;
    uint64_t accepted = 0;

    for (int step = 0; step < 50000; ++step) {
      const uint32_t epsn = responder.expected_psn();
      const QpState state = responder.state();
      RcRequest packet;
      const uint32_t shape = uniform(100);
      if (shape < 2) {
        packet.opcode = static_cast<uint8_t>(uniform(256));
      } else {
        packet.opcode = Op(kOpcodes[uniform(std::size(kOpcodes))]);
      }
      const OpcodeInfo& info = GetOpcodeInfo(packet.opcode);
      const uint32_t jitter = uniform(100);
      packet.psn = jitter < 70   ? epsn
                   : jitter < 85 ? PsnAdd(epsn, kPsnMask + 1 - 1 - uniform(8))
                   : jitter < 97 ? PsnAdd(epsn, 1 + uniform(8))
                                 : uniform(1u << 24);
      const uint32_t pmtu = responder.config().pmtu;
      const uint32_t lengths[] = {0,        1, pmtu - 1,          pmtu,
                                  pmtu + 1, 8, uniform(3 * pmtu), pmtu};
      packet.payload_length = info.has(kHasPayload) || uniform(20) == 0
                                  ? lengths[uniform(std::size(lengths))]
                                  : 0;
      packet.pad = static_cast<uint8_t>(uniform(10) == 0 ? uniform(4) : 0);
      packet.ack_req = uniform(4) == 0;
      packet.has_reth = info.has(kHasReth) || uniform(30) == 0;
      packet.reth_va = uint64_t{uniform(1u << 20)} << uniform(40);
      packet.reth_rkey = uniform(4);
      const uint32_t dma[] = {0,
                              8,
                              pmtu,
                              4 * pmtu,
                              3 * pmtu + 5,
                              uniform(1u << 31),
                              0x80000001u,
                              0xffffffffu};
      packet.reth_dma_length = dma[uniform(std::size(dma))];
      packet.has_atomic_eth = info.has(kHasAtomicEth) || uniform(30) == 0;
      packet.atomic_va = uint64_t{uniform(1u << 16)} * (uniform(8) ? 8 : 3);
      packet.atomic_swap_add = rng();
      packet.has_immediate = info.has(kHasImmDt);
      packet.has_invalidate = info.has(kHasIeth);

      const ResponderCounters before = responder.counters();
      const ResponderPlan plan = responder.Check(packet);
      ASSERT_EQ(plan.needs_commit,
                plan.verdict == ResponderVerdict::kExecute ||
                    (plan.verdict == ResponderVerdict::kDuplicate &&
                     plan.action == ResponderAction::kReplayRead));
      if (state != QpState::kRts) {
        ASSERT_EQ(plan.verdict, ResponderVerdict::kDrop);
      }
      // Check never moves the sequence.
      ASSERT_EQ(responder.expected_psn(), epsn);
      ASSERT_EQ(responder.msn(), msn);
      if (plan.verdict == ResponderVerdict::kExecute) {
        ASSERT_EQ(plan.psn, epsn);
        if (plan.action == ResponderAction::kWrite ||
            plan.action == ResponderAction::kSend) {
          ASSERT_EQ(plan.length, packet.payload_length);
          ASSERT_LE(plan.length, pmtu);
        }
        if (plan.action == ResponderAction::kSend) {
          ASSERT_LE(plan.send_offset + plan.length, kMaxMessageBytes);
        }
        if (plan.action == ResponderAction::kWrite) {
          ASSERT_GE(plan.va, plan.range_va);
          ASSERT_LE(plan.va - plan.range_va + plan.length, plan.range_length);
        }
        if (plan.action == ResponderAction::kCompareSwap ||
            plan.action == ResponderAction::kFetchAdd) {
          ASSERT_EQ(plan.va % 8, 0u);
        }
      }
      if (plan.verdict == ResponderVerdict::kNak &&
          plan.nak == NakCode::kPsnSequenceError) {
        ASSERT_EQ(plan.reply.psn, epsn);
        ASSERT_GT(PsnDiff(packet.psn & kPsnMask, epsn), 0);
      }
      if (plan.action == ResponderAction::kReplayAtomic) {
        ASSERT_EQ(atomic_originals.count(plan.psn), 1u);
        ASSERT_EQ(plan.reply.original_value, atomic_originals[plan.psn]);
      }

      const uint32_t decision = uniform(100);
      const uint64_t original = rng();
      ResponderReply reply;
      bool accepted_now = false;
      if (plan.needs_commit) {
        if (decision < 80) {
          reply = responder.Accept(plan, original);
          accepted_now = plan.verdict == ResponderVerdict::kExecute;
        } else if (decision < 83) {
          reply = responder.Fail(plan, NakCode::kRemoteAccessError);
          ASSERT_EQ(reply.kind, ResponderReplyKind::kNak);
          ASSERT_EQ(responder.state(), QpState::kError);
        } else if (decision < 90) {
          reply = responder.Rnr(plan);
          ASSERT_EQ(reply.kind, plan.consumes_receive
                                    ? ResponderReplyKind::kRnrNak
                                    : ResponderReplyKind::kNone);
        }
        if (decision < 90) {
          // A second commit of the same plan never does anything.
          ASSERT_EQ(responder.Accept(plan).kind, ResponderReplyKind::kNone);
        }  // else abandoned: the next Check forgets it
      } else if (decision < 10) {
        ASSERT_EQ(responder.Accept(plan).kind, ResponderReplyKind::kNone);
      }

      if (accepted_now) {
        ++accepted;
        const uint32_t packets =
            plan.action == ResponderAction::kRead ? plan.response_packets : 1;
        ASSERT_GE(packets, 1u);
        ASSERT_EQ(responder.expected_psn(), PsnAdd(epsn, packets));
        ASSERT_TRUE(executed.insert({generation, advanced}).second);
        advanced += packets;
        if (plan.ends_message) msn = (msn + 1) & kMsnMask;
        ASSERT_EQ(responder.msn(), msn);
        if (plan.action == ResponderAction::kCompareSwap ||
            plan.action == ResponderAction::kFetchAdd) {
          atomic_originals[plan.psn] = original;
          ASSERT_EQ(reply.original_value, original);
        }
      } else {
        ASSERT_EQ(responder.expected_psn(), epsn);
        ASSERT_EQ(responder.msn(), msn);
        ASSERT_EQ(responder.counters().accepted, before.accepted);
      }
      ASSERT_EQ(responder.counters().accepted, accepted);
      if (uniform(50) == 0) responder.FlushAck();

      if (responder.state() == QpState::kError) {
        ResponderConfig next = config;
        next.initial_epsn = uniform(1u << 24);
        responder.Reset(next);
        responder.SetState(QpState::kRts);
        ++generation;
        advanced = 0;
        msn = 0;
        atomic_originals.clear();
      }
    }
    // Enough of everything happened for the invariants to mean something.
    const ResponderCounters& counters = responder.counters();
    EXPECT_GT(counters.accepted, 5000u);
    EXPECT_GT(counters.duplicates, 1000u);
    EXPECT_GT(counters.read_replays + counters.atomic_replays, 10u);
    EXPECT_GT(counters.naks[0], 100u);
    EXPECT_GT(counters.naks[1], 100u);
    EXPECT_GT(counters.rnr_naks, 10u);
    EXPECT_GT(counters.messages, 1000u);
  }
}

}  // namespace
}  // namespace spinnic::roce
