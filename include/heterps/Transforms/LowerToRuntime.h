//===- LowerToRuntime.h - the model as an executable plan -------*- C++ -*-===//
//
// What hps-lower-to-runtime writes, for tools that run the plan in-process
// (heterps-run) instead of through a file.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_TRANSFORMS_LOWERTORUNTIME_H
#define HETERPS_TRANSFORMS_LOWERTORUNTIME_H

#include "heterps/Runtime/Plan.pb.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::hps {

/// The module's model function as a verified executable plan; errors are
/// emitted as diagnostics.
FailureOr<heterps::runtime::plan::Plan> lowerToRuntimePlan(ModuleOp module);

} // namespace mlir::hps

#endif // HETERPS_TRANSFORMS_LOWERTORUNTIME_H
