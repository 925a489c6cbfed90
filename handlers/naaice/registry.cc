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

}  // namespace spinnic::naaice
