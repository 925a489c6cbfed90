// The helpers an eBPF handler may call (spin_bpf.h): the eBPF faces of
// HandlerContext's actions, each checking every offset and size against the
// buffer it reaches. A helper gets the program's context pointer, which is
// the start of a BpfInvocation: the public spin_ctx the program reads, then
// what only the helpers see (the engine's context and packet, and the fault
// flag a refused access sets, which turns the invocation into FAIL).
#ifndef SPINNIC_HANDLERS_BPF_BPF_HELPERS_H_
#define SPINNIC_HANDLERS_BPF_BPF_HELPERS_H_

#include <rte_bpf.h>

#include <span>
#include <string_view>

#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"

extern "C" {
#include "handlers/bpf/spin_bpf.h"
}

namespace spinnic::bpf {

struct BpfInvocation {
  spin_ctx pub;  // first: the program's context pointer points here
  HandlerContext* handler;
  PacketView* packet;      // null in the completion handler
  std::string_view peer;  // the install's `peer`: spin_diad_* helpers
  bool fault;
};
static_assert(offsetof(BpfInvocation, pub) == 0);

// The helpers as librte_bpf external symbols, in a fixed order (a program's
// call instruction carries its helper's index here).
std::span<const rte_bpf_xsym> Helpers();

// Window helpers (spin_pkt_ptr, spin_state_ptr) return a pointer to
// `length` bytes, their third argument (r3), or 0 when those bytes are not
// all there. The loader requires `length` to be a constant and proves every
// access through the pointer stays inside it; librte_bpf knows the result
// only as a pointer to SPIN_WINDOW_MAX bytes.
inline constexpr uint8_t kWindowLengthRegister = 3;
bool ReturnsWindow(size_t index);

// The index of the helper named `name` in Helpers(), or -1.
int FindHelper(absl::string_view name);

}  // namespace spinnic::bpf

#endif  // SPINNIC_HANDLERS_BPF_BPF_HELPERS_H_
