// Fans the dataplane's events out to WatchEvents subscribers. Each
// subscriber has a bounded queue: a slow one loses events (counted, and
// reported in its next Event's missed_before), never slows the others or the
// dataplane. A subscriber that disconnects is dropped with its queue.
#ifndef SPINNIC_CONTROL_GRPC_EVENT_HUB_H_
#define SPINNIC_CONTROL_GRPC_EVENT_HUB_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "spinnic/v1/control.pb.h"

namespace spinnic {

class EventHub {
 public:
  static constexpr size_t kQueueCapacity = 1024;

  class Subscription {
   public:
    // Waits up to `timeout` for events; moves what is queued into `out`.
    void Wait(absl::Duration timeout, std::vector<v1::Event>* out);

   private:
    friend class EventHub;
    absl::Mutex mu_;
    std::deque<v1::Event> queue_ ABSL_GUARDED_BY(mu_);
    uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 1;
    uint64_t missed_ ABSL_GUARDED_BY(mu_) = 0;
  };

  std::shared_ptr<Subscription> Subscribe();
  void Unsubscribe(const std::shared_ptr<Subscription>& subscription);
  // Queues `event` (sequence and missed_before are filled per subscriber).
  void Publish(const v1::Event& event);
  size_t subscribers() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Subscription>> subscriptions_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace spinnic

#endif  // SPINNIC_CONTROL_GRPC_EVENT_HUB_H_
