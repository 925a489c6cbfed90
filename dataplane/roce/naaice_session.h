// The network-attached accelerator's side of one NAAICE connection
// (docs/naaice.md): the MRSP exchange that sets up the host's memory
// regions, then any number of RPCs, each started by the host's last input
// WRITE WITH IMMEDIATE and answered by RDMA WRITEs of the output regions,
// the last one WITH IMMEDIATE carrying the return code.
//
// Pure logic, no DPDK, no allocation after construction: the RoCE engine
// hosts one Session per connected QP, reports what the responder received
// (OnSend, OnWriteImm), executes what the session returns (a SEND, a
// function run, RDMA WRITEs) and reports back (OnFunctionDone,
// OnWriteBackComplete). Memory comes from the engine through
// RegionAllocator; functions from a naaice::FunctionTable
// (handlers/naaice/function.h).
//
// States: kAwaitingMrsp -(0x01 request, regions allocated)-> kReady
//   -(OnWriteImm)-> kRunning -(OnFunctionDone)-> kWritingBack
//   -(OnWriteBackComplete, or the next RPC's OnWriteImm)-> kReady ...
// Any protocol violation -> kFailed (fail_reason() says why); the engine
// then tears the connection down and calls Close() (kClosed), which frees
// the regions.
#ifndef SPINNIC_DATAPLANE_ROCE_NAAICE_SESSION_H_
#define SPINNIC_DATAPLANE_ROCE_NAAICE_SESSION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "dataplane/roce/mrsp.h"
#include "handlers/naaice/function.h"

namespace spinnic::roce::naaice {

using ::spinnic::naaice::Function;
using ::spinnic::naaice::FunctionTable;

// Why an allocation failed; each maps to the MRSP error code the host gets.
enum class AllocStatus : uint8_t {
  kOk = 0,
  kNotEnoughMemory,  // -> error 0x01
  kInvalidAddress,   // the requested NAA address is refused -> 0x02
  kTooManyRegions,   // no region slot left -> 0x03
};

struct Allocation {
  uint32_t id = 0;           // the allocator's handle, given back to Free
  uint64_t address = 0;      // NAA virtual address the host writes to
  uint32_t rkey = 0;         // rkey the host writes with (0 for internal)
  std::span<uint8_t> bytes;  // the region's memory: request.size bytes,
                             // zeroed (their NAA calloc()s)
};

// The engine's memory for the session's regions. Allocate sees the whole
// request entry: size, flags (kFlagInternal: scratch the host never
// accesses, needs no rkey; kFlagInput: the host writes it; kFlagOutput: the
// engine reads it for the write-back) and the NAA address the host asked
// for (a hint; naaice_server ignores it). Memory must stay valid and the
// rkey registered until Free.
class RegionAllocator {
 public:
  virtual AllocStatus Allocate(const mrsp::RegionRequest& request,
                               Allocation* out) = 0;
  virtual void Free(uint32_t id) = 0;

 protected:
  ~RegionAllocator() = default;
};

enum class SessionState : uint8_t {
  kAwaitingMrsp = 0,
  kReady,        // regions set up, waiting for an RPC
  kRunning,      // a function run was handed to the engine
  kWritingBack,  // result writes handed to the engine
  kFailed,
  kClosed,
};
const char* SessionStateName(SessionState state);

enum class FailReason : uint8_t {
  kNone = 0,
  kMalformedRequest,   // the MRSP message did not parse (parse_error())
  kAllocationFailed,   // the allocator refused a region
  kBadAllocation,      // the allocator returned a region of the wrong size
                       // or an advertisement that does not build
  kPeerError,          // the host sent an MRSP error message
  kUnexpectedMessage,  // the host sent an advertisement (0x02)
  kRepeatedMrsp,       // a SEND after MRSP: their protocol has one per
                       // connection
  kRpcBeforeMrsp,      // WRITE WITH IMMEDIATE before the regions exist
  kRpcWhileRunning,    // a new RPC before the previous one's result
  kCount,
};
const char* FailReasonName(FailReason reason);

struct SessionCounters {
  uint64_t mrsp_requests = 0;     // SENDs received
  uint64_t mrsp_errors_sent = 0;  // error messages (0x00) answered
  uint64_t regions = 0;           // regions allocated by MRSP
  uint64_t region_bytes = 0;
  uint64_t rpcs = 0;                // RPCs started (WRITE WITH IMMEDIATE)
  uint64_t functions_run = 0;       // function runs handed out
  uint64_t function_errors = 0;     // non-zero return codes sent
  uint64_t unknown_functions = 0;   // codes with no function
  uint64_t host_error_signals = 0;  // immediate 0 (the host's failure)
  uint64_t result_writes = 0;       // WRITEs handed out, immediate included
  uint64_t result_bytes = 0;
  uint64_t ignored_events = 0;  // events in kFailed / kClosed
};

// "Run `function` over these regions, then call OnFunctionDone(code)."
// The spans point into the session and stay valid until Close().
struct RunRequest {
  uint8_t function_code = 0;
  Function function = nullptr;               // never null in a kRun step
  ::spinnic::naaice::InputRegions inputs;    // input-flag regions, in order
  ::spinnic::naaice::OutputRegions outputs;  // output-flag regions, in order
  ::spinnic::naaice::Params params;          // the immediate's 3 user bytes
  uint64_t rpc = 0;                          // 1 for the connection's first
  // Request entries the host wrote for this RPC (bit i = entry i): every
  // input on the first RPC, single-send ones no more from the second on
  // (naaice.c:1665-1671). Single-send regions keep their first bytes and
  // are still in `inputs`.
  uint32_t host_written = 0;
};

inline constexpr uint32_t kNoRegion = 0xffffffff;

// One RDMA WRITE (WITH IMMEDIATE when `with_immediate`) the engine sends to
// the host, from local_data[0, length) to remote_address with rkey, on the
// session's QP.
struct ResultWrite {
  uint32_t region_index = kNoRegion;  // request entry; kNoRegion: none
  uint32_t region_id = 0;             // the allocator's id of the source
  uint64_t local_address = 0;         // its NAA address
  const uint8_t* local_data = nullptr;
  uint32_t length = 0;  // whole region; 0 for an error result
  uint64_t remote_address = 0;
  uint32_t rkey = 0;
  bool with_immediate = false;
  // Host order: the BTH ImmDt carries it big-endian.
  // = mrsp::MakeResultImmediate(return code).
  uint32_t immediate = 0;
  bool solicited = false;  // BTH SE bit (set on the last write)
};

// The result of an RPC: `writes` in order, never empty, the last (only
// that one) with immediate and solicited. Before the first write reaches
// the wire the engine must have ACKed the host's WRITE WITH IMMEDIATE
// (message sequence number `ack_msn`): their client fails an RPC whose
// result arrives before its own writes completed (docs/naaice.md 3.3).
// Valid until the next call into the session.
struct WriteBack {
  uint32_t ack_msn = 0;
  uint8_t return_code = 0;
  std::span<const ResultWrite> writes;
};

// What the engine does after OnWriteImm.
struct RpcStep {
  enum class Kind : uint8_t {
    kNothing,    // no reply (see OnWriteImm)
    kRun,        // run `run`, then OnFunctionDone
    kWriteBack,  // no function to run: send `write_back` now
  };
  Kind kind = Kind::kNothing;
  RunRequest run;
  WriteBack write_back;
};

class Session {
 public:
  // Both must outlive the session.
  Session(RegionAllocator* allocator, const FunctionTable* functions);
  ~Session();  // Close()
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // A SEND received (its whole payload). Returns the bytes to SEND back
  // (with the solicited bit, as their peers do), or an empty span for no
  // reply; valid until the next call into the session.
  //  - 0x01 in kAwaitingMrsp: allocates every entry in request order
  //    (internal ones too: the NAA's scratch) and answers the 0x02
  //    advertisement (address, rkey, size of each non-internal entry, in
  //    order) -> kReady. A request that does not parse -> error message
  //    with mrsp::ErrorCodeFor (0x03 above 32 regions, 0x02 NAA range
  //    beyond 2^56, else 0x01); a refused allocation -> the AllocStatus's
  //    code, the regions so far freed (last first). Both -> kFailed.
  //  - 0x00 from the host -> kFailed, no reply (an error is not answered).
  //  - anything else, or any SEND after MRSP -> error 0x01, kFailed.
  std::span<const uint8_t> OnSend(std::span<const uint8_t> payload);

  // The host's WRITE WITH IMMEDIATE completed: `immediate` host order
  // (ntohl of ImmDt), `msn` its message sequence number.
  //  - kRun: a function has the code (bits 0..6).
  //  - kWriteBack: code 0 with other bits set (naaice_server then writes
  //    back without running anything: every output, return code 0), or an
  //    unknown code: ONE zero-length WRITE WITH IMMEDIATE with return code
  //    0x7f (kErrorUnknownFunction) to the last output region. (Their NAA
  //    answers nothing and the host waits out its 3600 s timeout; ours
  //    completes the host's RPC at once with an error it logs.)
  //  - kNothing: immediate 0 (the host's own failure signal: it could not
  //    post its receive; counted, the session stays kReady), or a protocol
  //    violation (-> kFailed), or kFailed/kClosed.
  // Accepted in kReady, and in kWritingBack (the host starts an RPC only
  // after our result arrived, so the write-back is complete).
  RpcStep OnWriteImm(uint32_t immediate, uint32_t msn);

  // The function of the kRun step returned `return_code` (or the engine
  // reports 0x02, kernel timeout). Code 0: a whole-region WRITE of every
  // output region in request order (the last WITH IMMEDIATE 0); with no
  // output region, one zero-length WRITE WITH IMMEDIATE. Other codes: one
  // zero-length WRITE WITH IMMEDIATE (code << 8) to the last output region
  // (host buffers untouched). -> kWritingBack. Outside kRunning: empty.
  WriteBack OnFunctionDone(uint8_t return_code);

  // Every write of the write-back was acknowledged -> kReady.
  void OnWriteBackComplete();

  // Frees every region (allocation order reversed) -> kClosed. The engine
  // calls it when the connection ends (DREQ, QP error, kFailed).
  void Close();

  // The functions the next calls look codes up in (the engine's current
  // ECTX table: built-ins and installed naaice_function handlers).
  void set_functions(const FunctionTable* functions) { functions_ = functions; }

  SessionState state() const { return state_; }
  FailReason fail_reason() const { return fail_reason_; }
  mrsp::ParseError parse_error() const { return parse_error_; }
  const SessionCounters& counters() const { return counters_; }

  // The regions of the MRSP request (valid in kReady..kWritingBack).
  struct Region {
    mrsp::RegionRequest request;  // flags, host address, rkey, size
    Allocation allocation;
  };
  size_t region_count() const { return region_count_; }
  const Region& region(size_t index) const { return regions_[index]; }

 private:
  std::span<const uint8_t> Fail(FailReason reason, bool reply,
                                uint8_t error_code);
  std::span<const uint8_t> HandleRequest(std::span<const uint8_t> payload);
  void FreeRegions();
  WriteBack PlanWriteBack(uint8_t return_code, bool whole_regions);

  RegionAllocator* const allocator_;
  const FunctionTable* functions_;
  SessionState state_ = SessionState::kAwaitingMrsp;
  FailReason fail_reason_ = FailReason::kNone;
  mrsp::ParseError parse_error_ = mrsp::ParseError::kNone;
  SessionCounters counters_;

  mrsp::AdvertiseRequest request_;
  std::array<Region, mrsp::kMaxRegions> regions_{};
  size_t region_count_ = 0;
  std::array<std::span<const uint8_t>, mrsp::kMaxRegions> inputs_{};
  size_t input_count_ = 0;
  std::array<std::span<uint8_t>, mrsp::kMaxRegions> outputs_{};
  std::array<uint32_t, mrsp::kMaxRegions> output_index_{};
  size_t output_count_ = 0;
  uint32_t all_inputs_ = 0;          // bit i: entry i has kFlagInput
  uint32_t single_send_inputs_ = 0;  // ... and kFlagSingleSend

  std::array<uint8_t, 3> params_{};
  uint32_t rpc_msn_ = 0;
  std::array<ResultWrite, mrsp::kMaxRegions> writes_{};
  std::array<uint8_t,
             mrsp::kHeaderBytes + mrsp::kMaxRegions * mrsp::kAdvertEntryBytes>
      reply_{};
};

}  // namespace spinnic::roce::naaice

#endif  // SPINNIC_DATAPLANE_ROCE_NAAICE_SESSION_H_
