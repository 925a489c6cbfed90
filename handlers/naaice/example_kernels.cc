// The NAAICE library's example kernels (kernels/swnaa_kernels.c in
// naaice-greenhpc/naa-communication-library, docs/naaice.md section 4),
// so that their example clients (naaice_client uses code 3,
// naaice_client_ap2 code 1) get the answers they expect from spinnic.
//
// Theirs run byte-wise over every non-internal region in place. Only output
// regions are ever written back, so applying them to the outputs alone puts
// the same bytes on the wire: an output keeps its bytes between RPCs (and
// starts zeroed, as their calloc'ed regions do), so an output that is also
// an input holds what the host wrote, and one that is not grows by 1 (or 2)
// per RPC exactly as on naaice_server.
#include <cstdint>

#include "handlers/naaice/function.h"

namespace spinnic::naaice {
namespace {

uint8_t AddToEveryOutputByte(OutputRegions outputs, uint8_t addend) {
  for (std::span<uint8_t> region : outputs) {
    for (uint8_t& byte : region) byte = static_cast<uint8_t>(byte + addend);
  }
  return kSuccess;
}

}  // namespace

uint8_t AddOne(InputRegions, OutputRegions outputs, Params) {
  return AddToEveryOutputByte(outputs, 1);
}

uint8_t AddTwo(InputRegions, OutputRegions outputs, Params) {
  return AddToEveryOutputByte(outputs, 2);
}

// Measures the communication alone (their empty_kernel).
uint8_t Empty(InputRegions, OutputRegions, Params) { return kSuccess; }

}  // namespace spinnic::naaice
