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

  // Payload() ends at the IP datagram's end, so a prefix of zeros never
  // matches the Ethernet padding of a short frame.
  bool Matches(PacketView& packet) const {
    if (prefix_length_ == 0) return true;
    std::span<const uint8_t> payload = packet.Payload();
    if (payload.size() < prefix_length_) return false;
    return std::equal(prefix_.begin(), prefix_.begin() + prefix_length_,
                      payload.begin());
  }

  // Inline rather than a vector: one less pointer chase per packet.
  std::array<uint8_t, kMaxPrefix> prefix_{};
  const uint32_t prefix_length_;
  const bool invert_;
};

SPINNIC_HANDLER(FilterHandler);

}  // namespace
}  // namespace spinnic
