// matvec (function code 17): y = A x over IEEE-754 binary64 little-endian
// values.
//
// Layout:
//   input 0:  rows (u32 LE), cols (u32 LE), then A, rows * cols doubles,
//             row-major (A[i][j] at byte 8 + 8 * (i * cols + j));
//   input 1:  x, cols doubles;
//   output 0: y, rows doubles: y[i] = sum over j of A[i][j] * x[j], summed
//             in j order.
// Regions may be larger than the shape needs (their sizes are fixed once
// per connection by MRSP while the shape may change per RPC): bytes past
// the shape are neither read nor written. A typical use sends A once as a
// single-send region and a new x on every RPC. Inputs past the second (an
// output region also marked input) are ignored.
//
// Errors (output untouched): kErrorRegionCount (fewer than 2 inputs, or
// not exactly one output), kErrorRegionSize (input 0 shorter than its
// 8-byte header), kErrorShape (rows or cols 0), kErrorSizeMismatch (A, x
// or y does not fit its region), kErrorAliasing (y overlaps A or x).
#include <cstddef>
#include <cstdint>

#include "handlers/naaice/function.h"

namespace spinnic::naaice {

uint8_t MatVec(InputRegions inputs, OutputRegions outputs, Params) {
  if (inputs.size() < 2 || outputs.size() != 1) return kErrorRegionCount;
  constexpr size_t kHeaderBytes = 8;
  constexpr uint64_t kF64 = sizeof(double);
  const std::span<const uint8_t> matrix = inputs[0];
  const std::span<const uint8_t> x = inputs[1];
  const std::span<uint8_t> y = outputs[0];
  if (matrix.size() < kHeaderBytes) return kErrorRegionSize;
  const uint64_t rows = LoadU32Le(matrix.data());
  const uint64_t cols = LoadU32Le(matrix.data() + 4);
  if (rows == 0 || cols == 0) return kErrorShape;
  // rows * cols * 8 may exceed 64 bits: compare by division.
  const uint64_t matrix_elements = (matrix.size() - kHeaderBytes) / kF64;
  if (rows > matrix_elements / cols || cols > x.size() / kF64 ||
      rows > y.size() / kF64) {
    return kErrorSizeMismatch;
  }
  const std::span<uint8_t> y_used = y.first(rows * kF64);
  if (Overlap(y_used, matrix.subspan(0, kHeaderBytes + rows * cols * kF64)) ||
      Overlap(y_used, x.first(cols * kF64))) {
    return kErrorAliasing;
  }
  const uint8_t* a = matrix.data() + kHeaderBytes;
  for (uint64_t i = 0; i < rows; ++i) {
    double sum = 0.0;
    for (uint64_t j = 0; j < cols; ++j) {
      sum +=
          LoadF64Le(a + (i * cols + j) * kF64) * LoadF64Le(x.data() + j * kF64);
    }
    StoreF64Le(y.data() + i * kF64, sum);
  }
  return kSuccess;
}

}  // namespace spinnic::naaice
