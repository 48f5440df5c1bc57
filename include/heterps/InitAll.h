//===- InitAll.h - register everything HeterPS provides ---------*- C++ -*-===//
//
// For tools that embed HeterPS: one call adds the dialects to a registry,
// one registers the passes with the global pass registry.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_INITALL_H
#define HETERPS_INITALL_H

#include "heterps/Dialect/HPS/HPS.h"
#include "heterps/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace mlir::hps {

/// Adds the hps dialect and the dialects its IR uses (func).
inline void registerAllDialects(DialectRegistry &registry) {
  registry.insert<HPSDialect, func::FuncDialect>();
}

/// Registers every HeterPS pass (hps-*) and the hps-plan pipeline.
inline void registerAllPasses() {
  registerHeterPSPasses();
  registerPlanPipeline();
}

} // namespace mlir::hps

#endif // HETERPS_INITALL_H
