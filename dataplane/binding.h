// What an ECTX takes instead of matching frames: the messages a transport
// delivers for one of its objects (a DiAD stream, writes into a region, a
// RoCE queue pair, a NAAICE function code). The core knows bindings only as
// (kind, key); the transport that defines a kind resolves it: it validates
// a binding at install (TransportModule::CheckBinding) and finds the ECTX
// for a message it received (EctxTable::FindBound).
//
// Kind numbers are fixed (they never reach the wire or the API): 0 is no
// binding, 1 is shared by every transport that writes into regions, and
// each transport owns a block of 16 (DiAD 0x10.., RoCE 0x20..).
#ifndef SPINNIC_DATAPLANE_BINDING_H_
#define SPINNIC_DATAPLANE_BINDING_H_

#include <cstdint>

namespace spinnic {

using BindingKind = uint16_t;

// Matched against frames by its rule (no binding).
inline constexpr BindingKind kBindNone = 0;
// Remote writes into a registered region (DiAD writes, RDMA WRITEs); key:
// the region id.
inline constexpr BindingKind kBindRegionWrites = 1;

struct MessageBinding {
  BindingKind kind = kBindNone;
  uint64_t key = 0;
  bool operator==(const MessageBinding&) const = default;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_BINDING_H_
