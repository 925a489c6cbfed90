// The DiAD reliability state machines (dataplane/diad/channel.h): rule by
// rule, then two endpoints through a seeded lossy channel in simulated time.
#include "dataplane/diad/channel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <queue>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "dataplane/diad/wire.h"
#include "tests/unit/diad/channel_sim.h"

namespace spinnic::diad {

// Reaches the private sequence counters so that tests start near 2^32
// instead of sending four billion packets first.
class ChannelTestPeer {
 public:
  static void SetExpected(ReceiveWindow& window, uint32_t expected) {
    window.expected_ = expected;
  }
  template <typename Handle>
  static void SetSeq(SendWindow<Handle>& window, uint32_t seq) {
    ASSERT_EQ(window.in_flight_packets(), 0u);
    window.base_ = seq;
    window.next_seq_ = seq;
  }
  template <typename Cookie>
  static void SetNextTxn(TransactionTable<Cookie>& table, uint32_t txn) {
    table.next_txn_ = txn;
  }
};

namespace {

using Peer = ChannelTestPeer;

ChannelConfig SmallConfig() {
  ChannelConfig config;
  config.window_packets = 8;
  config.window_bytes = 8000;
  config.max_transactions = 4;
  config.ack_every = 4;
  config.ack_delay_ns = 1000;
  config.rto_ns = 10'000;
  config.rto_max_ns = 80'000;
  config.max_retries = 5;
  config.nack_interval_ns = 500;
  config.receive_span = 1000;
  // The rule-by-rule tests below check the fixed timer; the adaptive one
  // has its own (AdaptiveConfig).
  config.adaptive_rto = false;
  return config;
}

// SmallConfig with the adaptive timeout: floor 2 us, G = ack_delay 1 us.
ChannelConfig AdaptiveConfig() {
  ChannelConfig config = SmallConfig();
  config.adaptive_rto = true;
  config.rto_min_ns = 2'000;
  return config;
}

// ---------------------------------------------------------------- DownAfterNs

TEST(DownAfterNsTest, DefaultConfig) {
  // 1 + 2 + 4 + 8 + 16 ms, then four more at the 16 ms cap: 9 expiries.
  EXPECT_EQ(DownAfterNs(ChannelConfig{}), 95'000'000u);
}

TEST(DownAfterNsTest, HugeRetryCountIsComputedNotLooped) {
  ChannelConfig config;
  config.max_retries = UINT32_MAX;
  // 1 + 2 + 4 + 8 ms, then 2^32 - 4 expiries at the 16 ms cap.
  EXPECT_EQ(DownAfterNs(config),
            15'000'000ull + 16'000'000ull * ((uint64_t{1} << 32) - 4));
  config.rto_ns = config.rto_max_ns = uint64_t{1} << 40;
  EXPECT_EQ(DownAfterNs(config), UINT64_MAX);
}

TEST(DownAfterNsTest, ZeroRetriesIsOneTimeout) {
  ChannelConfig config = SmallConfig();
  config.max_retries = 0;
  EXPECT_EQ(DownAfterNs(config), config.rto_ns);
}

TEST(DownAfterNsTest, SaturatesInsteadOfWrapping) {
  ChannelConfig config;
  config.rto_ns = UINT64_MAX / 4;
  config.rto_max_ns = UINT64_MAX;
  config.max_retries = 10;
  EXPECT_EQ(DownAfterNs(config), UINT64_MAX);
}

// Drives a SendWindow whose peer never answers, jumping to each timer
// deadline: the channel must go down exactly DownAfterNs after the push,
// at expiry max_retries + 1, having asked max_retries times.
void ExpectDownAfterMatchesTimer(const ChannelConfig& config) {
  SendWindow<int> window(config);
  const uint64_t start = 123'456;
  window.Push(1, 100, 0, false, start);
  uint64_t now = start;
  uint32_t unacks = 0;
  uint32_t expiries = 0;
  for (;;) {
    ASSERT_LT(expiries, config.max_retries + 5);
    const uint64_t deadline = window.timer_deadline();
    ASSERT_NE(deadline, UINT64_MAX);
    // Not a nanosecond early.
    EXPECT_EQ(window.OnTimer(deadline - 1),
              SendWindow<int>::TimerVerdict::kIdle);
    now = deadline;
    const auto verdict = window.OnTimer(now);
    ++expiries;
    if (verdict == SendWindow<int>::TimerVerdict::kDown) break;
    ASSERT_EQ(verdict, SendWindow<int>::TimerVerdict::kSendUnack);
    ++unacks;
  }
  EXPECT_EQ(expiries, config.max_retries + 1);
  EXPECT_EQ(unacks, config.max_retries);
  EXPECT_EQ(now - start, DownAfterNs(config));
  EXPECT_EQ(window.in_flight_packets(), 1u);  // kept for Reset
  int released = 0;
  window.Reset([&](int, uint32_t, bool) { ++released; });
  EXPECT_EQ(released, 1);
}

TEST(DownAfterNsTest, ConsistentWithOnTimer) {
  ExpectDownAfterMatchesTimer(ChannelConfig{});
  ExpectDownAfterMatchesTimer(SmallConfig());
  ChannelConfig config = SmallConfig();
  config.max_retries = 0;
  ExpectDownAfterMatchesTimer(config);
  config.max_retries = 20;  // long past the cap
  ExpectDownAfterMatchesTimer(config);
  config.rto_ns = 100'000;  // first timeout above the cap
  config.rto_max_ns = 30'000;
  config.max_retries = 3;
  ExpectDownAfterMatchesTimer(config);
}

// ---------------------------------------------------------------- Session

TEST(SessionTest, FirstPacketLearnsThePeer) {
  Session session(0x1111);
  EXPECT_EQ(session.peer_epoch(), 0u);
  EXPECT_EQ(session.Check(0x2222, 0), Session::Verdict::kOk);
  EXPECT_EQ(session.peer_epoch(), 0x2222u);
  EXPECT_EQ(session.Check(0x2222, 0), Session::Verdict::kOk);  // not yet ours
  EXPECT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
}

TEST(SessionTest, FirstPacketAddressedToUsIsLearned) {
  Session session(0x1111);
  EXPECT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
  EXPECT_EQ(session.peer_epoch(), 0x2222u);
}

TEST(SessionTest, PacketForAnotherSessionOfOursIsStale) {
  Session session(0x1111);
  EXPECT_EQ(session.Check(0x2222, 0x9999), Session::Verdict::kStale);
  EXPECT_EQ(session.peer_epoch(), 0u);  // not learned from a stale packet
  EXPECT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
  EXPECT_EQ(session.Check(0x2222, 0x9999), Session::Verdict::kStale);
  EXPECT_EQ(session.peer_epoch(), 0x2222u);
}

TEST(SessionTest, ZeroSourceEpochIsStale) {
  Session session(0x1111);
  EXPECT_EQ(session.Check(0, 0), Session::Verdict::kStale);
  EXPECT_EQ(session.peer_epoch(), 0u);
}

// A new epoch that does not know ours (a restart, or anyone spoofing the
// peer's address) is challenged, never believed: nothing changes.
TEST(SessionTest, NewPeerEpochWithoutOursIsChallenged) {
  Session session(0x1111);
  ASSERT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
  EXPECT_EQ(session.Check(0x3333, 0), Session::Verdict::kChallenge);
  EXPECT_EQ(session.Check(0x3333, 0), Session::Verdict::kChallenge);
  EXPECT_EQ(session.peer_epoch(), 0x2222u);
  EXPECT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
}

// The peer's new session proves itself by carrying our epoch (learned from
// the challenge ACK): that is the reset.
TEST(SessionTest, NewPeerEpochThatKnowsOursIsAReset) {
  Session session(0x1111);
  ASSERT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
  ASSERT_EQ(session.Check(0x3333, 0), Session::Verdict::kChallenge);
  EXPECT_EQ(session.Check(0x3333, 0x1111), Session::Verdict::kPeerReset);
  EXPECT_EQ(session.peer_epoch(), 0x3333u);
  EXPECT_EQ(session.my_epoch(), 0x1111u);
  // The new session continues normally, retransmissions from before it
  // learned our epoch included.
  EXPECT_EQ(session.Check(0x3333, 0), Session::Verdict::kOk);
  EXPECT_EQ(session.Check(0x3333, 0x1111), Session::Verdict::kOk);
  // Late packets of the session the peer left are stale, even ones that
  // did not know us (they must not reset the channel back).
  EXPECT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kStale);
  EXPECT_EQ(session.Check(0x2222, 0), Session::Verdict::kStale);
  EXPECT_EQ(session.peer_epoch(), 0x3333u);
}

// Knowing our epoch is what an off-path sender cannot: one that claims
// another of ours is stale.
TEST(SessionTest, UnknownEpochClaimingAnotherOfOursIsStale) {
  Session session(0x1111);
  ASSERT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
  EXPECT_EQ(session.Check(0x4444, 0x9999), Session::Verdict::kStale);
  EXPECT_EQ(session.peer_epoch(), 0x2222u);
}

TEST(SessionTest, RestartForgetsThePeer) {
  Session session(0x1111);
  ASSERT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kOk);
  session.Restart(0x5555);
  EXPECT_EQ(session.my_epoch(), 0x5555u);
  EXPECT_EQ(session.peer_epoch(), 0u);
  // The peer still addresses our old session: stale until it learns ours.
  EXPECT_EQ(session.Check(0x2222, 0x1111), Session::Verdict::kStale);
  // It saw our dst_epoch 0 packet, reset, and now addresses the new one.
  EXPECT_EQ(session.Check(0x2222, 0x5555), Session::Verdict::kOk);
  EXPECT_EQ(session.peer_epoch(), 0x2222u);
}

// ----------------------------------------------------------------
// ReceiveWindow

using RxVerdict = ReceiveWindow::Verdict;

TEST(ReceiveWindowTest, AcceptsOnlyTheExpectedNumber) {
  ReceiveWindow rx(SmallConfig());
  EXPECT_EQ(rx.expected(), 0u);
  EXPECT_EQ(rx.OnPacket(0, false, 0).verdict, RxVerdict::kAccept);
  EXPECT_EQ(rx.OnPacket(1, false, 0).verdict, RxVerdict::kAccept);
  EXPECT_EQ(rx.expected(), 2u);
  EXPECT_EQ(rx.OnPacket(3, false, 0).verdict, RxVerdict::kGap);
  EXPECT_EQ(rx.expected(), 2u);
  EXPECT_EQ(rx.OnPacket(1, false, 0).verdict, RxVerdict::kDuplicate);
  EXPECT_EQ(rx.expected(), 2u);
  EXPECT_EQ(rx.OnPacket(2, false, 0).verdict, RxVerdict::kAccept);
  EXPECT_EQ(rx.expected(), 3u);
}

TEST(ReceiveWindowTest, DuplicateAsksForAnAckAtOnce) {
  ReceiveWindow rx(SmallConfig());
  rx.OnPacket(0, false, 0);
  rx.OnAckSent();
  EXPECT_FALSE(rx.AckDue(0));
  const auto result = rx.OnPacket(0, false, 10);
  EXPECT_EQ(result.verdict, RxVerdict::kDuplicate);
  EXPECT_FALSE(result.send_nack);
  EXPECT_TRUE(rx.AckDue(10));
  EXPECT_EQ(rx.ack_deadline(), 0u);
  EXPECT_FALSE(rx.probe_reply_due());
  rx.OnAckSent();
  EXPECT_FALSE(rx.AckDue(10));
}

TEST(ReceiveWindowTest, GapNacksOncePerInterval) {
  const ChannelConfig config = SmallConfig();
  ReceiveWindow rx(config);
  auto r = rx.OnPacket(2, false, 1000);
  EXPECT_EQ(r.verdict, RxVerdict::kGap);
  EXPECT_TRUE(r.send_nack);
  // The same gap: quiet until nack_interval has passed.
  for (uint32_t seq = 3; seq < 10; ++seq) {
    r = rx.OnPacket(seq, false, 1000 + config.nack_interval_ns - 1);
    EXPECT_EQ(r.verdict, RxVerdict::kGap);
    EXPECT_FALSE(r.send_nack);
  }
  r = rx.OnPacket(4, false, 1000 + config.nack_interval_ns);
  EXPECT_TRUE(r.send_nack);
  r = rx.OnPacket(5, false, 1000 + config.nack_interval_ns);
  EXPECT_FALSE(r.send_nack);
  EXPECT_FALSE(rx.AckDue(1000 + config.nack_interval_ns));  // gaps don't ACK
  // The gap closes; the next one is NACKed at once, even inside the
  // interval of the previous NACK.
  EXPECT_EQ(rx.OnPacket(0, false, 1600).verdict, RxVerdict::kAccept);
  r = rx.OnPacket(5, false, 1601);
  EXPECT_EQ(r.verdict, RxVerdict::kGap);
  EXPECT_TRUE(r.send_nack);
  r = rx.OnPacket(6, false, 1602);
  EXPECT_FALSE(r.send_nack);
}

TEST(ReceiveWindowTest, FloodOfGapPacketsCostsOneNackPerInterval) {
  const ChannelConfig config = SmallConfig();
  ReceiveWindow rx(config);
  uint32_t nacks = 0;
  // 10,000 out-of-order packets, one every 10 ns: 100 us = 200 intervals.
  for (uint32_t i = 0; i < 10'000; ++i) {
    if (rx.OnPacket(1 + i % 500, false, i * 10ull).send_nack) ++nacks;
  }
  EXPECT_EQ(nacks, 10'000 * 10 / config.nack_interval_ns);
}

TEST(ReceiveWindowTest, OutsideTheSpanGetsNoReply) {
  const ChannelConfig config = SmallConfig();  // receive_span 1000
  ReceiveWindow rx(config);
  for (uint32_t i = 0; i < 5000; ++i) rx.OnPacket(i, false, 0);
  rx.OnAckSent();
  const uint32_t e = rx.expected();
  auto r = rx.OnPacket(e + config.receive_span, true, 0);
  EXPECT_EQ(r.verdict, RxVerdict::kOutside);
  EXPECT_FALSE(r.send_nack);
  r = rx.OnPacket(e - config.receive_span, true, 0);
  EXPECT_EQ(r.verdict, RxVerdict::kOutside);
  EXPECT_FALSE(rx.AckDue(0));
  r = rx.OnPacket(e + 0x80000000u, true, 0);  // the farthest either way
  EXPECT_EQ(r.verdict, RxVerdict::kOutside);
  EXPECT_EQ(rx.OnPacket(e + config.receive_span - 1, false, 0).verdict,
            RxVerdict::kGap);
  EXPECT_EQ(rx.OnPacket(e - config.receive_span + 1, false, 0).verdict,
            RxVerdict::kDuplicate);
  EXPECT_EQ(rx.expected(), e);
}

TEST(ReceiveWindowTest, AckAfterAckEveryPackets) {
  const ChannelConfig config = SmallConfig();  // ack_every 4
  ReceiveWindow rx(config);
  EXPECT_FALSE(rx.AckDue(0));
  EXPECT_EQ(rx.ack_deadline(), UINT64_MAX);
  for (uint32_t i = 0; i < 3; ++i) {
    rx.OnPacket(i, false, 100);
    EXPECT_FALSE(rx.AckDue(100));
  }
  rx.OnPacket(3, false, 100);
  EXPECT_TRUE(rx.AckDue(100));
  EXPECT_EQ(rx.ack_deadline(), 0u);
  EXPECT_FALSE(rx.probe_reply_due());
  rx.OnAckSent();
  EXPECT_FALSE(rx.AckDue(100));
  EXPECT_EQ(rx.ack_deadline(), UINT64_MAX);
}

TEST(ReceiveWindowTest, AckAfterDelayFromTheFirstUnacked) {
  const ChannelConfig config = SmallConfig();  // ack_delay 1000 ns
  ReceiveWindow rx(config);
  rx.OnPacket(0, false, 5000);
  rx.OnPacket(1, false, 5900);
  EXPECT_EQ(rx.ack_deadline(), 6000u);
  EXPECT_FALSE(rx.AckDue(5999));
  EXPECT_TRUE(rx.AckDue(6000));
  rx.OnAckSent();
  rx.OnPacket(2, false, 7000);
  EXPECT_EQ(rx.ack_deadline(), 8000u);
}

TEST(ReceiveWindowTest, AckNowFlag) {
  ReceiveWindow rx(SmallConfig());
  rx.OnPacket(0, true, 0);
  EXPECT_TRUE(rx.AckDue(0));
  EXPECT_FALSE(rx.probe_reply_due());
  rx.OnAckSent();
  // ACK_NOW on a packet that is not accepted does not count.
  rx.OnPacket(5, true, 0);
  EXPECT_FALSE(rx.AckDue(0));
}

TEST(ReceiveWindowTest, UnackAsksForAProbeReply) {
  ReceiveWindow rx(SmallConfig());
  EXPECT_FALSE(rx.AckDue(0));
  rx.OnUnack();
  EXPECT_TRUE(rx.AckDue(0));
  EXPECT_TRUE(rx.probe_reply_due());
  EXPECT_EQ(rx.ack_deadline(), 0u);
  rx.OnAckSent();
  EXPECT_FALSE(rx.AckDue(0));
  EXPECT_FALSE(rx.probe_reply_due());
}

TEST(ReceiveWindowTest, ResetExpectsZero) {
  ReceiveWindow rx(SmallConfig());
  for (uint32_t i = 0; i < 3; ++i) rx.OnPacket(i, false, 0);
  rx.OnPacket(9, false, 0);  // NACK sent for 3
  rx.OnUnack();
  rx.Reset();
  EXPECT_EQ(rx.expected(), 0u);
  EXPECT_FALSE(rx.AckDue(UINT64_MAX - 1));
  EXPECT_FALSE(rx.probe_reply_due());
  auto r = rx.OnPacket(2, false, 1);
  EXPECT_EQ(r.verdict, RxVerdict::kGap);
  EXPECT_TRUE(r.send_nack);  // the NACK memory went with the session
}

TEST(ReceiveWindowTest, WrapsAround) {
  const ChannelConfig config = SmallConfig();
  ReceiveWindow rx(config);
  Peer::SetExpected(rx, 0xfffffffe);
  EXPECT_EQ(rx.OnPacket(0xffffffff, false, 0).verdict, RxVerdict::kGap);
  EXPECT_EQ(rx.OnPacket(1, false, 0).verdict, RxVerdict::kGap);
  EXPECT_EQ(rx.OnPacket(0xfffffffd, false, 0).verdict, RxVerdict::kDuplicate);
  EXPECT_EQ(rx.OnPacket(0xfffffffe, false, 0).verdict, RxVerdict::kAccept);
  EXPECT_EQ(rx.OnPacket(0xffffffff, false, 0).verdict, RxVerdict::kAccept);
  EXPECT_EQ(rx.expected(), 0u);
  EXPECT_EQ(rx.OnPacket(0xffffffff, false, 0).verdict, RxVerdict::kDuplicate);
  EXPECT_EQ(rx.OnPacket(0u - config.receive_span + 1, false, 0).verdict,
            RxVerdict::kDuplicate);
  EXPECT_EQ(rx.OnPacket(0u - config.receive_span, false, 0).verdict,
            RxVerdict::kOutside);
  EXPECT_EQ(rx.OnPacket(config.receive_span, false, 0).verdict,
            RxVerdict::kOutside);
  EXPECT_EQ(rx.OnPacket(0, false, 0).verdict, RxVerdict::kAccept);
  EXPECT_EQ(rx.expected(), 1u);
}

// ---------------------------------------------------------------- SendWindow

using Window = SendWindow<int>;
using AckVerdict = Window::AckVerdict;
using TimerVerdict = Window::TimerVerdict;

struct Released {
  int handle;
  uint32_t txn;
  bool completes;
  bool operator==(const Released&) const = default;
};

// Pushes handles first..first+n-1 (txn = handle, the last completes).
void PushN(Window& w, int first, int n, uint32_t bytes, uint64_t now) {
  for (int i = 0; i < n; ++i) {
    ASSERT_TRUE(w.CanSend(bytes));
    w.Push(first + i, bytes, static_cast<uint32_t>(first + i), i == n - 1, now);
  }
}

TEST(SendWindowTest, WindowPacketsLimit) {
  const ChannelConfig config = SmallConfig();  // 8 packets, 8000 bytes
  Window w(config);
  EXPECT_EQ(w.next_seq(), 0u);
  PushN(w, 0, 8, 10, 0);
  EXPECT_EQ(w.in_flight_packets(), 8u);
  EXPECT_EQ(w.in_flight_bytes(), 80u);
  EXPECT_EQ(w.next_seq(), 8u);
  EXPECT_FALSE(w.CanSend(0));
  w.OnAck(1, 0, [](int, uint32_t, bool) {});
  EXPECT_TRUE(w.CanSend(10));
}

TEST(SendWindowTest, WindowBytesLimit) {
  Window w(SmallConfig());  // 8000 bytes
  PushN(w, 0, 3, 2500, 0);
  EXPECT_TRUE(w.CanSend(500));
  EXPECT_FALSE(w.CanSend(501));
  w.Push(3, 500, 0, false, 0);
  EXPECT_FALSE(w.CanSend(1));
  EXPECT_TRUE(w.CanSend(0));  // a payload-less request still fits
}

TEST(SendWindowTest, OversizedPacketFitsAnEmptyWindowOnly) {
  Window w(SmallConfig());
  EXPECT_TRUE(w.CanSend(100'000));
  w.Push(0, 100'000, 0, false, 0);
  EXPECT_FALSE(w.CanSend(1));
  EXPECT_FALSE(w.CanSend(100'000));
  w.OnAck(1, 0, [](int, uint32_t, bool) {});
  EXPECT_EQ(w.in_flight_bytes(), 0u);
  EXPECT_TRUE(w.CanSend(100'000));
}

TEST(SendWindowTest, PushArmsTheTimerOnlyWhenEmpty) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  EXPECT_EQ(w.timer_deadline(), UINT64_MAX);
  w.Push(0, 1, 0, false, 1000);
  EXPECT_EQ(w.timer_deadline(), 1000 + config.rto_ns);
  w.Push(1, 1, 0, false, 5000);
  EXPECT_EQ(w.timer_deadline(), 1000 + config.rto_ns);
}

TEST(SendWindowTest, AckReleasesInOrder) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  PushN(w, 10, 5, 100, 0);
  std::vector<Released> released;
  auto release = [&](int h, uint32_t txn, bool completes) {
    released.push_back({h, txn, completes});
  };
  EXPECT_EQ(w.OnAck(0, 50, release), AckVerdict::kNoChange);
  EXPECT_TRUE(released.empty());
  EXPECT_EQ(w.OnAck(3, 100, release), AckVerdict::kProgress);
  EXPECT_EQ(released, (std::vector<Released>{
                          {10, 10, false}, {11, 11, false}, {12, 12, false}}));
  EXPECT_EQ(w.base(), 3u);
  EXPECT_EQ(w.in_flight_packets(), 2u);
  EXPECT_EQ(w.in_flight_bytes(), 200u);
  EXPECT_EQ(w.timer_deadline(), 100 + config.rto_ns);  // re-armed
  EXPECT_EQ(w.OnAck(3, 200, release), AckVerdict::kNoChange);
  EXPECT_EQ(w.OnAck(1, 200, release), AckVerdict::kNoChange);  // old
  EXPECT_EQ(w.timer_deadline(), 100 + config.rto_ns);
  released.clear();
  EXPECT_EQ(w.OnAck(5, 300, release), AckVerdict::kProgress);
  EXPECT_EQ(released, (std::vector<Released>{{13, 13, false}, {14, 14, true}}));
  EXPECT_EQ(w.in_flight_packets(), 0u);
  EXPECT_EQ(w.in_flight_bytes(), 0u);
  EXPECT_EQ(w.timer_deadline(), UINT64_MAX);
}

TEST(SendWindowTest, InvalidAcks) {
  const ChannelConfig config = SmallConfig();  // 8 packets
  Window w(config);
  int released = 0;
  auto release = [&](int, uint32_t, bool) { ++released; };
  // Nothing sent: any ack other than 0 is beyond next_seq.
  EXPECT_EQ(w.OnAck(1, 0, release), AckVerdict::kInvalid);
  EXPECT_EQ(w.OnAck(0x7fffffff, 0, release), AckVerdict::kInvalid);
  PushN(w, 0, 4, 1, 0);
  EXPECT_EQ(w.OnAck(5, 0, release), AckVerdict::kInvalid);
  EXPECT_EQ(w.OnAck(4 + 0x7ffffff0u, 0, release), AckVerdict::kInvalid);
  EXPECT_EQ(released, 0);
  EXPECT_EQ(w.OnAck(4, 0, release), AckVerdict::kProgress);
  EXPECT_EQ(released, 4);
  // Behind base: fine within a window, invalid beyond.
  PushN(w, 4, 8, 1, 0);
  EXPECT_EQ(w.OnAck(12, 0, release), AckVerdict::kProgress);
  EXPECT_EQ(w.OnAck(12 - config.window_packets, 0, release),
            AckVerdict::kNoChange);
  EXPECT_EQ(w.OnAck(12 - config.window_packets - 1, 0, release),
            AckVerdict::kInvalid);
  EXPECT_EQ(w.OnAck(12 + 0x80000000u, 0, release), AckVerdict::kInvalid);
  EXPECT_EQ(released, 12);
  EXPECT_EQ(w.base(), 12u);
}

TEST(SendWindowTest, ProgressResetsRetriesAndTimeout) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  PushN(w, 0, 3, 1, 0);
  uint64_t now = w.timer_deadline();
  ASSERT_EQ(w.OnTimer(now), TimerVerdict::kSendUnack);
  now = w.timer_deadline();
  ASSERT_EQ(w.OnTimer(now), TimerVerdict::kSendUnack);
  EXPECT_EQ(w.retries(), 2u);
  EXPECT_EQ(w.rto_ns(), 4 * config.rto_ns);
  ASSERT_EQ(w.OnAck(1, now + 7, [](int, uint32_t, bool) {}),
            AckVerdict::kProgress);
  EXPECT_EQ(w.retries(), 0u);
  EXPECT_EQ(w.rto_ns(), config.rto_ns);
  EXPECT_EQ(w.timer_deadline(), now + 7 + config.rto_ns);
  // No progress: no reset.
  ASSERT_EQ(w.OnTimer(w.timer_deadline()), TimerVerdict::kSendUnack);
  w.OnAck(1, now + 9, [](int, uint32_t, bool) {});
  EXPECT_EQ(w.retries(), 1u);
}

TEST(SendWindowTest, TimerBackoff) {
  const ChannelConfig config = SmallConfig();  // 10 us .. 80 us, 5 retries
  Window w(config);
  EXPECT_EQ(w.OnTimer(UINT64_MAX - 1), TimerVerdict::kIdle);  // empty
  w.Push(0, 1, 0, false, 0);
  EXPECT_EQ(w.rto_ns(), 10'000u);
  EXPECT_EQ(w.OnTimer(9'999), TimerVerdict::kIdle);
  const uint64_t expected_rto[] = {20'000, 40'000, 80'000, 80'000, 80'000};
  uint64_t now = 10'000;
  for (uint32_t i = 0; i < config.max_retries; ++i) {
    ASSERT_EQ(w.OnTimer(now), TimerVerdict::kSendUnack) << i;
    EXPECT_EQ(w.retries(), i + 1);
    EXPECT_EQ(w.rto_ns(), expected_rto[i]);
    EXPECT_EQ(w.timer_deadline(), now + expected_rto[i]);
    EXPECT_EQ(w.OnTimer(now + 1), TimerVerdict::kIdle);
    now += expected_rto[i];
  }
  EXPECT_EQ(w.OnTimer(now - 1), TimerVerdict::kIdle);
  EXPECT_EQ(w.OnTimer(now), TimerVerdict::kDown);
  EXPECT_EQ(w.OnTimer(now + 1), TimerVerdict::kDown);  // until Reset
  EXPECT_EQ(w.in_flight_packets(), 1u);
  int released = 0;
  w.Reset([&](int, uint32_t, bool) { ++released; });
  EXPECT_EQ(released, 1);
  EXPECT_EQ(w.OnTimer(UINT64_MAX - 1), TimerVerdict::kIdle);
  EXPECT_EQ(w.retries(), 0u);
  EXPECT_EQ(w.rto_ns(), config.rto_ns);
}

// The reply to a window-full UNACK speaks only for what was sent before the
// UNACK: packets sent after it are on their way, not lost.
TEST(SendWindowTest, ProbeReplyResendsOnlyWhatWentBeforeTheUnack) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  PushN(w, 0, 6, 1, 0);
  ASSERT_TRUE(w.UnackDueOnFullWindow(100));  // the UNACK leaves after 0..5
  PushN(w, 6, 2, 1, 200);                    // 6 and 7 after it
  std::vector<int> resent;
  auto retransmit = [&](int h) { resent.push_back(h); };
  auto release = [](int, uint32_t, bool) {};
  ASSERT_EQ(w.OnAck(3, 1000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.GoBackNOnProbeReply(3, 1000, retransmit), 3u);
  EXPECT_EQ(resent, (std::vector<int>{3, 4, 5}));
  // A duplicate reply (nothing outstanding) resends nothing.
  resent.clear();
  EXPECT_EQ(
      w.GoBackNOnProbeReply(3, 1000 + config.nack_interval_ns, retransmit), 0u);
  // A reply whose ack covers everything before the UNACK: nothing lost.
  ASSERT_TRUE(w.UnackDueOnFullWindow(1000 + config.nack_interval_ns));
  ASSERT_EQ(w.OnAck(8, 2000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.GoBackNOnProbeReply(8, 2000, retransmit), 0u);
  EXPECT_TRUE(resent.empty());
  // A NACK still goes back over everything in flight.
  PushN(w, 8, 3, 1, 3000);
  EXPECT_EQ(w.GoBackN(8, 3000, retransmit), 3u);
}

TEST(SendWindowTest, GoBackNRetransmitsFromTheReportedNumber) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  PushN(w, 0, 6, 1, 0);
  std::vector<int> resent;
  auto retransmit = [&](int h) { resent.push_back(h); };
  auto release = [](int, uint32_t, bool) {};
  ASSERT_EQ(w.OnAck(2, 1000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.GoBackN(2, 1000, retransmit), 4u);
  EXPECT_EQ(resent, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_EQ(w.timer_deadline(), 1000 + config.rto_ns);
  // The same start within nack_interval: damped.
  resent.clear();
  EXPECT_EQ(w.GoBackN(2, 1000 + config.nack_interval_ns - 1, retransmit), 0u);
  EXPECT_TRUE(resent.empty());
  // After the interval: again.
  EXPECT_EQ(w.GoBackN(2, 1000 + config.nack_interval_ns, retransmit), 4u);
  // A later start (progress in between) is not damped.
  resent.clear();
  ASSERT_EQ(w.OnAck(4, 1600, release), AckVerdict::kProgress);
  EXPECT_EQ(w.GoBackN(4, 1600, retransmit), 2u);
  EXPECT_EQ(resent, (std::vector<int>{4, 5}));
  // Nothing to resend at next_seq, before base (a late NACK) or beyond.
  EXPECT_EQ(w.GoBackN(6, 5000, retransmit), 0u);
  EXPECT_EQ(w.GoBackN(3, 5000, retransmit), 0u);
  EXPECT_EQ(w.GoBackN(7, 5000, retransmit), 0u);
  EXPECT_EQ(w.base(), 4u);
}

TEST(SendWindowTest, GoBackNDoesNotResetTheBackoff) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  PushN(w, 0, 2, 1, 0);
  ASSERT_EQ(w.OnTimer(w.timer_deadline()), TimerVerdict::kSendUnack);
  const uint64_t rto = w.rto_ns();
  EXPECT_EQ(w.GoBackN(0, 50'000, [](int) {}), 2u);
  EXPECT_EQ(w.rto_ns(), rto);
  EXPECT_EQ(w.retries(), 1u);
  EXPECT_EQ(w.timer_deadline(), 50'000 + rto);
}

TEST(SendWindowTest, GoBackNWithReleaseAppliesTheAckFirst) {
  Window w(SmallConfig());
  PushN(w, 0, 5, 1, 0);
  std::vector<int> released;
  std::vector<int> resent;
  EXPECT_EQ(w.GoBackN(
                3, 100, [&](int h, uint32_t, bool) { released.push_back(h); },
                [&](int h) { resent.push_back(h); }),
            2u);
  EXPECT_EQ(released, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(resent, (std::vector<int>{3, 4}));
  EXPECT_EQ(w.base(), 3u);
}

TEST(SendWindowTest, NackAndUnackFloodCostsOneWindowPerInterval) {
  const ChannelConfig config = SmallConfig();  // nack_interval 500 ns
  Window w(config);
  PushN(w, 0, 8, 1, 0);
  ReceiveWindow rx(config);  // the peer, answering UNACKs
  uint64_t resent = 0;
  uint32_t unacks = 0;
  uint32_t probe_replies = 0;
  // 10,000 NACKs and 10,000 UNACK round trips, one every 5 ns: 50 us, i.e.
  // 100 intervals.
  const uint64_t step = 5;
  const uint64_t span = 10'000 * step;
  for (uint64_t i = 0; i < 10'000; ++i) {
    const uint64_t now = i * step;
    resent += w.GoBackN(0, now, [](int) {});  // a NACK for 0
    if (w.UnackDueOnFullWindow(now)) {
      ++unacks;
    }
    rx.OnUnack();  // a flood of UNACKs
    if (rx.AckDue(now)) {
      ++probe_replies;
      rx.OnAckSent();
      resent += w.GoBackN(rx.expected(), now, [](int) {});  // reply
    }
  }
  const uint64_t intervals = span / config.nack_interval_ns;
  EXPECT_EQ(unacks, intervals);
  EXPECT_EQ(probe_replies, 10'000u);
  EXPECT_LE(resent, (intervals + 1) * config.window_packets);
  EXPECT_GE(resent, intervals * config.window_packets);
}

TEST(SendWindowTest, UnackOnFullWindowDamped) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  EXPECT_TRUE(w.UnackDueOnFullWindow(1000));
  EXPECT_FALSE(w.UnackDueOnFullWindow(1000));
  EXPECT_FALSE(w.UnackDueOnFullWindow(1000 + config.nack_interval_ns - 1));
  EXPECT_TRUE(w.UnackDueOnFullWindow(1000 + config.nack_interval_ns));
}

TEST(SendWindowTest, ResetReleasesEverythingInOrder) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  PushN(w, 0, 6, 100, 0);
  w.OnAck(2, 10, [](int, uint32_t, bool) {});
  ASSERT_EQ(w.OnTimer(w.timer_deadline()), TimerVerdict::kSendUnack);
  std::vector<Released> released;
  w.Reset([&](int h, uint32_t txn, bool completes) {
    released.push_back({h, txn, completes});
  });
  EXPECT_EQ(released,
            (std::vector<Released>{
                {2, 2, false}, {3, 3, false}, {4, 4, false}, {5, 5, true}}));
  EXPECT_EQ(w.next_seq(), 0u);
  EXPECT_EQ(w.base(), 0u);
  EXPECT_EQ(w.in_flight_packets(), 0u);
  EXPECT_EQ(w.in_flight_bytes(), 0u);
  EXPECT_EQ(w.retries(), 0u);
  EXPECT_EQ(w.rto_ns(), config.rto_ns);
  EXPECT_EQ(w.timer_deadline(), UINT64_MAX);
  // A go-back-N from 0 right after is not damped by the old session.
  PushN(w, 0, 2, 1, 20);
  EXPECT_EQ(w.GoBackN(0, 20, [](int) {}), 2u);
}

TEST(SendWindowTest, WrapsAround) {
  const ChannelConfig config = SmallConfig();
  Window w(config);
  Peer::SetSeq(w, 0xfffffffc);
  PushN(w, 0, 8, 10, 0);
  EXPECT_EQ(w.next_seq(), 4u);
  EXPECT_EQ(w.in_flight_packets(), 8u);
  EXPECT_FALSE(w.CanSend(0));
  std::vector<int> released;
  auto release = [&](int h, uint32_t, bool) { released.push_back(h); };
  EXPECT_EQ(w.OnAck(5, 0, release), AckVerdict::kInvalid);
  EXPECT_EQ(w.OnAck(0xfffffffb, 0, release), AckVerdict::kNoChange);
  EXPECT_EQ(w.OnAck(0xfffffffc - config.window_packets - 1, 0, release),
            AckVerdict::kInvalid);
  EXPECT_EQ(w.OnAck(0xfffffffe, 0, release), AckVerdict::kProgress);
  EXPECT_EQ(released, (std::vector<int>{0, 1}));
  std::vector<int> resent;
  EXPECT_EQ(w.GoBackN(0xffffffff, 0, [&](int h) { resent.push_back(h); }), 5u)
      << "no ack applied: resends from the reported number only";
  EXPECT_EQ(resent, (std::vector<int>{3, 4, 5, 6, 7}));
  EXPECT_EQ(w.OnAck(1, 10, release), AckVerdict::kProgress);
  EXPECT_EQ(released, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(w.in_flight_packets(), 3u);
  EXPECT_EQ(w.in_flight_bytes(), 30u);
  EXPECT_EQ(w.OnAck(4, 10, release), AckVerdict::kProgress);
  EXPECT_EQ(w.in_flight_packets(), 0u);
  EXPECT_EQ(released.size(), 8u);
}

// ---------------------------------------------------------------- transactions

// ---------------------------------------------------------------- selective

TEST(SackNegotiationTest, ActiveOnlyWhenBothSpeakIt) {
  SackNegotiation gbn;  // the default: GO_BACK_N
  EXPECT_EQ(gbn.advert(), 0u);
  EXPECT_FALSE(gbn.OnControl(true));
  EXPECT_FALSE(gbn.active());
  SackNegotiation sel(Recovery::kSelective);
  EXPECT_EQ(sel.advert(), kSackCapable);
  EXPECT_FALSE(sel.active());
  EXPECT_FALSE(sel.OnControl(false));  // a GO_BACK_N peer's control packet
  EXPECT_FALSE(sel.active());
  EXPECT_TRUE(sel.OnControl(true));  // first advert: answer it at once
  EXPECT_TRUE(sel.active());
  EXPECT_FALSE(sel.OnControl(true));  // known already
  sel.Reset();                        // a new session
  EXPECT_FALSE(sel.active());
  EXPECT_STREQ(RecoveryName(Recovery::kGoBackN), "GO_BACK_N");
  EXPECT_STREQ(RecoveryName(Recovery::kSelective), "SELECTIVE");
}

TEST(ReorderBufferTest, HoldsWithinTheSpanUpToItsCapacity) {
  ReorderBuffer<int> buffer(8, 3);
  using V = ReorderBuffer<int>::HoldVerdict;
  EXPECT_EQ(buffer.Hold(10, 10, 1), V::kOutside);  // the expected one
  EXPECT_EQ(buffer.Hold(9, 10, 1), V::kOutside);   // delivered already
  EXPECT_EQ(buffer.Hold(18, 10, 1), V::kOutside);  // beyond the window
  EXPECT_EQ(buffer.Hold(12, 10, 12), V::kHeld);
  EXPECT_EQ(buffer.Hold(12, 10, 99), V::kDuplicate);
  EXPECT_EQ(buffer.Hold(17, 10, 17), V::kHeld);
  EXPECT_EQ(buffer.Hold(11, 10, 11), V::kHeld);
  EXPECT_EQ(buffer.Hold(13, 10, 13), V::kFull);  // bounded: never grows
  EXPECT_EQ(buffer.count(), 3u);
  uint8_t sack[4] = {0xff, 0xff, 0xff, 0xff};
  // Bits 1, 2 and 7 after expected 10: 0b01100001.
  ASSERT_EQ(buffer.WriteSack(10, sack, sizeof sack), 1u);
  EXPECT_EQ(sack[0], 0x61);
  int h = 0;
  EXPECT_FALSE(buffer.Take(10, &h));
  ASSERT_TRUE(buffer.Take(11, &h));
  EXPECT_EQ(h, 11);
  ASSERT_TRUE(buffer.Take(12, &h));
  EXPECT_EQ(h, 12);
  // Expected is 13 now: 17 is bit 4.
  ASSERT_EQ(buffer.WriteSack(13, sack, sizeof sack), 1u);
  EXPECT_EQ(sack[0], 0x08);
  std::vector<int> released;
  buffer.Reset([&](int handle) { released.push_back(handle); });
  EXPECT_EQ(released, std::vector<int>{17});
  EXPECT_EQ(buffer.count(), 0u);
  EXPECT_EQ(buffer.WriteSack(13, sack, sizeof sack), 0u);
}

TEST(ReorderBufferTest, SackSpansBytesAndWraps) {
  ReorderBuffer<int> buffer(64, 64);
  const uint32_t expected = 0xfffffffcu;  // wraps past 2^32
  ASSERT_EQ(buffer.Hold(expected + 20, expected, 1),
            ReorderBuffer<int>::HoldVerdict::kHeld);
  uint8_t sack[8] = {};
  ASSERT_EQ(buffer.WriteSack(expected, sack, sizeof sack), 3u);
  EXPECT_EQ(sack[0], 0);
  EXPECT_EQ(sack[1], 0);
  EXPECT_EQ(sack[2], 0x08);  // bit 20
  // A bitmap longer than allowed is cut, never overrun.
  EXPECT_EQ(buffer.WriteSack(expected, sack, 2), 2u);
}

TEST(SendWindowTest, SackChecks) {
  Window w(SmallConfig());
  PushN(w, 0, 6, 10, 0);                 // 0..5 in flight
  const uint8_t ok[] = {0x50};           // 1 and 3 after ack 0
  const uint8_t overlap[] = {0x80};      // ack itself
  const uint8_t never[] = {0x00, 0x40};  // 9: never sent
  const uint8_t last_sent[] = {0x04};    // 5: the last one sent
  const uint8_t beyond[] = {0x02};       // 6: next_seq
  EXPECT_EQ(w.CheckSack(0, ok), SackVerdict::kOk);
  EXPECT_EQ(w.CheckSack(0, overlap), SackVerdict::kOverlapsAck);
  EXPECT_EQ(w.CheckSack(0, never), SackVerdict::kNeverSent);
  EXPECT_EQ(w.CheckSack(0, last_sent), SackVerdict::kOk);
  EXPECT_EQ(w.CheckSack(0, beyond), SackVerdict::kNeverSent);
  EXPECT_EQ(w.CheckSack(0, {}), SackVerdict::kOk);
}

TEST(SendWindowTest, SackResendsOnlyTheHoles) {
  Window w(SmallConfig());
  PushN(w, 0, 8, 10, 0);  // 0..7
  std::vector<int> resent;
  auto retransmit = [&](int handle) { resent.push_back(handle); };
  // 0 lost; 1, 2 arrived: not enough to call 0 lost (reordering).
  const uint8_t two[] = {0x60};
  EXPECT_EQ(w.OnSack(0, two, false, 0, 100, retransmit), 0u);
  EXPECT_TRUE(w.sacked(1));
  EXPECT_TRUE(w.sacked(2));
  // 4 arrived too (3 lost as well): 0 is kSackHoleThreshold behind 3 of
  // them; 3 is not yet.
  const uint8_t more[] = {0x68};
  EXPECT_EQ(w.OnSack(0, more, false, 0, 200, retransmit), 1u);
  EXPECT_EQ(resent, std::vector<int>{0});
  // 5, 6 arrived: 3 is a hole now; 0 is not resent again (its copy was
  // sent after everything SACKed so far).
  const uint8_t most[] = {0x6e};
  EXPECT_EQ(w.OnSack(0, most, false, 0, 300, retransmit), 1u);
  EXPECT_EQ(resent, (std::vector<int>{0, 3}));
  // The timer: a probe reply to an UNACK sent at next_seq 8 resends what
  // it does not cover: 7, not the SACKed ones, nor 0 and 3 (resent less
  // than nack_interval_ns ago).
  EXPECT_EQ(w.OnSack(0, most, true, 8, 400, retransmit), 1u);
  EXPECT_EQ(resent, (std::vector<int>{0, 3, 7}));
  // The cumulative ack releases SACKed packets only now, each once.
  std::vector<Released> released;
  w.OnAck(8, 500, [&](int h, uint32_t txn, bool completes) {
    released.push_back({h, txn, completes});
  });
  EXPECT_EQ(released.size(), 8u);
  EXPECT_EQ(w.in_flight_packets(), 0u);
}

TEST(SendWindowTest, ProbeReplyToAnOlderUnackResendsNothingNewer) {
  Window w(SmallConfig());
  PushN(w, 0, 4, 10, 0);  // 0..3; an UNACK went out at next_seq 4
  PushN(w, 4, 4, 10, 0);  // 4..7 sent after it
  std::vector<int> resent;
  auto retransmit = [&](int handle) { resent.push_back(handle); };
  // The reply says 0..3 arrived (ack 4): nothing it covers is missing, and
  // 4..7 may still be on their way.
  w.OnAck(4, 10, [](int, uint32_t, bool) {});
  EXPECT_EQ(w.OnSack(4, {}, true, 4, 10, retransmit), 0u);
  // A reply to an UNACK sent at 8 that says only 4 arrived: 5..7 are lost.
  const uint8_t four[] = {0x00};
  EXPECT_EQ(w.OnSack(4, four, true, 8, 20, retransmit), 4u);
  EXPECT_EQ(resent, (std::vector<int>{4, 5, 6, 7}));
}

TEST(SendWindowTest, SackedPacketsLeaveTheWindowUpToTwice) {
  ChannelConfig config = SmallConfig();  // 8 packets, 8000 bytes
  Window w(config);
  PushN(w, 0, 8, 100, 0);
  EXPECT_FALSE(w.CanSend(100));  // go-back-N: full
  // 1..7 SACKed, 0 missing: they are out of the network.
  const uint8_t held[] = {0x7f};
  w.OnSack(0, held, false, 0, 0, [](int) {});
  EXPECT_TRUE(w.CanSend(100));
  PushN(w, 8, 7, 100, 0);  // 7 more unSACKed (8 with the hole)
  EXPECT_FALSE(w.CanSend(100));
  // Everything after the hole SACKed: still at most twice the window.
  const uint8_t all[] = {0x7f, 0xff};
  w.OnSack(0, all, false, 0, 0, [](int) {});
  EXPECT_TRUE(w.CanSend(100));
  PushN(w, 15, 1, 100, 0);
  EXPECT_EQ(w.in_flight_packets(), 16u);
  EXPECT_FALSE(w.CanSend(100));
  int released = 0;
  w.OnAck(16, 1, [&](int h, uint32_t, bool) { EXPECT_EQ(h, released++); });
  EXPECT_EQ(released, 16);
  EXPECT_EQ(w.in_flight_bytes(), 0u);
  PushN(w, 16, 8, 100, 0);  // the whole window again
  EXPECT_FALSE(w.CanSend(100));
}

TEST(SendWindowTest, GoBackNSkipsSackedPackets) {
  Window w(SmallConfig());
  PushN(w, 0, 4, 10, 0);
  const uint8_t held[] = {0x40};  // 1
  w.OnSack(0, held, false, 0, 0, [](int) {});
  std::vector<int> resent;
  EXPECT_EQ(w.GoBackN(0, 0, [&](int h) { resent.push_back(h); }), 3u);
  EXPECT_EQ(resent, (std::vector<int>{0, 2, 3}));
}

// ---------------------------------------------------------------- adaptive

TEST(RttEstimatorTest, FollowsRfc6298) {
  RttEstimator e(1'000'000, 10'000, 5'000'000, 2'000);
  EXPECT_EQ(e.rto_ns(), 1'000'000u);  // before any sample: the initial one
  e.OnSample(40'000);
  EXPECT_EQ(e.srtt_ns(), 40'000u);
  EXPECT_EQ(e.rttvar_ns(), 20'000u);
  EXPECT_EQ(e.rto_ns(), 40'000u + 4 * 20'000u);
  e.OnSample(48'000);
  // RTTVAR = 3/4 20000 + 1/4 |40000 - 48000|; SRTT = 7/8 40000 + 1/8 48000.
  EXPECT_EQ(e.rttvar_ns(), 17'000u);
  EXPECT_EQ(e.srtt_ns(), 41'000u);
  EXPECT_EQ(e.rto_ns(), 41'000u + 68'000u);
  // A steady round trip: RTTVAR decays, G (2 us) then the floor hold.
  for (int i = 0; i < 200; ++i) e.OnSample(41'000);
  EXPECT_EQ(e.srtt_ns(), 41'000u);
  EXPECT_EQ(e.rto_ns(), 43'000u);  // SRTT + G
  for (int i = 0; i < 200; ++i) e.OnSample(1'000);
  EXPECT_EQ(e.rto_ns(), 10'000u);  // the floor
  EXPECT_EQ(e.samples(), 402u);
  e.Reset();
  EXPECT_EQ(e.rto_ns(), 1'000'000u);
}

TEST(RttEstimatorTest, AbsurdSamplesStayWithinTheBounds) {
  RttEstimator e(1'000'000, 10'000, 5'000'000, 0);
  e.OnSample(UINT64_MAX);  // a broken clock: clamped, no overflow
  EXPECT_EQ(e.srtt_ns(), RttEstimator::kMaxSampleNs);
  EXPECT_EQ(e.rto_ns(), 5'000'000u);  // the ceiling
  for (int i = 0; i < 1000; ++i) e.OnSample(i % 2 == 0 ? UINT64_MAX : 0);
  EXPECT_LE(e.rto_ns(), 5'000'000u);
  EXPECT_GE(e.rto_ns(), 10'000u);
  for (int i = 0; i < 1000; ++i) e.OnSample(0);
  EXPECT_EQ(e.rto_ns(), 10'000u);
  RttEstimator inverted(1'000, 9'000, 5'000, 0);  // min above max: max wins
  inverted.OnSample(1);
  EXPECT_EQ(inverted.rto_ns(), 5'000u);
}

TEST(SendWindowTest, AdaptiveTimeoutFollowsTheMeasuredRoundTrip) {
  const ChannelConfig config = AdaptiveConfig();  // 10 us first, 80 us max
  Window w(config);
  PushN(w, 0, 2, 1, 1'000);
  EXPECT_EQ(w.timer_deadline(), 1'000 + config.rto_ns);  // no sample yet
  auto release = [](int, uint32_t, bool) {};
  // Packet 0 acknowledged 3 us after it left: SRTT 3, RTTVAR 1.5 us; RTO =
  // 3 + max(1, 6) = 9 us.
  ASSERT_EQ(w.OnAck(1, 4'000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.rtt().samples(), 1u);
  EXPECT_EQ(w.rtt().srtt_ns(), 3'000u);
  EXPECT_EQ(w.rto_ns(), 9'000u);
  EXPECT_EQ(w.timer_deadline(), 4'000u + 9'000u);
  // Many 3 us round trips: the timeout settles at SRTT + G, 4 us, well
  // below the configured 10 us, above the 2 us floor.
  uint64_t now = 4'000;
  for (int i = 0; i < 100; ++i) {
    w.Push(100 + i, 1, 0, false, now);
    now += 3'000;
    ASSERT_EQ(w.OnAck(w.next_seq(), now, release), AckVerdict::kProgress);
  }
  EXPECT_EQ(w.rtt().srtt_ns(), 3'000u);
  EXPECT_EQ(w.rto_ns(), 4'000u);
  // Expiry doubles it (up to rto_max_ns); progress resets it to the
  // estimate, not to rto_ns.
  w.Push(1, 1, 0, false, now);
  ASSERT_EQ(w.timer_deadline(), now + 4'000);
  now += 4'000;
  ASSERT_EQ(w.OnTimer(now), TimerVerdict::kSendUnack);
  EXPECT_EQ(w.rto_ns(), 8'000u);
  now += 8'000;
  ASSERT_EQ(w.OnTimer(now), TimerVerdict::kSendUnack);
  EXPECT_EQ(w.rto_ns(), 16'000u);
  // The ack after the stall is a (long) sample: the packet went once.
  ASSERT_EQ(w.OnAck(w.next_seq(), now + 1'000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.retries(), 0u);
  EXPECT_EQ(w.rto_ns(), w.rtt().rto_ns());
  EXPECT_LT(w.rto_ns(), config.rto_max_ns);
}

TEST(SendWindowTest, TimeoutStaysWithinItsBounds) {
  ChannelConfig config = AdaptiveConfig();  // [2 us, 80 us]
  Window w(config);
  auto release = [](int, uint32_t, bool) {};
  uint64_t now = 0;
  // Round trips of 1 ms: the estimate would be 1 ms and more; the ceiling
  // holds.
  for (int i = 0; i < 20; ++i) {
    w.Push(i, 1, 0, false, now);
    now += 1'000'000;
    ASSERT_EQ(w.OnAck(w.next_seq(), now, release), AckVerdict::kProgress);
    EXPECT_LE(w.rto_ns(), config.rto_max_ns);
  }
  EXPECT_EQ(w.rto_ns(), config.rto_max_ns);
  // Instant acks (0 ns: a peer acknowledging what has not arrived yet): the
  // floor holds.
  for (int i = 0; i < 200; ++i) {
    w.Push(i, 1, 0, false, now);
    ASSERT_EQ(w.OnAck(w.next_seq(), now, release), AckVerdict::kProgress);
    EXPECT_GE(w.rto_ns(), config.rto_min_ns);
  }
  // SRTT and RTTVAR went to 0: G (1 us) is below the floor (2 us).
  EXPECT_EQ(w.rto_ns(), config.rto_min_ns);
  // Bogus acks change nothing: never sent, far behind.
  const uint64_t samples = w.rtt().samples();
  const uint64_t rto = w.rto_ns();
  w.Push(0, 1, 0, false, now);
  EXPECT_EQ(w.OnAck(w.next_seq() + 5, now + 1, release), AckVerdict::kInvalid);
  EXPECT_EQ(w.OnAck(w.base() - 100, now + 1, release), AckVerdict::kInvalid);
  EXPECT_EQ(w.rtt().samples(), samples);
  EXPECT_EQ(w.rto_ns(), rto);
  // An ack "before" the packet left (a clock that went backwards): no
  // sample, still progress.
  EXPECT_EQ(w.OnAck(w.next_seq(), now - 10, release), AckVerdict::kProgress);
  EXPECT_EQ(w.rtt().samples(), samples);
}

TEST(SendWindowTest, KarnNoSampleFromResentPackets) {
  const ChannelConfig config = AdaptiveConfig();
  Window w(config);
  auto release = [](int, uint32_t, bool) {};
  PushN(w, 0, 4, 1, 0);
  // Go-back-N resends 0..3: their ack may answer either copy.
  ASSERT_EQ(w.GoBackN(0, 50'000, [](int) {}), 4u);
  ASSERT_EQ(w.OnAck(4, 51'000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.rtt().samples(), 0u);
  EXPECT_EQ(w.karn_skips(), 1u);
  EXPECT_EQ(w.rto_ns(), config.rto_ns);  // still the first timeout
  // An ack releasing a resent packet and a fresh one: the fresh one may
  // have waited behind the hole at the receiver, so no sample either.
  PushN(w, 4, 2, 1, 60'000);
  ASSERT_EQ(w.GoBackN(4, 61'000, [](int) {}), 2u);
  w.Push(6, 1, 0, false, 62'000);
  ASSERT_EQ(w.OnAck(7, 63'000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.rtt().samples(), 0u);
  EXPECT_EQ(w.karn_skips(), 2u);
  // A packet sent once and acknowledged alone: a sample.
  w.Push(7, 1, 0, false, 70'000);
  ASSERT_EQ(w.OnAck(8, 72'000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.rtt().samples(), 1u);
  EXPECT_EQ(w.rtt().srtt_ns(), 2'000u);
  // SELECTIVE: a SACK of a packet sent once is a sample; of a resent one,
  // not; the cumulative ack releasing SACKed packets is none.
  PushN(w, 8, 8, 1, 80'000);       // 8..15
  const uint8_t first[] = {0x40};  // 9 arrived, 3 us later
  w.OnSack(8, first, false, 0, 83'000, [](int) {});
  EXPECT_EQ(w.rtt().samples(), 2u);
  ASSERT_EQ(w.GoBackN(10, 84'000, [](int) {}), 6u);  // 10..15 resent
  const uint8_t resent[] = {0x70};                   // 9, 10, 11
  w.OnSack(8, resent, false, 0, 85'000, [](int) {});
  EXPECT_EQ(w.rtt().samples(), 2u);
  ASSERT_EQ(w.OnAck(16, 86'000, release), AckVerdict::kProgress);
  EXPECT_EQ(w.rtt().samples(), 2u);
}

TEST(SendWindowTest, AdaptiveChannelIsNotDownBeforeDownAfter) {
  // A 3 us round trip makes the timeout 4 us; expiries come fast, but the
  // channel goes down only DownAfterNs after the last progress, exactly
  // then, having sent more UNACKs than max_retries.
  const ChannelConfig config = AdaptiveConfig();
  Window w(config);
  auto release = [](int, uint32_t, bool) {};
  uint64_t now = 0;
  for (int i = 0; i < 50; ++i) {
    w.Push(i, 1, 0, false, now);
    now += 3'000;
    ASSERT_EQ(w.OnAck(w.next_seq(), now, release), AckVerdict::kProgress);
  }
  ASSERT_LT(w.rto_ns(), config.rto_ns);
  w.Push(1, 1, 0, false, now);
  const uint64_t start = now;
  uint32_t unacks = 0;
  for (;;) {
    ASSERT_LT(unacks, 100u);
    now = w.timer_deadline();
    const TimerVerdict verdict = w.OnTimer(now);
    if (verdict == TimerVerdict::kDown) break;
    ASSERT_EQ(verdict, TimerVerdict::kSendUnack);
    ++unacks;
  }
  EXPECT_EQ(now - start, DownAfterNs(config));
  EXPECT_GT(unacks, config.max_retries);
}

TEST(TransactionTableTest, ForEachMayEndWhatItIsGiven) {
  TransactionTable<int> table(8);
  for (int i = 0; i < 5; ++i) table.Begin(PacketType::kReadRequest, i);
  std::vector<int> seen;
  table.ForEach([&](uint32_t txn, int& cookie) {
    seen.push_back(cookie);
    if (cookie % 2 == 0) table.End(txn);
  });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(table.count(), 2u);
}

TEST(TransactionTableTest, BeginFindEnd) {
  TransactionTable<int> table(4);
  EXPECT_EQ(table.count(), 0u);
  const uint32_t a = table.Begin(PacketType::kReadRequest, 100);
  const uint32_t b = table.Begin(PacketType::kWriteRequest, 200);
  const uint32_t c = table.Begin(PacketType::kStream, 300);
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(c, 3u);
  EXPECT_EQ(table.count(), 3u);
  ASSERT_NE(table.Find(a, PacketType::kReadRequest), nullptr);
  EXPECT_EQ(*table.Find(a, PacketType::kReadRequest), 100);
  EXPECT_EQ(table.Find(a, PacketType::kWriteRequest), nullptr);     // type
  EXPECT_EQ(table.Find(a + 4, PacketType::kReadRequest), nullptr);  // slot
  EXPECT_EQ(table.Find(0, PacketType::kReadRequest), nullptr);
  EXPECT_EQ(table.Find(7, PacketType::kStream), nullptr);
  EXPECT_EQ(table.End(b), 200);
  EXPECT_EQ(table.Find(b, PacketType::kWriteRequest), nullptr);
  EXPECT_EQ(table.count(), 2u);
  EXPECT_FALSE(table.Full());
  table.Begin(PacketType::kStream, 400);
  table.Begin(PacketType::kStream, 500);
  EXPECT_TRUE(table.Full());
}

TEST(TransactionTableTest, SkipsIdsWhoseSlotIsTaken) {
  TransactionTable<int> table(4);
  const uint32_t old_txn = table.Begin(PacketType::kReadRequest, 1);  // slot 1
  for (int i = 0; i < 3; ++i) table.End(table.Begin(PacketType::kStream, i));
  // Ids 2, 3, 4 came and went; 5 would share slot 1 with the pending id 1.
  const uint32_t next = table.Begin(PacketType::kStream, 9);
  EXPECT_EQ(next, 6u);
  EXPECT_EQ(*table.Find(old_txn, PacketType::kReadRequest), 1);
  EXPECT_EQ(*table.Find(next, PacketType::kStream), 9);
  EXPECT_EQ(table.Find(5, PacketType::kReadRequest), nullptr);
}

TEST(TransactionTableTest, IdsWrapSkippingZero) {
  TransactionTable<int> table(4);
  Peer::SetNextTxn(table, 0xfffffffe);
  const uint32_t a = table.Begin(PacketType::kWriteRequest, 1);
  const uint32_t b = table.Begin(PacketType::kWriteRequest, 2);
  const uint32_t c = table.Begin(PacketType::kWriteRequest, 3);
  EXPECT_EQ(a, 0xfffffffeu);
  EXPECT_EQ(b, 0xffffffffu);
  EXPECT_EQ(c, 1u);
  EXPECT_EQ(table.Find(0, PacketType::kWriteRequest), nullptr);
  // Ended out of order and begun again: reuse keeps ids unique.
  table.End(b);
  // 2 would share a's slot (0xfffffffe & 3): skipped; 3 takes b's.
  const uint32_t d = table.Begin(PacketType::kWriteRequest, 4);
  EXPECT_EQ(d, 3u);
  EXPECT_EQ(*table.Find(a, PacketType::kWriteRequest), 1);
  EXPECT_EQ(*table.Find(c, PacketType::kWriteRequest), 3);
  EXPECT_EQ(*table.Find(d, PacketType::kWriteRequest), 4);
  // Oldest first across the wrap.
  std::vector<std::pair<uint32_t, int>> ended;
  table.EndAll([&](uint32_t txn, int cookie) {
    ended.push_back({txn, cookie});
  });
  EXPECT_EQ(ended, (std::vector<std::pair<uint32_t, int>>{
                       {0xfffffffe, 1}, {1, 3}, {3, 4}}));
  EXPECT_EQ(table.count(), 0u);
  EXPECT_EQ(table.Find(a, PacketType::kWriteRequest), nullptr);
}

TEST(TransactionTableTest, EndAllOldestFirst) {
  TransactionTable<int> table(8);
  // Pending ids 1, 5, 9, 12 in slots 1, 5, 2 (9 skips the pending 1's slot?
  // no: 9 & 7 = 1 is taken, so it becomes 10), ...
  std::vector<uint32_t> pending;
  for (int i = 0; i < 20; ++i) {
    const uint32_t txn = table.Begin(PacketType::kStream, i);
    if (i % 4 == 0) {
      pending.push_back(txn);
    } else {
      table.End(txn);
    }
  }
  ASSERT_EQ(table.count(), 5u);
  std::vector<uint32_t> ended;
  table.EndAll([&](uint32_t txn, int) { ended.push_back(txn); });
  EXPECT_EQ(ended, pending);
  EXPECT_EQ(table.count(), 0u);
}

TEST(TransactionTableTest, ManyWrapsStayConsistent) {
  TransactionTable<uint32_t> table(16);
  Peer::SetNextTxn(table, 0xffffff00);
  std::mt19937 rng(7);
  std::deque<uint32_t> live;
  for (int i = 0; i < 5000; ++i) {
    if (!table.Full() && (live.empty() || rng() % 2 == 0)) {
      const uint32_t txn = table.Begin(PacketType::kStream, 0);
      EXPECT_NE(txn, 0u);
      for (uint32_t other : live) ASSERT_NE(other, txn);
      *table.Find(txn, PacketType::kStream) = txn;
      live.push_back(txn);
    } else {
      const size_t k = rng() % live.size();
      const uint32_t txn = live[k];
      ASSERT_NE(table.Find(txn, PacketType::kStream), nullptr);
      EXPECT_EQ(table.End(txn), txn);
      live.erase(live.begin() + k);
    }
    ASSERT_EQ(table.count(), live.size());
  }
}

namespace sim {
using namespace ::spinnic::diad::sim;  // NOLINT: the simulation's names
using ::spinnic::diad::sim::Endpoint;  // not wire.h's Endpoint

// ------------------------------------------------------------ the tests

ChannelConfig SimConfig() {
  ChannelConfig config;
  config.window_packets = 64;
  config.window_bytes = 16 << 10;
  config.max_transactions = 16;
  config.ack_every = 8;
  config.ack_delay_ns = 20'000;
  config.rto_ns = 1'000'000;
  config.rto_max_ns = 16'000'000;
  config.max_retries = 8;
  config.nack_interval_ns = 200'000;
  config.receive_span = 1u << 20;
  return config;
}

Impairments Lossy() {
  Impairments imp;
  imp.loss = 0.05;
  imp.reorder = 0.02;
  imp.duplicate = 0.01;
  imp.corrupt = 0.005;
  return imp;
}

void ExpectExactlyOnce(Endpoint& receiver, Endpoint& sender,
                       bool allow_missing) {
  const auto& delivered = receiver.delivered();
  uint64_t once = 0;
  for (size_t m = 0; m < delivered.size(); ++m) {
    ASSERT_LE(delivered[m], 1) << "message " << m << " delivered twice";
    if (delivered[m] == 1) ++once;
    if (!allow_missing) {
      ASSERT_EQ(delivered[m], 1) << "message " << m << " lost";
    }
  }
  EXPECT_EQ(once, receiver.stats().msgs_delivered);
  // Every stream or write the sender saw complete arrived.
  for (uint32_t m : sender.completed_msgs()) {
    ASSERT_LT(m, delivered.size());
    ASSERT_EQ(delivered[m], 1) << "completed message " << m;
  }
}

class ChannelSimTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(ChannelSimTest, LossyChannelDeliversEverythingExactlyOnceInOrder) {
  const uint64_t kTransactions = 100'000;
  const ChannelConfig config = SimConfig();
  Simulation sim(GetParam(), config, Lossy(), kTransactions);
  const uint64_t end = sim.Run(uint64_t{3600} * 1'000'000'000);
  Endpoint& a = sim.ep(0);
  Endpoint& b = sim.ep(1);
  ASSERT_TRUE(a.Idle());
  ASSERT_TRUE(b.Idle());
  EXPECT_EQ(sim.queued(), 0u);
  for (int i = 0; i < 2; ++i) {
    const Endpoint& e = sim.ep(i);
    const EndpointStats& s = e.stats();
    const EndpointStats& peer = sim.ep(1 - i).stats();
    SCOPED_TRACE("endpoint " + std::to_string(i));
    EXPECT_EQ(s.txn_started, kTransactions);
    EXPECT_EQ(s.txn_ok, kTransactions);
    EXPECT_EQ(s.txn_failed, 0u);
    EXPECT_EQ(e.pending_txns(), 0u);
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(s.out_of_order_msgs, 0u);
    EXPECT_EQ(s.unknown_txn, 0u);
    // An ack more than a window behind base counts as invalid: only a frame
    // held back in the network (reordered or duplicated) can carry one.
    EXPECT_LE(s.invalid_acks, sim.net().reordered + sim.net().duplicated);
    EXPECT_EQ(s.downs, 0u);
    EXPECT_EQ(s.peer_resets, 0u);
    EXPECT_EQ(s.stale, 0u);
    EXPECT_EQ(s.outside, 0u);
    EXPECT_GE(s.msgs_delivered, 100'000u);
    // Counters add up: each message the peer sent arrived once; each packet
    // the peer pushed was accepted once and released once.
    EXPECT_EQ(s.msgs_delivered, peer.msgs_sent);
    EXPECT_EQ(s.accepted, peer.data_pushed);
    EXPECT_EQ(s.data_pushed, s.data_released);
    EXPECT_EQ(e.held_frames(), 0u);
    EXPECT_EQ(e.tx().in_flight_packets(), 0u);
    EXPECT_EQ(e.tx().in_flight_bytes(), 0u);
    EXPECT_EQ(s.frames_rx, s.bad_checksum + s.stale + s.acks_rx + s.nacks_rx +
                               s.unacks_rx + s.accepted + s.duplicates +
                               s.gaps + s.outside);
    ExpectExactlyOnce(sim.ep(i), sim.ep(1 - i), /*allow_missing=*/false);
  }
  const NetStats& n = sim.net();
  const EndpointStats& sa = a.stats();
  const EndpointStats& sb = b.stats();
  // Frames: every one sent or duplicated was lost or arrived; the corrupted
  // ones were all caught by the checksum.
  EXPECT_EQ(n.sent + n.duplicated, n.lost + n.arrived);
  EXPECT_EQ(n.sent, sa.data_pushed + sa.retransmitted + sa.acks_sent +
                        sa.probe_replies_sent + sa.nacks_sent + sa.unacks_sent +
                        sb.data_pushed + sb.retransmitted + sb.acks_sent +
                        sb.probe_replies_sent + sb.nacks_sent + sb.unacks_sent);
  EXPECT_EQ(n.arrived, sa.frames_rx + sb.frames_rx);
  EXPECT_EQ(sa.bad_checksum + sb.bad_checksum, n.corrupted);
  EXPECT_EQ(sim.pool().live(), 0u);  // no frame leaked anywhere
  std::printf(
      "seed %llu: %.3f s simulated, %llu events; msgs A->B %llu B->A %llu; "
      "retransmitted A %llu B %llu; NACKs A %llu B %llu; UNACKs A %llu B "
      "%llu (timer %llu/%llu); probe replies %llu/%llu; ACKs %llu/%llu; "
      "net sent %llu lost %llu dup %llu reord %llu corrupt %llu\n",
      static_cast<unsigned long long>(GetParam()), end / 1e9,
      static_cast<unsigned long long>(sim.events()),
      static_cast<unsigned long long>(sb.msgs_delivered),
      static_cast<unsigned long long>(sa.msgs_delivered),
      static_cast<unsigned long long>(sa.retransmitted),
      static_cast<unsigned long long>(sb.retransmitted),
      static_cast<unsigned long long>(sa.nacks_sent),
      static_cast<unsigned long long>(sb.nacks_sent),
      static_cast<unsigned long long>(sa.unacks_sent),
      static_cast<unsigned long long>(sb.unacks_sent),
      static_cast<unsigned long long>(sa.unacks_timer),
      static_cast<unsigned long long>(sb.unacks_timer),
      static_cast<unsigned long long>(sa.probe_replies_sent),
      static_cast<unsigned long long>(sb.probe_replies_sent),
      static_cast<unsigned long long>(sa.acks_sent),
      static_cast<unsigned long long>(sb.acks_sent),
      static_cast<unsigned long long>(n.sent),
      static_cast<unsigned long long>(n.lost),
      static_cast<unsigned long long>(n.duplicated),
      static_cast<unsigned long long>(n.reordered),
      static_cast<unsigned long long>(n.corrupted));
}

TEST_P(ChannelSimTest, PeerThatDisappearsIsDeclaredDown) {
  const ChannelConfig config = SimConfig();
  Simulation sim(GetParam(), config, Lossy(), 1'000'000);
  Endpoint& a = sim.ep(0);
  // 20 ms of traffic, then B vanishes while A has unacknowledged packets.
  sim.Run(20'000'000);
  sim.Run(UINT64_MAX, [&] { return a.tx().in_flight_packets() > 0; });
  const uint64_t kill_at = sim.now();
  ASSERT_GT(a.stats().txn_ok, 100u);
  ASSERT_EQ(a.stats().downs, 0u);
  sim.Kill(1);
  const uint64_t limit = kill_at + DownAfterNs(config) + 10 * config.rto_ns;
  sim.Run(limit, [&] { return a.stats().downs > 0; });
  ASSERT_EQ(a.stats().downs, 1u);
  const uint64_t down_after = a.down_at() - kill_at;
  EXPECT_LE(down_after, DownAfterNs(config) + config.rto_ns);
  // At the down: everything pending was ended, every held packet released.
  const Endpoint::Snapshot& d = a.at_reset();
  EXPECT_EQ(d.pending, 0u);
  EXPECT_EQ(d.held, 0u);
  EXPECT_GT(d.stats.txn_failed, 0u);
  EXPECT_EQ(d.stats.txn_started, d.stats.txn_ok + d.stats.txn_failed);
  EXPECT_EQ(d.stats.data_pushed, d.stats.data_released);
  EXPECT_EQ(a.stats().errors, 0u);
  EXPECT_EQ(a.session().peer_epoch(), 0u);  // a new session of its own
  std::printf("seed %llu: down %.3f ms after the peer vanished (bound %.3f)\n",
              static_cast<unsigned long long>(GetParam()), down_after / 1e6,
              (DownAfterNs(config) + config.rto_ns) / 1e6);
}

// The adaptive timeout in the simulation: after a lossless warm-up the
// estimate sits near the simulated round trip (5 us each way, plus the
// sender's FIFO and the receiver's ACK coalescing), far below the configured
// 1 ms; then one lost packet that only the timer can recover (nothing sent
// behind it to reveal the gap) is repaired in a few round trips. With the
// fixed timer the same loss costs the whole configured timeout.
struct RepairResult {
  uint64_t srtt_ns = 0;
  uint64_t rto_ns = 0;
  uint64_t samples = 0;
  uint64_t repair_ns = 0;
};

RepairResult LoseOneTailPacket(uint64_t seed, bool adaptive) {
  ChannelConfig config = SimConfig();
  config.adaptive_rto = adaptive;
  config.rto_min_ns = 1'000;  // let the estimate show
  Simulation sim(seed, config, Impairments{}, 300);
  Endpoint& a = sim.ep(0);
  sim.Run(UINT64_MAX);  // to idle: every transaction done
  EXPECT_TRUE(a.Idle());
  RepairResult r;
  r.srtt_ns = a.tx().rtt().srtt_ns();
  r.rto_ns = a.tx().base_rto_ns();
  r.samples = a.tx().rtt().samples();
  // One more transaction from A; its first packet is lost.
  bool dropped = false;
  sim.SetDrop([&dropped](int from, const Frame& f) {
    // The last packet of its message: nothing behind it reveals the gap.
    if (from != 0 || dropped || !IsSequenced(f.hdr.type) || !f.hdr.last()) {
      return false;
    }
    dropped = true;
    return true;
  });
  const uint64_t ok = a.stats().txn_ok;
  const uint64_t start = sim.now();
  a.AddTransactions(1);
  a.Pump(start);
  sim.Run(UINT64_MAX, [&] { return a.stats().txn_ok > ok; });
  EXPECT_TRUE(dropped);
  EXPECT_EQ(a.stats().txn_ok, ok + 1);
  EXPECT_EQ(a.stats().errors, 0u);
  r.repair_ns = sim.now() - start;
  return r;
}

TEST_P(ChannelSimTest, AdaptiveTimeoutConvergesAndRepairsALossInAFewRtts) {
  const ChannelConfig config = SimConfig();
  const RepairResult adaptive = LoseOneTailPacket(GetParam(), true);
  const RepairResult fixed = LoseOneTailPacket(GetParam(), false);
  // Near the simulated round trip: at least the 10 us of propagation, at
  // most that plus the ACK delay (20 us) and a FIFO of 16 KiB (16 us).
  EXPECT_GT(adaptive.samples, 100u);
  EXPECT_GE(adaptive.srtt_ns, 2 * Simulation::kDelayNs);
  EXPECT_LE(adaptive.srtt_ns, 2 * Simulation::kDelayNs + 40'000);
  // The timeout: SRTT plus at least the ACK delay, within the bounds, far
  // below the configured first timeout.
  EXPECT_GE(adaptive.rto_ns, adaptive.srtt_ns + config.ack_delay_ns);
  EXPECT_LE(adaptive.rto_ns, config.rto_ns / 4);
  EXPECT_EQ(fixed.rto_ns, config.rto_ns);
  // Repaired in a few round trips (timeout, UNACK, probe reply, resend,
  // response), not after the configured timeout.
  EXPECT_LE(adaptive.repair_ns, adaptive.rto_ns + 6 * adaptive.srtt_ns);
  EXPECT_LT(adaptive.repair_ns, config.rto_ns / 4);
  EXPECT_GE(fixed.repair_ns, config.rto_ns);
  std::printf(
      "seed %llu: SRTT %.1f us after %llu samples, RTO %.1f us; one tail "
      "loss repaired in %.1f us (fixed timer: %.1f us)\n",
      static_cast<unsigned long long>(GetParam()), adaptive.srtt_ns / 1e3,
      static_cast<unsigned long long>(adaptive.samples), adaptive.rto_ns / 1e3,
      adaptive.repair_ns / 1e3, fixed.repair_ns / 1e3);
}

TEST_P(ChannelSimTest, PeerRestartResynchronises) {
  const ChannelConfig config = SimConfig();
  Simulation sim(GetParam(), config, Lossy(), 1'000'000);
  Endpoint& a = sim.ep(0);
  Endpoint& b = sim.ep(1);
  sim.Run(20'000'000);
  // Restart while A has unacknowledged packets on their way to B.
  sim.Run(UINT64_MAX,
          [&] { return a.tx().in_flight_packets() > 0 && sim.queued() > 0; });
  ASSERT_GT(a.tx().in_flight_packets(), 0u);
  const uint32_t old_b_epoch = b.session().my_epoch();
  const uint64_t a_before = a.stats().msgs_delivered;
  const uint64_t b_before = b.stats().msgs_delivered;
  ASSERT_GT(a_before, 100u);
  ASSERT_GT(b_before, 100u);
  // B crashes and comes back with a new epoch and no state; frames of its
  // old session are still in flight both ways.
  b.Restart(sim.now(), sim.NewEpoch());
  EXPECT_EQ(b.at_reset().held, 0u);
  EXPECT_EQ(b.at_reset().pending, 0u);
  const uint64_t a_mark = a.stats().msgs_delivered + 2000;
  const uint64_t b_mark = b.stats().msgs_delivered + 2000;
  sim.Run(sim.now() + 10'000'000'000, [&] {
    return a.stats().msgs_delivered >= a_mark &&
           b.stats().msgs_delivered >= b_mark;
  });
  EXPECT_GE(a.stats().msgs_delivered, a_mark);
  EXPECT_GE(b.stats().msgs_delivered, b_mark);
  EXPECT_EQ(a.stats().peer_resets, 1u);
  EXPECT_EQ(b.stats().peer_resets, 0u);  // it reset itself
  EXPECT_EQ(a.stats().downs, 0u);
  EXPECT_EQ(b.stats().downs, 0u);
  EXPECT_NE(b.session().my_epoch(), old_b_epoch);
  EXPECT_EQ(a.session().peer_epoch(), b.session().my_epoch());
  EXPECT_EQ(b.session().peer_epoch(), a.session().my_epoch());
  EXPECT_GT(a.stats().txn_failed, 0u);  // pending at the reset: failed
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("endpoint " + std::to_string(i));
    const EndpointStats& s = sim.ep(i).stats();
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(s.unknown_txn, 0u);
    EXPECT_LE(s.invalid_acks, sim.net().reordered + sim.net().duplicated);
    EXPECT_EQ(s.txn_started,
              s.txn_ok + s.txn_failed + sim.ep(i).pending_txns());
    EXPECT_EQ(s.data_pushed, s.data_released + sim.ep(i).held_frames());
    EXPECT_EQ(sim.ep(i).held_frames(), sim.ep(i).tx().in_flight_packets());
    // Never twice, in this session or across the two.
    ExpectExactlyOnce(sim.ep(i), sim.ep(1 - i), /*allow_missing=*/true);
  }
  EXPECT_GT(a.stats().stale + b.stats().stale, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, ChannelSimTest, ::testing::Values(1u, 2u, 3u));

// ------------------------------------------------------- selective repeat

// Runs `transactions` each way to the end and checks the same guarantees as
// LossyChannelDeliversEverythingExactlyOnceInOrder: every transaction done,
// every message delivered once, intact and in order, every held packet
// released once, the counters adding up, no frame leaked.
void RunToTheEndAndCheck(Simulation& sim, uint64_t transactions) {
  sim.Run(uint64_t{3600} * 1'000'000'000);
  for (int i = 0; i < 2; ++i) {
    Endpoint& e = sim.ep(i);
    const EndpointStats& s = e.stats();
    const EndpointStats& peer = sim.ep(1 - i).stats();
    SCOPED_TRACE("endpoint " + std::to_string(i));
    ASSERT_TRUE(e.Idle());
    EXPECT_EQ(s.txn_started, transactions);
    EXPECT_EQ(s.txn_ok, transactions);
    EXPECT_EQ(s.txn_failed, 0u);
    EXPECT_EQ(s.errors, 0u);
    EXPECT_EQ(s.out_of_order_msgs, 0u);
    EXPECT_EQ(s.unknown_txn, 0u);
    EXPECT_LE(s.invalid_acks, sim.net().reordered + sim.net().duplicated);
    EXPECT_EQ(s.bad_sacks, 0u);
    EXPECT_EQ(s.downs, 0u);
    EXPECT_EQ(s.peer_resets, 0u);
    EXPECT_EQ(s.stale, 0u);
    EXPECT_EQ(s.outside, 0u);
    EXPECT_EQ(s.msgs_delivered, peer.msgs_sent);
    EXPECT_EQ(s.accepted, peer.data_pushed);
    EXPECT_EQ(s.data_pushed, s.data_released);
    EXPECT_EQ(s.held, s.drained);  // every held packet delivered once
    EXPECT_EQ(e.held_frames(), 0u);
    EXPECT_EQ(e.tx().in_flight_packets(), 0u);
    EXPECT_EQ(s.frames_rx, s.bad_checksum + s.stale + s.acks_rx + s.nacks_rx +
                               s.unacks_rx + (s.accepted - s.drained) +
                               s.duplicates + s.gaps + s.outside + s.held +
                               s.held_duplicates + s.reorder_full);
    ExpectExactlyOnce(sim.ep(i), sim.ep(1 - i), /*allow_missing=*/false);
  }
  EXPECT_EQ(sim.queued(), 0u);
  EXPECT_EQ(sim.net().sent + sim.net().duplicated,
            sim.net().lost + sim.net().arrived);
  EXPECT_EQ(sim.pool().live(), 0u);
}

struct SelectiveCase {
  double loss;
  uint64_t seed;
};

class SelectiveSimTest : public ::testing::TestWithParam<SelectiveCase> {};

TEST_P(SelectiveSimTest, DeliversEverythingExactlyOnceInOrder) {
  const uint64_t kTransactions = 30'000;
  Impairments imp;
  imp.loss = GetParam().loss;
  imp.reorder = 0.05;
  imp.duplicate = 0.01;
  imp.corrupt = 0.005;
  Simulation sim(GetParam().seed, SimConfig(), imp, kTransactions,
                 Recovery::kSelective, Recovery::kSelective);
  RunToTheEndAndCheck(sim, kTransactions);
  for (int i = 0; i < 2; ++i) {
    const EndpointStats& s = sim.ep(i).stats();
    SCOPED_TRACE("endpoint " + std::to_string(i));
    EXPECT_TRUE(sim.ep(i).negotiation().active());
    // Holes were reported and filled selectively: SACKs went both ways,
    // packets were held, and NACKs (go-back-N's signal) went out only
    // before the adverts had crossed (the first round trip).
    EXPECT_GT(s.sacks_sent, 0u);
    EXPECT_GT(s.sacks_rx, 0u);
    EXPECT_GT(s.held, 0u);
    EXPECT_LE(s.nacks_sent, 2u);
  }
  const EndpointStats& a = sim.ep(0).stats();
  const EndpointStats& b = sim.ep(1).stats();
  std::printf(
      "loss %.3f seed %llu: data A %llu B %llu, retransmitted A %llu B %llu "
      "(%.3f transmissions per packet), SACKs %llu/%llu, held %llu/%llu, "
      "reorder_full %llu/%llu\n",
      GetParam().loss, static_cast<unsigned long long>(GetParam().seed),
      static_cast<unsigned long long>(a.data_pushed),
      static_cast<unsigned long long>(b.data_pushed),
      static_cast<unsigned long long>(a.retransmitted),
      static_cast<unsigned long long>(b.retransmitted),
      double(a.data_pushed + b.data_pushed + a.retransmitted +
             b.retransmitted) /
          double(a.data_pushed + b.data_pushed),
      static_cast<unsigned long long>(a.sacks_sent),
      static_cast<unsigned long long>(b.sacks_sent),
      static_cast<unsigned long long>(a.held),
      static_cast<unsigned long long>(b.held),
      static_cast<unsigned long long>(a.reorder_full),
      static_cast<unsigned long long>(b.reorder_full));
}

INSTANTIATE_TEST_SUITE_P(
    LossRates, SelectiveSimTest,
    ::testing::Values(SelectiveCase{0.001, 1}, SelectiveCase{0.01, 1},
                      SelectiveCase{0.05, 1}, SelectiveCase{0.05, 2},
                      SelectiveCase{0.10, 1}),
    [](const ::testing::TestParamInfo<SelectiveCase>& info) {
      return "loss" + std::to_string(int(info.param.loss * 1000)) +
             "permille_seed" + std::to_string(info.param.seed);
    });

// A reorder buffer smaller than the losses need: out-of-order packets
// beyond it are dropped and counted, the sender resends them, and the
// guarantees hold.
TEST(SelectiveSimTest, FullReorderBufferDropsAndRecovers) {
  const uint64_t kTransactions = 10'000;
  ChannelConfig config = SimConfig();
  config.reorder_packets = 4;
  Simulation sim(7, config, Lossy(), kTransactions, Recovery::kSelective,
                 Recovery::kSelective);
  RunToTheEndAndCheck(sim, kTransactions);
  EXPECT_GT(sim.ep(0).stats().reorder_full + sim.ep(1).stats().reorder_full,
            0u);
}

// One peer GO_BACK_N, one SELECTIVE, either way round: the SELECTIVE one
// advertises but never hears the advert back, so the channel stays
// go-back-N both ways: no SACK is sent (the GO_BACK_N peer never sees one),
// nothing is held, losses are recovered by NACKs, and the guarantees hold.
class MixedPairSimTest : public ::testing::TestWithParam<int> {};

TEST_P(MixedPairSimTest, FallsBackToGoBackN) {
  const uint64_t kTransactions = 20'000;
  const int selective = GetParam();
  Simulation sim(11 + selective, SimConfig(), Lossy(), kTransactions,
                 selective == 0 ? Recovery::kSelective : Recovery::kGoBackN,
                 selective == 1 ? Recovery::kSelective : Recovery::kGoBackN);
  RunToTheEndAndCheck(sim, kTransactions);
  for (int i = 0; i < 2; ++i) {
    const EndpointStats& s = sim.ep(i).stats();
    SCOPED_TRACE("endpoint " + std::to_string(i));
    EXPECT_FALSE(sim.ep(i).negotiation().active());
    EXPECT_EQ(s.sacks_sent, 0u);
    EXPECT_EQ(s.sacks_rx, 0u);
    EXPECT_EQ(s.bad_sacks, 0u);
    EXPECT_EQ(s.held, 0u);
    EXPECT_GT(s.nacks_sent, 0u);
  }
  EXPECT_EQ(sim.ep(selective).negotiation().configured(), Recovery::kSelective);
}

INSTANTIATE_TEST_SUITE_P(WhichIsSelective, MixedPairSimTest,
                         ::testing::Values(0, 1));

}  // namespace sim
}  // namespace
}  // namespace spinnic::diad
