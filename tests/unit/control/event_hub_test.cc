// The event hub (control/grpc/event_hub.h) between threads, as the daemon
// uses it: publishers (the dataplane's event pump) and WatchEvents
// subscribers that wait, drain, come and go, all at once. Each subscriber
// sees a gapless sequence, each publisher's events in order, and every
// event either delivered or counted in missed_before. deploy/tsan.sh runs
// this under ThreadSanitizer.
#include "control/grpc/event_hub.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <thread>
#include <vector>

#include "absl/time/clock.h"

namespace spinnic {
namespace {

constexpr uint32_t kPublishers = 2;
constexpr uint32_t kPerPublisher = 3000;
constexpr uint32_t kMarker = 99;  // Event.hpu of the closing markers

TEST(EventHubTest, ConcurrentPublishersAndSubscribersLoseNothingUncounted) {
  EventHub hub;
  std::shared_ptr<EventHub::Subscription> steady = hub.Subscribe();
  std::atomic<bool> seen_marker{false};
  std::atomic<bool> stop_churn{false};
  // The steady subscriber's view, checked after the threads are joined.
  uint64_t received = 0, missed = 0, last_sequence = 0;
  bool gapless = true, in_order = true;
  uint32_t marker_index = 0;
  std::thread subscriber([&] {
    std::map<uint32_t, int64_t> last_index;  // per publisher
    const absl::Time deadline = absl::Now() + absl::Seconds(120);
    while (!seen_marker.load() && absl::Now() < deadline) {
      std::vector<v1::Event> events;
      steady->Wait(absl::Milliseconds(5), &events);
      for (const v1::Event& event : events) {
        if (seen_marker.load()) break;
        gapless &= event.sequence() == last_sequence + 1;
        last_sequence = event.sequence();
        ++received;
        missed += event.missed_before();
        if (event.hpu() == kMarker) {
          marker_index = event.code();
          seen_marker.store(true);
          break;
        }
        auto [it, fresh] = last_index.try_emplace(event.hpu(), -1);
        in_order &= static_cast<int64_t>(event.code()) > it->second;
        it->second = event.code();
      }
    }
  });
  // Subscribers that come, take a little and go while events flow.
  std::thread churn([&] {
    while (!stop_churn.load()) {
      std::shared_ptr<EventHub::Subscription> s = hub.Subscribe();
      std::vector<v1::Event> events;
      s->Wait(absl::Microseconds(100), &events);
      hub.Unsubscribe(s);
      EXPECT_GE(hub.subscribers(), 1u);
    }
  });
  std::vector<std::thread> publishers;
  for (uint32_t p = 0; p < kPublishers; ++p) {
    publishers.emplace_back([&hub, p] {
      v1::Event event;
      event.set_hpu(p);
      event.set_handler("pub");
      for (uint32_t i = 0; i < kPerPublisher; ++i) {
        event.set_code(i);
        hub.Publish(event);
      }
    });
  }
  for (std::thread& t : publishers) t.join();
  stop_churn.store(true);
  churn.join();
  // Markers until the steady subscriber has one: everything published
  // before it was delivered or counted missed.
  v1::Event marker;
  marker.set_hpu(kMarker);
  for (uint32_t i = 0; !seen_marker.load() && i < 1'000'000; ++i) {
    marker.set_code(i);
    hub.Publish(marker);
    absl::SleepFor(absl::Microseconds(200));
  }
  subscriber.join();
  ASSERT_TRUE(seen_marker.load());
  EXPECT_TRUE(gapless);
  EXPECT_TRUE(in_order);
  // The events before the marker received (markers before it included).
  EXPECT_EQ(received + missed, kPublishers * kPerPublisher + marker_index + 1);
  hub.Unsubscribe(steady);
  EXPECT_EQ(hub.subscribers(), 0u);
}

}  // namespace
}  // namespace spinnic
