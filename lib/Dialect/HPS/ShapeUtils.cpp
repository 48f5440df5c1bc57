//===- ShapeUtils.cpp - shape arithmetic shared by the hps verifiers ------===//

#include "ShapeUtils.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::hps;

std::optional<Shape> mlir::hps::rankedShape(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return std::nullopt;
  return Shape(ranked.getShape());
}

std::optional<Shape> mlir::hps::rankedShape(Value value) {
  return rankedShape(value.getType());
}

std::string mlir::hps::formatShape(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (isDyn(d))
      os << '?';
    else
      os << d;
  });
  os << ']';
  return text;
}

std::optional<Shape> mlir::hps::broadcastShapes(ArrayRef<int64_t> a,
                                                ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == 1) {
      result[i] = db;
    } else if (db == 1) {
      result[i] = da;
    } else if (isDyn(da) || isDyn(db)) {
      // One side is known and not 1: the other must equal it at run time.
      result[i] = isDyn(da) ? db : da;
    } else if (da != db) {
      return std::nullopt;
    } else {
      result[i] = da;
    }
  }
  return result;
}

std::optional<int64_t>
mlir::hps::windowOutputSize(int64_t in, int64_t kernel, int64_t stride,
                            int64_t dilation, int64_t padBegin, int64_t padEnd,
                            bool ceilMode) {
  if (isDyn(in) || isDyn(kernel))
    return ShapedType::kDynamic;
  int64_t span = in + padBegin + padEnd - ((kernel - 1) * dilation + 1);
  if (span < 0)
    return std::nullopt;
  int64_t steps = ceilMode ? (span + stride - 1) / stride : span / stride;
  return steps + 1;
}

std::optional<int64_t> mlir::hps::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

/// Compares a result type with the shape the op computes. Dimensions unknown
/// on either side are accepted.
LogicalResult mlir::hps::verifyResultShape(Operation *op, Value result,
                                           ArrayRef<int64_t> expected) {
  std::optional<Shape> actual = rankedShape(result);
  if (!actual)
    return success();
  bool mismatch = actual->size() != expected.size();
  for (size_t i = 0; !mismatch && i < expected.size(); ++i)
    mismatch = !isDyn((*actual)[i]) && !isDyn(expected[i]) &&
               (*actual)[i] != expected[i];
  if (mismatch)
    return op->emitOpError("result shape ")
           << formatShape(*actual) << " does not match the computed shape "
           << formatShape(expected);
  return success();
}

LogicalResult mlir::hps::verifyBroadcastOp(Operation *op) {
  std::optional<Shape> l = rankedShape(op->getOperand(0));
  std::optional<Shape> r = rankedShape(op->getOperand(1));
  if (!l || !r)
    return success();
  std::optional<Shape> shape = broadcastShapes(*l, *r);
  if (!shape)
    return op->emitOpError("operands of shapes ")
           << formatShape(*l) << " and " << formatShape(*r)
           << " are not broadcastable";
  return verifyResultShape(op, op->getResult(0), *shape);
}
