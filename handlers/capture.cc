// capture: copies the start of every packet its match rule gives it into
// the first bound memory region, as fixed-size records in a ring, and
// forwards the packet unchanged: sPIN's "DMA to host memory", which a
// client reads back with ReadRegion (spinctl region-read).
//
// Region layout: record i of n = region_bytes / snap lives at offset
// i * snap (a trailing remainder is unused):
//
//   offset 0: uint32 frame length in bytes (host byte order)
//   offset 4: uint32 bytes of the frame captured, min(length, snap - 8)
//   offset 8: the frame's first bytes; the rest of the record is zero
//
// State layout (host byte order):
//
//   offset 0: uint64 records written (packet k goes to record k % n)
//   offset 8: uint64 packets not captured: the region is smaller than one
//             record, or it was registered without local_write
//
// Several HPUs capture at once: each claims its record number with one
// atomic add on the state, so records never overlap. A reader that wants
// whole records reads while traffic is paused, or re-reads the counter.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

constexpr uint32_t kRecordHeader = 8;

class CaptureHandler {
 public:
  static constexpr absl::string_view kName = "capture";
  static constexpr absl::string_view kDescription =
      "copies each packet's first bytes into bound region 0 as a ring of "
      "fixed-size records; forwards everything unchanged";
  static constexpr uint32_t kMinStateSize = 16;
  static constexpr uint32_t kMinRegions = 1;
  static constexpr ParamSpec kParams[] = {
      {.name = "snap",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "128",
       .help = "bytes per record, header (8 bytes) included; a frame longer "
               "than snap - 8 is cut",
       .min = 16,
       .max = 65536},
  };

  static absl::StatusOr<std::unique_ptr<CaptureHandler>> Create(
      const HandlerParams& params) {
    return std::make_unique<CaptureHandler>(
        static_cast<uint32_t>(params.GetUint("snap")));
  }

  explicit CaptureHandler(uint32_t snap) : snap_(snap) {}

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    std::span<uint8_t> state = ctx.State();
    std::atomic_ref<uint64_t> records(
        *reinterpret_cast<uint64_t*>(state.data()));
    std::atomic_ref<uint64_t> skipped(
        *reinterpret_cast<uint64_t*>(state.data() + 8));
    const BoundRegion& region = ctx.Regions()[0];
    uint64_t slots = region.bytes.size() / snap_;
    if (slots == 0 || !region.writable) {
      skipped.fetch_add(1, std::memory_order_relaxed);
      return HandlerResult::kSuccess;
    }
    uint64_t index = records.fetch_add(1, std::memory_order_relaxed) % slots;
    uint8_t* record = region.bytes.data() + index * snap_;
    std::span<const uint8_t> frame = packet.Bytes();
    uint32_t length = static_cast<uint32_t>(frame.size());
    uint32_t captured = std::min(length, snap_ - kRecordHeader);
    std::memcpy(record, &length, 4);
    std::memcpy(record + 4, &captured, 4);
    std::memcpy(record + kRecordHeader, frame.data(), captured);
    std::memset(record + kRecordHeader + captured, 0,
                snap_ - kRecordHeader - captured);
    return HandlerResult::kSuccess;
  }

 private:
  uint32_t snap_;
};

SPINNIC_HANDLER(CaptureHandler);

}  // namespace
}  // namespace spinnic
