//===- HPS.h - the hps dialect ----------------------------------*- C++ -*-===//
//
// Include this header to use the hps dialect: its ops, attributes, enums and
// LayerOpInterface.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_DIALECT_HPS_HPS_H
#define HETERPS_DIALECT_HPS_HPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "heterps/Dialect/HPS/HPSDialect.h.inc"
#include "heterps/Dialect/HPS/HPSEnums.h.inc"

namespace mlir::hps::detail {
/// Parameter parsing and printing of #hps.cost's doubles.
FailureOr<llvm::APFloat> parseF64(AsmParser &parser);
void printF64(AsmPrinter &printer, const llvm::APFloat &value);
} // namespace mlir::hps::detail

#define GET_ATTRDEF_CLASSES
#include "heterps/Dialect/HPS/HPSAttrs.h.inc"

namespace mlir::hps::detail {
/// Default LayerOpInterface figures; see LayerOpInterface.cpp.
int64_t defaultFlops(Operation *op, LayerKind kind);
int64_t paramBytes(Operation *op);
int64_t activationBytes(Operation *op, LayerKind kind);
} // namespace mlir::hps::detail

#include "heterps/Dialect/HPS/HPSInterfaces.h.inc"

#define GET_OP_CLASSES
#include "heterps/Dialect/HPS/HPSOps.h.inc"

namespace mlir::hps {
/// Number of elements of a ranked tensor type, dynamic dimensions counting
/// as 1; 0 for an unranked type.
int64_t numElementsOrOne(Type type);
/// Bytes of a tensor type under the same convention (sub-byte types round up).
int64_t tensorBytes(Type type);
} // namespace mlir::hps

#endif // HETERPS_DIALECT_HPS_HPS_H
