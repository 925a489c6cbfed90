#include "dataplane/capture.h"

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace spinnic {

// A captured frame in the session's mempool: this header, then the bytes.
struct CaptureSession::Record {
  uint64_t timestamp_ns;
  uint32_t original_length;
  uint32_t captured_length;
  uint16_t port;
  uint8_t stage;
  uint8_t drop_reason;

  uint8_t* data() { return reinterpret_cast<uint8_t*>(this + 1); }
};

namespace {

// Frames filtered, then taken from the pool and enqueued, per step: bounds
// the stack arrays whatever the burst.
constexpr uint32_t kOfferChunk = 32;
constexpr uint32_t kDrainChunk = 64;

}  // namespace

const char* CaptureStageName(CaptureStage stage) {
  switch (stage) {
    case CaptureStage::kRx:
      return "rx";
    case CaptureStage::kTx:
      return "tx";
    case CaptureStage::kDrop:
      return "drop";
    case CaptureStage::kCount:
      break;
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<CaptureSession>> CaptureSession::Create(
    const CaptureSessionConfig& config, std::unique_ptr<PcapFilter> filter) {
  if (config.port >= kCaptureMaxPorts) {
    return absl::InvalidArgumentError(
        absl::StrCat("capture port index ", config.port, " is not below ",
                     kCaptureMaxPorts));
  }
  if (config.stage >= CaptureStage::kCount) {
    return absl::InvalidArgumentError("capture stage must be rx, tx or drop");
  }
  if (config.snaplen == 0 || config.snaplen > kMaxSnaplen) {
    return absl::InvalidArgumentError(absl::StrCat(
        "snaplen ", config.snaplen, " is outside 1..", kMaxSnaplen, " bytes"));
  }
  if (config.buffer_frames == 0 || config.buffer_frames > kMaxBufferFrames) {
    return absl::InvalidArgumentError(
        absl::StrCat("capture buffer of ", config.buffer_frames,
                     " frames is outside 1..", kMaxBufferFrames));
  }
  // DPDK object names are process-wide: each session its own.
  static std::atomic<uint32_t> next_id{0};
  const uint32_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  std::unique_ptr<CaptureSession> session(new CaptureSession());
  session->config_ = config;
  session->filter_ = std::move(filter);
  const uint32_t record_bytes = sizeof(Record) + config.snaplen;
  char name[RTE_MEMPOOL_NAMESIZE];
  std::snprintf(name, sizeof name, "spn_cap_%u", id);
  session->pool_ =
      rte_mempool_create(name, config.buffer_frames, record_bytes,
                         /*cache_size=*/0, /*private_data_size=*/0, nullptr,
                         nullptr, nullptr, nullptr, SOCKET_ID_ANY, 0);
  if (session->pool_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate a capture buffer of ", config.buffer_frames, " x ",
        record_bytes, " bytes (", rte_strerror(rte_errno),
        "); ask for fewer frames or a smaller snaplen, or give spinnicd more "
        "EAL memory (-m)"));
  }
  std::snprintf(name, sizeof name, "spn_capr_%u", id);
  // One slot more than the pool holds: the pool empties first, so the
  // enqueue of a record taken from it never fails.
  session->ring_ =
      rte_ring_create(name, rte_align32pow2(config.buffer_frames + 1),
                      SOCKET_ID_ANY, RING_F_SC_DEQ);
  if (session->ring_ == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot create the capture ring for ", config.buffer_frames,
        " frames (", rte_strerror(rte_errno), ")"));
  }
  return session;
}

CaptureSession::~CaptureSession() {
  // The records still in the ring belong to the pool, freed whole.
  rte_ring_free(ring_);
  rte_mempool_free(pool_);
}

void CaptureSession::Offer(rte_mbuf* const* packets, uint32_t count,
                           uint64_t now_ns, DropReason reason) {
  for (uint32_t base = 0; base < count; base += kOfferChunk) {
    const uint32_t n = std::min(kOfferChunk, count - base);
    rte_mbuf* matched[kOfferChunk];
    uint32_t passed = 0;
    for (uint32_t i = 0; i < n; ++i) {
      rte_mbuf* packet = packets[base + i];
      if (filter_ == nullptr || filter_->Passes(packet)) {
        matched[passed++] = packet;
      }
    }
    if (passed == 0) continue;
    void* records[kOfferChunk];
    uint32_t taken = passed;
    if (rte_mempool_get_bulk(pool_, records, passed) != 0) {
      // All or nothing above; take what is left one by one.
      taken = 0;
      while (taken < passed && rte_mempool_get(pool_, &records[taken]) == 0) {
        ++taken;
      }
    }
    for (uint32_t i = 0; i < taken; ++i) {
      Record& record = *static_cast<Record*>(records[i]);
      const rte_mbuf* packet = matched[i];
      const uint32_t length = std::min(packet->pkt_len, config_.snaplen);
      record.timestamp_ns = now_ns;
      record.original_length = packet->pkt_len;
      record.captured_length = length;
      record.port = config_.port;
      record.stage = static_cast<uint8_t>(config_.stage);
      record.drop_reason = static_cast<uint8_t>(reason);
      // Points into the first segment when the bytes are there, else
      // gathers the chain into the record.
      const void* bytes = rte_pktmbuf_read(packet, 0, length, record.data());
      if (bytes != record.data()) std::memcpy(record.data(), bytes, length);
    }
    const uint32_t enqueued =
        taken == 0 ? 0
                   : rte_ring_mp_enqueue_burst(ring_, records, taken, nullptr);
    if (enqueued < taken) {
      rte_mempool_put_bulk(pool_, records + enqueued, taken - enqueued);
    }
    if (enqueued < passed) [[unlikely]] {
      missed_.fetch_add(passed - enqueued, std::memory_order_relaxed);
    }
  }
}

size_t CaptureSession::Drain(
    size_t max, absl::FunctionRef<void(const CapturedFrame&)> on_frame) {
  size_t drained = 0;
  while (drained < max) {
    void* records[kDrainChunk];
    const unsigned want =
        static_cast<unsigned>(std::min<size_t>(kDrainChunk, max - drained));
    const unsigned got =
        rte_ring_sc_dequeue_burst(ring_, records, want, nullptr);
    for (unsigned i = 0; i < got; ++i) {
      Record& record = *static_cast<Record*>(records[i]);
      CapturedFrame frame;
      frame.timestamp_ns = record.timestamp_ns;
      frame.original_length = record.original_length;
      frame.port = record.port;
      frame.stage = static_cast<CaptureStage>(record.stage);
      frame.drop_reason = static_cast<DropReason>(record.drop_reason);
      frame.data =
          std::span<const uint8_t>(record.data(), record.captured_length);
      on_frame(frame);
    }
    if (got != 0) rte_mempool_put_bulk(pool_, records, got);
    drained += got;
    if (got < want) break;
  }
  return drained;
}

CaptureTable::CaptureTable(
    std::vector<std::shared_ptr<CaptureSession>> sessions)
    : sessions_(std::move(sessions)) {
  for (const std::shared_ptr<CaptureSession>& session : sessions_) {
    const CaptureSessionConfig& config = session->config();
    by_port_[config.port][static_cast<size_t>(config.stage)] = session.get();
  }
}

}  // namespace spinnic
