// The sPIN handler API. Read this file to write a handler.
//
// A handler kind is a C++ class with up to three member functions, called by
// the sPIN engine on the HPU lcores with sPIN's ordering (docs/handlers.md):
//
//   HandlerResult Header(HandlerContext&, PacketView&);      // first packet
//   HandlerResult Payload(HandlerContext&, PacketView&);     // every packet
//   HandlerResult Completion(HandlerContext&, uint64_t dropped_bytes,
//                            bool flow_control_triggered);   // after the last
//
// Header: PROCESS_DATA (run Payload on every packet of the message), DROP (drop
// the whole message), SUCCESS (default action, no payload handler), FAIL.
// Payload: SUCCESS (packet goes on per its disposition), DROP (packet dropped,
// counted into dropped_bytes), FAIL (message failed: the packet and the rest
// of the message are dropped, an event is raised). Completion: SUCCESS or FAIL.
// Any other code is counted as invalid and treated like FAIL.
//
// The class also declares its kind:
//
//   class MyHandler {
//    public:
//     static constexpr absl::string_view kName = "my_handler";
//     static constexpr absl::string_view kDescription = "one line";
//     static constexpr uint32_t kMinStateSize = 0;  // bytes of ECTX state
//     static constexpr ParamSpec kParams[] = {{...}};  // omit if none
//     // Optional, when the state needed depends on the parameters:
//     static uint32_t StateSizeFor(const HandlerParams& params);
//     // Optional: memory regions an install must bind (ctx.Regions()).
//     static constexpr uint32_t kMinRegions = 1;
//     static absl::StatusOr<std::unique_ptr<MyHandler>> Create(
//         const HandlerParams& params);
//     HandlerResult Payload(HandlerContext& ctx, PacketView& packet);
//     // Optional: how this instance runs, for ListHandlers' `runtime` (the
//     // bpf kind: JIT-compiled or interpreted, instructions per section).
//     // Control path only; never called on an HPU.
//     std::string Describe() const;
//     // Optional: the DiAD peers its parameters name (bcast's tree); the
//     // install refuses a name that is not a peer. Control path only.
//     std::vector<std::string> Peers() const;
//   };
//   SPINNIC_HANDLER(MyHandler);
//
// One instance exists per installed ECTX and is shared by all HPU lcores:
// member data is read-only after Create(); mutable state lives in
// ctx.State() (use std::atomic_ref for words several lcores update).
// Handlers must not allocate, lock, block or throw: they run on the hot path
// under a cycle budget.
#ifndef SPINNIC_HANDLERS_API_HANDLER_H_
#define SPINNIC_HANDLERS_API_HANDLER_H_

#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "handlers/api/context.h"
#include "handlers/api/packet.h"
#include "handlers/api/params.h"

namespace spinnic {

enum class HandlerResult : uint8_t {
  kProcessData = 0,
  kDrop = 1,
  kSuccess = 2,
  kFail = 3,
  // The handler broke a rule at run time (an eBPF helper refused an access
  // outside its buffer): FAIL, and one overrun toward the ECTX's
  // disable_after_overruns, like a cycle budget overrun. Not for handlers'
  // own logic: a native handler that finds bad input returns kFail.
  kFault = 4,
};

// Type-erased entry points, one table per handler kind (no per-packet virtual
// dispatch: the engine calls through these pointers, null when absent).
struct HandlerOps {
  HandlerResult (*header)(void* self, HandlerContext&, PacketView&);
  HandlerResult (*payload)(void* self, HandlerContext&, PacketView&);
  HandlerResult (*completion)(void* self, HandlerContext&,
                              uint64_t dropped_bytes,
                              bool flow_control_triggered);
  void (*destroy)(void* self);
  // How the instance runs (T::Describe); null when the kind has none.
  // Control path only.
  std::string (*describe)(const void* self);
  // The DiAD peers its parameters name (T::Peers); null when the kind
  // names none. Control path only: the install refuses unknown ones.
  std::vector<std::string> (*peers)(const void* self);
};

// An installed handler object with its entry points. Move-only owner.
class HandlerInstance {
 public:
  HandlerInstance() = default;
  HandlerInstance(void* self, const HandlerOps* ops) : self_(self), ops_(ops) {}
  HandlerInstance(HandlerInstance&& other) noexcept {
    *this = std::move(other);
  }
  HandlerInstance& operator=(HandlerInstance&& other) noexcept {
    if (this != &other) {
      Reset();
      self_ = other.self_;
      ops_ = other.ops_;
      other.self_ = nullptr;
      other.ops_ = nullptr;
    }
    return *this;
  }
  HandlerInstance(const HandlerInstance&) = delete;
  HandlerInstance& operator=(const HandlerInstance&) = delete;
  ~HandlerInstance() { Reset(); }

  void* self() const { return self_; }
  const HandlerOps* ops() const { return ops_; }
  // The handler's own account of how it runs (T::Describe), empty when its
  // kind has none. Control path only.
  std::string Describe() const {
    if (self_ == nullptr || ops_->describe == nullptr) return {};
    return ops_->describe(self_);
  }
  // The DiAD peers the instance will put to by name (T::Peers), empty when
  // its kind names none. Control path only.
  std::vector<std::string> Peers() const {
    if (self_ == nullptr || ops_->peers == nullptr) return {};
    return ops_->peers(self_);
  }

 private:
  void Reset() {
    if (self_ != nullptr) ops_->destroy(self_);
    self_ = nullptr;
  }
  void* self_ = nullptr;
  const HandlerOps* ops_ = nullptr;
};

// A registered handler kind: its name, schema and factory.
struct HandlerKind {
  absl::string_view name;
  absl::string_view description;
  std::span<const ParamSpec> params;
  uint32_t min_state_size;
  // State bytes the given (validated) parameters need; null: min_state_size.
  uint32_t (*state_size_for)(const HandlerParams& params);
  // Bound regions an install must give it.
  uint32_t min_regions;
  bool has_header;
  bool has_payload;
  bool has_completion;
  absl::StatusOr<HandlerInstance> (*create)(const HandlerParams& params);
};

// Bits of a kind's `uint8_t Stages() const` (see HasInstanceStages): which
// of its functions an instance has.
inline constexpr uint8_t kHeaderStage = 1, kPayloadStage = 2,
                         kCompletionStage = 4;

namespace handler_internal {

template <typename T>
HandlerResult CallHeader(void* self, HandlerContext& ctx, PacketView& packet) {
  return static_cast<T*>(self)->Header(ctx, packet);
}
template <typename T>
HandlerResult CallPayload(void* self, HandlerContext& ctx, PacketView& packet) {
  return static_cast<T*>(self)->Payload(ctx, packet);
}
template <typename T>
HandlerResult CallCompletion(void* self, HandlerContext& ctx, uint64_t dropped,
                             bool flow_control) {
  return static_cast<T*>(self)->Completion(ctx, dropped, flow_control);
}
template <typename T>
void Destroy(void* self) {
  delete static_cast<T*>(self);
}
template <typename T>
std::string CallDescribe(const void* self) {
  return static_cast<const T*>(self)->Describe();
}
template <typename T>
std::vector<std::string> CallPeers(const void* self) {
  return static_cast<const T*>(self)->Peers();
}

template <typename T>
concept HasHeader = requires(T t, HandlerContext& c, PacketView& p) {
  { t.Header(c, p) } -> std::same_as<HandlerResult>;
};
template <typename T>
concept HasPayload = requires(T t, HandlerContext& c, PacketView& p) {
  { t.Payload(c, p) } -> std::same_as<HandlerResult>;
};
template <typename T>
concept HasCompletion = requires(T t, HandlerContext& c) {
  { t.Completion(c, uint64_t{0}, false) } -> std::same_as<HandlerResult>;
};

// A kind whose instances differ in which functions they have (a program the
// user brings) says so with `uint8_t Stages() const`: the engine then skips
// the missing ones, and their cycle accounting, as for a native kind
// without them.
template <typename T>
concept HasInstanceStages = requires(const T& t) {
  { t.Stages() } -> std::same_as<uint8_t>;
};

template <typename T>
concept HasDescribe = requires(const T& t) {
  { t.Describe() } -> std::convertible_to<std::string>;
};

template <typename T>
concept HasPeers = requires(const T& t) {
  { t.Peers() } -> std::convertible_to<std::vector<std::string>>;
};

template <typename T,
          uint8_t kStages = kHeaderStage | kPayloadStage | kCompletionStage>
constexpr HandlerOps MakeOps() {
  HandlerOps ops{nullptr, nullptr, nullptr, &Destroy<T>, nullptr, nullptr};
  if constexpr (HasHeader<T> && (kStages & kHeaderStage) != 0) {
    ops.header = &CallHeader<T>;
  }
  if constexpr (HasPayload<T> && (kStages & kPayloadStage) != 0) {
    ops.payload = &CallPayload<T>;
  }
  if constexpr (HasCompletion<T> && (kStages & kCompletionStage) != 0) {
    ops.completion = &CallCompletion<T>;
  }
  if constexpr (HasDescribe<T>) ops.describe = &CallDescribe<T>;
  if constexpr (HasPeers<T>) ops.peers = &CallPeers<T>;
  return ops;
}

template <typename T>
const HandlerOps* OpsFor(const T& instance) {
  if constexpr (HasInstanceStages<T>) {
    static constexpr HandlerOps kByStages[8] = {
        MakeOps<T, 0>(), MakeOps<T, 1>(), MakeOps<T, 2>(), MakeOps<T, 3>(),
        MakeOps<T, 4>(), MakeOps<T, 5>(), MakeOps<T, 6>(), MakeOps<T, 7>()};
    return &kByStages[instance.Stages() & 7];
  } else {
    static constexpr HandlerOps kTypeOps = MakeOps<T>();
    return &kTypeOps;
  }
}

template <typename T>
absl::StatusOr<HandlerInstance> Create(const HandlerParams& params) {
  absl::StatusOr<std::unique_ptr<T>> created = T::Create(params);
  if (!created.ok()) return created.status();
  const HandlerOps* ops = OpsFor(**created);
  return HandlerInstance(created->release(), ops);
}

template <typename T>
constexpr std::span<const ParamSpec> ParamsOf() {
  if constexpr (requires { T::kParams[0]; }) {
    return std::span<const ParamSpec>(T::kParams);
  } else {
    return {};
  }
}

template <typename T>
constexpr auto StateSizeForOf() -> uint32_t (*)(const HandlerParams&) {
  if constexpr (requires(const HandlerParams& p) {
                  { T::StateSizeFor(p) } -> std::same_as<uint32_t>;
                }) {
    return &T::StateSizeFor;
  } else {
    return nullptr;
  }
}

template <typename T>
constexpr uint32_t MinRegionsOf() {
  if constexpr (requires { T::kMinRegions; }) {
    return T::kMinRegions;
  } else {
    return 0;
  }
}

template <typename T>
HandlerKind MakeKind() {
  return HandlerKind{
      .name = T::kName,
      .description = T::kDescription,
      .params = ParamsOf<T>(),
      .min_state_size = T::kMinStateSize,
      .state_size_for = StateSizeForOf<T>(),
      .min_regions = MinRegionsOf<T>(),
      .has_header = HasHeader<T>,
      .has_payload = HasPayload<T>,
      .has_completion = HasCompletion<T>,
      .create = &Create<T>,
  };
}

// Adds a kind at static-initialisation time. Returns true so that it can
// initialise a namespace-scope constant.
bool RegisterKind(const HandlerKind& kind);

}  // namespace handler_internal

// The compiled-in handler kinds, in name order.
std::span<const HandlerKind> RegisteredHandlerKinds();
// nullptr when no kind has that name.
const HandlerKind* FindHandlerKind(absl::string_view name);

}  // namespace spinnic

#define SPINNIC_HANDLER_CONCAT_(a, b) a##b
#define SPINNIC_HANDLER_CONCAT(a, b) SPINNIC_HANDLER_CONCAT_(a, b)
// Registers handler class T by its kName. Use once, in T's .cc file.
#define SPINNIC_HANDLER(T)                                   \
  [[maybe_unused]] static const bool SPINNIC_HANDLER_CONCAT( \
      spinnic_handler_registered_, __LINE__) =               \
      ::spinnic::handler_internal::RegisterKind(             \
          ::spinnic::handler_internal::MakeKind<T>())

#endif  // SPINNIC_HANDLERS_API_HANDLER_H_
