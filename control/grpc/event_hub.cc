#include "control/grpc/event_hub.h"

#include <algorithm>

namespace spinnic {

void EventHub::Subscription::Wait(absl::Duration timeout,
                                  std::vector<v1::Event>* out) {
  absl::MutexLock lock(&mu_);
  auto has_events = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return !queue_.empty();
  };
  mu_.AwaitWithTimeout(absl::Condition(&has_events), timeout);
  while (!queue_.empty()) {
    out->push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

std::shared_ptr<EventHub::Subscription> EventHub::Subscribe() {
  auto subscription = std::make_shared<Subscription>();
  absl::MutexLock lock(&mu_);
  subscriptions_.push_back(subscription);
  return subscription;
}

void EventHub::Unsubscribe(const std::shared_ptr<Subscription>& subscription) {
  absl::MutexLock lock(&mu_);
  std::erase(subscriptions_, subscription);
}

void EventHub::Publish(const v1::Event& event) {
  absl::MutexLock lock(&mu_);
  for (const auto& subscription : subscriptions_) {
    absl::MutexLock queue_lock(&subscription->mu_);
    if (subscription->queue_.size() >= kQueueCapacity) {
      ++subscription->missed_;
      continue;
    }
    v1::Event& queued = subscription->queue_.emplace_back(event);
    queued.set_sequence(subscription->next_sequence_++);
    queued.set_missed_before(subscription->missed_);
    subscription->missed_ = 0;
  }
}

size_t EventHub::subscribers() const {
  absl::MutexLock lock(&mu_);
  return subscriptions_.size();
}

}  // namespace spinnic
