// naaice_function: a NAAICE function (handlers/naaice/function.h) installed
// as an ECTX under a function code of the operator's choice: with
// `roce { naaice_function: CODE }` a NAAICE host's call with that code runs
// the built-in kernel named by `function` over the call's regions
// (docs/naaice.md §7.5). It takes no packets: the RoCE engine calls the
// function itself; the packet handler only forwards, should a frame ever
// reach it.
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "handlers/api/handler.h"
#include "handlers/naaice/function.h"

namespace spinnic {
namespace {

class NaaiceFunctionHandler {
 public:
  static constexpr absl::string_view kName = "naaice_function";
  static constexpr absl::string_view kDescription =
      "a NAAICE function under a code: install with roce { naaice_function: "
      "CODE }; the host's call with CODE runs the named kernel";
  static constexpr uint32_t kMinStateSize = 0;
  static constexpr std::array<ParamSpec, 1> kParams{{
      {"function", ParamType::kString, false, "vector_sum",
       "the kernel: add_one, add_two, empty, vector_sum or matvec"},
  }};

  static absl::StatusOr<std::unique_ptr<NaaiceFunctionHandler>> Create(
      const HandlerParams& params) {
    const std::string& name = params.GetString("function");
    if (naaice::FindFunction(name) == nullptr) {
      std::vector<std::string> names;
      for (const naaice::NamedFunction& f : naaice::NamedFunctions()) {
        names.emplace_back(f.name);
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "function: \"", name, "\" is not a NAAICE function; use ",
          absl::StrJoin(names, ", ")));
    }
    return std::make_unique<NaaiceFunctionHandler>();
  }

  HandlerResult Payload(HandlerContext&, PacketView&) {
    return HandlerResult::kSuccess;
  }
};

SPINNIC_HANDLER(NaaiceFunctionHandler);

}  // namespace
}  // namespace spinnic
