#include "dataplane/impair/impair_stage.h"

#include <rte_cycles.h>

#include <algorithm>
#include <utility>

namespace spinnic::impair {

ImpairStage::ImpairStage(const ImpairConfig& config, uint64_t stream,
                         const StageOptions& options)
    : model_(config, stream),
      options_(options),
      tsc_hz_(options.tsc_hz != 0 ? options.tsc_hz : rte_get_tsc_hz()),
      reorder_timeout_tsc_(0),
      heap_(std::max<uint32_t>(options.hold_capacity, 1)),
      reorder_(options.reorder_slots),
      reorder_scratch_(options.reorder_slots),
      bottleneck_(HasBottleneck(config)),
      link_(config.rate_bps, tsc_hz_),
      bottleneck_queue_(bottleneck_ ? config.bottleneck_frames : 0),
      queue_depths_(config.bottleneck_frames) {
  reorder_timeout_tsc_ = MicrosToTsc(config.reorder_timeout_us);
}

ImpairStage::~ImpairStage() {
  for (size_t i = 0; i < heap_size_; ++i) rte_pktmbuf_free(heap_[i].mbuf);
  for (uint32_t i = 0; i < reorder_count_; ++i) {
    rte_pktmbuf_free(reorder_[i].mbuf);
  }
  for (uint32_t i = 0; i < bottleneck_count_; ++i) {
    rte_pktmbuf_free(
        bottleneck_queue_[(bottleneck_head_ + i) % bottleneck_queue_.size()]
            .mbuf);
  }
}

void ImpairStage::NoteHeld() {
  counters_.held_max = std::max<uint64_t>(counters_.held_max, held());
}

bool ImpairStage::Push(uint64_t due, rte_mbuf* m, bool pass) {
  if (heap_size_ == heap_.size()) {
    ++counters_.queue_full_drops;
    rte_pktmbuf_free(m);
    return false;
  }
  Held entry{due, seq_++, m, pass};
  size_t i = heap_size_++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!Before(entry, heap_[parent])) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = entry;
  NoteHeld();
  return true;
}

ImpairStage::Held ImpairStage::Pop() {
  Held top = heap_[0];
  Held last = heap_[--heap_size_];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= heap_size_) break;
    if (child + 1 < heap_size_ && Before(heap_[child + 1], heap_[child])) {
      ++child;
    }
    if (!Before(heap_[child], last)) break;
    heap_[i] = heap_[child];
    i = child;
  }
  if (heap_size_ > 0) heap_[i] = last;
  return top;
}

void ImpairStage::Emit(rte_mbuf* m, bool pass, uint64_t now, Output& o) {
  if (bottleneck_) {
    // Past the impairments, into the bottleneck, which needs no output room.
    Enqueue(m, now);
  } else if (o.n == o.cap) {
    // No room: wait in the delay queue, due at once, for the next call.
    Push(now, m, pass);
    return;
  } else {
    o.out[o.n++] = m;
    ++counters_.out;
  }
  if (!pass || reorder_count_ == 0) return;
  ++passed_;
  // Release the reordered copies this packet completed, in arrival order. A
  // released copy does not count as passing (no cascades).
  ReleaseReordered(now, o, /*by_time=*/false);
}

void ImpairStage::ReleaseReordered(uint64_t now, Output& o, bool by_time) {
  // Stable: the copies that stay keep their order, the released ones leave
  // in the order they came.
  uint32_t kept = 0;
  uint32_t released = 0;
  for (uint32_t i = 0; i < reorder_count_; ++i) {
    const ReorderSlot& slot = reorder_[i];
    if (slot.release_at <= passed_ || (by_time && slot.deadline <= now)) {
      reorder_scratch_[released++] = slot;
    } else {
      reorder_[kept++] = slot;
    }
  }
  reorder_count_ = kept;
  for (uint32_t i = 0; i < released; ++i) {
    const ReorderSlot& slot = reorder_scratch_[i];
    if (now >= slot.due) {
      Emit(slot.mbuf, /*pass=*/false, now, o);
    } else {
      // Overtaken already, but its own delay has not passed yet.
      Push(slot.due, slot.mbuf, /*pass=*/false);
    }
  }
}

void ImpairStage::Enqueue(rte_mbuf* m, uint64_t now) {
  const uint32_t depth = bottleneck_count_;
  queue_depths_.Add(depth);
  if (depth == bottleneck_queue_.size()) {
    ++counters_.tail_drops;
    rte_pktmbuf_free(m);
    return;
  }
  if (model_.DecideMark(depth)) m = Mark(m);
  const uint64_t wire_bytes =
      static_cast<uint64_t>(m->pkt_len) + model_.config().frame_overhead_bytes;
  uint32_t tail = bottleneck_head_ + bottleneck_count_;
  if (tail >= bottleneck_queue_.size()) tail -= bottleneck_queue_.size();
  bottleneck_queue_[tail] = Queued{m, link_.Depart(now, wire_bytes)};
  ++bottleneck_count_;
  counters_.queue_max =
      std::max<uint64_t>(counters_.queue_max, bottleneck_count_);
  NoteHeld();
}

void ImpairStage::Drain(uint64_t now, Output& o) {
  while (bottleneck_count_ > 0 && o.n < o.cap &&
         bottleneck_queue_[bottleneck_head_].departs <= now) {
    o.out[o.n++] = bottleneck_queue_[bottleneck_head_].mbuf;
    ++counters_.out;
    if (++bottleneck_head_ == bottleneck_queue_.size()) bottleneck_head_ = 0;
    --bottleneck_count_;
  }
}

rte_mbuf* ImpairStage::Mark(rte_mbuf* m) {
  // Look before copying: only an ECT frame is rewritten.
  const EcnField field =
      FindEcnField(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
  if (field.kind == EcnField::Kind::kNotIp ||
      field.codepoint == EcnCodepoint::kNotEct) {
    ++counters_.ecn_not_ect;
    return m;
  }
  if (field.codepoint == EcnCodepoint::kCe) {
    ++counters_.ecn_already_ce;
    return m;
  }
  // Shared and no copy to be had: it goes on unmarked (no_buffer).
  if (!MakeWritable(m)) return m;
  MarkCongestionExperienced(rte_pktmbuf_mtod(m, uint8_t*), m->data_len);
  ++counters_.ecn_marked;
  return m;
}

void ImpairStage::ReleaseDue(uint64_t now, Output& o) {
  // Frames that have left the bottleneck by now go first: an arrival at
  // `now` must not find them still queued.
  if (bottleneck_) Drain(now, o);
  if (reorder_count_ > 0) ReleaseReordered(now, o, /*by_time=*/true);
  while (heap_size_ > 0 && o.n < o.cap && heap_[0].due <= now) {
    Held h = Pop();
    Emit(h.mbuf, h.pass, now, o);
  }
}

bool ImpairStage::MakeWritable(rte_mbuf*& m) {
  if (RTE_MBUF_DIRECT(m) && rte_mbuf_refcnt_read(m) == 1 &&
      (m->next == nullptr || RTE_MBUF_DIRECT(m->next))) {
    return true;
  }
  // Someone else sees these bytes (a transport's retransmission clone, a
  // duplicate's source): change a private copy instead.
  rte_mempool* pool =
      options_.copy_pool != nullptr ? options_.copy_pool : m->pool;
  rte_mbuf* copy = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
  if (copy == nullptr) {
    ++counters_.no_buffer;
    return false;
  }
  rte_pktmbuf_free(m);
  m = copy;
  return true;
}

rte_mbuf* ImpairStage::Corrupt(rte_mbuf* m, uint32_t offset, uint8_t bit) {
  // Shared and no copy to be had: it goes on uncorrupted (no_buffer).
  if (!MakeWritable(m)) return m;
  rte_mbuf* seg = m;
  while (seg != nullptr && offset >= seg->data_len) {
    offset -= seg->data_len;
    seg = seg->next;
  }
  if (seg == nullptr) return m;  // pkt_len larger than its segments: skip
  FlipBit(rte_pktmbuf_mtod(seg, uint8_t*), offset, bit);
  ++counters_.corrupted;
  return m;
}

void ImpairStage::HandleCopy(rte_mbuf* m, uint64_t now, Output& o) {
  CopyFate fate = model_.DecideCopy(m->pkt_len);
  if (fate.corrupt) m = Corrupt(m, fate.corrupt_offset, fate.corrupt_bit);
  uint64_t due = now + MicrosToTsc(fate.delay_us);
  if (fate.reorder) {
    if (reorder_count_ < reorder_.size()) {
      reorder_[reorder_count_++] = ReorderSlot{
          m, due, due + reorder_timeout_tsc_, passed_ + fate.reorder_after};
      ++counters_.reordered;
      NoteHeld();
      return;
    }
    ++counters_.reorder_skipped;
  }
  if (fate.delay_us > 0) {
    if (Push(due, m, /*pass=*/true)) ++counters_.delayed;
    return;
  }
  Emit(m, /*pass=*/true, now, o);
}

uint16_t ImpairStage::Process(rte_mbuf* const* in, uint16_t n, uint64_t now,
                              rte_mbuf** out, uint16_t out_cap) {
  Output o{out, out_cap, 0};
  ReleaseDue(now, o);
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = in[i];
    ++counters_.in;
    PacketFate fate = model_.DecidePacket();
    if (fate.lost) {
      ++counters_.lost;
      rte_pktmbuf_free(m);
      continue;
    }
    rte_mbuf* dup = nullptr;
    if (fate.duplicate) {
      rte_mempool* pool =
          options_.copy_pool != nullptr ? options_.copy_pool : m->pool;
      dup = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX);
      if (dup == nullptr) {
        ++counters_.no_buffer;
      } else {
        ++counters_.duplicated;
      }
    }
    HandleCopy(m, now, o);
    if (dup != nullptr) HandleCopy(dup, now, o);
  }
  if (bottleneck_) Drain(now, o);
  return o.n;
}

uint16_t ImpairStage::Poll(uint64_t now, rte_mbuf** out, uint16_t out_cap) {
  Output o{out, out_cap, 0};
  ReleaseDue(now, o);
  return o.n;
}

uint16_t ImpairStage::Flush(rte_mbuf** out, uint16_t out_cap) {
  uint16_t n = 0;
  // The bottleneck queue first: its frames came before anything still held
  // by the impairments.
  while (n < out_cap && bottleneck_count_ > 0) {
    out[n++] = bottleneck_queue_[bottleneck_head_].mbuf;
    if (++bottleneck_head_ == bottleneck_queue_.size()) bottleneck_head_ = 0;
    --bottleneck_count_;
  }
  while (n < out_cap && heap_size_ > 0) out[n++] = Pop().mbuf;
  // Then the reordered copies, in the order they came.
  uint32_t taken = 0;
  while (n < out_cap && taken < reorder_count_) {
    out[n++] = reorder_[taken++].mbuf;
  }
  if (taken > 0) {
    std::copy(reorder_.begin() + taken, reorder_.begin() + reorder_count_,
              reorder_.begin());
    reorder_count_ -= taken;
  }
  counters_.out += n;
  counters_.flushed += n;
  return n;
}

}  // namespace spinnic::impair
