// NAAICE functions ("kernels"): what a network-attached accelerator runs
// when a host's RPC arrives (docs/naaice.md, "Functions" and "Adding a
// function"). A function is a plain C++ function over the RPC's memory
// regions: no DPDK, no allocation, no state of its own, so that the RoCE
// engine can run (and time) it on an HPU and unit tests can call it
// directly.
//
// The regions are the ones the host set up with MRSP, in request order:
// `inputs` are the regions whose flags had input (0x04), `outputs` the ones
// with output (0x08). A region that is both (the middleware's in/out
// parameters) appears in both lists over the same bytes, so a function must
// either tolerate that aliasing or refuse it with an application error.
// Outputs keep their bytes from one RPC to the next (and start zeroed), and
// a single-send input keeps what the host wrote on the first RPC.
// `params` are the three user bytes of the request immediate
// (naaice_set_immediate; user byte 0 first), zero in every NAAICE example.
//
// The return value is the NAAICE return code the host receives
// (mrsp::MakeResultImmediate): 0 success, 0x10..0x7e application errors.
// 0x7f is reserved for "unknown function" (answered by the session, never
// by a function); 0x01..0x0f are the protocol's (0x02 kernel timeout is the
// engine's to report).
#ifndef SPINNIC_HANDLERS_NAAICE_FUNCTION_H_
#define SPINNIC_HANDLERS_NAAICE_FUNCTION_H_

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "dataplane/common/byte_order.h"

namespace spinnic::naaice {

using InputRegions = std::span<const std::span<const uint8_t>>;
using OutputRegions = std::span<const std::span<uint8_t>>;
using Params = std::span<const uint8_t>;

// Returns a NAAICE return code (kSuccess or an application error).
using Function = uint8_t (*)(InputRegions inputs, OutputRegions outputs,
                             Params params);

inline constexpr uint8_t kSuccess = 0x00;

// Application errors shared by the built-in functions (0x10..0x7e; a new
// function may reuse them or take codes of its own in that range).
inline constexpr uint8_t kErrorRegionCount = 0x10;   // wrong number of regions
inline constexpr uint8_t kErrorRegionSize = 0x11;    // size not a multiple of
                                                     // the element or too small
inline constexpr uint8_t kErrorSizeMismatch = 0x12;  // regions disagree
inline constexpr uint8_t kErrorShape = 0x13;         // matvec: rows or cols 0
inline constexpr uint8_t kErrorAliasing = 0x14;      // output overlaps an input
                                                     // it still has to read
// Answered by the session when no function has the requested code.
inline constexpr uint8_t kErrorUnknownFunction = 0x7f;

// Function codes travel in 7 bits of the request immediate; 0 is not a
// function (naaice_server: write back without running anything).
inline constexpr size_t kFunctionCodes = 128;

// Built-in function codes. 1..3 are the NAAICE library's example kernels
// (kernels/swnaa_kernels.c) so that their unmodified example clients work
// against spinnic; ours start at 16.
inline constexpr uint8_t kCodeAddOne = 1;
inline constexpr uint8_t kCodeAddTwo = 2;
inline constexpr uint8_t kCodeEmpty = 3;
inline constexpr uint8_t kCodeVectorSum = 16;
inline constexpr uint8_t kCodeMatVec = 17;

// Little-endian element access at any alignment (regions are byte arrays
// the host filled; its doubles are little-endian on every NAAICE host).
inline uint64_t LoadU64Le(const uint8_t* p) { return LoadLe64(p); }
inline void StoreU64Le(uint8_t* p, uint64_t v) { StoreLe64(p, v); }
inline uint32_t LoadU32Le(const uint8_t* p) { return LoadLe32(p); }
inline double LoadF64Le(const uint8_t* p) {
  return std::bit_cast<double>(LoadU64Le(p));
}
inline void StoreF64Le(uint8_t* p, double v) {
  StoreU64Le(p, std::bit_cast<uint64_t>(v));
}

// Whether two byte ranges share a byte.
inline bool Overlap(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  if (a.empty() || b.empty()) return false;
  const auto a0 = reinterpret_cast<uintptr_t>(a.data());
  const auto b0 = reinterpret_cast<uintptr_t>(b.data());
  return a0 < b0 + b.size() && b0 < a0 + a.size();
}

// A function code -> function map, filled at start-up and read-only after
// (the session looks codes up on every RPC).
class FunctionTable {
 public:
  // False for code 0, codes >= 128 or a null function.
  bool Register(uint8_t code, Function function) {
    if (code == 0 || code >= kFunctionCodes || function == nullptr) {
      return false;
    }
    functions_[code] = function;
    return true;
  }
  // nullptr when no function has `code`.
  Function Find(uint8_t code) const {
    return code < kFunctionCodes ? functions_[code] : nullptr;
  }

 private:
  std::array<Function, kFunctionCodes> functions_{};
};

// The built-in functions (each in its own file under handlers/naaice/).
uint8_t AddOne(InputRegions inputs, OutputRegions outputs, Params params);
uint8_t AddTwo(InputRegions inputs, OutputRegions outputs, Params params);
uint8_t Empty(InputRegions inputs, OutputRegions outputs, Params params);
uint8_t VectorSum(InputRegions inputs, OutputRegions outputs, Params params);
uint8_t MatVec(InputRegions inputs, OutputRegions outputs, Params params);

// A table with every built-in function under its code above.
FunctionTable BuiltinFunctions();

// The built-in functions by name, for a handler that installs one under a
// code of the operator's choice (kind "naaice_function", docs/naaice.md
// §7.5): add_one, add_two, empty, vector_sum, matvec.
struct NamedFunction {
  const char* name;
  Function function;
};
std::span<const NamedFunction> NamedFunctions();
// nullptr when no built-in function has `name`.
Function FindFunction(std::string_view name);

}  // namespace spinnic::naaice

#endif  // SPINNIC_HANDLERS_NAAICE_FUNCTION_H_
