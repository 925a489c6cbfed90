// bcast: sPIN's streaming broadcast (Hoefler et al., SC'17): every packet of
// an incoming DiAD message is forwarded to this appliance's children in a
// binomial tree of DiAD peers as it arrives, and delivered locally, so a
// broadcast's packets pipeline down the tree instead of each level waiting
// for whole messages.
//
// The tree: `tree` names the P appliances in rank order (rank 0 is the
// root), `rank` is this appliance's own entry (a placeholder name, not a
// peer). The children of rank r are r + 2^k for every k with 2^k > r and
// r + 2^k < P; the parent of r > 0 is r with its highest set bit cleared.
// For P = 8: 0 -> {1, 2, 4}, 1 -> {3, 5}, 2 -> {6}, 3 -> {7}.
//
// Per packet (Payload only):
//   DiAD write   put to each child as a write of the payload with rkey
//                `rkey` (0: the rkey it came with, Message().key), or the
//                child's entry of `rkeys`, at the same address
//                (Message().address), or, with `addresses` (every rank's
//                buffer base_address), at the same offset in the child's
//                buffer: addresses[child] + Message().address -
//                addresses[rank]
//   DiAD stream  put to each child as a stream message to stream `stream`
//                (0: the stream id it came with)
// then the packet is left to the transport (Forward): a write is stored at
// its address, a stream packet goes to the stream's ring. Each forwarded
// packet is a message of its own at the child. Other transports
// (passthrough, RoCE) pass untouched, counted in not_diad.
//
// A region's rkey and base address are random per registration, so a
// broadcast of writes across appliances gives `rkeys` and `addresses` (the
// same lists on every rank); `rkey` alone, at the same address, serves only
// children whose buffers have that rkey and address.
//
// A refused put (the channel busy, its window full) is not retried: it is
// counted in puts_refused and the packet FAILs, so that the message fails
// here too (a write answers `rejected`; a put from the parent raises
// diad_op_failed there) and the root's sender learns to send it again.
// Children that took the packet before keep it (writes are idempotent).
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize 48):
//
//   offset  0: packets        DiAD packets forwarded to every child
//   offset  8: bytes          their payload bytes (once, not per child)
//   offset 16: puts           puts made (packets x children)
//   offset 24: puts_refused   puts refused; each FAILed its packet
//   offset 32: not_diad       packets of other transports, passed untouched
//   offset 40: bad_address    FAILs: with `addresses`, a write below this
//                             rank's buffer base; nothing put
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

struct BcastState {
  uint64_t packets;
  uint64_t bytes;
  uint64_t puts;
  uint64_t puts_refused;
  uint64_t not_diad;
  uint64_t bad_address;
};
static_assert(sizeof(BcastState) == 48, "the documented layout");

// The largest tree: ranks fit in a 64-bit mask, and a rank has at most
// log2(64) = 6 children.
inline constexpr uint32_t kMaxRanks = 64;
inline constexpr uint32_t kMaxChildren = 6;

class BcastHandler {
 public:
  static constexpr absl::string_view kName = "bcast";
  static constexpr absl::string_view kDescription =
      "streaming broadcast (sPIN): forwards every DiAD packet to this rank's "
      "children in a binomial tree of peers and delivers it locally";
  static constexpr uint32_t kMinStateSize = sizeof(BcastState);
  static constexpr ParamSpec kParams[] = {
      {.name = "tree",
       .type = ParamType::kString,
       .required = true,
       .help = "the P <= 64 appliances in rank order, comma-separated DiAD "
               "peer names (rank 0 is the root; this rank's own entry is a "
               "placeholder), e.g. a,b,c,d"},
      {.name = "rank",
       .type = ParamType::kUint,
       .required = true,
       .help = "this appliance's rank in tree, below P, e.g. 1",
       .max = kMaxRanks - 1},
      {.name = "rkey",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "rkey of every child's broadcast region, for write messages "
               "(0: the rkey the write came with), e.g. 0x1a2b3c4d",
       .max = 0xffffffff},
      {.name = "rkeys",
       .type = ParamType::kString,
       .required = false,
       .default_value = "",
       .help = "per-rank rkeys of the broadcast regions in tree order, "
               "comma-separated, overriding rkey (this rank's entry is not "
               "used), e.g. 0x11,0x22,0x33"},
      {.name = "addresses",
       .type = ParamType::kString,
       .required = false,
       .default_value = "",
       .help = "per-rank base_address of the broadcast regions in tree "
               "order, comma-separated: a write goes to the same offset in "
               "each child's region (empty: the same address), e.g. "
               "0x37b755711000,0x2c0031a4000"},
      {.name = "stream",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "stream id at the children, for stream messages (0: the "
               "stream id the message came with), e.g. 7",
       .max = 0xffffffff},
  };

  // Ranks of the children of `rank` among `ranks`, in ascending order.
  static std::vector<uint32_t> Children(uint32_t rank, uint32_t ranks) {
    std::vector<uint32_t> children;
    for (uint64_t step = 1; rank + step < ranks; step <<= 1) {
      if (step > rank) children.push_back(static_cast<uint32_t>(rank + step));
    }
    return children;
  }

  static absl::StatusOr<std::unique_ptr<BcastHandler>> Create(
      const HandlerParams& params) {
    const std::string& tree = params.GetString("tree");
    std::vector<std::string> names;
    for (absl::string_view name : absl::StrSplit(tree, ',')) {
      names.emplace_back(absl::StripAsciiWhitespace(name));
    }
    if (names.size() > kMaxRanks) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'tree' names ", names.size(), " ranks: write at most ",
          kMaxRanks, " comma-separated peer names"));
    }
    absl::flat_hash_set<absl::string_view> seen;
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i].empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameter 'tree' = '", tree, "': rank ", i,
            " has no name; write comma-separated peer names, e.g. a,b,c"));
      }
      if (!seen.insert(names[i]).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("parameter 'tree' = '", tree, "': '", names[i],
                         "' appears twice; write each appliance once"));
      }
    }
    const uint64_t rank = params.GetUint("rank");
    if (rank >= names.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'rank' = ", rank, " is not a rank of the ", names.size(),
          " in 'tree': write 0..", names.size() - 1));
    }
    std::vector<uint64_t> rkeys, addresses;
    if (absl::Status status =
            ParseList(params, "rkeys", names.size(), 0xffffffff, rkeys);
        !status.ok()) {
      return status;
    }
    if (absl::Status status =
            ParseList(params, "addresses", names.size(), UINT64_MAX, addresses);
        !status.ok()) {
      return status;
    }
    std::unique_ptr<BcastHandler> handler(new BcastHandler(
        static_cast<uint32_t>(params.GetUint("rkey")),
        static_cast<uint32_t>(params.GetUint("stream")), !addresses.empty(),
        addresses.empty() ? 0 : addresses[rank]));
    for (uint32_t child : Children(static_cast<uint32_t>(rank),
                                   static_cast<uint32_t>(names.size()))) {
      Child& entry = handler->children_[handler->child_count_++];
      entry.name = std::move(names[child]);
      entry.rkey = rkeys.empty() ? 0 : static_cast<uint32_t>(rkeys[child]);
      entry.base = addresses.empty() ? 0 : addresses[child];
    }
    return handler;
  }

  // The children's names: the install checks that each is a DiAD peer.
  std::vector<std::string> Peers() const {
    std::vector<std::string> peers;
    for (uint32_t i = 0; i < child_count_; ++i) {
      peers.push_back(children_[i].name);
    }
    return peers;
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    BcastState* state = ctx.StateAs<BcastState>();
    const MessageInfo& message = packet.Message();
    PeerPut put;
    const bool write = message.transport == MessageTransport::kDiadWrite;
    if (write) {
      put.kind = PeerPut::Kind::kWrite;
      if (by_offset_ && message.address < own_base_) {
        if (state != nullptr) AddToCounter(state->bad_address, 1);
        return HandlerResult::kFail;
      }
    } else if (message.transport == MessageTransport::kDiadStream) {
      put.kind = PeerPut::Kind::kStream;
      put.key = stream_ != 0 ? stream_ : message.key;
    } else {
      if (state != nullptr) AddToCounter(state->not_diad, 1);
      return HandlerResult::kSuccess;
    }
    put.data = packet.Payload();
    for (uint32_t i = 0; i < child_count_; ++i) {
      const Child& child = children_[i];
      put.peer = child.name;
      if (write) {
        put.key = child.rkey != 0 ? child.rkey
                  : rkey_ != 0    ? rkey_
                                  : message.key;
        put.address = by_offset_ ? child.base + (message.address - own_base_)
                                 : message.address;
      }
      if (!ctx.PutToPeer(put)) {
        if (state != nullptr) AddToCounter(state->puts_refused, 1);
        return HandlerResult::kFail;
      }
      if (state != nullptr) AddToCounter(state->puts, 1);
    }
    if (state != nullptr) {
      AddToCounter(state->packets, 1);
      AddToCounter(state->bytes, put.data.size());
    }
    return HandlerResult::kSuccess;  // Forward: delivered locally as well
  }

 private:
  struct Child {
    std::string name;
    uint32_t rkey = 0;  // 0: rkey_, or the write's own
    uint64_t base = 0;  // its buffer's base_address (by_offset_)
  };

  BcastHandler(uint32_t rkey, uint32_t stream, bool by_offset,
               uint64_t own_base)
      : rkey_(rkey),
        stream_(stream),
        by_offset_(by_offset),
        own_base_(own_base) {}

  // Parses parameter `name`, a comma-separated list of `ranks` numbers
  // (decimal or 0x-hex, at most `max`), into `values`; empty stays empty.
  static absl::Status ParseList(const HandlerParams& params,
                                absl::string_view name, size_t ranks,
                                uint64_t max, std::vector<uint64_t>& values) {
    const std::string& text = params.GetString(name);
    if (absl::StripAsciiWhitespace(text).empty()) return absl::OkStatus();
    for (absl::string_view item : absl::StrSplit(text, ',')) {
      item = absl::StripAsciiWhitespace(item);
      uint64_t value = 0;
      const bool ok =
          absl::ConsumePrefix(&item, "0x") || absl::ConsumePrefix(&item, "0X")
              ? absl::SimpleHexAtoi(item, &value)
              : absl::SimpleAtoi(item, &value);
      if (!ok || item.empty() || value > max) {
        return absl::InvalidArgumentError(absl::StrCat(
            "parameter '", name, "' = '", text, "': entry ", values.size(),
            " is not a number up to ", max,
            "; write one decimal or 0x-hex number per rank, e.g. 0x1a,0x2b"));
      }
      values.push_back(value);
    }
    if (values.size() != ranks) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter '", name, "' has ", values.size(), " entries for the ",
          ranks, " ranks in 'tree': write one per rank, in tree order"));
    }
    return absl::OkStatus();
  }

  const uint32_t rkey_;    // 0: the write's own rkey
  const uint32_t stream_;  // 0: the message's own stream id
  const bool by_offset_;   // `addresses` given
  const uint64_t own_base_;
  // Set in Create(), read-only after.
  std::array<Child, kMaxChildren> children_;
  uint32_t child_count_ = 0;
};

SPINNIC_HANDLER(BcastHandler);

}  // namespace
}  // namespace spinnic
