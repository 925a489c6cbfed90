// The impairment stage: one direction of spinnic-impair. It applies an
// ImpairmentModel to bursts of mbufs and emits what survives, now or later:
// lost packets are freed, duplicates are real copies (rte_pktmbuf_copy),
// corrupted copies get one bit flipped in place, reordered and delayed copies
// wait in bounded hold structures released by TSC time (and, for reordered
// copies, by the number of packets that passed them). With a bottleneck
// (ImpairConfig::rate_bps), what survives then waits in one bounded FIFO
// that drains at the configured rate, ECN-marking or tail-dropping as a
// congested switch port does. docs/impair.md.
//
// Several senders can share one bottleneck (incast): call Process once per
// input with the same `now`; every call feeds the same queue, and whatever
// is due leaves through the output array of whichever call comes next.
//
// Single-threaded by design: one lcore owns a stage; no locks, no allocation
// per packet besides mbufs (the hold structures are sized at construction).
#ifndef SPINNIC_DATAPLANE_IMPAIR_IMPAIR_STAGE_H_
#define SPINNIC_DATAPLANE_IMPAIR_IMPAIR_STAGE_H_

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dataplane/impair/impairment_model.h"

namespace spinnic::impair {

struct ImpairCounters {
  uint64_t in = 0;          // packets given to Process
  uint64_t out = 0;         // packets emitted (Process, Poll, Flush)
  uint64_t lost = 0;        // dropped by the loss decision
  uint64_t duplicated = 0;  // duplicates made (extra packets)
  uint64_t reordered = 0;   // copies held back for reordering
  uint64_t corrupted = 0;   // copies with one bit flipped
  uint64_t delayed = 0;     // copies put in the delay queue (delay > 0)
  uint64_t held_max = 0;    // most packets held at once (both structures)
  // Copies dropped because the delay queue was full (see docs/impair.md).
  uint64_t queue_full_drops = 0;
  // Duplicates (or copies-before-corrupting of a shared mbuf) not made for
  // want of an mbuf: the packet goes on without its duplicate/uncorrupted.
  uint64_t no_buffer = 0;
  // Copies chosen for reordering that found every reorder slot taken and
  // went on without being reordered.
  uint64_t reorder_skipped = 0;
  uint64_t flushed = 0;  // emitted early by Flush (also counted in out)
  // The bottleneck (all 0 without one).
  uint64_t tail_drops = 0;      // frames that found the queue full
  uint64_t ecn_marked = 0;      // ECT frames that got CE
  uint64_t ecn_not_ect = 0;     // would have been marked, but not ECT (or IP)
  uint64_t ecn_already_ce = 0;  // would have been marked, were CE already
  uint64_t queue_max = 0;       // deepest the bottleneck queue was, frames
};

struct StageOptions {
  // Delay-queue entries (delayed copies, reordered copies waiting for their
  // own departure time, overflow of a full output array).
  uint32_t hold_capacity = 4096;
  // Reordered copies held at once.
  uint32_t reorder_slots = 64;
  // TSC frequency; 0: rte_get_tsc_hz().
  uint64_t tsc_hz = 0;
  // Pool for duplicates; nullptr: the original mbuf's pool.
  rte_mempool* copy_pool = nullptr;
};

class ImpairStage {
 public:
  // `config` must be valid (ValidateImpairConfig); `stream` selects the
  // model's random streams (0: A->B, 1: B->A).
  ImpairStage(const ImpairConfig& config, uint64_t stream,
              const StageOptions& options = {});
  ~ImpairStage();  // frees whatever is still held (not counted)
  ImpairStage(const ImpairStage&) = delete;
  ImpairStage& operator=(const ImpairStage&) = delete;

  // Takes ownership of in[0..n). First releases held copies that are due at
  // `now` (TSC), then decides each input packet. Writes at most `out_cap`
  // packets to `out` and returns how many; a copy that is due but finds no
  // room waits in the delay queue for the next call (due at once).
  uint16_t Process(rte_mbuf* const* in, uint16_t n, uint64_t now,
                   rte_mbuf** out, uint16_t out_cap);
  // Releases held copies due at `now` (call it when RX is idle too).
  uint16_t Poll(uint64_t now, rte_mbuf** out, uint16_t out_cap);
  // Releases held copies regardless of time, earliest first (delay queue,
  // then reorder slots). Call until held() == 0.
  uint16_t Flush(rte_mbuf** out, uint16_t out_cap);

  size_t held() const {
    return heap_size_ + reorder_count_ + bottleneck_count_;
  }
  // Frames in the bottleneck queue (including the one on the wire).
  uint32_t queue_depth() const { return bottleneck_count_; }
  // The depth each frame found when it reached the bottleneck (tail-dropped
  // ones included: they found it full).
  const DepthHistogram& queue_depths() const { return queue_depths_; }
  const ImpairCounters& counters() const { return counters_; }
  const ImpairmentModel& model() const { return model_; }
  uint64_t MicrosToTsc(uint64_t us) const { return us * tsc_hz_ / 1000000; }

 private:
  struct Held {
    uint64_t due;  // TSC
    uint64_t seq;  // FIFO among equal due times
    rte_mbuf* mbuf;
    bool pass;  // counts as a passing packet when emitted
  };
  struct ReorderSlot {
    rte_mbuf* mbuf;
    uint64_t due;         // its own departure time (arrival + delay)
    uint64_t deadline;    // due + reorder_timeout
    uint64_t release_at;  // value of passed_ that releases it
  };
  struct Queued {
    rte_mbuf* mbuf;
    uint64_t departs;  // TSC: the end of its transmission
  };
  struct Output {
    rte_mbuf** out;
    uint16_t cap;
    uint16_t n;
  };

  void HandleCopy(rte_mbuf* m, uint64_t now, Output& o);
  // The bottleneck: queues m (or drops it at the tail), marking it when the
  // depth it finds says so.
  void Enqueue(rte_mbuf* m, uint64_t now);
  // Emits the queued frames whose transmission has ended by `now`.
  void Drain(uint64_t now, Output& o);
  // Sets CE on an ECT frame (a private copy when the data is shared).
  rte_mbuf* Mark(rte_mbuf* m);
  // Makes m safe to change: when others see its bytes, replaces it with a
  // private copy (the original freed). false, m untouched and no_buffer
  // counted, when that copy cannot be made.
  bool MakeWritable(rte_mbuf*& m);
  // Emits m, or holds it (due at once) when the output is full.
  void Emit(rte_mbuf* m, bool pass, uint64_t now, Output& o);
  void ReleaseDue(uint64_t now, Output& o);
  // Releases the reordered copies that enough packets passed (and, when
  // by_time, those past their deadline).
  void ReleaseReordered(uint64_t now, Output& o, bool by_time);
  // false (and the mbuf freed, counted) when the delay queue is full.
  bool Push(uint64_t due, rte_mbuf* m, bool pass);
  Held Pop();
  bool Before(const Held& a, const Held& b) const {
    return a.due != b.due ? a.due < b.due : a.seq < b.seq;
  }
  void NoteHeld();
  // Flips the bit in place; copies first if the data is shared. Returns the
  // mbuf to carry on with: the corrupted one, or m untouched (no_buffer)
  // when a needed copy could not be made.
  rte_mbuf* Corrupt(rte_mbuf* m, uint32_t offset, uint8_t bit);

  ImpairmentModel model_;
  StageOptions options_;
  uint64_t tsc_hz_;
  uint64_t reorder_timeout_tsc_;
  std::vector<Held> heap_;
  size_t heap_size_ = 0;
  std::vector<ReorderSlot> reorder_;
  std::vector<ReorderSlot> reorder_scratch_;
  uint32_t reorder_count_ = 0;
  uint64_t passed_ = 0;  // packets that passed (for reorder release)
  uint64_t seq_ = 0;
  // The bottleneck: a ring of bottleneck_frames entries (empty without one).
  const bool bottleneck_;
  LinkClock link_;
  std::vector<Queued> bottleneck_queue_;
  uint32_t bottleneck_head_ = 0;
  uint32_t bottleneck_count_ = 0;
  DepthHistogram queue_depths_;
  ImpairCounters counters_;
};

}  // namespace spinnic::impair

#endif  // SPINNIC_DATAPLANE_IMPAIR_IMPAIR_STAGE_H_
