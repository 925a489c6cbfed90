// Frame capture at one stage of one port (docs/capture.md): the HPUs run the
// session's tcpdump filter (pcap_filter.h, eBPF) on the frames passing the
// stage and copy those it passes, up to the snap length, into records from
// the session's own mempool, which they enqueue on the session's ring
// (multi-producer: every HPU; single consumer: the control thread streaming
// the capture). Frames the filter refuses cost one filter run and no copy.
// A full buffer is a counted miss, never a wait: the HPU goes on.
//
// Sessions reach the HPUs in a CaptureTable published through the RCU
// template (rcu_table.h), as the ECTX table is: with no session the table
// pointer is null and each HPU pays one pointer load per poll.
//
// Needs the EAL (the mempool and ring are EAL objects); works without
// hugepages, since nothing is shared with another process.
#ifndef SPINNIC_DATAPLANE_CAPTURE_H_
#define SPINNIC_DATAPLANE_CAPTURE_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "dataplane/classifier.h"
#include "dataplane/pcap_filter.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace spinnic {

enum class CaptureStage : uint8_t {
  kRx = 0,  // after rte_eth_rx_burst, before any processing
  kTx,      // just before rte_eth_tx_burst
  kDrop,    // where the HPU frees a frame for a DropReason
  kCount,
};

// "rx", "tx", "drop".
const char* CaptureStageName(CaptureStage stage);

// Ports a capture table covers; hpu.h checks it equals kMaxPorts.
inline constexpr uint16_t kCaptureMaxPorts = 32;

struct CaptureSessionConfig {
  uint16_t port = 0;  // our port index
  CaptureStage stage = CaptureStage::kRx;
  // Bytes of each frame kept (the rest is counted in original_length).
  uint32_t snaplen = 2048;
  // Frames the buffer holds between the HPUs and the reader.
  uint32_t buffer_frames = 1024;
  // Labels for the FAILED_PRECONDITION a second session on the same port
  // and stage gets: the port's name and the filter's text.
  std::string port_name;
};

// One captured frame as the control side reads it.
struct CapturedFrame {
  uint64_t timestamp_ns = 0;  // clock::NowNanos() when the HPU saw it
  uint32_t original_length = 0;
  uint16_t port = 0;
  CaptureStage stage = CaptureStage::kRx;
  DropReason drop_reason = DropReason::kCount;  // kCount unless a drop
  std::span<const uint8_t> data;                // up to snaplen bytes
};

class CaptureSession {
 public:
  static constexpr uint32_t kMaxSnaplen = 65535;
  static constexpr uint32_t kMaxBufferFrames = 65536;

  // Creates the session's mempool and ring. `filter` may be null: every
  // frame. INVALID_ARGUMENT for a size out of range, RESOURCE_EXHAUSTED
  // when the EAL has no memory for the buffer (the message says how much).
  static absl::StatusOr<std::unique_ptr<CaptureSession>> Create(
      const CaptureSessionConfig& config, std::unique_ptr<PcapFilter> filter);
  ~CaptureSession();
  CaptureSession(const CaptureSession&) = delete;
  CaptureSession& operator=(const CaptureSession&) = delete;

  // HPU side, any number of HPUs at once: filters and copies `packets`,
  // stamped `now_ns`. No allocation beyond the session's pool, no lock.
  void Offer(rte_mbuf* const* packets, uint32_t count, uint64_t now_ns,
             DropReason reason = DropReason::kCount);

  // Control side, one thread: hands up to `max` captured frames to
  // `on_frame` (their data valid only during the call), oldest first;
  // returns how many.
  size_t Drain(size_t max,
               absl::FunctionRef<void(const CapturedFrame&)> on_frame);

  // Frames the filter passed that found the buffer full.
  uint64_t missed() const { return missed_.load(std::memory_order_relaxed); }

  const CaptureSessionConfig& config() const { return config_; }
  // The filter's text, "" for every frame.
  std::string filter_expression() const {
    return filter_ != nullptr ? filter_->expression() : "";
  }

 private:
  struct Record;
  CaptureSession() = default;

  CaptureSessionConfig config_;
  std::unique_ptr<PcapFilter> filter_;
  rte_mempool* pool_ = nullptr;
  rte_ring* ring_ = nullptr;
  // Written by the HPUs only when the buffer is full (its own cache line,
  // away from what they read per frame).
  alignas(64) std::atomic<uint64_t> missed_{0};
};

// What the HPUs read: the session on each port and stage, or null. An
// immutable version, replaced and freed through PublishRcuTable.
class CaptureTable {
 public:
  explicit CaptureTable(std::vector<std::shared_ptr<CaptureSession>> sessions);

  CaptureSession* Find(uint16_t port, CaptureStage stage) const {
    return by_port_[port][static_cast<size_t>(stage)];
  }
  const std::vector<std::shared_ptr<CaptureSession>>& sessions() const {
    return sessions_;
  }

 private:
  std::vector<std::shared_ptr<CaptureSession>> sessions_;
  std::array<
      std::array<CaptureSession*, static_cast<size_t>(CaptureStage::kCount)>,
      kCaptureMaxPorts>
      by_port_{};
};

}  // namespace spinnic

#endif  // SPINNIC_DATAPLANE_CAPTURE_H_
