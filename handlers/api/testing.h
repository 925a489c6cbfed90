// Test helpers for handler authors: run a handler the way the engine calls it,
// on a frame held in a byte vector, with an ECTX's state memory and an action
// sink that records what the handler emitted and raised.
//
//   absl::StatusOr<HandlerInstance> handler =
//       CreateHandlerForTest("my_handler", {{"key", "a5"}});
//   FakeEctx ectx(/*state_size=*/64);
//   TestPacket packet(frame_bytes);  // layers filled by LayersForTest()
//   EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
//             HandlerResult::kSuccess);
//   EXPECT_EQ(packet.bytes(), expected_bytes);
//   EXPECT_TRUE(ectx.sink().frames().empty());
//
// Header-only and free of DPDK and of the dataplane, so that a handler's tests
// link only the handler API. Test code only: these helpers allocate.
#ifndef SPINNIC_HANDLERS_API_TESTING_H_
#define SPINNIC_HANDLERS_API_TESTING_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dataplane/common/byte_order.h"
#include "handlers/api/context.h"
#include "handlers/api/handler.h"
#include "handlers/api/packet.h"
#include "handlers/api/params.h"

namespace spinnic {

// Records every action instead of transmitting it. Can be told to refuse
// emits or events, the way a dataplane sink does when its buffers or its
// event queue are full, to test how a handler copes.
class FakeActionSink final : public ActionSink {
 public:
  struct EmittedFrame {
    std::vector<uint8_t> bytes;
    EmitPort port;
  };
  struct RaisedEvent {
    uint32_t code;
    std::vector<uint8_t> data;
  };
  // A PeerPut with its strings and bytes copied.
  struct RecordedPut {
    PeerPut::Kind kind;
    std::string peer;
    uint32_t source;  // meaningful when peer is empty
    uint16_t channel;
    uint32_t key;
    uint64_t address;
    std::vector<uint8_t> data;
  };

  bool EmitFrame(std::span<const uint8_t> frame, EmitPort port) override {
    if (fail_emits_) {
      ++refused_emits_;
      return false;
    }
    frames_.push_back({{frame.begin(), frame.end()}, port});
    return true;
  }
  bool RaiseEvent(uint32_t code, std::span<const uint8_t> data) override {
    if (fail_events_) {
      ++refused_events_;
      return false;
    }
    events_.push_back({code, {data.begin(), data.end()}});
    return true;
  }

  bool PutToPeer(const PeerPut& put) override {
    if (fail_puts_) {
      ++refused_puts_;
      return false;
    }
    puts_.push_back({put.kind,
                     std::string(put.peer),
                     put.source,
                     put.channel,
                     put.key,
                     put.address,
                     {put.data.begin(), put.data.end()}});
    return true;
  }
  bool GetFromPeer(const PeerGet& get) override {
    gets_.push_back(get);
    gets_.back().peer = get_peers_.emplace_back(get.peer);
    return true;
  }

  // While set, EmitFrame / RaiseEvent return false and record nothing.
  void set_fail_emits(bool fail) { fail_emits_ = fail; }
  void set_fail_events(bool fail) { fail_events_ = fail; }
  // While set, PutToPeer returns false and records nothing (a busy channel).
  void set_fail_puts(bool fail) { fail_puts_ = fail; }
  uint64_t refused_puts() const { return refused_puts_; }

  const std::vector<EmittedFrame>& frames() const { return frames_; }
  const std::vector<RaisedEvent>& events() const { return events_; }
  const std::vector<RecordedPut>& puts() const { return puts_; }
  // Each get's `peer` points into this sink.
  const std::vector<PeerGet>& gets() const { return gets_; }
  uint64_t refused_emits() const { return refused_emits_; }
  uint64_t refused_events() const { return refused_events_; }

  void Clear() {
    frames_.clear();
    events_.clear();
    puts_.clear();
    gets_.clear();
    refused_emits_ = 0;
    refused_events_ = 0;
    refused_puts_ = 0;
  }

 private:
  std::vector<EmittedFrame> frames_;
  std::vector<RecordedPut> puts_;
  std::vector<PeerGet> gets_;
  std::deque<std::string> get_peers_;  // stable addresses for gets_[i].peer
  std::vector<RaisedEvent> events_;
  uint64_t refused_emits_ = 0;
  uint64_t refused_events_ = 0;
  uint64_t refused_puts_ = 0;
  bool fail_emits_ = false;
  bool fail_events_ = false;
  bool fail_puts_ = false;
};

// Layer offsets of a well-formed test frame: Ethernet, up to two VLAN tags,
// IPv4 (with options) or IPv6 (with extension headers), TCP/UDP/ICMP/ICMPv6.
// This is a small stand-in for the dataplane's classifier (ParseFrame in
// dataplane/classifier.h), kept here so that handler tests need neither DPDK
// nor the dataplane; it checks bounds but does not reject malformed frames
// the way the classifier does, so never use it on untrusted bytes. Tests that
// link the dataplane should prefer ParseFrame.
inline PacketLayers LayersForTest(std::span<const uint8_t> frame) {
  PacketLayers layers;
  auto u16 = [&](size_t at) -> uint16_t { return LoadBe16(frame.data() + at); };
  if (frame.size() < 14) return layers;
  size_t at = 12;
  uint16_t ethertype = u16(at);
  while ((ethertype == 0x8100 || ethertype == 0x88a8) && layers.vlan_tags < 2 &&
         at + 6 <= frame.size()) {
    ++layers.vlan_tags;
    at += 4;
    ethertype = u16(at);
  }
  at += 2;
  layers.ethertype = ethertype;
  bool later_fragment = false;
  uint8_t proto = 0;
  if (ethertype == 0x0800 && at + 20 <= frame.size()) {
    size_t header_length = (frame[at] & 0x0f) * 4u;
    if (header_length < 20 || at + header_length > frame.size()) {
      return layers;
    }
    layers.is_ipv4 = true;
    layers.l3_offset = static_cast<uint16_t>(at);
    layers.l3_end =
        static_cast<uint16_t>(std::min<size_t>(at + u16(at + 2), frame.size()));
    proto = frame[at + 9];
    later_fragment = (u16(at + 6) & 0x1fff) != 0;
    at += header_length;
  } else if (ethertype == 0x86dd && at + 40 <= frame.size()) {
    layers.is_ipv6 = true;
    layers.l3_offset = static_cast<uint16_t>(at);
    layers.l3_end = static_cast<uint16_t>(
        std::min<size_t>(at + 40 + u16(at + 4), frame.size()));
    proto = frame[at + 6];
    at += 40;
    // Hop-by-hop, routing, fragment and destination options, as far as the
    // classifier walks them.
    for (int i = 0; i < 8; ++i) {
      if (proto != 0 && proto != 43 && proto != 44 && proto != 60) break;
      if (at + 8 > frame.size()) return layers;
      bool fragment = proto == 44;
      if (fragment) later_fragment = (u16(at + 2) & 0xfff8) != 0;
      size_t length = fragment ? 8u : (frame[at + 1] + 1u) * 8u;
      proto = frame[at];
      at += length;
      if (later_fragment) break;
    }
  } else {
    return layers;
  }
  layers.ip_proto = proto;
  if (later_fragment) return layers;
  size_t l4_length = 0;
  switch (proto) {
    case 6:  // TCP
      if (at + 20 <= frame.size()) l4_length = (frame[at + 12] >> 4) * 4u;
      break;
    case 17:  // UDP
      l4_length = 8;
      break;
    case 1:  // ICMP, in IPv4 only
      if (layers.is_ipv4) l4_length = 8;
      break;
    case 58:  // ICMPv6, in IPv6 only
      if (layers.is_ipv6) l4_length = 8;
      break;
    default:
      return layers;
  }
  if (l4_length < 8 || at + l4_length > frame.size()) return layers;
  layers.l4_offset = static_cast<uint16_t>(at);
  layers.payload_offset = static_cast<uint16_t>(at + l4_length);
  return layers;
}

// A frame in its own storage with the PacketView a handler gets. Writes
// through view().Bytes() land in bytes(). Not movable: the view points into
// the storage and at the layers.
class TestPacket {
 public:
  explicit TestPacket(std::vector<uint8_t> frame, uint16_t in_port = 0)
      : bytes_(std::move(frame)),
        layers_(LayersForTest(bytes_)),
        view_(bytes_.data(), static_cast<uint32_t>(bytes_.size()), layers_,
              in_port) {}
  // For layers from elsewhere (the classifier) or deliberately wrong ones.
  TestPacket(std::vector<uint8_t> frame, const PacketLayers& layers,
             uint16_t in_port = 0)
      : bytes_(std::move(frame)),
        layers_(layers),
        view_(bytes_.data(), static_cast<uint32_t>(bytes_.size()), layers_,
              in_port) {}
  TestPacket(const TestPacket&) = delete;
  TestPacket& operator=(const TestPacket&) = delete;

  PacketView& view() { return view_; }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  PacketLayers layers_;
  PacketView view_;
};

// What the engine gives a handler besides the packet: zeroed state memory
// aligned like an installed ECTX's (64 bytes), bound regions and a recording
// action sink. context() stays valid for the life of the FakeEctx; share one
// FakeEctx across packets to see state accumulate. Not movable.
class FakeEctx {
 public:
  explicit FakeEctx(uint32_t state_size = 0, uint32_t lcore_index = 0,
                    uint32_t ectx_id = 0)
      : lines_((state_size + sizeof(Line) - 1) / sizeof(Line)),
        state_size_(state_size),
        lcore_index_(lcore_index),
        ectx_id_(ectx_id),
        context_(MakeContext()) {}
  FakeEctx(const FakeEctx&) = delete;
  FakeEctx& operator=(const FakeEctx&) = delete;

  HandlerContext& context() { return context_; }
  FakeActionSink& sink() { return sink_; }
  std::span<uint8_t> state() {
    return {reinterpret_cast<uint8_t*>(lines_.data()), state_size_};
  }

  // Binds a region; the caller keeps `bytes` alive. `base_address` is its
  // address in the network's view (BoundRegion::base_address).
  void AddRegion(uint64_t id, std::span<uint8_t> bytes, bool readable = true,
                 bool writable = true, uint64_t base_address = 0) {
    regions_.push_back({id, bytes, readable, writable, base_address});
    context_ = MakeContext();
  }
  // Makes the next invocations look as if they ran on another HPU.
  void set_lcore_index(uint32_t lcore_index) {
    lcore_index_ = lcore_index;
    context_ = MakeContext();
  }

 private:
  struct alignas(64) Line {
    uint8_t bytes[64] = {};
  };
  HandlerContext MakeContext() {
    return HandlerContext(state(), regions_, &sink_, lcore_index_, ectx_id_);
  }

  std::vector<Line> lines_;
  uint32_t state_size_;
  uint32_t lcore_index_;
  uint32_t ectx_id_;
  std::vector<BoundRegion> regions_;
  FakeActionSink sink_;
  HandlerContext context_;
};

// Creates a handler of a registered kind the way an install does: parameters
// validated against the kind's schema, then the kind's factory. NOT_FOUND for
// an unknown kind; the schema's and the factory's INVALID_ARGUMENT otherwise.
inline absl::StatusOr<HandlerInstance> CreateHandlerForTest(
    absl::string_view kind_name,
    const absl::flat_hash_map<std::string, std::string>& params = {}) {
  const HandlerKind* kind = FindHandlerKind(kind_name);
  if (kind == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no handler kind '", kind_name, "' is linked in"));
  }
  absl::StatusOr<HandlerParams> validated =
      HandlerParams::Validate(kind->params, params);
  if (!validated.ok()) return validated.status();
  return kind->create(*validated);
}

// Call one entry point through the kind's ops table, as the engine does.
// nullopt when the kind does not have that handler.
inline std::optional<HandlerResult> RunHeader(const HandlerInstance& handler,
                                              HandlerContext& ctx,
                                              PacketView& packet) {
  if (handler.ops() == nullptr || handler.ops()->header == nullptr) {
    return std::nullopt;
  }
  return handler.ops()->header(handler.self(), ctx, packet);
}
inline std::optional<HandlerResult> RunPayload(const HandlerInstance& handler,
                                               HandlerContext& ctx,
                                               PacketView& packet) {
  if (handler.ops() == nullptr || handler.ops()->payload == nullptr) {
    return std::nullopt;
  }
  return handler.ops()->payload(handler.self(), ctx, packet);
}
inline std::optional<HandlerResult> RunCompletion(
    const HandlerInstance& handler, HandlerContext& ctx,
    uint64_t dropped_bytes = 0, bool flow_control_triggered = false) {
  if (handler.ops() == nullptr || handler.ops()->completion == nullptr) {
    return std::nullopt;
  }
  return handler.ops()->completion(handler.self(), ctx, dropped_bytes,
                                   flow_control_triggered);
}

}  // namespace spinnic

#endif  // SPINNIC_HANDLERS_API_TESTING_H_
