// A stream region: where DiAD stream messages land when no handler takes
// them (a region registered with a stream id). Layout (docs/diad.md):
//
//   bytes [0, 64)   header, little-endian u64s:
//                     reserved_bytes   record bytes reserved so far
//                     committed_bytes  record bytes whose message is whole
//                     messages         messages committed
//                     dropped          messages larger than the ring
//   bytes [64, end) the ring: records back to back at byte stream offset o
//                   stored at 64 + o % (length - 64), wrapping:
//                     u32 length, u32 stream id, payload, zero pad to 8
//
// Writers reserve a record's bytes with one atomic add (several channels
// may feed one stream), fill it packet by packet, and commit it. A reader
// (ReadRegion) takes records from its last offset up to committed_bytes;
// the ring overwrites the oldest records, as a capture ring does, so a
// reader that falls more than a ring behind sees overwritten data (it can
// tell from reserved_bytes).
#ifndef SPINNIC_DATAPLANE_DIAD_STREAM_RING_H_
#define SPINNIC_DATAPLANE_DIAD_STREAM_RING_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <span>

namespace spinnic::diad {

class StreamRing {
 public:
  static constexpr uint64_t kHeaderBytes = 64;
  static constexpr uint64_t kRecordHeaderBytes = 8;

  explicit StreamRing(std::span<uint8_t> region) : region_(region) {}

  static uint64_t RecordBytes(uint32_t length) {
    return (kRecordHeaderBytes + length + 7) & ~uint64_t{7};
  }

  // Reserves a record for a message of `length` bytes; false (counted in
  // `dropped`) when it cannot fit the ring at all. `*record` receives the
  // record's byte stream offset.
  bool Reserve(uint32_t length, uint32_t stream_id, uint64_t* record) {
    if (region_.size() <= kHeaderBytes ||
        RecordBytes(length) > region_.size() - kHeaderBytes) {
      Field(kDropped).fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    *record = Field(kReserved).fetch_add(RecordBytes(length),
                                         std::memory_order_relaxed);
    uint8_t head[kRecordHeaderBytes];
    std::memcpy(head, &length, 4);
    std::memcpy(head + 4, &stream_id, 4);
    Copy(*record, {head, sizeof head});
    const uint64_t pad = RecordBytes(length) - kRecordHeaderBytes - length;
    static constexpr uint8_t kZeros[8] = {};
    Copy(*record + kRecordHeaderBytes + length, {kZeros, pad});
    return true;
  }

  // Payload bytes at `offset` of the message whose record is at `record`.
  void Write(uint64_t record, uint64_t offset, std::span<const uint8_t> bytes) {
    Copy(record + kRecordHeaderBytes + offset, bytes);
  }

  // The message of `length` bytes is whole.
  void Commit(uint32_t length) {
    Field(kCommitted).fetch_add(RecordBytes(length), std::memory_order_release);
    Field(kMessages).fetch_add(1, std::memory_order_relaxed);
  }

 private:
  enum FieldIndex {
    kReserved = 0,
    kCommitted = 1,
    kMessages = 2,
    kDropped = 3
  };

  std::atomic_ref<uint64_t> Field(FieldIndex index) {
    return std::atomic_ref<uint64_t>(
        *reinterpret_cast<uint64_t*>(region_.data() + 8 * index));
  }

  void Copy(uint64_t stream_offset, std::span<const uint8_t> bytes) {
    const uint64_t ring = region_.size() - kHeaderBytes;
    uint64_t at = stream_offset % ring;
    size_t done = 0;
    while (done < bytes.size()) {
      size_t chunk = static_cast<size_t>(
          std::min<uint64_t>(bytes.size() - done, ring - at));
      std::memcpy(region_.data() + kHeaderBytes + at, bytes.data() + done,
                  chunk);
      done += chunk;
      at = 0;
    }
  }

  std::span<uint8_t> region_;
};

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_STREAM_RING_H_
