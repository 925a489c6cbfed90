// count: counts the packets and bytes its match rule sends it, optionally
// split into buckets by a header field, and forwards every packet unchanged.
//
// State layout (host byte order, read back through the control plane):
//
//   offset 16*i + 0: uint64 packets   of bucket i, i in [0, buckets)
//   offset 16*i + 8: uint64 bytes     of bucket i (whole frame, no FCS)
//
// bucket = key % buckets, where key is chosen by `by`:
//   none      0 (one total)
//   ip_proto  IPv4 protocol / IPv6 next header after extension headers;
//             0 for non-IP frames
//   dst_port  TCP/UDP destination port; 0 for other packets
//   src_port  TCP/UDP source port; 0 for other packets
//   in_port   DPDK port id the packet arrived on
//
// state_size must be at least 16 * buckets. The install checks only the
// kind's minimum (16 bytes, one bucket), so a smaller state is possible: a
// bucket that does not fit is counted into bucket 0, and nothing at all is
// counted when not even bucket 0 fits. The handler never writes outside its
// state.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dataplane/common/byte_order.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

constexpr uint64_t kMaxBuckets = 4096;

enum class CountKey : uint8_t { kNone, kIpProto, kDstPort, kSrcPort, kInPort };

struct BucketCounters {
  uint64_t packets;
  uint64_t bytes;
};
static_assert(sizeof(BucketCounters) == 16, "the documented state layout");

class CountHandler {
 public:
  static constexpr absl::string_view kName = "count";
  static constexpr absl::string_view kDescription =
      "counts packets and bytes per bucket in state memory; forwards "
      "everything unchanged";
  static constexpr uint32_t kMinStateSize = sizeof(BucketCounters);
  static constexpr ParamSpec kParams[] = {
      {.name = "by",
       .type = ParamType::kString,
       .required = false,
       .default_value = "none",
       .help = "what to split counts by: none (one total), ip_proto, "
               "dst_port, src_port (TCP/UDP ports; other packets count as "
               "0) or in_port"},
      {.name = "buckets",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "1",
       .help = "number of {packets, bytes} counter pairs, 1 to 4096; a "
               "packet goes to bucket key % buckets; state_size 0 sizes the "
               "state to 16 * buckets",
       .min = 1,
       .max = kMaxBuckets},
  };

  static uint32_t StateSizeFor(const HandlerParams& params) {
    return static_cast<uint32_t>(params.GetUint("buckets") *
                                 sizeof(BucketCounters));
  }

  static absl::StatusOr<std::unique_ptr<CountHandler>> Create(
      const HandlerParams& params) {
    const std::string& by = params.GetString("by");
    CountKey key;
    if (by == "none") {
      key = CountKey::kNone;
    } else if (by == "ip_proto") {
      key = CountKey::kIpProto;
    } else if (by == "dst_port") {
      key = CountKey::kDstPort;
    } else if (by == "src_port") {
      key = CountKey::kSrcPort;
    } else if (by == "in_port") {
      key = CountKey::kInPort;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'by' = '", by,
          "': write one of none, ip_proto, dst_port, src_port, in_port"));
    }
    uint64_t buckets = params.GetUint("buckets");
    if (buckets < 1 || buckets > kMaxBuckets) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'buckets' = ", buckets, ": write 1 to ", kMaxBuckets));
    }
    if (key == CountKey::kNone && buckets != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'buckets' = ", buckets,
          " needs a key to split by: set 'by' (e.g. by=dst_port) or "
          "leave buckets at 1"));
    }
    return std::unique_ptr<CountHandler>(
        new CountHandler(key, static_cast<uint32_t>(buckets)));
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    std::span<uint8_t> state = ctx.State();
    // The engine hands out 64-byte aligned state; anything else would make
    // the atomic_ref below undefined, so treat it like a state too small.
    if (reinterpret_cast<uintptr_t>(state.data()) % alignof(uint64_t) != 0) {
      return HandlerResult::kSuccess;
    }
    size_t fitting = state.size() / sizeof(BucketCounters);
    if (fitting == 0) return HandlerResult::kSuccess;
    uint32_t bucket = buckets_ == 1 ? 0 : Key(packet) % buckets_;
    if (bucket >= fitting) bucket = 0;
    auto* counters = reinterpret_cast<BucketCounters*>(state.data()) + bucket;
    AddToCounter(counters->packets, 1);
    AddToCounter(counters->bytes, packet.Length());
    return HandlerResult::kSuccess;
  }

 private:
  CountHandler(CountKey key, uint32_t buckets) : key_(key), buckets_(buckets) {}

  uint32_t Key(const PacketView& packet) const {
    const PacketLayers& layers = packet.Layers();
    switch (key_) {
      case CountKey::kNone:
        return 0;
      case CountKey::kIpProto:
        return layers.is_ipv4 || layers.is_ipv6 ? layers.ip_proto : 0;
      case CountKey::kDstPort:
        return Port(packet, 2);
      case CountKey::kSrcPort:
        return Port(packet, 0);
      case CountKey::kInPort:
        return packet.InPort();
    }
    return 0;
  }

  // TCP and UDP keep both ports in their first four bytes.
  static uint32_t Port(const PacketView& packet, uint32_t field_offset) {
    const PacketLayers& layers = packet.Layers();
    if (layers.ip_proto != 6 && layers.ip_proto != 17) return 0;
    if (!layers.is_ipv4 && !layers.is_ipv6) return 0;
    uint32_t at = uint32_t{layers.l4_offset} + field_offset;
    if (layers.l4_offset == PacketLayers::kAbsent || at + 2 > packet.Length()) {
      return 0;
    }
    std::span<const uint8_t> bytes = packet.Bytes();
    return LoadBe16(bytes.data() + at);
  }

  const CountKey key_;
  const uint32_t buckets_;
};

SPINNIC_HANDLER(CountHandler);

}  // namespace
}  // namespace spinnic
