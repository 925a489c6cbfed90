// One immutable version of the installed ECTXs and their match rules. The
// control side builds a new version for every change and publishes it by
// pointer swap; HPUs read whichever version was current when their loop
// iteration began (RCU, see dataplane.cc).
#ifndef SPINNIC_DATAPLANE_ECTX_TABLE_H_
#define SPINNIC_DATAPLANE_ECTX_TABLE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/ectx.h"

namespace spinnic {

class EctxTable {
 public:
  EctxTable() = default;
  // `ectxs` in match order (priority, then install order).
  explicit EctxTable(std::vector<std::shared_ptr<const Ectx>> ectxs)
      : ectxs_(std::move(ectxs)) {
    for (const auto& ectx : ectxs_) port_mask_ |= ectx->match().in_port_mask;
  }

  // The first ECTX whose rule matches, or nullptr. Linear in the number of
  // installed rules, with an early out for ports no rule names: passthrough
  // ports without handlers pay one AND.
  const Ectx* Match(const ParsedFrame& frame, uint16_t in_port) const {
    if (in_port >= 64 || (port_mask_ & (uint64_t{1} << in_port)) == 0) {
      return nullptr;
    }
    for (const auto& ectx : ectxs_) {
      if (ectx->match().Matches(frame, in_port)) return ectx.get();
    }
    return nullptr;
  }

  const std::vector<std::shared_ptr<const Ectx>>& ectxs() const {
    return ectxs_;
  }

 private:
  std::vector<std::shared_ptr<const Ectx>> ectxs_;
  uint64_t port_mask_ = 0;
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_ECTX_TABLE_H_
