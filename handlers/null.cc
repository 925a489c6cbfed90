// null: does nothing and forwards every packet. It exists to measure the
// engine's dispatch cost (bench/) with a handler whose own cost is nil.
#include <array>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

class NullHandler {
 public:
  static constexpr absl::string_view kName = "null";
  static constexpr absl::string_view kDescription =
      "does nothing: forwards every packet (for dispatch benchmarks)";
  static constexpr uint32_t kMinStateSize = 0;
  static constexpr std::array<ParamSpec, 0> kParams{};

  static absl::StatusOr<std::unique_ptr<NullHandler>> Create(
      const HandlerParams&) {
    return std::make_unique<NullHandler>();
  }

  HandlerResult Payload(HandlerContext&, PacketView&) {
    return HandlerResult::kSuccess;
  }
};

SPINNIC_HANDLER(NullHandler);

}  // namespace
}  // namespace spinnic
