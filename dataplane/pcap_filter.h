// A tcpdump filter expression ("ip6 and udp dst port 4791") compiled for the
// per-packet path: libpcap compiles it to classic BPF for Ethernet
// (DLT_EN10MB), librte_bpf converts that to eBPF (rte_bpf_convert), checks
// and loads it, and JIT-compiles it where it can (the interpreter
// otherwise).
//
// Control path: Check needs no EAL (spinnicd validates configs before
// rte_eal_init); Compile does, since rte_bpf_convert allocates with
// rte_malloc. A compiled filter is immutable and may run on every HPU at
// once. It is owned by the Ectx whose match rule names it, so it is freed
// with the Ectx, after the RCU grace period of the table that published it.
#ifndef SPINNIC_DATAPLANE_PCAP_FILTER_H_
#define SPINNIC_DATAPLANE_PCAP_FILTER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

struct rte_bpf;
struct rte_mbuf;

namespace spinnic {

class PcapFilter {
 public:
  // Longer expressions are refused before libpcap sees them.
  static constexpr size_t kMaxExpressionLength = 1024;

  // Compiles the expression with libpcap only. INVALID_ARGUMENT quotes the
  // expression and libpcap's message (pcap_geterr) and says what to write.
  static absl::Status Check(absl::string_view expression);

  // Check, then convert, load and JIT-compile. Needs the EAL.
  static absl::StatusOr<std::unique_ptr<PcapFilter>> Compile(
      absl::string_view expression);

  ~PcapFilter();
  PcapFilter(const PcapFilter&) = delete;
  PcapFilter& operator=(const PcapFilter&) = delete;

  // True when the frame in `packet` (from its data offset, pkt_len bytes,
  // any number of segments) passes the filter; false for nullptr. No
  // allocation, no locks.
  bool Passes(const rte_mbuf* packet) const;

  const std::string& expression() const { return expression_; }
  bool jit() const { return jit_ != nullptr; }

 private:
  PcapFilter() = default;

  std::string expression_;
  rte_bpf* bpf_ = nullptr;
  uint64_t (*jit_)(void*) = nullptr;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_PCAP_FILTER_H_
