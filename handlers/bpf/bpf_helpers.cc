#include "handlers/bpf/bpf_helpers.h"

#include <x86intrin.h>

#include <array>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>

namespace spinnic::bpf {
namespace {

BpfInvocation& Of(uint64_t ctx) {
  return *reinterpret_cast<BpfInvocation*>(static_cast<uintptr_t>(ctx));
}

bool ValidSize(uint64_t size) {
  return size == 1 || size == 2 || size == 4 || size == 8;
}

// `size` bytes at `offset` lie inside a buffer of `length` bytes.
bool Fits(uint64_t offset, uint64_t size, uint64_t length) {
  return offset <= length && size <= length - offset;
}

// The same, for a load or store of 1, 2, 4 or 8 bytes.
bool Inside(uint64_t offset, uint64_t size, uint64_t length) {
  return ValidSize(size) && Fits(offset, size, length);
}

uint64_t Fault(BpfInvocation& inv) {
  inv.fault = true;
  return 0;
}

uint64_t LoadBigEndian(const uint8_t* p, uint64_t size) {
  uint64_t value = 0;
  for (uint64_t i = 0; i < size; ++i) value = (value << 8) | p[i];
  return value;
}

void StoreBigEndian(uint8_t* p, uint64_t size, uint64_t value) {
  for (uint64_t i = size; i-- > 0;) {
    p[i] = static_cast<uint8_t>(value);
    value >>= 8;
  }
}

uint64_t LoadHost(const uint8_t* p, uint64_t size) {
  switch (size) {
    case 1:
      return *p;
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
}

void StoreHost(uint8_t* p, uint64_t size, uint64_t value) {
  switch (size) {
    case 1:
      *p = static_cast<uint8_t>(value);
      return;
    case 2: {
      uint16_t v = static_cast<uint16_t>(value);
      std::memcpy(p, &v, 2);
      return;
    }
    case 4: {
      uint32_t v = static_cast<uint32_t>(value);
      std::memcpy(p, &v, 4);
      return;
    }
    default:
      std::memcpy(p, &value, 8);
  }
}

uint64_t PktLoad(uint64_t ctx, uint64_t offset, uint64_t size, uint64_t,
                 uint64_t) {
  BpfInvocation& inv = Of(ctx);
  if (inv.packet == nullptr) return Fault(inv);
  std::span<uint8_t> bytes = inv.packet->Bytes();
  if (!Inside(offset, size, bytes.size())) return Fault(inv);
  return LoadBigEndian(bytes.data() + offset, size);
}

uint64_t PktStore(uint64_t ctx, uint64_t offset, uint64_t size, uint64_t value,
                  uint64_t) {
  BpfInvocation& inv = Of(ctx);
  if (inv.packet == nullptr) return Fault(inv);
  std::span<uint8_t> bytes = inv.packet->Bytes();
  if (!Inside(offset, size, bytes.size())) return Fault(inv);
  StoreBigEndian(bytes.data() + offset, size, value);
  return 0;
}

uint64_t StateLoad(uint64_t ctx, uint64_t offset, uint64_t size, uint64_t,
                   uint64_t) {
  BpfInvocation& inv = Of(ctx);
  std::span<uint8_t> state = inv.handler->State();
  if (!Inside(offset, size, state.size())) return Fault(inv);
  return LoadHost(state.data() + offset, size);
}

uint64_t StateStore(uint64_t ctx, uint64_t offset, uint64_t size,
                    uint64_t value, uint64_t) {
  BpfInvocation& inv = Of(ctx);
  std::span<uint8_t> state = inv.handler->State();
  if (!Inside(offset, size, state.size())) return Fault(inv);
  StoreHost(state.data() + offset, size, value);
  return 0;
}

uint64_t StateAdd(uint64_t ctx, uint64_t offset, uint64_t delta, uint64_t,
                  uint64_t) {
  BpfInvocation& inv = Of(ctx);
  std::span<uint8_t> state = inv.handler->State();
  // State memory is 64-byte aligned, so an 8-aligned offset is an aligned
  // word that std::atomic_ref may update.
  if (!Inside(offset, 8, state.size()) || offset % 8 != 0) return Fault(inv);
  uint64_t& word = *reinterpret_cast<uint64_t*>(state.data() + offset);
  return std::atomic_ref<uint64_t>(word).fetch_add(delta,
                                                   std::memory_order_relaxed) +
         delta;
}

// A window: `length` bytes at `offset` of `bytes`, or 0. The loader proved
// the program touches no byte past `length`.
uint64_t Window(std::span<uint8_t> bytes, uint64_t offset, uint64_t length) {
  if (!Fits(offset, length, bytes.size())) return 0;
  return reinterpret_cast<uintptr_t>(bytes.data() + offset);
}

uint64_t PktPtr(uint64_t ctx, uint64_t offset, uint64_t length, uint64_t,
                uint64_t) {
  BpfInvocation& inv = Of(ctx);
  if (inv.packet == nullptr) return 0;
  return Window(inv.packet->Bytes(), offset, length);
}

uint64_t StatePtr(uint64_t ctx, uint64_t offset, uint64_t length, uint64_t,
                  uint64_t) {
  return Window(Of(ctx).handler->State(), offset, length);
}

// The first bound region, when the install granted the access.
std::span<uint8_t> Region(BpfInvocation& inv, bool write) {
  std::span<const BoundRegion> regions = inv.handler->Regions();
  if (regions.empty()) return {};
  const BoundRegion& region = regions[0];
  if (write ? !region.writable : !region.readable) return {};
  return region.bytes;
}

uint64_t RegionLoad(uint64_t ctx, uint64_t offset, uint64_t size, uint64_t,
                    uint64_t) {
  BpfInvocation& inv = Of(ctx);
  std::span<uint8_t> region = Region(inv, /*write=*/false);
  if (!Inside(offset, size, region.size())) return Fault(inv);
  return LoadHost(region.data() + offset, size);
}

uint64_t RegionStore(uint64_t ctx, uint64_t offset, uint64_t size,
                     uint64_t value, uint64_t) {
  BpfInvocation& inv = Of(ctx);
  std::span<uint8_t> region = Region(inv, /*write=*/true);
  if (!Inside(offset, size, region.size())) return Fault(inv);
  StoreHost(region.data() + offset, size, value);
  return 0;
}

uint64_t DmaToRegion(uint64_t ctx, uint64_t region_offset,
                     uint64_t packet_offset, uint64_t length, uint64_t) {
  // Nothing to copy is always fine: a program's unrolled steps past the
  // payload's end copy 0 bytes instead of branching.
  if (length == 0) return 0;
  BpfInvocation& inv = Of(ctx);
  if (inv.packet == nullptr) return Fault(inv);
  std::span<uint8_t> bytes = inv.packet->Bytes();
  std::span<uint8_t> region = Region(inv, /*write=*/true);
  if (!Fits(packet_offset, length, bytes.size()) ||
      !Fits(region_offset, length, region.size())) {
    return Fault(inv);
  }
  std::memcpy(region.data() + region_offset, bytes.data() + packet_offset,
              length);
  return 0;
}

uint64_t EmitPacket(uint64_t ctx, uint64_t port, uint64_t, uint64_t, uint64_t) {
  BpfInvocation& inv = Of(ctx);
  if (inv.packet == nullptr || port > SPIN_EMIT_PAIRED) return Fault(inv);
  return inv.handler->EmitFrame(inv.packet->Bytes(), port == SPIN_EMIT_INGRESS
                                                         ? EmitPort::kIngress
                                                         : EmitPort::kPaired)
             ? 1
             : 0;
}

// The `length` packet bytes at `offset`, or empty (with the fault set).
std::span<const uint8_t> PacketBytes(BpfInvocation& inv, uint64_t offset,
                                     uint64_t length) {
  if (inv.packet == nullptr) {
    Fault(inv);
    return {};
  }
  std::span<uint8_t> bytes = inv.packet->Bytes();
  if (!Fits(offset, length, bytes.size())) {
    Fault(inv);
    return {};
  }
  return bytes.subspan(offset, length);
}

// Puts on this HPU's own channel: messages from one HPU stay in order.
uint64_t Put(BpfInvocation& inv, PeerPut::Kind kind, uint64_t key,
             uint64_t address, uint64_t packet_offset, uint64_t length) {
  if (inv.peer.empty() || key > UINT32_MAX) return Fault(inv);
  std::span<const uint8_t> data = PacketBytes(inv, packet_offset, length);
  if (inv.fault) return 0;
  PeerPut put;
  put.kind = kind;
  put.peer = inv.peer;  // on this HPU's own channel (the default)
  put.key = static_cast<uint32_t>(key);
  put.address = address;
  put.data = data;
  return inv.handler->PutToPeer(put) ? 1 : 0;
}

uint64_t DiadPutStream(uint64_t ctx, uint64_t stream_id, uint64_t packet_offset,
                       uint64_t length, uint64_t) {
  return Put(Of(ctx), PeerPut::Kind::kStream, stream_id, 0, packet_offset,
             length);
}

uint64_t DiadPutWrite(uint64_t ctx, uint64_t rkey, uint64_t address,
                      uint64_t packet_offset, uint64_t length) {
  return Put(Of(ctx), PeerPut::Kind::kWrite, rkey, address, packet_offset,
             length);
}

uint64_t DiadGet(uint64_t ctx, uint64_t rkey, uint64_t address, uint64_t length,
                 uint64_t region_offset) {
  BpfInvocation& inv = Of(ctx);
  if (inv.peer.empty() || rkey > UINT32_MAX || length > UINT32_MAX) {
    return Fault(inv);
  }
  PeerGet get;
  get.peer = inv.peer;  // on this HPU's own channel (the default)
  get.rkey = static_cast<uint32_t>(rkey);
  get.address = address;
  get.length = static_cast<uint32_t>(length);
  get.region = 0;
  get.offset = region_offset;
  return inv.handler->GetFromPeer(get) ? 1 : 0;
}

uint64_t SetDisposition(uint64_t ctx, uint64_t disposition, uint64_t, uint64_t,
                        uint64_t) {
  BpfInvocation& inv = Of(ctx);
  if (inv.packet == nullptr) return Fault(inv);
  switch (disposition) {
    case SPIN_FORWARD:
      inv.packet->Forward();
      return 0;
    case SPIN_REPLY:
      inv.packet->Reply();
      return 0;
    case SPIN_DISCARD:
      inv.packet->Drop();
      return 0;
    case SPIN_CONSUME:
      inv.packet->Consume();
      return 0;
  }
  return Fault(inv);
}

uint64_t Event(uint64_t ctx, uint64_t code, uint64_t value, uint64_t,
               uint64_t) {
  BpfInvocation& inv = Of(ctx);
  uint8_t data[8];
  std::memcpy(data, &value, sizeof data);
  return inv.handler->RaiseEvent(static_cast<uint32_t>(code), data) ? 1 : 0;
}

uint64_t CsumReplace16(uint64_t checksum, uint64_t old_value,
                       uint64_t new_value, uint64_t, uint64_t) {
  // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
  uint32_t sum =
      (~checksum & 0xffff) + (~old_value & 0xffff) + (new_value & 0xffff);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return ~sum & 0xffff;
}

uint64_t Cycles(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t) {
  return __rdtsc();
}

constexpr rte_bpf_arg kCtxArg = {
    .type = RTE_BPF_ARG_PTR, .size = sizeof(spin_ctx), .buf_size = 0};
constexpr rte_bpf_arg kRaw = {
    .type = RTE_BPF_ARG_RAW, .size = sizeof(uint64_t), .buf_size = 0};
constexpr rte_bpf_arg kWindowResult = {
    .type = RTE_BPF_ARG_PTR, .size = SPIN_WINDOW_MAX, .buf_size = 0};

rte_bpf_xsym Func(const char* name,
                  uint64_t (*fn)(uint64_t, uint64_t, uint64_t, uint64_t,
                                 uint64_t),
                  uint32_t nb_args, bool ctx_first) {
  rte_bpf_xsym x{};
  x.name = name;
  x.type = RTE_BPF_XTYPE_FUNC;
  x.func.val = fn;
  x.func.nb_args = nb_args;
  for (uint32_t i = 0; i < nb_args; ++i) {
    x.func.args[i] = (i == 0 && ctx_first) ? kCtxArg : kRaw;
  }
  x.func.ret = kRaw;
  return x;
}

rte_bpf_xsym WindowFunc(const char* name,
                        uint64_t (*fn)(uint64_t, uint64_t, uint64_t, uint64_t,
                                       uint64_t)) {
  rte_bpf_xsym x = Func(name, fn, 3, true);
  x.func.ret = kWindowResult;
  return x;
}

}  // namespace

std::span<const rte_bpf_xsym> Helpers() {
  static const std::array<rte_bpf_xsym, 18> kHelpers = {
      WindowFunc("spin_pkt_ptr", &PktPtr),
      WindowFunc("spin_state_ptr", &StatePtr),
      Func("spin_pkt_load", &PktLoad, 3, true),
      Func("spin_pkt_store", &PktStore, 4, true),
      Func("spin_state_load", &StateLoad, 3, true),
      Func("spin_state_store", &StateStore, 4, true),
      Func("spin_state_add", &StateAdd, 3, true),
      Func("spin_region_load", &RegionLoad, 3, true),
      Func("spin_region_store", &RegionStore, 4, true),
      Func("spin_dma_to_region", &DmaToRegion, 4, true),
      Func("spin_emit_packet", &EmitPacket, 2, true),
      Func("spin_diad_put_stream", &DiadPutStream, 4, true),
      Func("spin_diad_put_write", &DiadPutWrite, 5, true),
      Func("spin_diad_get", &DiadGet, 5, true),
      Func("spin_set_disposition", &SetDisposition, 2, true),
      Func("spin_event", &Event, 3, true),
      Func("spin_csum_replace16", &CsumReplace16, 3, false),
      Func("spin_cycles", &Cycles, 0, false),
  };
  return kHelpers;
}

bool ReturnsWindow(size_t index) {
  return index < Helpers().size() &&
         Helpers()[index].func.ret.type == RTE_BPF_ARG_PTR;
}

int FindHelper(absl::string_view name) {
  std::span<const rte_bpf_xsym> helpers = Helpers();
  for (size_t i = 0; i < helpers.size(); ++i) {
    if (name == helpers[i].name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace spinnic::bpf
