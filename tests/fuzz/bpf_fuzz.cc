// Fuzz target for the eBPF handler loader (handlers/bpf/bpf_program.h): an
// input that starts like an ELF file is an object as a client would upload
// it; anything else is a raw instruction stream for a payload handler. The
// loader must never crash or hang, and whatever it accepts must be safe to
// run: every accepted program is run (JIT, or the interpreter) on a frame,
// a small state and a completion, under ASan, so that an access the
// validator or a helper let through fails the run.
// Seeds: tests/fuzz/corpus/bpf/ (the examples and refused test programs).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "handlers/api/context.h"
#include "handlers/api/packet.h"
#include "handlers/bpf/bpf_helpers.h"
#include "handlers/bpf/bpf_program.h"

namespace spinnic::bpf {
namespace {

void RunEveryStage(const BpfProgram& program) {
  alignas(64) std::array<uint8_t, 32> state{};
  std::array<uint8_t, 64> frame{};
  HandlerContext ctx(state, {}, nullptr, 0, 0);
  PacketLayers layers;
  layers.l3_offset = 14;
  layers.l4_offset = 34;
  layers.payload_offset = 42;
  layers.l3_end = 60;
  PacketView packet(frame.data(), frame.size(), layers, 0);
  for (Stage stage : {Stage::kHeader, Stage::kPayload, Stage::kCompletion}) {
    if (!program.Has(stage)) continue;
    BpfInvocation inv{};
    inv.pub.packet_length = frame.size();
    inv.pub.state_size = state.size();
    inv.handler = &ctx;
    inv.packet = stage == Stage::kCompletion ? nullptr : &packet;
    program.Run(stage, &inv);
  }
}

}  // namespace
}  // namespace spinnic::bpf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using spinnic::bpf::BpfProgram;
  std::span<const uint8_t> input(data, size);
  const bool elf = size >= 4 && data[0] == 0x7f && data[1] == 'E';
  auto program =
      elf ? BpfProgram::Load(input) : BpfProgram::LoadInstructions(input);
  if (program.ok()) spinnic::bpf::RunEveryStage(**program);
  return 0;
}
