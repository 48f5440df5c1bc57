//===- Passes.h - HeterPS passes --------------------------------*- C++ -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_H
#define HETERPS_TRANSFORMS_PASSES_H

#include "heterps/Dialect/HPS/HPS.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::hps {

/// How a reporting pass writes its output.
enum class OutputFormat { Text, Json };

#define GEN_PASS_DECL
#include "heterps/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "heterps/Transforms/Passes.h.inc"

} // namespace mlir::hps

#endif // HETERPS_TRANSFORMS_PASSES_H
