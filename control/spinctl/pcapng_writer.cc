#include "control/spinctl/pcapng_writer.h"

namespace spinnic::spinctl {
namespace {

constexpr uint32_t kSectionHeaderType = 0x0A0D0D0A;
constexpr uint32_t kInterfaceType = 0x00000001;
constexpr uint32_t kEnhancedPacketType = 0x00000006;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr uint16_t kLinkTypeEthernet = 1;

constexpr uint16_t kOptEndOfOpt = 0;
constexpr uint16_t kOptComment = 1;
constexpr uint16_t kShbUserAppl = 4;
constexpr uint16_t kIfName = 2;
constexpr uint16_t kIfDescription = 3;
constexpr uint16_t kIfTsResol = 9;
constexpr uint16_t kIfFilter = 11;
// if_tsresol: 10^-9 s.
constexpr uint8_t kNanosecondResolution = 9;
// if_filter's first byte: the filter is a libpcap expression string.
constexpr char kFilterIsExpression = 0;
// An option's value length is 16 bits.
constexpr size_t kMaxOptionBytes = 0xffff;

void Put16(std::string* out, uint16_t value) {
  out->push_back(static_cast<char>(value & 0xff));
  out->push_back(static_cast<char>(value >> 8));
}

void Put32(std::string* out, uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) {
    out->push_back(static_cast<char>((value >> shift) & 0xff));
  }
}

void PadTo32Bits(std::string* out) {
  while (out->size() % 4 != 0) out->push_back('\0');
}

void PutOption(std::string* out, uint16_t code, absl::string_view value) {
  if (value.size() > kMaxOptionBytes) value = value.substr(0, kMaxOptionBytes);
  Put16(out, code);
  Put16(out, static_cast<uint16_t>(value.size()));
  out->append(value.data(), value.size());
  PadTo32Bits(out);
}

// Type and total length around `body` (already 32-bit aligned).
std::string Block(uint32_t type, const std::string& body) {
  const uint32_t total = static_cast<uint32_t>(body.size() + 12);
  std::string block;
  block.reserve(total);
  Put32(&block, type);
  Put32(&block, total);
  block += body;
  Put32(&block, total);
  return block;
}

}  // namespace

std::string PcapngSectionHeader(absl::string_view application) {
  std::string body;
  Put32(&body, kByteOrderMagic);
  Put16(&body, 1);           // major version
  Put16(&body, 0);           // minor version
  Put32(&body, 0xffffffff);  // section length: not given
  Put32(&body, 0xffffffff);
  if (!application.empty()) {
    PutOption(&body, kShbUserAppl, application);
    PutOption(&body, kOptEndOfOpt, "");
  }
  return Block(kSectionHeaderType, body);
}

std::string PcapngInterface(absl::string_view name,
                            absl::string_view description, uint32_t snaplen,
                            absl::string_view filter) {
  std::string body;
  Put16(&body, kLinkTypeEthernet);
  Put16(&body, 0);  // reserved
  Put32(&body, snaplen);
  PutOption(&body, kIfName, name);
  if (!description.empty()) PutOption(&body, kIfDescription, description);
  const char resolution = static_cast<char>(kNanosecondResolution);
  PutOption(&body, kIfTsResol, absl::string_view(&resolution, 1));
  if (!filter.empty()) {
    std::string value(1, kFilterIsExpression);
    value.append(filter.data(), filter.size());
    PutOption(&body, kIfFilter, value);
  }
  PutOption(&body, kOptEndOfOpt, "");
  return Block(kInterfaceType, body);
}

std::string PcapngPacket(uint32_t interface_id, uint64_t timestamp_ns,
                         uint32_t original_length,
                         std::span<const uint8_t> data,
                         absl::string_view comment) {
  std::string body;
  body.reserve(20 + data.size() + 4 + comment.size() + 8);
  Put32(&body, interface_id);
  Put32(&body, static_cast<uint32_t>(timestamp_ns >> 32));
  Put32(&body, static_cast<uint32_t>(timestamp_ns));
  Put32(&body, static_cast<uint32_t>(data.size()));
  Put32(&body, original_length);
  body.append(reinterpret_cast<const char*>(data.data()), data.size());
  PadTo32Bits(&body);
  if (!comment.empty()) {
    PutOption(&body, kOptComment, comment);
    PutOption(&body, kOptEndOfOpt, "");
  }
  return Block(kEnhancedPacketType, body);
}

}  // namespace spinnic::spinctl
