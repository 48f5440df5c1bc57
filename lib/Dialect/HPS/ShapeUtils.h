//===- ShapeUtils.h - shape arithmetic shared by the hps verifiers -*- C++ -*-//
//
// Shapes use ShapedType::kDynamic for unknown dimensions; every helper
// propagates "unknown" instead of guessing.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_DIALECT_HPS_SHAPEUTILS_H
#define HETERPS_LIB_DIALECT_HPS_SHAPEUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace mlir::hps {

using Shape = llvm::SmallVector<int64_t, 6>;

inline bool isDyn(int64_t d) { return ShapedType::isDynamic(d); }

/// Shape of a ranked tensor value, or nullopt when unranked.
std::optional<Shape> rankedShape(Value value);
std::optional<Shape> rankedShape(Type type);

/// Prints a shape as "[1, 3, ?, 224]".
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Numpy-style multidirectional broadcast; nullopt when incompatible.
std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                     llvm::ArrayRef<int64_t> b);

/// Output size of a sliding window along one axis (conv and pooling).
/// Returns kDynamic when `in` is dynamic and nullopt when the padded input is
/// smaller than the dilated window.
std::optional<int64_t> windowOutputSize(int64_t in, int64_t kernel,
                                        int64_t stride, int64_t dilation,
                                        int64_t padBegin, int64_t padEnd,
                                        bool ceilMode);

/// Normalises `axis` into [0, rank); nullopt when out of [-rank, rank).
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Compares a result type with the shape the op computes. Dimensions unknown
/// on either side are accepted.
LogicalResult verifyResultShape(Operation *op, Value result,
                                llvm::ArrayRef<int64_t> expected);
/// Checks that the two operands broadcast to the first result's shape.
LogicalResult verifyBroadcastOp(Operation *op);
/// Checks the mode, coordinate transformation and rounding of hps.resize
/// and hps.dynamic_resize.
LogicalResult verifyResizeModes(Operation *op, llvm::StringRef mode,
                                llvm::StringRef transform,
                                llvm::StringRef rounding);

} // namespace mlir::hps

#endif // HETERPS_LIB_DIALECT_HPS_SHAPEUTILS_H
