//===- LayerOpInterface.cpp - FLOPs and bytes of each hps layer -----------===//
//
// Conventions (also in HPSInterfaces.td): a multiply-add is 2 FLOPs, a
// dynamic dimension counts as 1, unranked values count as empty.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HPS/HPS.h"

#include "ShapeUtils.h"

using namespace mlir;
using namespace mlir::hps;

#include "heterps/Dialect/HPS/HPSInterfaces.cpp.inc"

int64_t mlir::hps::numElementsOrOne(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return 0;
  int64_t n = 1;
  for (int64_t d : ranked.getShape())
    n *= isDyn(d) ? 1 : d;
  return n;
}

int64_t mlir::hps::tensorBytes(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return 0;
  int64_t bits = ranked.getElementType().getIntOrFloatBitWidth();
  return (numElementsOrOne(type) * bits + 7) / 8;
}

static bool isParameter(Value v) {
  return v.getDefiningOp<WeightOp>() != nullptr;
}

static int64_t numResultElements(Operation *op) {
  int64_t n = 0;
  for (Type t : op->getResultTypes())
    n += numElementsOrOne(t);
  return n;
}

int64_t mlir::hps::detail::defaultFlops(Operation *op, LayerKind kind) {
  switch (kind) {
  case LayerKind::shape:
  case LayerKind::constant:
  case LayerKind::dropout:
  case LayerKind::embedding:
    return 0; // Pure data movement.
  default:
    return numResultElements(op);
  }
}

int64_t mlir::hps::detail::paramBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value operand : op->getOperands())
    if (isParameter(operand))
      bytes += tensorBytes(operand.getType());
  return bytes;
}

int64_t mlir::hps::detail::activationBytes(Operation *op, LayerKind kind) {
  if (kind == LayerKind::constant)
    return 0;
  int64_t bytes = 0;
  for (Value operand : op->getOperands())
    if (!isParameter(operand) && !operand.getDefiningOp<ConstantOp>())
      bytes += tensorBytes(operand.getType());
  for (Type t : op->getResultTypes())
    bytes += tensorBytes(t);
  return bytes;
}

//===----------------------------------------------------------------------===//
// Per-op overrides
//===----------------------------------------------------------------------===//

/// Elements of `v` (dynamic dims count as 1).
static int64_t elementsOf(Value v) { return numElementsOrOne(v.getType()); }

static int64_t weightWindow(Value weight) {
  // Elements per filter: (C/group) * k1 * ... * kn.
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || type.getRank() < 2)
    return 0;
  int64_t n = 1;
  for (int64_t d : type.getShape().drop_front(1))
    n *= isDyn(d) ? 1 : d;
  return n;
}

int64_t ConvOp::getFlops() {
  // Every output element is a dot product over one filter window.
  int64_t out = elementsOf(getOutput());
  return 2 * out * weightWindow(getWeight()) + (getBias() ? out : 0);
}

int64_t ConvTransposeOp::getFlops() {
  // Every input element scatters into M/group * k1 * ... * kn outputs.
  int64_t in = elementsOf(getInput());
  int64_t out = elementsOf(getOutput());
  return 2 * in * weightWindow(getWeight()) + (getBias() ? out : 0);
}

/// Per step and direction, the input's and the state's products with the
/// gates' weights: 2 * N * G*H * (I + H).
template <typename OpTy> static int64_t recurrentFlops(OpTy op) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!in || in.getRank() != 3)
    return 0;
  int64_t i = in.getDimSize(2), h = op.getHiddenSize();
  int64_t out = elementsOf(op.getOutput()); // T * D * N * H
  return isDyn(i) ? 0 : 2 * out * OpTy::kGates * (i + h);
}
int64_t LSTMOp::getFlops() { return recurrentFlops(*this); }
int64_t GRUOp::getFlops() { return recurrentFlops(*this); }
int64_t RNNOp::getFlops() { return recurrentFlops(*this); }

int64_t GemmOp::getFlops() {
  auto a = dyn_cast<RankedTensorType>(getA().getType());
  if (!a || a.getRank() != 2)
    return 0;
  int64_t k = a.getShape()[getTransA() ? 0 : 1];
  int64_t out = elementsOf(getOutput());
  return 2 * out * (isDyn(k) ? 1 : k) + (getC() ? 2 * out : 0);
}

int64_t MatMulOp::getFlops() {
  auto lhs = dyn_cast<RankedTensorType>(getLhs().getType());
  if (!lhs || lhs.getRank() < 1)
    return 0;
  int64_t k = lhs.getShape().back();
  return 2 * elementsOf(getOutput()) * (isDyn(k) ? 1 : k);
}

LayerKind MatMulOp::getLayerKind() {
  return isParameter(getRhs()) || isParameter(getLhs()) ? LayerKind::fc
                                                        : LayerKind::matmul;
}

static int64_t windowFlops(Value output, ArrayRef<int64_t> kernel) {
  int64_t window = 1;
  for (int64_t k : kernel)
    window *= k;
  return elementsOf(output) * window;
}

int64_t MaxPoolOp::getFlops() {
  return windowFlops(getOutput(), getKernelShape());
}
int64_t AveragePoolOp::getFlops() {
  return windowFlops(getOutput(), getKernelShape());
}
int64_t GlobalAveragePoolOp::getFlops() { return elementsOf(getInput()); }
int64_t GlobalMaxPoolOp::getFlops() { return elementsOf(getInput()); }

int64_t BatchNormOp::getFlops() {
  // Folded into one scale and one shift per element.
  return 2 * elementsOf(getOutput());
}

int64_t LRNOp::getFlops() {
  // Sum of squares over the window, then scale, power and divide.
  return elementsOf(getOutput()) * (2 * getSize() + 3);
}

int64_t SoftmaxOp::getFlops() {
  // Max, subtract, exp, sum and divide per element.
  return 5 * elementsOf(getOutput());
}
int64_t LogSoftmaxOp::getFlops() { return 5 * elementsOf(getOutput()); }

int64_t LayerNormOp::getFlops() {
  // Mean, variance, normalise, scale and shift per element.
  return 8 * elementsOf(getOutput());
}

int64_t ReduceMeanOp::getFlops() { return elementsOf(getInput()); }
int64_t ReduceSumOp::getFlops() { return elementsOf(getInput()); }
int64_t ReduceMaxOp::getFlops() { return elementsOf(getInput()); }
int64_t ReduceMinOp::getFlops() { return elementsOf(getInput()); }

LayerKind GatherOp::getLayerKind() {
  return isParameter(getData()) && getAxis() == 0 ? LayerKind::embedding
                                                  : LayerKind::shape;
}
