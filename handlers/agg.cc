// agg: PsPIN's telemetry aggregation. Reads a key field of every packet its
// match rule (or transport binding) sends it, turns the key into a bucket
// and counts the packet's frames and bytes there: a histogram in the ECTX's
// state memory. Forwards every packet unchanged, or drops it with drop=true
// (a pure sink).
//
// Key: `width` bytes (1, 2, 4 or 8, big-endian on the wire) at byte `offset`
// from the start of layer `from`:
//   l2       the Ethernet header (offset 0 is the destination MAC)
//   l3       the IPv4/IPv6 header, after VLAN tags
//   l4       the TCP/UDP/ICMP header
//   payload  the first byte after the L4 header (on DiAD and RoCE: the
//            message bytes of this packet, after the transport's header)
// then key = (field & mask) >> shift.
//
// A packet without that layer (a non-IP frame with from=l3, an IP fragment
// after the first with from=l4), or whose field does not end inside it, has
// no key: it counts in `no_key` and in the totals, in no bucket. The field
// must end by the end of the frame for l2, of the IP datagram (Ethernet
// padding excluded) for l3, l4 and payload.
//
// Bucket: key % buckets; with clamp=true a key >= buckets counts in
// `overflow` instead, in no bucket.
//
// State layout (uint64 words, host byte order, 32 + 16 * buckets bytes):
//
//   offset  0            packets   every packet the handler saw
//   offset  8            bytes     their whole frames (no FCS)
//   offset 16            no_key    packets without the key field
//   offset 24            overflow  packets with key >= buckets (clamp=true)
//   offset 32 + 16*i     packets of bucket i, i in [0, buckets)
//   offset 40 + 16*i     bytes   of bucket i
//
// So packets == no_key + overflow + the buckets' packets once traffic stops.
// Concurrency: every HPU that runs the ECTX updates the same words with
// relaxed std::atomic_ref fetch_adds, so no count is lost, but the words are
// not one snapshot: a read while traffic flows may see a bucket updated and
// the totals not yet (or the reverse).
//
// The install sizes the state from the parameters (StateSizeFor). Should the
// state still be smaller (a test's hand-made context), a bucket beyond it
// counts in `overflow`, nothing is counted without the 32-byte header or
// with misaligned state, and nothing outside the state is ever written.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "dataplane/common/byte_order.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

// Ectx::kMaxStateSize (1 MiB), which the handler library does not include:
// the header plus 65534 buckets fill it exactly. tests/unit/handlers/
// agg_test.cc checks that the largest install fits.
constexpr uint64_t kMaxBuckets = 65534;

enum class AggLayer : uint8_t { kL2, kL3, kL4, kPayload };

struct AggHeader {
  uint64_t packets;
  uint64_t bytes;
  uint64_t no_key;
  uint64_t overflow;
};
struct AggBucket {
  uint64_t packets;
  uint64_t bytes;
};
static_assert(sizeof(AggHeader) == 32, "the documented state layout");
static_assert(sizeof(AggBucket) == 16, "the documented state layout");

class AggHandler {
 public:
  static constexpr absl::string_view kName = "agg";
  static constexpr absl::string_view kDescription =
      "histogram of packets and bytes by a key field (offset/width/mask/"
      "shift from a layer) in state memory; forwards everything unchanged";
  static constexpr uint32_t kMinStateSize =
      sizeof(AggHeader) + sizeof(AggBucket);
  static constexpr ParamSpec kParams[] = {
      {.name = "offset",
       .type = ParamType::kUint,
       .required = true,
       .help = "byte offset of the key field from the start of layer "
               "'from', e.g. 2 with from=l4 for the TCP/UDP destination port",
       .min = 0,
       .max = 65535},
      {.name = "from",
       .type = ParamType::kString,
       .required = false,
       .default_value = "l2",
       .help = "layer the offset counts from: l2 (Ethernet header), l3 "
               "(IP header), l4 (TCP/UDP/ICMP header) or payload; packets "
               "without it count as no_key"},
      {.name = "width",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "2",
       .help = "bytes in the key field: 1, 2, 4 or 8, big-endian on the wire",
       .min = 1,
       .max = 8},
      {.name = "mask",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0xffffffffffffffff",
       .help = "ANDed with the field before the shift; at most the width's "
               "bits (0xff for width=1); default: the whole field"},
      {.name = "shift",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "bits to shift the masked field right, below 8 * width",
       .min = 0,
       .max = 63},
      {.name = "buckets",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "256",
       .help = "number of {packets, bytes} counter pairs, 1 to 65534; key % "
               "buckets picks one; state_size 0 sizes the state to 32 + 16 * "
               "buckets",
       .min = 1,
       .max = kMaxBuckets},
      {.name = "clamp",
       .type = ParamType::kBool,
       .required = false,
       .default_value = "false",
       .help = "count keys >= buckets in the overflow counter instead of "
               "wrapping them into key % buckets"},
      {.name = "drop",
       .type = ParamType::kBool,
       .required = false,
       .default_value = "false",
       .help = "drop every packet after counting it (a pure sink) instead of "
               "forwarding it unchanged"},
  };

  static uint32_t StateSizeFor(const HandlerParams& params) {
    return static_cast<uint32_t>(sizeof(AggHeader) +
                                 params.GetUint("buckets") * sizeof(AggBucket));
  }

  static absl::StatusOr<std::unique_ptr<AggHandler>> Create(
      const HandlerParams& params) {
    const std::string& from = params.GetString("from");
    AggLayer layer;
    if (from == "l2") {
      layer = AggLayer::kL2;
    } else if (from == "l3") {
      layer = AggLayer::kL3;
    } else if (from == "l4") {
      layer = AggLayer::kL4;
    } else if (from == "payload") {
      layer = AggLayer::kPayload;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'from' = '", from, "': write one of l2, l3, l4, payload"));
    }
    const uint64_t width = params.GetUint("width");
    if (width != 1 && width != 2 && width != 4 && width != 8) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'width' = ", width, ": write 1, 2, 4 or 8 (bytes)"));
    }
    const uint64_t field_bits =
        width == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * width)) - 1;
    uint64_t mask = params.GetUint("mask");
    if (mask == 0) {
      return absl::InvalidArgumentError(
          "parameter 'mask' = 0 puts every packet in bucket 0: write the "
          "key's bits, e.g. 0xfc00, or leave mask out for the whole field");
    }
    if (mask != ~uint64_t{0} && (mask & ~field_bits) != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "parameter 'mask' = %#x has bits above a %d-byte field: write at "
          "most %#x, or raise 'width'",
          mask, width, field_bits));
    }
    mask &= field_bits;
    const uint64_t shift = params.GetUint("shift");
    if (shift >= 8 * width) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'shift' = ", shift, " shifts out every bit of a ", width,
          "-byte field: write 0 to ", 8 * width - 1));
    }
    if ((mask >> shift) == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "parameter 'shift' = %d shifts out every bit of mask %#x: write a "
          "shift below the mask's highest bit",
          shift, mask));
    }
    const uint64_t buckets = params.GetUint("buckets");
    if (buckets < 1 || buckets > kMaxBuckets) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'buckets' = ", buckets, ": write 1 to ", kMaxBuckets));
    }
    return std::unique_ptr<AggHandler>(new AggHandler(
        layer, static_cast<uint16_t>(params.GetUint("offset")),
        static_cast<uint8_t>(width), mask, static_cast<uint8_t>(shift),
        static_cast<uint32_t>(buckets), params.GetBool("clamp"),
        params.GetBool("drop")));
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    const HandlerResult result =
        drop_ ? HandlerResult::kDrop : HandlerResult::kSuccess;
    std::span<uint8_t> state = ctx.State();
    // The engine hands out 64-byte aligned state; anything else would make
    // atomic_ref undefined, so treat it like a state too small.
    if (reinterpret_cast<uintptr_t>(state.data()) % alignof(uint64_t) != 0 ||
        state.size() < sizeof(AggHeader)) {
      return result;
    }
    auto* header = reinterpret_cast<AggHeader*>(state.data());
    const uint32_t length = packet.Length();
    AddToCounter(header->packets, 1);
    AddToCounter(header->bytes, length);
    uint64_t key;
    if (!Key(packet, key)) {
      AddToCounter(header->no_key, 1);
      return result;
    }
    uint64_t bucket;
    if (clamp_) {
      bucket = key < buckets_ ? key : buckets_;
    } else {
      bucket = key % buckets_;
    }
    const size_t fitting =
        (state.size() - sizeof(AggHeader)) / sizeof(AggBucket);
    if (bucket >= buckets_ || bucket >= fitting) {
      AddToCounter(header->overflow, 1);
      return result;
    }
    auto* counters =
        reinterpret_cast<AggBucket*>(state.data() + sizeof(AggHeader)) + bucket;
    AddToCounter(counters->packets, 1);
    AddToCounter(counters->bytes, length);
    return result;
  }

 private:
  AggHandler(AggLayer layer, uint16_t offset, uint8_t width, uint64_t mask,
             uint8_t shift, uint32_t buckets, bool clamp, bool drop)
      : layer_(layer),
        offset_(offset),
        width_(width),
        mask_(mask),
        shift_(shift),
        buckets_(buckets),
        clamp_(clamp),
        drop_(drop) {}

  // The masked, shifted key; false when the packet has no such field.
  bool Key(const PacketView& packet, uint64_t& key) const {
    const PacketLayers& layers = packet.Layers();
    const uint32_t length = packet.Length();
    uint32_t start = PacketLayers::kAbsent;
    switch (layer_) {
      case AggLayer::kL2:
        start = 0;
        break;
      case AggLayer::kL3:
        start = layers.l3_offset;
        break;
      case AggLayer::kL4:
        start = layers.l4_offset;
        break;
      case AggLayer::kPayload:
        start = layers.payload_offset;
        break;
    }
    if (start == PacketLayers::kAbsent) return false;
    // Past L2 the field must lie in the IP datagram, not in the padding.
    uint32_t end = length;
    if (layer_ != AggLayer::kL2 && layers.l3_end != PacketLayers::kAbsent &&
        layers.l3_end < end) {
      end = layers.l3_end;
    }
    const uint32_t at = start + offset_;
    if (at + width_ > end) return false;
    const uint8_t* field = packet.Bytes().data() + at;
    uint64_t raw;
    switch (width_) {
      case 1:
        raw = field[0];
        break;
      case 2:
        raw = LoadBe16(field);
        break;
      case 4:
        raw = LoadBe32(field);
        break;
      default:
        raw = LoadBe64(field);
        break;
    }
    key = (raw & mask_) >> shift_;
    return true;
  }

  const AggLayer layer_;
  const uint16_t offset_;
  const uint8_t width_;
  const uint64_t mask_;
  const uint8_t shift_;
  const uint32_t buckets_;
  const bool clamp_;
  const bool drop_;
};

SPINNIC_HANDLER(AggHandler);

}  // namespace
}  // namespace spinnic
