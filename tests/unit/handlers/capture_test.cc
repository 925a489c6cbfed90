// capture: the documented record layout byte for byte, the ring wrapping,
// frames cut at snap and forwarded unchanged, the skip counter for a region
// too small or read-only, and records that never overlap when lcores
// capture at once.
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "handlers/api/testing.h"
#include "tests/unit/handlers/handler_test_util.h"

namespace spinnic::handler_test {
namespace {

// The documented record: frame length, captured length, then the bytes.
std::vector<uint8_t> Record(const std::vector<uint8_t>& frame, uint32_t snap) {
  std::vector<uint8_t> record(snap, 0);
  uint32_t length = static_cast<uint32_t>(frame.size());
  uint32_t captured = std::min<uint32_t>(length, snap - 8);
  std::memcpy(record.data(), &length, 4);
  std::memcpy(record.data() + 4, &captured, 4);
  std::memcpy(record.data() + 8, frame.data(), captured);
  return record;
}

std::vector<uint8_t> Slice(const std::vector<uint8_t>& bytes, size_t offset,
                           size_t length) {
  return {bytes.begin() + offset, bytes.begin() + offset + length};
}

void Capture(const HandlerInstance& handler, HandlerContext& ctx,
             const std::vector<uint8_t>& frame) {
  TestPacket packet(frame, ClassifierLayers(frame));
  EXPECT_EQ(RunPayload(handler, ctx, packet.view()), HandlerResult::kSuccess);
  EXPECT_EQ(packet.view().GetDisposition(), Disposition::kForward);
  EXPECT_EQ(Hex(packet.bytes()), Hex(frame));
}

std::vector<uint8_t> UdpFrame(size_t payload, uint8_t fill) {
  FrameSpec spec;
  spec.payload.assign(payload, fill);
  return Build(spec);
}

TEST(CaptureTest, WritesDocumentedRecordsAndWrapsTheRing) {
  const uint32_t snap = 64;
  HandlerInstance handler = MakeHandler("capture", {{"snap", "64"}});
  FakeEctx ectx(16);
  // Three records fit; the 40 trailing bytes must stay untouched.
  std::vector<uint8_t> region(3 * snap + 40, 0xee);
  ectx.AddRegion(7, region);

  std::vector<std::vector<uint8_t>> frames;
  for (int i = 0; i < 4; ++i) {
    frames.push_back(UdpFrame(i == 1 ? 4 : 200, static_cast<uint8_t>(i)));
    Capture(handler, ectx.context(), frames.back());
  }
  EXPECT_EQ(StateWord(ectx, 0), 4u);
  EXPECT_EQ(StateWord(ectx, 1), 0u);
  // Packet 3 overwrote record 0; records 1 and 2 hold packets 1 and 2.
  EXPECT_EQ(Hex(Slice(region, 0, snap)), Hex(Record(frames[3], snap)));
  EXPECT_EQ(Hex(Slice(region, snap, snap)), Hex(Record(frames[1], snap)));
  EXPECT_EQ(Hex(Slice(region, 2 * snap, snap)), Hex(Record(frames[2], snap)));
  EXPECT_EQ(Hex(Slice(region, 3 * snap, 40)),
            Hex(std::vector<uint8_t>(40, 0xee)));
  // A short frame is captured whole, its record zero-padded.
  uint32_t captured;
  std::memcpy(&captured, region.data() + snap + 4, 4);
  EXPECT_EQ(captured, frames[1].size());
}

TEST(CaptureTest, CountsWhatItCannotCapture) {
  HandlerInstance handler = MakeHandler("capture", {{"snap", "128"}});
  std::vector<uint8_t> frame = UdpFrame(10, 1);

  FakeEctx too_small(16);
  std::vector<uint8_t> small(127, 0xee);
  too_small.AddRegion(1, small);
  Capture(handler, too_small.context(), frame);
  EXPECT_EQ(StateWord(too_small, 0), 0u);
  EXPECT_EQ(StateWord(too_small, 1), 1u);
  EXPECT_EQ(Hex(small), Hex(std::vector<uint8_t>(127, 0xee)));

  FakeEctx read_only(16);
  std::vector<uint8_t> region(1024, 0xee);
  read_only.AddRegion(2, region, /*readable=*/true, /*writable=*/false);
  Capture(handler, read_only.context(), frame);
  EXPECT_EQ(StateWord(read_only, 1), 1u);
  EXPECT_EQ(Hex(region), Hex(std::vector<uint8_t>(1024, 0xee)));
}

TEST(CaptureTest, SnapOutsideItsRangeIsRefused) {
  const BadParams cases[] = {
      {{{"snap", "8"}}, "snap"},
      {{{"snap", "70000"}}, "snap"},
  };
  ExpectBadParamsSayWhatToFix("capture", cases);
}

TEST(CaptureTest, KindDeclaresItNeedsARegion) {
  const HandlerKind* kind = FindHandlerKind("capture");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->min_regions, 1u);
  EXPECT_EQ(FindHandlerKind("count")->min_regions, 0u);
}

TEST(CaptureTest, ConcurrentLcoresClaimDistinctRecords) {
  const uint32_t snap = 32;
  const int kThreads = 4;
  const int kPerThread = 1000;
  HandlerInstance handler = MakeHandler("capture", {{"snap", "32"}});
  FakeEctx ectx(16);
  // Room for every packet: no record is overwritten.
  std::vector<uint8_t> region(size_t{snap} * kThreads * kPerThread, 0);
  ectx.AddRegion(1, region);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Frames differ per thread in length only (the context is shared,
      // as the HPUs share one ECTX).
      std::vector<uint8_t> frame = UdpFrame(t + 1, static_cast<uint8_t>(t));
      for (int i = 0; i < kPerThread; ++i) {
        TestPacket packet(frame, ClassifierLayers(frame));
        RunPayload(handler, ectx.context(), packet.view());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(StateWord(ectx, 0), uint64_t{kThreads} * kPerThread);
  std::vector<int> per_length(kThreads, 0);
  for (int r = 0; r < kThreads * kPerThread; ++r) {
    uint32_t length;
    std::memcpy(&length, region.data() + static_cast<size_t>(r) * snap, 4);
    size_t thread = length - UdpFrame(1, 0).size();
    ASSERT_LT(thread, size_t{kThreads}) << "record " << r << " is torn";
    ++per_length[thread];
  }
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(per_length[t], kPerThread);
}

}  // namespace
}  // namespace spinnic::handler_test
