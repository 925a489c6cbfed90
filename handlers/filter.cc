// filter: drops what its match rule sends it. With payload_prefix, only
// packets whose L4 payload starts with those bytes are dropped and the rest
// pass; invert turns that around (drop what does not start with the prefix).
// No state.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

constexpr size_t kMaxPrefix = 64;

// One past the last byte of the IP payload. PacketView::Payload() runs to the
// end of the frame, which includes Ethernet padding on short frames; a prefix
// of zeros must not match that padding.
uint32_t IpPayloadEnd(const PacketView& packet) {
  const PacketLayers& layers = packet.Layers();
  std::span<const uint8_t> bytes = packet.Bytes();
  uint32_t l3 = layers.l3_offset;
  uint32_t end = packet.Length();
  if (layers.is_ipv4 && l3 + 4 <= bytes.size()) {
    end = l3 + (uint32_t{bytes[l3 + 2]} << 8 | bytes[l3 + 3]);
  } else if (layers.is_ipv6 && l3 + 6 <= bytes.size()) {
    // The classifier does not take jumbograms (payload length 0), so this
    // length is the datagram's.
    end = l3 + 40 + (uint32_t{bytes[l3 + 4]} << 8 | bytes[l3 + 5]);
  }
  return std::min(end, packet.Length());
}

class FilterHandler {
 public:
  static constexpr absl::string_view kName = "filter";
  static constexpr absl::string_view kDescription =
      "drops matched packets, or only those whose L4 payload starts with "
      "payload_prefix";
  static constexpr uint32_t kMinStateSize = 0;
  static constexpr ParamSpec kParams[] = {
      {.name = "payload_prefix",
       .type = ParamType::kBytes,
       .required = false,
       .default_value = "",
       .help = "hex bytes, up to 64, e.g. 474554 for \"GET\": drop only "
               "packets whose TCP/UDP/ICMP payload starts with them; empty "
               "drops every matched packet"},
      {.name = "invert",
       .type = ParamType::kBool,
       .required = false,
       .default_value = "false",
       .help = "true: drop the packets that do NOT start with "
               "payload_prefix and pass those that do"},
  };

  static absl::StatusOr<std::unique_ptr<FilterHandler>> Create(
      const HandlerParams& params) {
    const std::vector<uint8_t>& prefix = params.GetBytes("payload_prefix");
    bool invert = params.GetBool("invert");
    if (prefix.size() > kMaxPrefix) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter 'payload_prefix' has ", prefix.size(),
                       " bytes: write at most ", kMaxPrefix));
    }
    if (invert && prefix.empty()) {
      return absl::InvalidArgumentError(
          "parameter 'invert' = true needs a payload_prefix (without one "
          "every packet matches, so nothing would be dropped); set "
          "payload_prefix or leave invert false");
    }
    return std::unique_ptr<FilterHandler>(new FilterHandler(prefix, invert));
  }

  HandlerResult Payload(HandlerContext&, PacketView& packet) {
    return Matches(packet) != invert_ ? HandlerResult::kDrop
                                      : HandlerResult::kSuccess;
  }

 private:
  FilterHandler(std::span<const uint8_t> prefix, bool invert)
      : prefix_length_(static_cast<uint32_t>(prefix.size())), invert_(invert) {
    std::copy(prefix.begin(), prefix.end(), prefix_.begin());
  }

  bool Matches(const PacketView& packet) const {
    if (prefix_length_ == 0) return true;
    uint32_t start = packet.Layers().payload_offset;
    if (start == PacketLayers::kAbsent) return false;
    uint32_t end = IpPayloadEnd(packet);
    if (start > end || end - start < prefix_length_) return false;
    std::span<const uint8_t> bytes = packet.Bytes();
    return std::equal(prefix_.begin(), prefix_.begin() + prefix_length_,
                      bytes.begin() + start);
  }

  // Inline rather than a vector: one less pointer chase per packet.
  std::array<uint8_t, kMaxPrefix> prefix_{};
  const uint32_t prefix_length_;
  const bool invert_;
};

SPINNIC_HANDLER(FilterHandler);

}  // namespace
}  // namespace spinnic
