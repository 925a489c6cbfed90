// Fuzz target for the sPIN use-case handlers' parsers of wire bytes (kvs
// and cond_read requests, datatype and reduce placement by message offset,
// raid_parity's write addresses, pingpong and bcast's puts, agg's key
// field): a packet with any payload and any message position must be
// answered, placed or refused without reading or writing outside its
// frame, its region or its state (ASan), and without crashing.
//
// Input: byte 0 picks the handler, byte 1 the transport and whether the
// message length is known, bytes 2..5 the message offset (little-endian,
// modulo 64 KiB), bytes 6..9 the write address offset; the rest is the
// UDP payload. Seeds: tests/fuzz/corpus/usecases/.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "handlers/api/testing.h"
#include "tests/common/frames.h"

namespace spinnic {
namespace {

constexpr uint64_t kRegionBase = 0x10000;
constexpr size_t kRegionBytes = 4096;

struct Kind {
  const char* name;
  absl::flat_hash_map<std::string, std::string> params;
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"kvs", {{"key_max", "16"}, {"value_max", "64"}, {"reply_stream", "9"}}},
      {"cond_read", {{"version_offset", "8"}, {"reply_stream", "9"}}},
      {"datatype", {{"blocklen", "24"}, {"stride", "40"}}},
      {"datatype",
       {{"layout", "indexed"},
        {"blocks", "7@100,50@0,300@2000"},
        {"count", "3"}}},
      {"reduce", {{"type", "int64"}, {"count", "500"}, {"contributors", "3"}}},
      {"reduce",
       {{"type", "float32"}, {"count", "1000"}, {"contributors", "2"}}},
      {"raid_parity",
       {{"role", "data"},
        {"parity_peer", "p"},
        {"parity_rkey", "7"},
        {"parity_address", "0x20000"}}},
      {"raid_parity", {{"role", "parity"}}},
      {"pingpong",
       {{"mode", "write"}, {"reply_rkey", "5"}, {"reply_address", "0x30000"}}},
      {"bcast", {{"tree", "a,b,c,d,e"}, {"rank", "1"}, {"rkey", "3"}}},
      {"agg",
       {{"from", "payload"},
        {"offset", "3"},
        {"width", "4"},
        {"buckets", "64"}}},
  };
  return kinds;
}

uint32_t Le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

}  // namespace
}  // namespace spinnic

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spinnic;
  if (size < 10) return 0;
  const Kind& kind = Kinds()[data[0] % Kinds().size()];
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest(kind.name, kind.params);
  if (!handler.ok()) __builtin_trap();  // the parameters above are valid
  const HandlerKind* registered = FindHandlerKind(kind.name);
  // Exactly sized on the heap: a write past the end is an ASan report.
  std::unique_ptr<uint8_t[]> region(new uint8_t[kRegionBytes]());
  FakeEctx ectx(registered->min_state_size + 64 * 16 + 32);
  ectx.AddRegion(1, {region.get(), kRegionBytes}, true, true, kRegionBase);

  static constexpr MessageTransport kTransports[] = {
      MessageTransport::kPassthrough, MessageTransport::kDiadStream,
      MessageTransport::kDiadWrite, MessageTransport::kRoceSend,
      MessageTransport::kRoceWrite};
  const MessageTransport transport = kTransports[data[1] % 5];
  const bool length_known = (data[1] / 5) % 2 == 0;
  std::vector<uint8_t> payload(data + 10, data + size);
  // IPv4/UDP; the payload bytes as they came (the frame may be longer
  // than any region or reply: the handlers must bound what they touch).
  TestPacket packet(frames::Udp4(frames::kMacA, frames::kMacB, "10.0.0.1",
                                 "10.0.0.2", 1234, 5678, payload));
  if (transport != MessageTransport::kPassthrough) {
    const uint64_t offset = Le32(data + 2) % 65536;
    packet.view().SetMessage(
        {.transport = transport,
         .source = 1,
         .offset = offset,
         .length = length_known ? offset + payload.size() + data[1] % 3 : 0,
         .address = transport == MessageTransport::kDiadWrite ||
                            transport == MessageTransport::kRoceWrite
                        ? kRegionBase + Le32(data + 6) % 8192
                        : 0});
  }
  const std::optional<HandlerResult> header =
      RunHeader(*handler, ectx.context(), packet.view());
  if (!header.has_value() || *header == HandlerResult::kProcessData) {
    RunPayload(*handler, ectx.context(), packet.view());
  }
  RunCompletion(*handler, ectx.context(), data[1] & 1, false);
  return 0;
}
