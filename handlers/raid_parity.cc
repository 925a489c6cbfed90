// raid_parity: sPIN's RAID-5 parity update (Hoefler et al., SC'17, the
// storage use case). A block write to a data node changes the stripe's
// parity by delta = new XOR old; the data node's NIC computes that delta as
// the packets arrive and puts it straight to the parity node, whose NIC
// folds it into the parity, so neither host touches the write.
//
// role=data: region 0 is the block store, the region the handler is bound
// to with diad { write_region } (bound again as region 0). For each packet
// of a DiAD write, at offset o = Message().address - region 0's address:
//
//   1. payload ^= region[o, o + n)      the delta, in place in the packet
//   2. put the delta to `parity_peer` as a DiAD write at parity_address + o
//      with rkey parity_rkey            (parity_address: the parity node's
//                                        remote address for this node's
//                                        region offset 0)
//   3. region[o, o + n) ^= delta        which is the new block
//   4. Consume()                        the handler stored the bytes itself
//
// A refused put (the channel busy, its window full) applies nothing: the
// packet FAILs, the region keeps the old bytes and the write answers
// `rejected`, so the client writes it again. Parity therefore never
// diverges from the data: every delta applied to the data was handed to the
// transport, which delivers it reliably (or raises diad_op_failed).
//
// role=parity: region 0 is the parity region, bound with diad {
// write_region }. Each packet of a DiAD write (a delta) is XORed into
// region 0 at its offset and Consume()d. Deltas from several data nodes,
// run on several HPUs, fold with atomic fetch_xor on aligned 8-byte words
// (std::atomic_ref<uint64_t>) and atomic byte-wise XOR at unaligned edges:
// XOR commutes, so the parity is right whatever the order.
//
// Concurrency: on a data node one message at a time writes a block (a RAID
// controller serialises writes per stripe); two concurrent writes to the
// same bytes would each compute a delta against the same old block and the
// parity would lose one of them.
//
// Other transports, and packets outside region 0, FAIL, counted; nothing is
// written past region 0's end.
//
// State layout (uint64, host byte order, relaxed atomics; kMinStateSize 56):
//
//   offset  0: packets        packets applied (data: delta put and block
//                             stored; parity: delta folded)
//   offset  8: bytes          their payload bytes
//   offset 16: puts_refused   FAILs: the delta's put was refused (data)
//   offset 24: out_of_range   FAILs: the packet's bytes are not all inside
//                             region 0
//   offset 32: bad_region     FAILs: region 0 missing, or without
//                             local_read and local_write
//   offset 40: not_write      FAILs: not a DiAD write
//   offset 48: messages       messages whose last packet was applied
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

namespace spinnic {
namespace {

struct RaidParityState {
  uint64_t packets;
  uint64_t bytes;
  uint64_t puts_refused;
  uint64_t out_of_range;
  uint64_t bad_region;
  uint64_t not_write;
  uint64_t messages;
};
static_assert(sizeof(RaidParityState) == 56, "the documented layout");

// dst ^= src, n bytes, plainly: the data node owns the block it writes.
void XorInto(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t a, b;
    std::memcpy(&a, dst + i, 8);
    std::memcpy(&b, src + i, 8);
    a ^= b;
    std::memcpy(dst + i, &a, 8);
  }
  for (; i < n; ++i) dst[i] ^= src[i];
}

// dst ^= src, n bytes, atomically per word: bytes up to dst's first 8-byte
// boundary and after its last one byte by byte, the rest as aligned 8-byte
// words. Deltas folded at once by several HPUs all land.
void AtomicXorInto(uint8_t* dst, const uint8_t* src, size_t n) {
  size_t i = 0;
  while (i < n && reinterpret_cast<uintptr_t>(dst + i) % 8 != 0) {
    std::atomic_ref<uint8_t>(dst[i]).fetch_xor(src[i],
                                               std::memory_order_relaxed);
    ++i;
  }
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, src + i, 8);  // the packet's bytes need not be aligned
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(dst + i))
        .fetch_xor(word, std::memory_order_relaxed);
  }
  for (; i < n; ++i) {
    std::atomic_ref<uint8_t>(dst[i]).fetch_xor(src[i],
                                               std::memory_order_relaxed);
  }
}

class RaidParityHandler {
 public:
  static constexpr absl::string_view kName = "raid_parity";
  static constexpr absl::string_view kDescription =
      "RAID-5 parity update (sPIN): a data node puts new XOR old of each "
      "block write to the parity node, which XORs it into its parity region";
  static constexpr uint32_t kMinStateSize = sizeof(RaidParityState);
  static constexpr uint32_t kMinRegions = 1;
  static constexpr ParamSpec kParams[] = {
      {.name = "role",
       .type = ParamType::kString,
       .required = false,
       .default_value = "parity",
       .help = "data (region 0 is the block store; needs parity_peer, "
               "parity_rkey, parity_address) or parity (region 0 is the "
               "parity), e.g. data"},
      {.name = "parity_peer",
       .type = ParamType::kString,
       .required = false,
       .default_value = "",
       .help = "role=data: the parity node's DiAD peer name, e.g. p"},
      {.name = "parity_rkey",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "role=data: rkey of the parity node's parity region, e.g. "
               "0x1a2b3c4d",
       .max = 0xffffffff},
      {.name = "parity_address",
       .type = ParamType::kUint,
       .required = false,
       .default_value = "0",
       .help = "role=data: the parity node's remote address for this node's "
               "region offset 0 (its parity region's base_address + offset), "
               "e.g. 0x37b755711000"},
  };

  static absl::StatusOr<std::unique_ptr<RaidParityHandler>> Create(
      const HandlerParams& params) {
    const std::string& role = params.GetString("role");
    if (role == "parity") {
      return std::unique_ptr<RaidParityHandler>(
          new RaidParityHandler(false, "", 0, 0));
    }
    if (role != "data") {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter 'role' = '", role, "': write data or parity"));
    }
    const std::string& peer = params.GetString("parity_peer");
    const uint64_t rkey = params.GetUint("parity_rkey");
    const uint64_t address = params.GetUint("parity_address");
    if (peer.empty() || rkey == 0 || address == 0) {
      return absl::InvalidArgumentError(
          "role=data needs parameters 'parity_peer', 'parity_rkey' and "
          "'parity_address': the parity node's peer name, and the rkey and "
          "remote address of its parity region for this node's offset 0, "
          "e.g. parity_peer=p parity_rkey=0x1a2b3c4d "
          "parity_address=0x37b755711000");
    }
    return std::unique_ptr<RaidParityHandler>(new RaidParityHandler(
        true, peer, static_cast<uint32_t>(rkey), address));
  }

  // A data node puts to its parity node: the install checks it is a peer.
  std::vector<std::string> Peers() const {
    if (!data_) return {};
    return {parity_peer_};
  }

  HandlerResult Payload(HandlerContext& ctx, PacketView& packet) {
    RaidParityState* state = ctx.StateAs<RaidParityState>();
    const MessageInfo& message = packet.Message();
    if (message.transport != MessageTransport::kDiadWrite) {
      if (state != nullptr) AddToCounter(state->not_write, 1);
      return HandlerResult::kFail;
    }
    std::span<const BoundRegion> regions = ctx.Regions();
    if (regions.empty() || !regions[0].readable || !regions[0].writable) {
      if (state != nullptr) AddToCounter(state->bad_region, 1);
      return HandlerResult::kFail;
    }
    const BoundRegion& region = regions[0];
    const std::span<uint8_t> payload = packet.Payload();
    const uint64_t size = payload.size();
    // offset <= region size first: then size - offset cannot wrap.
    const uint64_t offset = message.address - region.base_address;
    if (message.address < region.base_address || offset > region.bytes.size() ||
        size > region.bytes.size() - offset) {
      if (state != nullptr) AddToCounter(state->out_of_range, 1);
      return HandlerResult::kFail;
    }
    uint8_t* block = region.bytes.data() + offset;
    if (data_) {
      XorInto(payload.data(), block, size);  // the delta: new ^ old
      if (!ctx.PutToPeer({.kind = PeerPut::Kind::kWrite,
                          .peer = parity_peer_,
                          .key = parity_rkey_,
                          .address = parity_address_ + offset,
                          .data = payload})) {
        if (state != nullptr) AddToCounter(state->puts_refused, 1);
        return HandlerResult::kFail;  // region untouched: old ^ nothing
      }
      XorInto(block, payload.data(), size);  // old ^ delta = new
    } else {
      AtomicXorInto(block, payload.data(), size);
    }
    packet.Consume();
    if (state != nullptr) {
      AddToCounter(state->packets, 1);
      AddToCounter(state->bytes, size);
      if (message.offset + size >= message.length) {
        AddToCounter(state->messages, 1);
      }
    }
    return HandlerResult::kSuccess;
  }

 private:
  RaidParityHandler(bool data, std::string parity_peer, uint32_t parity_rkey,
                    uint64_t parity_address)
      : data_(data),
        parity_peer_(std::move(parity_peer)),
        parity_rkey_(parity_rkey),
        parity_address_(parity_address) {}

  const bool data_;  // role=data; else parity
  const std::string parity_peer_;
  const uint32_t parity_rkey_;
  const uint64_t parity_address_;
};

SPINNIC_HANDLER(RaidParityHandler);

}  // namespace
}  // namespace spinnic
