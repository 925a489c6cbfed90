// A remote operation started by the control side (gRPC) or the bench: a
// write, a read or a stream message to one peer channel. The control side
// allocates it and hands it to the channel's HPU through that HPU's command
// ring; the HPU owns it until it completes, then publishes the outcome with
// a release store of `done`. Both sides hold a reference (`refs`), so a
// caller that stops waiting (its deadline passed) never frees an operation
// an HPU still uses: whoever drops the last reference deletes it.
#ifndef SPINNIC_DATAPLANE_DIAD_DIAD_OP_H_
#define SPINNIC_DATAPLANE_DIAD_DIAD_OP_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "dataplane/diad/wire.h"

namespace spinnic::diad {

struct DiadOp {
  enum class Kind : uint8_t { kWrite, kRead, kStream };

  // Request (set before submission, then read-only).
  Kind kind = Kind::kWrite;
  uint32_t peer_slot = 0;
  uint32_t peer_generation = 0;
  uint16_t channel = 0;
  uint32_t key = 0;      // rkey (write, read) or stream id
  uint64_t address = 0;  // remote address (write, read)
  // Write/stream: the bytes to send. Read: sized to the read length by the
  // submitter; the HPU fills it.
  std::string data;

  // HPU-owned progress.
  DiadOp* next = nullptr;  // the channel's queue (intrusive: no allocation)
  uint32_t sent = 0;       // payload bytes handed to the wire so far
  uint32_t received = 0;   // read: response bytes placed
  uint32_t txn = 0;
  bool started = false;
  uint64_t start_tsc = 0;

  // Outcome: valid once `done` is true (acquire).
  Status status = Status::kOk;
  uint64_t latency_ns = 0;  // submission on the HPU to completion
  std::atomic<bool> done{false};
  std::atomic<int> refs{2};

  // Drops one reference; the last one deletes the operation.
  void Unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

}  // namespace spinnic::diad

#endif  // SPINNIC_DATAPLANE_DIAD_DIAD_OP_H_
