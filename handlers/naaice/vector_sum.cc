// vector_sum (function code 16): the element-wise sum of every input region
// into the one output region, as IEEE-754 binary64 ("f64") little-endian
// values: output[j] = input_0[j] + input_1[j] + ... in input order.
//
// Why this semantics: it is the reduction HPC codes offload (MPI_SUM over
// vectors of doubles), it needs no header, and with the output region also
// marked input (the middleware's in/out parameter) it accumulates: y += x.
//
// Layout: every input and the output hold n = size / 8 doubles; all sizes
// equal and a multiple of 8. The whole region is the vector (a host sending
// fewer bytes with naaice_set_bytes_to_send sums stale tail elements).
//
// Errors: kErrorRegionCount (no input, or not exactly one output),
// kErrorRegionSize (output size not a multiple of 8), kErrorSizeMismatch
// (an input of another size), kErrorAliasing (the output partly overlaps an
// input; the very same region is fine). The output is untouched on error.
#include <cstddef>
#include <cstdint>

#include "handlers/naaice/function.h"

namespace spinnic::naaice {

uint8_t VectorSum(InputRegions inputs, OutputRegions outputs, Params) {
  if (inputs.empty() || outputs.size() != 1) return kErrorRegionCount;
  const std::span<uint8_t> out = outputs[0];
  if (out.empty() || out.size() % sizeof(double) != 0) {
    return kErrorRegionSize;
  }
  for (std::span<const uint8_t> in : inputs) {
    if (in.size() != out.size()) return kErrorSizeMismatch;
    if (in.data() != out.data() && Overlap(in, out)) return kErrorAliasing;
  }
  // Element by element, every input read before the output element is
  // written: safe when the output is one of the inputs.
  for (size_t offset = 0; offset < out.size(); offset += sizeof(double)) {
    double sum = 0.0;
    for (std::span<const uint8_t> in : inputs) {
      sum += LoadF64Le(in.data() + offset);
    }
    StoreF64Le(out.data() + offset, sum);
  }
  return kSuccess;
}

}  // namespace spinnic::naaice
