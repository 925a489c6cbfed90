// Fuzz target for spinctl decode's capture reader
// (control/spinctl/pcap_reader.h): the input is a whole file, classic pcap
// or pcapng. Open and then Next until the end must never read outside the
// input (ASan), and:
//   - Open either refuses with INVALID_ARGUMENT or gives a reader;
//   - every record's bytes lie inside the input, hold at most
//     kPcapMaxRecordBytes and at most the frame's original length, and
//     records are numbered 1, 2, 3, ...;
//   - the reader stops with a status (OK, DATA_LOSS or INVALID_ARGUMENT)
//     after at most one record per 12 bytes of input, and stays stopped.
// Seeds: tests/fuzz/corpus/pcap/ (the first records of
// tests/fixtures/roce/ext_lone_rping_client_to_nonrdma_host.pcap as pcap,
// and as pcapng in both byte orders, with decimal and binary if_tsresol,
// simple packet blocks, a skipped statistics block and two sections; and
// tests/fixtures/roce/rping_v4.dpdk.pcapng, written by librte_pcapng).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "control/spinctl/pcap_reader.h"

namespace spinnic::spinctl {
namespace {

#define FUZZ_CHECK(cond)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                  \
      std::abort();                                                         \
    }                                                                       \
  } while (0)

void Check(std::span<const uint8_t> file) {
  absl::StatusOr<PcapReader> reader = PcapReader::Open(file);
  if (!reader.ok()) {
    FUZZ_CHECK(reader.status().code() == absl::StatusCode::kInvalidArgument);
    return;
  }
  PcapRecord record;
  uint64_t records = 0;
  while (reader->Next(&record)) {
    ++records;
    FUZZ_CHECK(record.index == records);
    FUZZ_CHECK(record.data.size() <= kPcapMaxRecordBytes);
    FUZZ_CHECK(record.data.size() <= record.original_length);
    if (!record.data.empty()) {
      FUZZ_CHECK(record.data.data() >= file.data());
      FUZZ_CHECK(record.data.data() + record.data.size() <=
                 file.data() + file.size());
      // Touch every byte, so that ASan sees a read outside the input.
      volatile uint8_t sum = 0;
      for (uint8_t b : record.data) sum = sum + b;
    }
    FUZZ_CHECK(records <= file.size() / kPcapngBlockOverheadBytes);
  }
  const absl::StatusCode code = reader->status().code();
  FUZZ_CHECK(code == absl::StatusCode::kOk ||
             code == absl::StatusCode::kDataLoss ||
             code == absl::StatusCode::kInvalidArgument);
  FUZZ_CHECK(!reader->Next(&record));
}

}  // namespace
}  // namespace spinnic::spinctl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  spinnic::spinctl::Check(std::span<const uint8_t>(data, size));
  return 0;
}
