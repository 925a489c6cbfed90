// datatype: MPI derived-datatype unpacking of sPIN (Hoefler et al., SC'17,
// "sPIN: High-performance streaming Processing in the Network", the
// datatype use case). The sender packs the type's blocks back to back; the
// NIC unpacks them into host memory as the packets arrive, each packet in
// place by its message offset, whatever order the packets arrive in, so the
// host never copies the message again. Two layouts:
//
//   vector   (default) MPI_Type_vector: blocks of `blocklen` bytes, block i
//            at `base + i * stride` of bound region 0. The count is implicit:
//            the message length / blocklen (a last partial block lands at
//            the start of its slot).
//   indexed  MPI_Type_indexed: `blocks` lists the type's blocks as LEN@DISP
//            (bytes; DISP from `base`), packed in list order. Blocks may be
//            listed in any displacement order but must not overlap (a
//            receive type that overlaps is erroneous in MPI). `count`
//            instances (default 1) follow each other at the type's extent,
//            max(DISP + LEN) (the lower bound is `base`, as if the type
//            had a block at 0): instance q's block j lands at
//            base + q * extent + DISP_j. A message is at most count * the
//            sum of the lengths; a byte past that FAILs.
//
// A packet at message offset `off` maps onto one or more blocks: vector by
// division, indexed by a binary search over the blocks' packed offsets
// (prefix sums of the lengths) for the first one, then piece by piece.
//
//   Header      checks the whole message's extent against region 0 (and,
//               indexed, against the type) once, so that a message that
//               does not fit writes nothing at all
//   Payload     places this packet's payload by its message offset
//               (PacketView::Message().offset: a packet may start or end
//               mid-block, or span several blocks), then consumes it
//   Completion  counts the message as placed or failed
//
// Packets are consumed (Disposition::kConsume), not dropped: the handler took
// the bytes, so a DiAD write still succeeds without storing the packed bytes
// at its own address, a stream message is not put in the stream ring, and
// the engine counts no drop (kDrop would count every packet in the ECTX's
// `dropped` and make a DiAD write answer `rejected`).
//
// Where the transport does not know the message length yet (a RoCE SEND
// before its last packet: MessageInfo.length 0), Header cannot check the
// extent; each Payload checks that the message up to its packet's last byte
// fits, so nothing is ever written out of bounds, but such a message may be
// placed in part before a packet fails.
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize 48):
//
//   offset  0: bytes          payload bytes placed into the region
//   offset  8: messages       messages placed whole (no packet dropped)
//   offset 16: failed         messages that ended with dropped bytes (a FAIL
//                             below, or flow control)
//   offset 24: out_of_range   FAILs: the message's (or a packet's) extent
//                             runs past region 0's end, or (indexed) past
//                             count instances of the type
//   offset 32: not_writable   FAILs: region 0 lacks local_write
//   offset 40: events_refused events not raised because the queue was full
//
// With `event` set, the packet that ends a message raises that event code
// with 16 bytes: uint64 message length (bytes placed), uint32
// MessageInfo.source, uint32 MessageInfo.transport. (The packet with the
// last offset: where packets arrive out of order, earlier ones may still be
// in flight on other HPUs.)
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

struct DatatypeState {
  uint64_t bytes;
  uint64_t messages;
  uint64_t failed;
  uint64_t out_of_range;
  uint64_t not_writable;
  uint64_t events_refused;
};
static_assert(sizeof(DatatypeState) == 48, "the documented layout");

struct DatatypeEvent {
  uint64_t length;
  uint32_t source;
  uint32_t transport;
};
static_assert(sizeof(DatatypeEvent) == 16, "the documented event");

// Bounds of an indexed type's `blocks`.
constexpr size_t kMaxBlocks = 1024;
constexpr uint64_t kMaxBlockLength = uint64_t{1} << 32;
constexpr uint64_t kMaxDisplacement = uint64_t{1} << 48;

constexpr absl::string_view kBlocksSyntax =
    "write the blocks as LEN@DISP entries separated by commas, in bytes, "
    "DISP counted from base, e.g. 64@0,32@1024,128@4096";

// One block of an indexed type, as parsed.
struct Block {
  uint64_t length;
  uint64_t displacement;
};

absl::StatusOr<uint64_t> ParseNumber(absl::string_view text) {
  uint64_t value = 0;
  bool ok;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    ok = absl::SimpleHexAtoi(text.substr(2), &value);
  } else {
    ok = !text.empty() && absl::ascii_isdigit(text[0]) &&
         absl::SimpleAtoi(text, &value);
  }
  if (!ok) return absl::InvalidArgumentError("not an unsigned integer");
  return value;
}

// Parses and checks `blocks`: 1..kMaxBlocks entries, no zero length, no
// overlap. The list order is the packed order.
absl::StatusOr<std::vector<Block>> ParseBlocks(absl::string_view text) {
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'blocks' is empty: layout=indexed needs at least one "
        "block; ",
        kBlocksSyntax));
  }
  const std::vector<absl::string_view> entries = absl::StrSplit(text, ',');
  if (entries.size() > kMaxBlocks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter 'blocks' has ", entries.size(), " entries; at most ",
        kMaxBlocks,
        " blocks are supported: merge adjacent blocks, or use layout=vector "
        "for a regular stride"));
  }
  std::vector<Block> blocks;
  blocks.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const absl::string_view entry = absl::StripAsciiWhitespace(entries[i]);
    const std::vector<absl::string_view> parts = absl::StrSplit(entry, '@');
    absl::StatusOr<uint64_t> length, displacement;
    if (parts.size() == 2) {
      length = ParseNumber(absl::StripAsciiWhitespace(parts[0]));
      displacement = ParseNumber(absl::StripAsciiWhitespace(parts[1]));
    }
    if (parts.size() != 2 || !length.ok() || !displacement.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter 'blocks' entry ", i + 1, " '", entry,
                       "' is not LEN@DISP: ", kBlocksSyntax));
    }
    if (*length == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'blocks' entry ", i + 1, " '", entry,
          "' has length 0: every block needs at least 1 byte; leave the "
          "entry out"));
    }
    if (*length > kMaxBlockLength || *displacement > kMaxDisplacement) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'blocks' entry ", i + 1, " '", entry,
          "' is too large: LEN at most ", kMaxBlockLength, " (2^32), DISP at ",
          "most ", kMaxDisplacement, " (2^48)"));
    }
    blocks.push_back({*length, *displacement});
  }
  // Overlap: sort a copy by displacement, each must end before the next.
  std::vector<std::pair<Block, size_t>> sorted;
  sorted.reserve(blocks.size());
  for (size_t i = 0; i < blocks.size(); ++i) sorted.push_back({blocks[i], i});
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) {
                     return a.first.displacement < b.first.displacement;
                   });
  for (size_t k = 1; k < sorted.size(); ++k) {
    const auto& [before, i] = sorted[k - 1];
    const auto& [after, j] = sorted[k];
    if (before.displacement + before.length > after.displacement) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'blocks': entry ", j + 1, " (", after.length, "@",
          after.displacement, ") overlaps entry ", i + 1, " (", before.length,
          "@", before.displacement, ", which ends at ",
          before.displacement + before.length,
          "): the blocks of a receive type must not overlap; move or shorten "
          "one of them"));
    }
  }
  return blocks;
}

class DatatypeHandler {
 public:
  static constexpr absl::string_view kName = "datatype";
  static constexpr absl::string_view kDescription =
      "MPI derived datatype (sPIN): scatters a packed message into bound "
      "region 0, per packet in any arrival order; layout=vector (block i at "
      "base + i * stride) or layout=indexed (blocks LEN@DISP); consumes the "
      "packets";
  static constexpr uint32_t kMinStateSize = sizeof(DatatypeState);
  static constexpr uint32_t kMinRegions = 1;
  static constexpr ParamSpec kParams[] = {
      {.name = "layout",
       .type = ParamType::kString,
       .required = false,
       .default_value = "vector",
       .help = "the MPI type: vector (blocklen, stride) or indexed (blocks)"},
      {.name = "blocklen",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "layout=vector, required: bytes per block in the packed "
               "message, e.g. 64",
       .max = uint64_t{1} << 32},
      {.name = "stride",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "layout=vector, required: bytes from one block's start to the "
               "next one's in the region, at least blocklen (equal: "
               "contiguous), e.g. 256",
       .max = uint64_t{1} << 40},
      {.name = "blocks",
       .type = ParamType::kString,
       .required = false,
       .default_value = "",
       .help = "layout=indexed, required: up to 1024 blocks LEN@DISP, packed "
               "in list order, bytes, DISP from base, not overlapping, e.g. "
               "64@0,32@1024,128@4096"},
      {.name = "count",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "1",
       .help = "layout=indexed: instances of the type per message, each at "
               "the type's extent max(DISP + LEN) from the last",
       .min = 1,
       .max = uint64_t{1} << 32},
      {.name = "base",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "byte offset of the type (block 0, or DISP 0) in bound "
               "region 0"},
      {.name = "event",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "event code raised when a message is placed (0: none; below "
               "0xffff0000, which the engine owns), e.g. 0x5653",
       .max = 0xfffeffff},
  };

  static absl::StatusOr<std::unique_ptr<DatatypeHandler>> Create(
      const HandlerParams& params) {
    const std::string& layout = params.GetString("layout");
    const uint64_t blocklen = params.GetUint("blocklen");
    const uint64_t stride = params.GetUint("stride");
    const std::string& blocks_text = params.GetString("blocks");
    const uint64_t count = params.GetUint("count");
    const uint64_t base = params.GetUint("base");
    const uint32_t event = static_cast<uint32_t>(params.GetUint("event"));
    if (layout == "vector") {
      if (blocklen == 0) {
        return absl::InvalidArgumentError(
            "layout=vector needs parameter 'blocklen' (bytes per block in "
            "the packed message, at least 1), e.g. blocklen=64");
      }
      if (stride == 0) {
        return absl::InvalidArgumentError(
            "layout=vector needs parameter 'stride' (bytes from one block's "
            "start to the next one's, at least blocklen), e.g. stride=256");
      }
      if (stride < blocklen) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameter 'stride' = ", stride, " < blocklen ", blocklen,
            ": blocks would overlap; write stride >= blocklen (equal for a "
            "contiguous copy)"));
      }
      if (!absl::StripAsciiWhitespace(blocks_text).empty()) {
        return absl::InvalidArgumentError(
            "parameter 'blocks' applies to layout=indexed; write "
            "layout=indexed, or leave 'blocks' out for layout=vector");
      }
      if (count != 1) {
        return absl::InvalidArgumentError(
            "parameter 'count' applies to layout=indexed; layout=vector's "
            "count is the message length / blocklen: leave 'count' out");
      }
      return std::unique_ptr<DatatypeHandler>(
          new DatatypeHandler(blocklen, stride, base, event));
    }
    if (layout != "indexed") {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'layout' = '", layout, "': write vector or indexed"));
    }
    if (blocklen != 0 || stride != 0) {
      return absl::InvalidArgumentError(
          "parameters 'blocklen' and 'stride' apply to layout=vector; "
          "layout=indexed takes its blocks in 'blocks' (LEN@DISP,...)");
    }
    absl::StatusOr<std::vector<Block>> blocks = ParseBlocks(blocks_text);
    if (!blocks.ok()) return blocks.status();
    uint64_t size = 0, extent = 0;
    for (const Block& block : *blocks) {
      size += block.length;  // at most 2^10 * 2^32
      extent = std::max(extent, block.displacement + block.length);
    }
    uint64_t unused;
    if (__builtin_mul_overflow(count, extent, &unused) ||
        __builtin_add_overflow(unused, base, &unused)) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter 'count' = ", count, ": ", count,
                       " instances of extent ", extent, " from base ", base,
                       " pass 2^64 bytes; write a smaller count"));
    }
    return std::unique_ptr<DatatypeHandler>(
        new DatatypeHandler(*blocks, size, extent, count, base, event));
  }

  HandlerResult Header(HandlerContext& ctx, PacketView& packet) {
    DatatypeState* state = ctx.StateAs<DatatypeState>();
    const BoundRegion* region = Region(ctx);
    if (region == nullptr) {
      if (state != nullptr) AddToCounter(state->not_writable, 1);
      return HandlerResult::kFail;
    }
    // The whole message at once where its length is known: all or nothing.
    const uint64_t length = packet.Message().length;
    if (length != 0 && !Fits(length - 1, region->bytes.size())) {
      if (state != nullptr) AddToCounter(state->out_of_range, 1);
      return HandlerResult::kFail;
    }
    return HandlerResult::kProcessData;
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    DatatypeState* state = ctx.StateAs<DatatypeState>();
    const BoundRegion* region = Region(ctx);
    if (region == nullptr) {
      if (state != nullptr) AddToCounter(state->not_writable, 1);
      return HandlerResult::kFail;
    }
    const std::span<const uint8_t> payload = packet.Payload();
    const MessageInfo& message = packet.Message();
    const uint64_t offset = message.offset;
    const uint64_t size = payload.size();
    if (size != 0) {
      // Every message byte up to the packet's last lands in the region.
      uint64_t last;
      if (__builtin_add_overflow(offset, size - 1, &last) ||
          !Fits(last, region->bytes.size())) {
        if (state != nullptr) AddToCounter(state->out_of_range, 1);
        return HandlerResult::kFail;
      }
      if (indexed_) {
        ScatterIndexed(payload, offset, region->bytes.data());
      } else {
        ScatterVector(payload, offset, region->bytes.data());
      }
      if (state != nullptr) AddToCounter(state->bytes, size);
    }
    packet.Consume();
    if (event_ != 0 && message.length != 0 && offset + size == message.length) {
      DatatypeEvent event{
          .length = message.length,
          .source = message.source,
          .transport = static_cast<uint32_t>(message.transport)};
      if (!ctx.RaiseEvent(event_, {reinterpret_cast<const uint8_t*>(&event),
                                   sizeof event}) &&
          state != nullptr) {
        AddToCounter(state->events_refused, 1);
      }
    }
    return HandlerResult::kSuccess;
  }

  HandlerResult Completion(HandlerContext& ctx, uint64_t dropped_bytes,
                           bool flow_control_triggered) {
    DatatypeState* state = ctx.StateAs<DatatypeState>();
    if (state == nullptr) return HandlerResult::kSuccess;
    // Every placed packet is consumed; a dropped byte means a FAIL (or
    // flow control) left the message incomplete.
    if (dropped_bytes == 0 && !flow_control_triggered) {
      AddToCounter(state->messages, 1);
    } else {
      AddToCounter(state->failed, 1);
    }
    return HandlerResult::kSuccess;
  }

 private:
  // layout=vector.
  DatatypeHandler(uint64_t blocklen, uint64_t stride, uint64_t base,
                  uint32_t event)
      : indexed_(false),
        blocklen_(blocklen),
        stride_(stride),
        base_(base),
        event_(event) {}

  // layout=indexed: `blocks` checked by ParseBlocks, `size` the sum of
  // their lengths, `extent` max(displacement + length); count * extent +
  // base fits in 64 bits.
  DatatypeHandler(const std::vector<Block>& blocks, uint64_t size,
                  uint64_t extent, uint64_t count, uint64_t base,
                  uint32_t event)
      : indexed_(true),
        blocklen_(size),
        stride_(extent),
        base_(base),
        event_(event),
        total_(count * size) {
    packed_start_.reserve(blocks.size());
    length_.reserve(blocks.size());
    displacement_.reserve(blocks.size());
    end_before_.reserve(blocks.size());
    uint64_t packed = 0, end = 0;
    for (const Block& block : blocks) {
      packed_start_.push_back(packed);
      length_.push_back(block.length);
      displacement_.push_back(block.displacement);
      end_before_.push_back(end);
      packed += block.length;
      end = std::max(end, block.displacement + block.length);
    }
  }

  // Region 0 when the handler may write it, else null.
  static const BoundRegion* Region(const HandlerContext& ctx) {
    std::span<const BoundRegion> regions = ctx.Regions();
    if (regions.empty() || !regions[0].writable) return nullptr;
    return &regions[0];
  }

  // Whether message bytes 0..`last` all land inside a region of
  // `region_size` bytes (and, indexed, inside the type). Overflow-checked:
  // the parameters allow products past 2^64.
  bool Fits(uint64_t last, uint64_t region_size) const {
    uint64_t at;
    if (indexed_) {
      if (last >= total_) return false;
      // Instance q's bytes lie below (q + 1) * extent, so the message up to
      // `last` ends where instance q's blocks up to `last` do: the largest
      // end of the blocks packed before block i, or of the part of block i
      // (exclusive ends, relative to the instance).
      const uint64_t q = last / blocklen_;
      const uint64_t r = last % blocklen_;
      const size_t i = BlockAt(r);
      const uint64_t end = std::max(
          end_before_[i], displacement_[i] + (r - packed_start_[i]) + 1);
      // q < count, and count * extent + base fits: checked in Create.
      at = q * stride_ + base_;
      if (__builtin_add_overflow(at, end, &at)) return false;
      return at <= region_size;
    }
    if (__builtin_mul_overflow(last / blocklen_, stride_, &at) ||
        __builtin_add_overflow(at, last % blocklen_, &at) ||
        __builtin_add_overflow(at, base_, &at)) {
      return false;
    }
    return at < region_size;
  }

  // The block holding packed byte `r` (< the type's size) of an instance:
  // the last block whose packed start is at most r.
  size_t BlockAt(uint64_t r) const {
    return static_cast<size_t>(
        std::upper_bound(packed_start_.begin(), packed_start_.end(), r) -
        packed_start_.begin() - 1);
  }

  // Places `payload`, which starts at message byte `offset`; the caller
  // checked the extent.
  void ScatterVector(std::span<const uint8_t> payload, uint64_t offset,
                     uint8_t* region) const {
    const uint8_t* src = payload.data();
    uint64_t left = payload.size();
    if (stride_ == blocklen_) {
      std::memcpy(region + base_ + offset, src, left);
      return;
    }
    const uint64_t within = offset % blocklen_;
    uint8_t* dst = region + base_ + (offset / blocklen_) * stride_ + within;
    uint64_t chunk = std::min(blocklen_ - within, left);
    const uint64_t gap = stride_ - blocklen_;
    for (;;) {
      std::memcpy(dst, src, chunk);
      left -= chunk;
      if (left == 0) return;
      src += chunk;
      dst += chunk + gap;
      chunk = std::min(blocklen_, left);
    }
  }

  // As ScatterVector, for layout=indexed: from the block holding `offset`,
  // block by block, on into the next instance after the last block.
  void ScatterIndexed(std::span<const uint8_t> payload, uint64_t offset,
                      uint8_t* region) const {
    const uint8_t* src = payload.data();
    uint64_t left = payload.size();
    uint8_t* instance = region + base_ + (offset / blocklen_) * stride_;
    const uint64_t r = offset % blocklen_;
    size_t i = BlockAt(r);
    uint64_t within = r - packed_start_[i];
    const size_t blocks = length_.size();
    for (;;) {
      const uint64_t chunk = std::min(length_[i] - within, left);
      std::memcpy(instance + displacement_[i] + within, src, chunk);
      left -= chunk;
      if (left == 0) return;
      src += chunk;
      within = 0;
      if (++i == blocks) {
        i = 0;
        instance += stride_;
      }
    }
  }

  const bool indexed_;
  // vector: bytes per block; indexed: the type's size (sum of lengths).
  const uint64_t blocklen_;
  // vector: the stride; indexed: the type's extent, max(DISP + LEN).
  const uint64_t stride_;
  const uint64_t base_;
  const uint32_t event_;
  // layout=indexed only, read-only after Create: count * size, and per
  // block its packed offset in an instance (prefix sums of the lengths),
  // length, displacement, and the largest end (DISP + LEN) of the blocks
  // before it in the list.
  const uint64_t total_ = 0;
  std::vector<uint64_t> packed_start_;
  std::vector<uint64_t> length_;
  std::vector<uint64_t> displacement_;
  std::vector<uint64_t> end_before_;
};

SPINNIC_HANDLER(DatatypeHandler);

}  // namespace
}  // namespace spinnic
