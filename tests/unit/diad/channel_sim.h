// The seeded lossy-channel simulation of the DiAD reliability state
// machines (dataplane/diad/channel.h), shared by tests/unit/diad/
// channel_test.cc (which checks its guarantees) and bench/micro/
// diad_recovery_bench.cc (which measures GO_BACK_N against SELECTIVE).
//
// Two endpoints, each with Session + SendWindow + ReceiveWindow +
// TransactionTable, driven as the dataplane drives them, connected by a
// seeded lossy network in simulated time. Frames are a Header plus payload
// plus a checksum over both (the UDP checksum's stand-in): corruption flips
// bits in flight and the receiver's checksum check drops the frame.
#ifndef SPINNIC_TESTS_UNIT_DIAD_CHANNEL_SIM_H_
#define SPINNIC_TESTS_UNIT_DIAD_CHANNEL_SIM_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "dataplane/diad/channel.h"
#include "dataplane/diad/wire.h"

namespace spinnic::diad::sim {

constexpr uint32_t kMaxPayload = 512;

struct Frame {
  Header hdr;
  uint32_t length = 0;
  uint64_t checksum = 0;
  bool held = false;  // a SendWindow handle (the mbuf clone)
  std::array<uint8_t, kMaxPayload> payload{};
};

inline uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

inline uint64_t Checksum(const Frame& f) {
  const Header& h = f.hdr;
  uint64_t sum =
      Mix(static_cast<uint64_t>(h.type) | uint64_t{h.flags} << 8 |
          uint64_t{h.channel} << 16 | static_cast<uint64_t>(h.status) << 32 |
          uint64_t{h.payload_length} << 40);
  for (uint64_t v :
       {uint64_t{h.src_epoch} << 32 | h.dst_epoch,
        uint64_t{h.seq} << 32 | h.ack, uint64_t{h.txn} << 32 | h.key, h.address,
        uint64_t{h.msg_length} << 32 | h.msg_offset, uint64_t{f.length}}) {
    sum = Mix(sum ^ v);
  }
  for (uint32_t i = 0; i < f.length; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, f.payload.data() + i, std::min(8u, f.length - i));
    sum = Mix(sum ^ word);
  }
  return sum;
}

// The payload of every message is a function of its address and offset.
inline uint8_t PatternByte(uint64_t address, uint32_t offset) {
  return static_cast<uint8_t>((address >> ((offset & 7) * 8)) + offset * 0x9du +
                              (offset >> 8));
}

inline uint64_t MessageAddress(int from, uint32_t msg) {
  return Mix(uint64_t{static_cast<uint32_t>(from)} << 32 | msg);
}

struct Impairments {
  double loss = 0;
  double reorder = 0;
  double duplicate = 0;
  double corrupt = 0;
};

struct NetStats {
  uint64_t sent = 0;
  uint64_t lost = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
  uint64_t arrived = 0;
  uint64_t blackholed = 0;  // to an endpoint that is gone
};

class Pool {
 public:
  uint32_t Alloc() {
    if (free_.empty()) {
      frames_.emplace_back();
      ++live_;
      return static_cast<uint32_t>(frames_.size() - 1);
    }
    const uint32_t i = free_.back();
    free_.pop_back();
    ++live_;
    return i;
  }
  void Free(uint32_t i) {
    frames_[i].held = false;
    free_.push_back(i);
    --live_;
  }
  uint32_t Copy(uint32_t i) {
    const uint32_t j = Alloc();
    frames_[j] = frames_[i];
    frames_[j].held = false;
    return j;
  }
  Frame& operator[](uint32_t i) { return frames_[i]; }
  uint64_t live() const { return live_; }

 private:
  std::deque<Frame> frames_;  // stable addresses
  std::vector<uint32_t> free_;
  uint64_t live_ = 0;
};

struct Cookie {
  PacketType type = PacketType::kAck;
  uint32_t msg = 0;
  uint64_t address = 0;
  uint32_t length = 0;
  uint32_t received = 0;
};

// A message being sent: a request, a stream message or a response.
struct Outgoing {
  PacketType type = PacketType::kStream;
  uint32_t txn = 0;
  uint32_t msg = 0;
  uint64_t address = 0;
  uint32_t length = 0;   // msg_length (the read length for a read request)
  uint32_t payload = 0;  // bytes carried (0 for a read request)
  uint32_t offset = 0;
  bool started = false;
};

struct EndpointStats {
  uint64_t txn_started = 0;
  uint64_t txn_ok = 0;
  uint64_t txn_failed = 0;
  uint64_t msgs_sent = 0;       // first packet pushed
  uint64_t msgs_delivered = 0;  // from the peer, complete and checked
  uint64_t data_pushed = 0;
  uint64_t data_released = 0;
  uint64_t retransmitted = 0;
  uint64_t acks_sent = 0;
  uint64_t probe_replies_sent = 0;
  uint64_t nacks_sent = 0;
  uint64_t unacks_sent = 0;
  uint64_t unacks_timer = 0;
  uint64_t frames_rx = 0;
  uint64_t acks_rx = 0;
  uint64_t nacks_rx = 0;
  uint64_t unacks_rx = 0;
  uint64_t accepted = 0;
  uint64_t duplicates = 0;
  uint64_t gaps = 0;
  uint64_t outside = 0;
  uint64_t bad_checksum = 0;
  uint64_t stale = 0;
  uint64_t peer_resets = 0;
  uint64_t challenges = 0;  // challenge ACKs sent (a claimed restart)
  uint64_t downs = 0;
  uint64_t invalid_acks = 0;
  uint64_t unknown_txn = 0;
  // SELECTIVE.
  uint64_t held = 0;             // out-of-order packets held
  uint64_t drained = 0;          // held packets delivered (also in accepted)
  uint64_t held_duplicates = 0;  // a copy of a held packet
  uint64_t reorder_full = 0;
  uint64_t sacks_sent = 0;
  uint64_t sacks_rx = 0;
  uint64_t bad_sacks = 0;          // overlapping, never sent, or unexpected
  uint64_t errors = 0;             // payload, order or framing mismatches
  uint64_t out_of_order_msgs = 0;  // a delivered msg not last + 1
};

class Simulation;

class Endpoint {
 public:
  Endpoint(Simulation* sim, int id, const ChannelConfig& config, uint32_t epoch,
           uint64_t seed, uint64_t transactions,
           Recovery recovery = Recovery::kGoBackN)
      : sim_(sim),
        id_(id),
        config_(config),
        session_(epoch),
        tx_(config),
        rx_(config),
        neg_(recovery),
        reorder_(2 * config.window_packets, config.reorder_packets != 0
                                                ? config.reorder_packets
                                                : 2 * config.window_packets),
        table_(config.max_transactions),
        rng_(seed),
        to_start_(transactions) {}

  // A frame from the network.
  void OnFrame(uint32_t f, uint64_t now);
  // Timers; then sends what is due.
  void OnWake(uint64_t now);
  uint64_t NextWake() const {
    return std::min(tx_.timer_deadline(), rx_.ack_deadline());
  }
  // Sends data while the window allows, then any due ACK.
  void Pump(uint64_t now);

  // The process dies and comes back with a new epoch and nothing.
  void Restart(uint64_t now, uint32_t new_epoch);

  bool Idle() const {
    return to_start_ == 0 && table_.count() == 0 && !current_ &&
           responses_.empty() && tx_.in_flight_packets() == 0 &&
           reorder_.count() == 0;
  }
  const SackNegotiation& negotiation() const { return neg_; }
  const EndpointStats& stats() const { return stats_; }
  const Session& session() const { return session_; }
  const SendWindow<uint32_t>& tx() const { return tx_; }
  uint32_t pending_txns() const { return table_.count(); }
  uint64_t down_at() const { return down_at_; }
  uint64_t last_progress() const { return last_progress_; }
  void AddTransactions(uint64_t n) { to_start_ += n; }
  // Per message id of the peer's direction: times delivered.
  const std::vector<uint8_t>& delivered() const { return delivered_; }
  const std::vector<uint32_t>& completed_msgs() const {
    return completed_msgs_;
  }
  uint64_t held_frames() const { return held_; }
  // State right after the last channel reset (down, peer reset, restart).
  struct Snapshot {
    EndpointStats stats;
    uint32_t pending = 0;
    uint64_t held = 0;
  };
  const Snapshot& at_reset() const { return at_reset_; }

 private:
  void SendControl(PacketType type, uint8_t flags, uint64_t now);
  void SendChallenge(uint32_t epoch, uint64_t now);
  bool SendNextPacket(uint64_t now);  // false: nothing (more) to send now
  void Deliver(const Frame& f);
  void Complete(uint32_t txn, PacketType type);
  void ResetChannel(Status status);
  void GoDown(uint64_t now);
  void Release(uint32_t f, uint32_t txn, bool completes_txn);
  void ReleaseOnReset(uint32_t f);
  void Retransmit(uint32_t f, uint64_t now);
  // SELECTIVE receive: holds a gap packet; delivers what the expected
  // number reaches.
  bool Hold(uint32_t f);  // true: the buffer keeps the frame
  void Drain(uint64_t now);
  // An ACK with a SACK, or a probe reply on a SELECTIVE channel.
  void OnSelectiveAck(const Frame& frame, uint64_t now);
  void NewRequest();
  uint32_t RandomLength();

  Simulation* sim_;
  int id_;
  ChannelConfig config_;
  Session session_;
  SendWindow<uint32_t> tx_;
  ReceiveWindow rx_;
  SackNegotiation neg_;
  ReorderBuffer<uint32_t> reorder_;
  TransactionTable<Cookie> table_;
  std::mt19937_64 rng_;
  uint64_t to_start_;
  std::optional<Outgoing> current_;
  std::deque<Outgoing> responses_;
  uint32_t next_msg_ = 0;
  // Reassembly of the peer's current message.
  bool in_msg_ = false;
  Header msg_hdr_;
  uint32_t msg_next_offset_ = 0;
  bool msg_ok_ = true;
  // Delivery checks.
  std::vector<uint8_t> delivered_;
  std::optional<uint32_t> last_msg_;      // in this session
  std::vector<uint32_t> completed_msgs_;  // our stream/write msgs confirmed
  uint64_t held_ = 0;
  uint64_t down_at_ = UINT64_MAX;
  uint64_t last_progress_ = 0;
  EndpointStats stats_;
  Snapshot at_reset_;
};

class Simulation {
 public:
  Simulation(uint64_t seed, const ChannelConfig& config,
             const Impairments& impairments, uint64_t transactions,
             Recovery recovery_a = Recovery::kGoBackN,
             Recovery recovery_b = Recovery::kGoBackN)
      : config_(config), impairments_(impairments), rng_(seed) {
    for (int i = 0; i < 2; ++i) {
      endpoints_.emplace_back(this, i, config, NewEpoch(),
                              Mix(seed * 2 + i + 1), transactions,
                              i == 0 ? recovery_a : recovery_b);
    }
  }

  uint32_t NewEpoch() {
    uint32_t e = 0;
    while (e == 0) e = static_cast<uint32_t>(rng_());
    return e;
  }

  // Sends frame `f` (ownership passes to the network) from endpoint `from`.
  void Transmit(int from, uint32_t f, uint64_t now) {
    Frame& frame = pool_[f];
    frame.checksum = Checksum(frame);
    ++net_.sent;
    uint64_t& link = link_free_[from];
    const uint64_t departure = std::max(now, link);
    link = departure + 20 + frame.length;  // ~8 Gbit/s with overhead
    if ((drop_ && drop_(from, frame)) || Chance(impairments_.loss)) {
      ++net_.lost;
      pool_.Free(f);
      return;
    }
    if (Chance(impairments_.duplicate)) {
      ++net_.duplicated;
      const uint32_t copy = pool_.Copy(f);
      Enqueue(1 - from, copy, departure + kDelayNs + Uniform(0, 20'000));
    }
    uint64_t arrival = departure + kDelayNs;
    if (Chance(impairments_.reorder)) {
      ++net_.reordered;
      arrival += Uniform(2'000, 30'000);
    }
    if (Chance(impairments_.corrupt)) {
      ++net_.corrupted;
      Corrupt(frame);
    }
    Enqueue(1 - from, f, arrival);
  }

  // Runs until nothing is left to do, `stop` says so, or `until`.
  template <typename Stop>
  uint64_t Run(uint64_t until, Stop&& stop) {
    if (!started_) {
      started_ = true;
      for (int i = 0; i < 2; ++i) endpoints_[i].Pump(now_);
    }
    for (;;) {
      const uint64_t tq = queue_.empty() ? UINT64_MAX : queue_.top().time;
      uint64_t tw[2] = {UINT64_MAX, UINT64_MAX};
      for (int i = 0; i < 2; ++i) {
        if (alive_[i]) tw[i] = std::max(now_, endpoints_[i].NextWake());
      }
      const uint64_t next = std::min({tq, tw[0], tw[1]});
      if (next == UINT64_MAX || next > until) break;
      now_ = next;
      if (tq == next) {
        const InFlight in = queue_.top();
        queue_.pop();
        if (!alive_[in.to]) {
          ++net_.blackholed;
          pool_.Free(in.frame);
        } else {
          ++net_.arrived;
          endpoints_[in.to].OnFrame(in.frame, now_);
        }
      } else {
        endpoints_[tw[0] == next ? 0 : 1].OnWake(now_);
      }
      ++events_;
      if (stop()) break;
    }
    return now_;
  }
  uint64_t Run(uint64_t until) {
    return Run(until, [] { return false; });
  }

  Endpoint& ep(int i) { return endpoints_[i]; }
  Pool& pool() { return pool_; }
  const NetStats& net() const { return net_; }
  uint64_t now() const { return now_; }
  uint64_t events() const { return events_; }
  size_t queued() const { return queue_.size(); }
  void Kill(int i) { alive_[i] = false; }
  // Loses every frame `drop(from, frame)` picks, besides the random loss
  // (a test's targeted loss); an empty function picks none.
  void SetDrop(std::function<bool(int, const Frame&)> drop) {
    drop_ = std::move(drop);
  }
  bool Alive(int i) const { return alive_[i]; }
  std::mt19937_64& rng() { return rng_; }

  static constexpr uint64_t kDelayNs = 5'000;

 private:
  struct InFlight {
    uint64_t time;
    uint64_t order;
    uint32_t frame;
    int to;
    bool operator>(const InFlight& o) const {
      return time != o.time ? time > o.time : order > o.order;
    }
  };

  bool Chance(double p) {
    return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p;
  }
  uint64_t Uniform(uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  void Enqueue(int to, uint32_t f, uint64_t time) {
    queue_.push({time, order_++, f, to});
  }
  void Corrupt(Frame& frame) {
    const uint8_t bit = static_cast<uint8_t>(1u << Uniform(0, 7));
    if (frame.length > 0 && Chance(0.7)) {
      frame.payload[Uniform(0, frame.length - 1)] ^= bit;
      return;
    }
    switch (Uniform(0, 3)) {
      case 0:
        frame.hdr.seq ^= bit;
        break;
      case 1:
        frame.hdr.ack ^= bit;
        break;
      case 2:
        frame.hdr.txn ^= bit;
        break;
      default:
        frame.hdr.flags ^= bit;
        break;
    }
  }

  ChannelConfig config_;
  Impairments impairments_;
  std::mt19937_64 rng_;
  Pool pool_;
  std::deque<Endpoint> endpoints_;
  std::priority_queue<InFlight, std::vector<InFlight>, std::greater<InFlight>>
      queue_;
  uint64_t order_ = 0;
  uint64_t link_free_[2] = {0, 0};
  bool alive_[2] = {true, true};
  uint64_t now_ = 0;
  uint64_t events_ = 0;
  bool started_ = false;
  NetStats net_;
  std::function<bool(int, const Frame&)> drop_;
};

// ------------------------------------------------------------ Endpoint

inline uint32_t Endpoint::RandomLength() {
  const uint64_t r = rng_() % 100;
  if (r < 60) return 1 + rng_() % 256;             // small
  if (r < 90) return 257 + rng_() % (1500 - 256);  // medium
  return 1501 + rng_() % (4096 - 1500);            // large
}

inline void Endpoint::NewRequest() {
  Outgoing out;
  const uint64_t kind = rng_() % 10;
  out.type = kind < 4   ? PacketType::kStream
             : kind < 7 ? PacketType::kWriteRequest
                        : PacketType::kReadRequest;
  out.length = RandomLength();
  out.payload = out.type == PacketType::kReadRequest ? 0 : out.length;
  Cookie cookie;
  cookie.type = out.type;
  cookie.length = out.length;
  if (out.type == PacketType::kReadRequest) {
    out.address = rng_();  // the response's pattern
  }
  cookie.address = out.address;
  out.txn = table_.Begin(out.type, cookie);
  --to_start_;
  ++stats_.txn_started;
  current_ = out;
}

inline void Endpoint::SendChallenge(uint32_t epoch, uint64_t now) {
  const uint32_t f = sim_->pool().Alloc();
  Frame& frame = sim_->pool()[f];
  frame.hdr = Header{};
  frame.hdr.type = PacketType::kAck;
  frame.hdr.src_epoch = session_.my_epoch();
  frame.hdr.dst_epoch = epoch;
  frame.hdr.seq = tx_.next_seq();
  frame.length = 0;
  sim_->Transmit(id_, f, now);
}

inline void Endpoint::SendControl(PacketType type, uint8_t flags,
                                  uint64_t now) {
  const uint32_t f = sim_->pool().Alloc();
  Frame& frame = sim_->pool()[f];
  frame.hdr = Header{};
  frame.hdr.type = type;
  frame.hdr.flags = flags;
  frame.hdr.src_epoch = session_.my_epoch();
  frame.hdr.dst_epoch = session_.peer_epoch();
  frame.hdr.ack = rx_.expected();
  frame.hdr.key = neg_.advert();
  // An UNACK carries our next sequence number (as the dataplane's do); a
  // SELECTIVE probe reply echoes it in txn.
  frame.hdr.seq = tx_.next_seq();
  frame.length = 0;
  if (type == PacketType::kAck && neg_.active()) {
    if ((flags & kFlagProbeReply) != 0) frame.hdr.txn = rx_.probe_echo();
    const uint32_t bytes =
        reorder_.WriteSack(rx_.expected(), frame.payload.data(), kMaxPayload);
    if (bytes > 0) {
      frame.hdr.flags = static_cast<uint8_t>(frame.hdr.flags | kFlagSack);
      frame.hdr.msg_length = bytes;
      frame.hdr.payload_length = static_cast<uint16_t>(bytes);
      frame.length = bytes;
      ++stats_.sacks_sent;
    }
  }
  sim_->Transmit(id_, f, now);
}

inline bool Endpoint::SendNextPacket(uint64_t now) {
  if (!current_) {
    if (!responses_.empty()) {
      current_ = responses_.front();
      responses_.pop_front();
    } else if (to_start_ > 0 && !table_.Full()) {
      NewRequest();
    } else {
      return false;
    }
  }
  Outgoing& out = *current_;
  const uint32_t bytes = std::min(out.payload - out.offset, kMaxPayload);
  if (!tx_.CanSend(bytes)) {
    if (tx_.UnackDueOnFullWindow(now)) {
      ++stats_.unacks_sent;
      SendControl(PacketType::kUnack, 0, now);
    }
    return false;
  }
  if (!out.started) {
    out.started = true;
    out.msg = next_msg_++;
    // Streams and writes carry a pattern the receiver can check from the
    // message id alone; reads and read responses the requester's address.
    if (out.type == PacketType::kStream ||
        out.type == PacketType::kWriteRequest) {
      out.address = MessageAddress(id_, out.msg);
      if (Cookie* c = table_.Find(out.txn, out.type)) c->msg = out.msg;
    }
    ++stats_.msgs_sent;
  }
  const bool last = out.offset + bytes >= out.payload;
  const uint32_t f = sim_->pool().Alloc();
  Frame& frame = sim_->pool()[f];
  Header& h = frame.hdr;
  h = Header{};
  h.type = out.type;
  h.flags = static_cast<uint8_t>((out.offset == 0 ? kFlagFirst : 0) |
                                 (last ? kFlagLast : 0));
  h.src_epoch = session_.my_epoch();
  h.dst_epoch = session_.peer_epoch();
  h.seq = tx_.next_seq();
  h.ack = rx_.expected();
  h.txn = out.txn;
  h.key = out.msg;
  h.address = out.address;
  h.msg_length = out.length;
  h.msg_offset = out.offset;
  h.payload_length = static_cast<uint16_t>(bytes);
  frame.length = bytes;
  for (uint32_t i = 0; i < bytes; ++i) {
    frame.payload[i] = PatternByte(out.address, out.offset + i);
  }
  // Ask for an ACK now when the window is nearly full or a stream message
  // (which completes on its ACK) ends.
  if (tx_.in_flight_packets() + 1 >= config_.window_packets * 3 / 4 ||
      (last && out.type == PacketType::kStream)) {
    h.flags |= kFlagAckNow;
  }
  frame.held = true;
  ++held_;
  ++stats_.data_pushed;
  tx_.Push(f, bytes, out.txn, last && out.type == PacketType::kStream, now);
  // The piggybacked ack, unless an explicit one (a SACK) is due.
  if (!rx_.explicit_ack_due()) rx_.OnAckSent();
  sim_->Transmit(id_, sim_->pool().Copy(f), now);
  out.offset += bytes;
  if (last) current_.reset();
  return true;
}

inline void Endpoint::Pump(uint64_t now) {
  if (rx_.probe_reply_due()) {
    ++stats_.probe_replies_sent;
    SendControl(PacketType::kAck, kFlagProbeReply, now);
    rx_.OnAckSent();
  }
  while (SendNextPacket(now)) {
  }
  if (rx_.AckDue(now)) {
    ++stats_.acks_sent;
    SendControl(PacketType::kAck, 0, now);
    rx_.OnAckSent();
  }
}

inline void Endpoint::Release(uint32_t f, uint32_t txn, bool completes_txn) {
  Frame& frame = sim_->pool()[f];
  if (!frame.held) ++stats_.errors;  // released twice
  --held_;
  ++stats_.data_released;
  sim_->pool().Free(f);
  if (completes_txn) Complete(txn, PacketType::kStream);
}

inline void Endpoint::ReleaseOnReset(uint32_t f) {
  if (!sim_->pool()[f].held) ++stats_.errors;
  --held_;
  ++stats_.data_released;
  sim_->pool().Free(f);
}

inline void Endpoint::Retransmit(uint32_t f, uint64_t now) {
  Frame& held = sim_->pool()[f];
  if (!held.held) ++stats_.errors;
  ++stats_.retransmitted;
  const uint32_t copy = sim_->pool().Copy(f);
  // The clone goes out with the current ack (the dataplane rewrites it
  // before the checksum too).
  sim_->pool()[copy].hdr.ack = rx_.expected();
  if (!rx_.explicit_ack_due()) rx_.OnAckSent();
  sim_->Transmit(id_, copy, now);
}

inline void Endpoint::Complete(uint32_t txn, PacketType type) {
  Cookie* c = table_.Find(txn, type);
  if (c == nullptr) {
    ++stats_.unknown_txn;
    return;
  }
  if (type != PacketType::kReadRequest) completed_msgs_.push_back(c->msg);
  table_.End(txn);
  ++stats_.txn_ok;
}

inline void Endpoint::Deliver(const Frame& f) {
  const Header& h = f.hdr;
  if (h.first()) {
    if (in_msg_) ++stats_.errors;  // a message cut short
    in_msg_ = true;
    msg_hdr_ = h;
    msg_next_offset_ = 0;
    msg_ok_ = true;
  } else if (!in_msg_ || h.key != msg_hdr_.key || h.type != msg_hdr_.type) {
    ++stats_.errors;
    return;
  }
  if (h.msg_offset != msg_next_offset_ || h.txn != msg_hdr_.txn ||
      h.address != msg_hdr_.address || h.msg_length != msg_hdr_.msg_length) {
    msg_ok_ = false;
  }
  for (uint32_t i = 0; i < f.length; ++i) {
    if (f.payload[i] != PatternByte(h.address, h.msg_offset + i)) {
      msg_ok_ = false;
      break;
    }
  }
  msg_next_offset_ += f.length;
  if (h.type == PacketType::kReadResponse) {
    Cookie* c = table_.Find(h.txn, PacketType::kReadRequest);
    if (c == nullptr || c->address != h.address || c->length != h.msg_length) {
      msg_ok_ = false;
    } else {
      c->received += f.length;
    }
  } else if (h.type == PacketType::kStream ||
             h.type == PacketType::kWriteRequest) {
    if (h.address != MessageAddress(1 - id_, h.key)) msg_ok_ = false;
  }
  if (!h.last()) return;
  in_msg_ = false;
  const uint32_t expected_length =
      h.type == PacketType::kReadRequest || h.type == PacketType::kWriteResponse
          ? 0
          : h.msg_length;
  if (msg_next_offset_ != expected_length) msg_ok_ = false;
  if (!msg_ok_) {
    ++stats_.errors;
    return;
  }
  // Exactly once, in order.
  const uint32_t msg = h.key;
  if (delivered_.size() <= msg) delivered_.resize(msg + 1, 0);
  ++delivered_[msg];
  if (last_msg_ && SeqDiff(msg, *last_msg_) <= 0) ++stats_.errors;
  if (last_msg_ && msg != *last_msg_ + 1) ++stats_.out_of_order_msgs;
  last_msg_ = msg;
  ++stats_.msgs_delivered;
  switch (h.type) {
    case PacketType::kWriteRequest: {
      Outgoing out;
      out.type = PacketType::kWriteResponse;
      out.txn = h.txn;
      responses_.push_back(out);
      break;
    }
    case PacketType::kReadRequest: {
      Outgoing out;
      out.type = PacketType::kReadResponse;
      out.txn = h.txn;
      out.address = h.address;
      out.length = h.msg_length;
      out.payload = h.msg_length;
      responses_.push_back(out);
      break;
    }
    case PacketType::kWriteResponse:
      Complete(h.txn, PacketType::kWriteRequest);
      break;
    case PacketType::kReadResponse: {
      Cookie* c = table_.Find(h.txn, PacketType::kReadRequest);
      if (c == nullptr || c->received != c->length) {
        ++stats_.errors;
        return;
      }
      Complete(h.txn, PacketType::kReadRequest);
      break;
    }
    default:
      break;
  }
}

inline void Endpoint::OnFrame(uint32_t f, uint64_t now) {
  Frame& frame = sim_->pool()[f];
  ++stats_.frames_rx;
  if (Checksum(frame) != frame.checksum) {
    ++stats_.bad_checksum;
    sim_->pool().Free(f);
    return;
  }
  const Header& h = frame.hdr;
  switch (session_.Check(h.src_epoch, h.dst_epoch)) {
    case Session::Verdict::kStale:
      ++stats_.stale;
      sim_->pool().Free(f);
      return;
    case Session::Verdict::kPeerReset:
      ++stats_.peer_resets;
      ResetChannel(Status::kPeerReset);
      break;
    case Session::Verdict::kChallenge:
      // As the dataplane: a challenge ACK to the claimed epoch, ack 0.
      ++stats_.challenges;
      SendChallenge(h.src_epoch, now);
      sim_->pool().Free(f);
      return;
    case Session::Verdict::kOk:
      break;
  }
  // SELECTIVE negotiation: control packets advertise it (the dataplane's
  // LearnRecovery).
  if (!IsSequenced(h.type) && neg_.OnControl(h.key == kSackCapable)) {
    rx_.set_selective(true);
    rx_.RequestSack();
  }
  if (h.type == PacketType::kAck &&
      ((h.flags & kFlagSack) != 0 ||
       ((h.flags & kFlagProbeReply) != 0 && neg_.active()))) {
    ++stats_.acks_rx;
    OnSelectiveAck(frame, now);
    sim_->pool().Free(f);
    Pump(now);
    return;
  }
  // Every packet carries the peer's cumulative ack of our direction.
  switch (tx_.OnAck(h.ack, now,
                    [this](uint32_t handle, uint32_t txn, bool completes) {
                      Release(handle, txn, completes);
                    })) {
    case SendWindow<uint32_t>::AckVerdict::kProgress:
      last_progress_ = now;
      break;
    case SendWindow<uint32_t>::AckVerdict::kInvalid:
      ++stats_.invalid_acks;
      break;
    case SendWindow<uint32_t>::AckVerdict::kNoChange:
      break;
  }
  auto retransmit = [this, now](uint32_t handle) { Retransmit(handle, now); };
  bool kept = false;  // the reorder buffer took the frame
  switch (h.type) {
    case PacketType::kNack:
      ++stats_.nacks_rx;
      tx_.GoBackN(h.ack, now, retransmit);
      break;
    case PacketType::kAck:
      ++stats_.acks_rx;
      if ((h.flags & kFlagProbeReply) != 0) {
        tx_.GoBackNOnProbeReply(h.ack, now, retransmit);
      }
      break;
    case PacketType::kUnack:
      ++stats_.unacks_rx;
      rx_.OnUnack(h.seq);
      break;
    default: {
      const auto result =
          rx_.OnPacket(h.seq, (h.flags & kFlagAckNow) != 0, now);
      switch (result.verdict) {
        case ReceiveWindow::Verdict::kAccept:
          ++stats_.accepted;
          Deliver(frame);
          Drain(now);
          break;
        case ReceiveWindow::Verdict::kDuplicate:
          ++stats_.duplicates;
          break;
        case ReceiveWindow::Verdict::kGap:
          if (rx_.selective()) {
            kept = Hold(f);
            break;
          }
          ++stats_.gaps;
          if (result.send_nack) {
            ++stats_.nacks_sent;
            SendControl(PacketType::kNack, 0, now);
          }
          break;
        case ReceiveWindow::Verdict::kOutside:
          ++stats_.outside;
          break;
      }
    }
  }
  if (!kept) sim_->pool().Free(f);
  Pump(now);
}

inline bool Endpoint::Hold(uint32_t f) {
  const Header& h = sim_->pool()[f].hdr;
  switch (reorder_.Hold(h.seq, rx_.expected(), f)) {
    case ReorderBuffer<uint32_t>::HoldVerdict::kHeld:
      ++stats_.held;
      rx_.RequestSack();
      return true;
    case ReorderBuffer<uint32_t>::HoldVerdict::kDuplicate:
      ++stats_.held_duplicates;
      rx_.RequestSack();
      break;
    case ReorderBuffer<uint32_t>::HoldVerdict::kFull:
      ++stats_.reorder_full;
      break;
    case ReorderBuffer<uint32_t>::HoldVerdict::kOutside:
      ++stats_.gaps;
      break;
  }
  return false;
}

inline void Endpoint::Drain(uint64_t now) {
  bool drained = false;
  uint32_t g = 0;
  while (reorder_.Take(rx_.expected(), &g)) {
    const Frame& frame = sim_->pool()[g];
    const auto result =
        rx_.OnPacket(frame.hdr.seq, (frame.hdr.flags & kFlagAckNow) != 0, now);
    if (result.verdict != ReceiveWindow::Verdict::kAccept) ++stats_.errors;
    ++stats_.accepted;
    ++stats_.drained;
    Deliver(frame);
    sim_->pool().Free(g);
    drained = true;
  }
  if (drained) rx_.RequestSack();
}

inline void Endpoint::OnSelectiveAck(const Frame& frame, uint64_t now) {
  const Header& h = frame.hdr;
  const bool sack = (h.flags & kFlagSack) != 0;
  if (!neg_.active()) {
    ++stats_.bad_sacks;
    return;
  }
  std::span<const uint8_t> bitmap;
  if (sack) bitmap = {frame.payload.data(), frame.length};
  if (tx_.CheckSack(h.ack, bitmap) != SackVerdict::kOk) {
    ++stats_.bad_sacks;
    return;
  }
  switch (tx_.OnAck(h.ack, now,
                    [this](uint32_t handle, uint32_t txn, bool completes) {
                      Release(handle, txn, completes);
                    })) {
    case SendWindow<uint32_t>::AckVerdict::kProgress:
      last_progress_ = now;
      break;
    case SendWindow<uint32_t>::AckVerdict::kInvalid:
      ++stats_.invalid_acks;
      return;
    case SendWindow<uint32_t>::AckVerdict::kNoChange:
      break;
  }
  if (sack) ++stats_.sacks_rx;
  tx_.OnSack(h.ack, bitmap, (h.flags & kFlagProbeReply) != 0, h.txn, now,
             [this, now](uint32_t handle) { Retransmit(handle, now); });
}

inline void Endpoint::OnWake(uint64_t now) {
  switch (tx_.OnTimer(now)) {
    case SendWindow<uint32_t>::TimerVerdict::kSendUnack:
      ++stats_.unacks_sent;
      ++stats_.unacks_timer;
      SendControl(PacketType::kUnack, 0, now);
      break;
    case SendWindow<uint32_t>::TimerVerdict::kDown:
      GoDown(now);
      break;
    case SendWindow<uint32_t>::TimerVerdict::kIdle:
      break;
  }
  Pump(now);
}

inline void Endpoint::ResetChannel(Status status) {
  tx_.Reset(
      [this](uint32_t handle, uint32_t, bool) { ReleaseOnReset(handle); });
  reorder_.Reset([this](uint32_t f) { sim_->pool().Free(f); });
  neg_.Reset();
  rx_.Reset();
  table_.EndAll([this, status](uint32_t, const Cookie&) {
    EXPECT_NE(status, Status::kOk);
    ++stats_.txn_failed;
  });
  current_.reset();
  responses_.clear();
  in_msg_ = false;
  last_msg_.reset();
  at_reset_ = {stats_, table_.count(), held_};
}

inline void Endpoint::GoDown(uint64_t now) {
  ++stats_.downs;
  if (down_at_ == UINT64_MAX) down_at_ = now;
  ResetChannel(Status::kPeerDown);
  session_.Restart(sim_->NewEpoch());
}

inline void Endpoint::Restart(uint64_t now, uint32_t new_epoch) {
  ResetChannel(Status::kAborted);
  session_.Restart(new_epoch);
  Pump(now);
}

}  // namespace spinnic::diad::sim

#endif  // SPINNIC_TESTS_UNIT_DIAD_CHANNEL_SIM_H_
