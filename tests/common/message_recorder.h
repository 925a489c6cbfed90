// A test-only handler that records what PacketView::Message() said for each
// packet it ran on, into its bound region 0, and leaves the packet's
// disposition alone (the transport's default action still happens). A
// dataplane test registers it once (SPINNIC_HANDLER(MessageRecorder) in its
// .cc), installs it on a transport binding with a local_write region, and
// reads the records back with RecordedMessages().
//
// Region layout (host byte order): uint64 record count at 0, then records
// of sizeof(RecordedMessage) bytes from offset 64. Records past the region's
// end are counted but not stored.
#ifndef SPINNIC_TESTS_COMMON_MESSAGE_RECORDER_H_
#define SPINNIC_TESTS_COMMON_MESSAGE_RECORDER_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic::testing_messages {

struct RecordedMessage {
  uint32_t transport;
  uint32_t source;
  uint64_t offset;
  uint64_t length;
  uint64_t address;
  uint64_t payload_size;
  uint32_t key;
  uint32_t reserved;
  uint64_t region_address;  // Regions()[0].base_address: where region 0 starts
};

inline constexpr size_t kFirstRecordAt = 64;

class MessageRecorder {
 public:
  static constexpr absl::string_view kName = "test_message_recorder";
  static constexpr absl::string_view kDescription = "test";
  static constexpr uint32_t kMinStateSize = 0;
  static constexpr uint32_t kMinRegions = 1;
  static constexpr std::array<ParamSpec, 0> kParams{};
  static absl::StatusOr<std::unique_ptr<MessageRecorder>> Create(
      const HandlerParams&) {
    return std::make_unique<MessageRecorder>();
  }
  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    const BoundRegion& region = ctx.Regions()[0];
    if (!region.writable || region.bytes.size() < kFirstRecordAt) {
      return HandlerResult::kFail;
    }
    uint64_t count;
    std::memcpy(&count, region.bytes.data(), 8);
    const MessageInfo& m = packet.Message();
    RecordedMessage record{static_cast<uint32_t>(m.transport),
                           m.source,
                           m.offset,
                           m.length,
                           m.address,
                           packet.Payload().size(),
                           m.key,
                           0,
                           region.base_address};
    const size_t at = kFirstRecordAt + count * sizeof record;
    if (at + sizeof record <= region.bytes.size()) {
      std::memcpy(region.bytes.data() + at, &record, sizeof record);
    }
    ++count;
    std::memcpy(region.bytes.data(), &count, 8);
    return HandlerResult::kSuccess;
  }
};

// The records in a region's bytes (as Dataplane::ReadRegion returns them).
inline std::vector<RecordedMessage> RecordedMessages(const std::string& bytes) {
  std::vector<RecordedMessage> out;
  if (bytes.size() < kFirstRecordAt) return out;
  uint64_t count;
  std::memcpy(&count, bytes.data(), 8);
  for (uint64_t i = 0; i < count; ++i) {
    const size_t at = kFirstRecordAt + i * sizeof(RecordedMessage);
    if (at + sizeof(RecordedMessage) > bytes.size()) break;
    RecordedMessage record;
    std::memcpy(&record, bytes.data() + at, sizeof record);
    out.push_back(record);
  }
  return out;
}

}  // namespace spinnic::testing_messages

#endif  // SPINNIC_TESTS_COMMON_MESSAGE_RECORDER_H_
