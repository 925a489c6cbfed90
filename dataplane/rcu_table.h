// The one way a read-mostly table reaches the HPUs (ARCHITECTURE.md,
// "Threading"): the control thread builds an immutable version, swaps the
// published pointer, waits until every HPU has passed a quiescent state, and
// only then frees the old version (with whatever only it referenced). HPUs
// load the pointer once per poll and report quiescence after it.
#ifndef SPINNIC_DATAPLANE_RCU_TABLE_H_
#define SPINNIC_DATAPLANE_RCU_TABLE_H_

#include <rte_rcu_qsbr.h>

#include <atomic>
#include <memory>

namespace spinnic {

// Publishes `next` and frees the version in `current`. Callers serialise
// publications of one table (the owner's mutex).
template <typename Table>
void PublishRcuTable(rte_rcu_qsbr* rcu, std::atomic<const Table*>& published,
                     std::unique_ptr<const Table>& current,
                     std::unique_ptr<const Table> next) {
  published.store(next.get(), std::memory_order_release);
  // After this no HPU holds the old version. This is what
  // rte_rcu_qsbr_synchronize does for a non-reader, written with the
  // header-inline start/check so that the acquire loads of the HPUs'
  // quiescent counters are compiled here: a ThreadSanitizer build then sees
  // the HPU's last read of the old version happen before its free (the
  // library's copy, uninstrumented, would hide that edge).
  const uint64_t token = rte_rcu_qsbr_start(rcu);
  rte_rcu_qsbr_check(rcu, token, /*wait=*/true);
  current = std::move(next);
}

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_RCU_TABLE_H_
