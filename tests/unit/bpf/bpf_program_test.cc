// The eBPF loader's rules: each with a minimal program that breaks it
// (tests/unit/bpf/programs/), refused with INVALID_ARGUMENT naming the
// section and instruction; the run-time checks of the helpers; and the
// three sPIN stages run through the handler kind `bpf`.
#include "handlers/bpf/bpf_program.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/frames.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

using ::testing::HasSubstr;

std::vector<uint8_t> ReadObject(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> TestProgram(const std::string& name) {
  return ReadObject(std::string(SPINNIC_BPF_TEST_DIR) + "/" + name + ".o");
}

std::string ProgramHex(const std::vector<uint8_t>& bytes) {
  return absl::BytesToHexString(
      {reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

absl::Status LoadStatus(const std::vector<uint8_t>& elf) {
  return bpf::BpfProgram::Load(elf).status();
}

void ExpectRefused(const std::string& program, const std::string& says) {
  absl::Status status = LoadStatus(TestProgram(program));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument)
      << program << ": " << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(says)) << program;
}

TEST(BpfProgramTest, RefusesWhatIsNotABpfObject) {
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_THAT(std::string(LoadStatus(text).message()),
              HasSubstr("not an ELF object"));
  EXPECT_THAT(std::string(LoadStatus({}).message()),
              HasSubstr("not an ELF object"));
  ExpectRefused("host_object", "not little-endian 64-bit BPF");
  ExpectRefused("no_section", "no handler section");
}

TEST(BpfProgramTest, EachRuleNamesSectionAndInstruction) {
  ExpectRefused("loop", "spin/payload, instruction ");
  ExpectRefused("loop", "jumps back into a loop");
  ExpectRefused("unknown_helper", "calls `bpf_ktime_get_ns`, which is not");
  ExpectRefused("global", "refers to `packets`: global variables");
  ExpectRefused("divide", "divides by a value that may be zero");
  ExpectRefused("jmp32", "eBPF v3");
  ExpectRefused("program_call", "calls `.text`, a function of the program");
  ExpectRefused("too_long", "more than 4096");
  // librte_bpf's validator walks every path: 2^40 would hang the install.
  ExpectRefused("path_explosion", "paths from entry to exit, more than 65536");
  ExpectRefused(
      "ctx_out_of_bounds",
      "instruction 0: context access at offset 256 outside its 88 bytes");
}

// Raw instructions (little-endian eBPF), for the rules no C compiler
// breaks on purpose.
struct Insn {
  uint8_t code;
  uint8_t dst : 4;
  uint8_t src : 4;
  int16_t off;
  int32_t imm;
};
static_assert(sizeof(Insn) == 8);

absl::Status RawStatus(std::initializer_list<Insn> insns) {
  std::vector<uint8_t> bytes(insns.size() * sizeof(Insn));
  std::memcpy(bytes.data(), insns.begin(), bytes.size());
  return bpf::BpfProgram::LoadInstructions(bytes).status();
}

constexpr Insn Mov64Imm(uint8_t dst, int32_t imm) {
  return {0xb7, dst, 0, 0, imm};
}
constexpr Insn Mov64Reg(uint8_t dst, uint8_t src) {
  return {0xbf, dst, src, 0, 0};
}
constexpr Insn LoadWord(uint8_t dst, uint8_t src, int16_t off) {
  return {0x61, dst, src, off, 0};
}
constexpr Insn LoadDouble(uint8_t dst, uint8_t src, int16_t off) {
  return {0x79, dst, src, off, 0};
}
constexpr Insn StoreDouble(uint8_t dst, uint8_t src, int16_t off) {
  return {0x7b, dst, src, off, 0};
}
constexpr Insn Exit() { return {0x95, 0, 0, 0, 0}; }

TEST(BpfProgramTest, MemoryOnlyThroughTheContextOrTheStack) {
  // Found by the fuzz target: librte_bpf accepts an AND on the context
  // pointer and a load through the result.
  EXPECT_THAT(std::string(RawStatus({Mov64Reg(6, 1),
                                     {0x57, 6, 0, 0, 2},  // r6 &= 2
                                     LoadWord(0, 6, 0),
                                     Exit()})
                              .message()),
              HasSubstr("instruction 2: accesses memory through r6"));
  // A copy of the context pointer is the context.
  EXPECT_TRUE(RawStatus({Mov64Reg(6, 1), LoadWord(0, 6, 4), Exit()}).ok());
  // Spilled to the stack and reloaded, it still is; overwritten, not.
  EXPECT_TRUE(RawStatus({StoreDouble(10, 1, -8), Mov64Imm(1, 0),
                         LoadDouble(1, 10, -8), LoadWord(0, 1, 0), Exit()})
                  .ok());
  EXPECT_THAT(std::string(RawStatus({StoreDouble(10, 1, -8),
                                     {0x7a, 10, 0, -8, 7},  // *(r10-8) = 7
                                     LoadDouble(1, 10, -8),
                                     LoadWord(0, 1, 0),
                                     Exit()})
                              .message()),
              HasSubstr("instruction 3: accesses memory through r1"));
  EXPECT_THAT(std::string(RawStatus({LoadWord(0, 10, -516), Exit()}).message()),
              HasSubstr("outside the 512-byte stack"));
  EXPECT_THAT(std::string(RawStatus({LoadDouble(0, 1, 84), Exit()}).message()),
              HasSubstr("context access at offset 84 outside its 88 bytes"));
  ExpectRefused("stack_as_ctx", "calls spin_state_add without the context");
  // Half of a spilled context pointer, reloaded and stored into the
  // context: still an address's bits.
  EXPECT_THAT(std::string(RawStatus({{0x63, 10, 1, -8, 0},  // *(u32*)(r10-8)=r1
                                     {0x61, 2, 10, -8, 0},  // r2=*(u32*)(r10-8)
                                     {0x63, 1, 2, 0, 0},    // *(u32*)(r1+0)=r2
                                     Mov64Imm(0, 2),
                                     Exit()})
                              .message()),
              HasSubstr("instruction 2: stores the pointer in r2"));
  // A copy of the frame pointer is an address too.
  EXPECT_THAT(std::string(RawStatus({Mov64Reg(2, 10),
                                     {0x7b, 1, 2, 0, 0},  // *(u64*)(r1+0)=r2
                                     Mov64Imm(0, 2),
                                     Exit()})
                              .message()),
              HasSubstr("instruction 1: stores the pointer in r2"));
  // An address through a join: the context on one path, a constant on the
  // other, then stored into the stack and reloaded... and a load through it
  // is refused like any unproven pointer.
  EXPECT_THAT(std::string(RawStatus({Mov64Reg(6, 1),
                                     {0x15, 0, 0, 1, 0},  // if r0 == 0 +1
                                     Mov64Imm(6, 8),
                                     LoadWord(0, 6, 0),
                                     Exit()})
                              .message()),
              HasSubstr("instruction 3: accesses memory through r6"));
}

// Windows (spin_pkt_ptr, spin_state_ptr): plain loads and stores, each
// proven inside the window's constant length, after a comparison with 0.
TEST(BpfProgramTest, WindowAccessesAreProvenAtLoad) {
  ExpectRefused("window_unchecked", "dereferences r0 before comparing it");
  ExpectRefused("window_overrun", "accesses bytes 4..4 of a 4-byte window");
  ExpectRefused("window_variable_length",
                "spin_pkt_ptr's length must be a constant 1..4096");
  ExpectRefused("window_variable_index",
                "which holds no pointer the loader can prove");
  ExpectRefused("pointer_leak", "stores the pointer in r");
  // Bits computed from an address are an address too.
  ExpectRefused("pointer_arithmetic_leak", "stores the pointer in r");
  EXPECT_TRUE(LoadStatus(TestProgram("windows")).ok())
      << LoadStatus(TestProgram("windows"));
}

TEST(BpfProgramTest, WindowIsNullWhenTheBytesAreNotThere) {
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest(
      "bpf", {{"program", ProgramHex(TestProgram("windows"))}});
  ASSERT_TRUE(handler.ok()) << handler.status();
  FakeEctx ectx(/*state_size=*/16);
  std::vector<uint8_t> frame = Build(FrameSpec{});
  TestPacket packet(frame, ClassifierLayers(frame), /*in_port=*/0);
  EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  uint64_t words[2];
  std::memcpy(words, ectx.context().State().data(), sizeof words);
  EXPECT_EQ(words[0], 2u);
  EXPECT_EQ(words[1], (uint64_t{frame[12]} << 8) | frame[13]);
  // 13 bytes: no Ethernet header, so no window.
  std::vector<uint8_t> runt(frame.begin(), frame.begin() + 13);
  TestPacket short_packet(runt, PacketLayers{}, /*in_port=*/0);
  EXPECT_EQ(RunPayload(*handler, ectx.context(), short_packet.view()),
            HandlerResult::kDrop);
  // 8 bytes of state: no 16-byte window.
  FakeEctx small(/*state_size=*/8);
  EXPECT_EQ(RunPayload(*handler, small.context(), packet.view()),
            HandlerResult::kFail);
}

TEST(BpfProgramTest, JsetWithAnImmediateRunsRightOnTheInterpreter) {
  // r0 = 2 when bit 0 of the context's first byte is set, else 1; the
  // jump is far (200 instructions). librte_bpf 22.11's JIT gets it wrong
  // (near: the other way; far: into the middle of an x86 instruction).
  std::vector<Insn> insns = {LoadWord(2, 1, 0), {0x45, 2, 0, 202, 1}};
  for (int k = 0; k < 200; ++k) insns.push_back(Mov64Imm(3, k));
  insns.insert(insns.end(), {Mov64Imm(0, 1), Exit(), Mov64Imm(0, 2), Exit()});
  std::vector<uint8_t> bytes(insns.size() * sizeof(Insn));
  std::memcpy(bytes.data(), insns.data(), bytes.size());
  absl::StatusOr<std::unique_ptr<bpf::BpfProgram>> program =
      bpf::BpfProgram::LoadInstructions(bytes);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_FALSE((*program)->report().jit);
  EXPECT_THAT(bpf::DescribeReport((*program)->report()),
              HasSubstr("interpreter (spin/payload: jset with an immediate"));
  alignas(8) std::array<uint8_t, 128> ctx{};
  ctx[0] = 0x03;
  EXPECT_EQ((*program)->Run(bpf::Stage::kPayload, ctx.data()), 2u);
  ctx[0] = 0x02;
  EXPECT_EQ((*program)->Run(bpf::Stage::kPayload, ctx.data()), 1u);
}

TEST(BpfProgramTest, ControlFlowStaysInsideTheSection) {
  // Found by the fuzz target: without exit, librte_bpf's validator reads
  // past the program.
  EXPECT_THAT(std::string(RawStatus({Mov64Imm(0, 34)}).message()),
              HasSubstr("ends without exit"));
  // Nor after a 16-byte load or a call, which go on to the next
  // instruction too (the load as the last one crashed librte_bpf's loader).
  EXPECT_THAT(std::string(RawStatus({Mov64Imm(0, 0),
                                     {0x18, 2, 0, 0, 0},  // r2 = imm64
                                     {0x00, 0, 0, 0, 0x1717}})
                              .message()),
              HasSubstr("instruction 1: the section ends without exit"));
  EXPECT_THAT(
      std::string(RawStatus({Mov64Imm(0, 0), {0x85, 0, 0, 0, 1}})  // call 1
                      .message()),
      HasSubstr("instruction 1: the section ends without exit"));
  // Into the second half of a 16-byte load: the JIT would run the constant.
  EXPECT_THAT(std::string(RawStatus({{0x05, 0, 0, 1, 0},  // goto +1
                                     {0x18, 0, 0, 0, 1},
                                     {0x00, 0, 0, 0, 0},
                                     Exit()})
                              .message()),
              HasSubstr("instruction 0: jumps to 2, which is not the start"));
  EXPECT_THAT(std::string(RawStatus({{0x05, 0, 0, 5, 0}, Exit()}).message()),
              HasSubstr("jumps to 6"));
  EXPECT_THAT(std::string(RawStatus({Mov64Imm(0, 1),
                                     {0x67, 0, 0, 0, 64},  // r0 <<= 64
                                     Exit()})
                              .message()),
              HasSubstr("shifts a 64-bit value by 64 bits"));
  EXPECT_TRUE(RawStatus({Mov64Imm(0, 2), Exit()}).ok());
}

TEST(BpfProgramTest, ReportsSectionsHelpersAndJit) {
  absl::StatusOr<std::unique_ptr<bpf::BpfProgram>> program =
      bpf::BpfProgram::Load(TestProgram("all_stages"));
  ASSERT_TRUE(program.ok()) << program.status();
  const bpf::ProgramReport& report = (*program)->report();
  ASSERT_EQ(report.sections.size(), 3u);
  EXPECT_TRUE(report.jit);
  std::vector<std::string> names;
  for (const auto& s : report.sections) names.push_back(s.name);
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         "spin/header", "spin/payload", "spin/completion"));
  for (const auto& s : report.sections) {
    EXPECT_GT(s.instructions, 0u);
    if (s.name == "spin/payload") {
      EXPECT_THAT(s.helpers,
                  ::testing::ElementsAre("spin_state_add", "spin_event"));
    }
  }
  EXPECT_THAT(bpf::DescribeReport(report), HasSubstr("JIT"));
}

// The kind `bpf` with a program: the engine's three calls reach the three
// sections, in sPIN's order, with the packet and completion facts.
TEST(BpfProgramTest, HeaderPayloadCompletionThroughTheKind) {
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest(
      "bpf", {{"program", ProgramHex(TestProgram("all_stages"))}});
  ASSERT_TRUE(handler.ok()) << handler.status();
  FakeEctx ectx(/*state_size=*/32);
  FrameSpec spec;
  spec.payload = Text("some payload");
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame), /*in_port=*/1);
  EXPECT_EQ(RunHeader(*handler, ectx.context(), packet.view()),
            HandlerResult::kProcessData);
  EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  EXPECT_EQ(RunCompletion(*handler, ectx.context(), 77, false),
            HandlerResult::kSuccess);
  EXPECT_EQ(RunCompletion(*handler, ectx.context(), 5, true),
            HandlerResult::kFail);
  const uint64_t* words =
      reinterpret_cast<const uint64_t*>(ectx.context().State().data());
  EXPECT_EQ(words[0], 1u);  // headers
  EXPECT_EQ(words[1], 2u);  // payloads
  EXPECT_EQ(words[2], 2u);  // completions
  EXPECT_EQ(words[3], 5u);  // the last dropped_bytes
  ASSERT_EQ(ectx.sink().events().size(), 2u);
  EXPECT_EQ(ectx.sink().events()[0].code, 0x1234u);
  uint64_t length = 0;
  std::memcpy(&length, ectx.sink().events()[0].data.data(), sizeof length);
  EXPECT_EQ(length, frame.size());
  EXPECT_EQ(packet.bytes(), frame);  // nothing written
}

// A helper's refused access fails the call; the state outside stays as is.
TEST(BpfProgramTest, AccessOutsideStateFailsTheCall) {
  absl::StatusOr<HandlerInstance> handler = CreateHandlerForTest(
      "bpf", {{"program", ProgramHex(TestProgram("state_overrun"))}});
  ASSERT_TRUE(handler.ok()) << handler.status();
  FakeEctx ectx(/*state_size=*/8);
  std::vector<uint8_t> frame = Build(FrameSpec{});
  TestPacket packet(frame, ClassifierLayers(frame), /*in_port=*/0);
  EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
            HandlerResult::kFault);
  uint64_t first = 0;
  std::memcpy(&first, ectx.context().State().data(), sizeof first);
  EXPECT_EQ(first, 1u);  // the access before the refused one happened
}

// spin_diad_put_stream / put_write / get reach the install's `peer` on this
// HPU's channel with the packet's bytes; a range past the packet, or no
// peer, faults.
TEST(BpfProgramTest, DiadPutAndGetReachTheInstallsPeer) {
  const std::string hex = ProgramHex(TestProgram("diad_ops"));
  absl::StatusOr<HandlerInstance> handler =
      CreateHandlerForTest("bpf", {{"program", hex}, {"peer", "b"}});
  ASSERT_TRUE(handler.ok()) << handler.status();
  FakeEctx ectx(/*state_size=*/0, /*lcore_index=*/1);
  FrameSpec spec;
  spec.payload = Text("abcdefgh");
  std::vector<uint8_t> frame = Build(spec);
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(*handler, ectx.context(), packet.view()),
            HandlerResult::kSuccess);
  const auto& puts = ectx.sink().puts();
  ASSERT_EQ(puts.size(), 2u);
  EXPECT_EQ(puts[0].kind, PeerPut::Kind::kStream);
  EXPECT_EQ(puts[0].peer, "b");
  // On the HPU's own channel, which the transport resolves.
  EXPECT_EQ(puts[0].channel, PeerPut::kThisHpusChannel);
  EXPECT_EQ(puts[0].key, 7u);
  EXPECT_EQ(puts[0].data, Text("abcd"));
  EXPECT_EQ(puts[1].kind, PeerPut::Kind::kWrite);
  EXPECT_EQ(puts[1].key, 0x55u);
  EXPECT_EQ(puts[1].address, 0x1000u);
  EXPECT_EQ(puts[1].data,
            std::vector<uint8_t>(frame.begin(), frame.begin() + 14));
  ASSERT_EQ(ectx.sink().gets().size(), 1u);
  const PeerGet& get = ectx.sink().gets()[0];
  EXPECT_EQ(get.peer, "b");
  EXPECT_EQ(get.channel, PeerPut::kThisHpusChannel);
  EXPECT_EQ(get.rkey, 0x66u);
  EXPECT_EQ(get.address, 0x2000u);
  EXPECT_EQ(get.length, 64u);
  EXPECT_EQ(get.region, 0u);
  EXPECT_EQ(get.offset, 8u);

  absl::StatusOr<HandlerInstance> past_end = CreateHandlerForTest(
      "bpf", {{"program", hex}, {"peer", "b"}, {"arg", "1"}});
  ASSERT_TRUE(past_end.ok());
  EXPECT_EQ(RunPayload(*past_end, ectx.context(), packet.view()),
            HandlerResult::kFault);
  absl::StatusOr<HandlerInstance> no_peer =
      CreateHandlerForTest("bpf", {{"program", hex}});
  ASSERT_TRUE(no_peer.ok());
  EXPECT_EQ(RunPayload(*no_peer, ectx.context(), packet.view()),
            HandlerResult::kFault);
  EXPECT_EQ(ectx.sink().puts().size(), 2u);  // neither sent anything
}

TEST(BpfProgramTest, InstallErrorsNameTheParameter) {
  absl::StatusOr<HandlerInstance> none = CreateHandlerForTest("bpf", {});
  EXPECT_THAT(std::string(none.status().message()),
              HasSubstr("exactly one of the parameters 'program'"));
  absl::StatusOr<HandlerInstance> missing =
      CreateHandlerForTest("bpf", {{"program_file", "/nonexistent/prog.o"}});
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("'program_file' = '/nonexistent/prog.o'"));
  absl::StatusOr<HandlerInstance> file = CreateHandlerForTest(
      "bpf",
      {{"program_file", std::string(SPINNIC_BPF_TEST_DIR) + "/all_stages.o"}});
  EXPECT_TRUE(file.ok()) << file.status();
  absl::StatusOr<HandlerInstance> bad = CreateHandlerForTest(
      "bpf", {{"program", ProgramHex(TestProgram("loop"))}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace spinnic::handler_test
