// The built-in NAAICE functions by code (function.h). To add one, see
// docs/naaice.md, "Adding a function".
#include "handlers/naaice/function.h"

namespace spinnic::naaice {

FunctionTable BuiltinFunctions() {
  FunctionTable table;
  table.Register(kCodeAddOne, &AddOne);
  table.Register(kCodeAddTwo, &AddTwo);
  table.Register(kCodeEmpty, &Empty);
  table.Register(kCodeVectorSum, &VectorSum);
  table.Register(kCodeMatVec, &MatVec);
  return table;
}

std::span<const NamedFunction> NamedFunctions() {
  static constexpr NamedFunction kNamed[] = {
      {"add_one", &AddOne},       {"add_two", &AddTwo}, {"empty", &Empty},
      {"vector_sum", &VectorSum}, {"matvec", &MatVec},
  };
  return kNamed;
}

Function FindFunction(std::string_view name) {
  for (const NamedFunction& f : NamedFunctions()) {
    if (name == f.name) return f.function;
  }
  return nullptr;
}

}  // namespace spinnic::naaice
