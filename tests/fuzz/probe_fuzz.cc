// Fuzz target for spinnic-gen's probe parser (bench/linerate/gen/probe.h):
// the input is a frame as it comes back from the device under test. The
// first input byte chooses how much of it is contiguous (a segmented mbuf
// hands the parser only a head), the rest is the frame. Besides "never
// reads outside the head" (ASan), it checks that a rejected frame leaves
// the output untouched and that a frame accepted with a short head is also
// accepted, with the same probe, when the whole frame is contiguous.
// Seeds: tests/fuzz/corpus/probe/.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/linerate/gen/probe.h"

namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using spinnic::gen::kMaxProbeHeadBytes;
  using spinnic::gen::Probe;
  using spinnic::gen::ProbeParse;
  if (size == 0) return 0;
  const size_t frame_len = size - 1;
  // A head of at least min(frame_len, kMaxProbeHeadBytes), as the contract
  // asks, and at most the frame.
  size_t head_len = std::min(frame_len, kMaxProbeHeadBytes) + data[0];
  head_len = std::min(head_len, frame_len);
  // Copied so that ASan sees the exact bounds of the head.
  std::vector<uint8_t> head(data + 1, data + 1 + head_len);

  Probe untouched{.stream = 0xbeef, .seq = 7, .tx_tsc = 9};
  Probe probe = untouched;
  ProbeParse result =
      spinnic::gen::ParseProbe(head.data(), head.size(), frame_len, &probe);
  if (result != ProbeParse::kOk) {
    FUZZ_CHECK(std::memcmp(&probe, &untouched, sizeof(probe)) == 0);
    return 0;
  }
  std::vector<uint8_t> whole(data + 1, data + size);
  Probe again;
  FUZZ_CHECK(spinnic::gen::ParseProbe(whole.data(), whole.size(), frame_len,
                                      &again) == ProbeParse::kOk);
  FUZZ_CHECK(again.stream == probe.stream && again.seq == probe.seq &&
             again.tx_tsc == probe.tx_tsc);
  return 0;
}
