#include <algorithm>
#include <vector>

#include "handlers/api/handler.h"

namespace spinnic {
namespace {

// Function-local so that registration from other translation units' static
// initialisers never sees an unconstructed vector.
std::vector<HandlerKind>& Kinds() {
  static auto* kinds = new std::vector<HandlerKind>();
  return *kinds;
}

}  // namespace

namespace handler_internal {

bool RegisterKind(const HandlerKind& kind) {
  std::vector<HandlerKind>& kinds = Kinds();
  auto at = std::lower_bound(kinds.begin(), kinds.end(), kind.name,
                             [](const HandlerKind& k, absl::string_view name) {
                               return k.name < name;
                             });
  // Two kinds with one name is a build defect; keep the first so that the
  // registry stays well defined, and let the unit test catch it.
  if (at != kinds.end() && at->name == kind.name) return false;
  kinds.insert(at, kind);
  return true;
}

}  // namespace handler_internal

std::span<const HandlerKind> RegisteredHandlerKinds() { return Kinds(); }

const HandlerKind* FindHandlerKind(absl::string_view name) {
  for (const HandlerKind& kind : Kinds()) {
    if (kind.name == name) return &kind;
  }
  return nullptr;
}

}  // namespace spinnic
