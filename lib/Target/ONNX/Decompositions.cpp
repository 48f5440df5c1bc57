//===- Decompositions.cpp - ONNX forms written as several hps ops ---------===//
//
// Forms of ONNX operators whose hps op would need a constant where the
// model computes the value at run time, or a mode hps's op does not have:
// Clip with run-time bounds becomes Max and Min; BatchNormalization in
// training mode normalises with the batch's own statistics (ReduceMean, Sub,
// Mul, Sqrt, Div) and gives the updated running statistics too.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "heterps/Dialect/HPS/HPS.h"

using namespace mlir;
using namespace mlir::hps;
using namespace mlir::hps::onnx_import;

LogicalResult mlir::hps::onnx_import::convertClipOfTensors(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Value y = *x;
  // min(max(x, lo), hi), as ONNX defines it (hi wins when lo > hi).
  if (n.hasInput(1)) {
    FailureOr<Value> lo = n.input(1);
    if (failed(lo))
      return failure();
    y = n.create<MaxOp>(y.getType(), y, *lo);
  }
  if (n.hasInput(2)) {
    FailureOr<Value> hi = n.input(2);
    if (failed(hi))
      return failure();
    y = n.create<MinOp>(y.getType(), y, *hi);
  }
  if (y == *x)
    y = n.create<IdentityOp>(y.getType(), y);
  n.setOutput(0, y);
  return success();
}

LogicalResult
mlir::hps::onnx_import::convertBatchNormTraining(NodeImporter &n) {
  SmallVector<Value, 5> in;
  for (unsigned i = 0; i < 5; ++i) {
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    in.push_back(*v);
  }
  auto xType = dyn_cast<RankedTensorType>(in[0].getType());
  if (!xType || xType.getRank() < 2 || !xType.getElementType().isF32())
    return n.unsupported("training_mode=1 on an input that is not a ranked "
                         "f32 tensor of rank 2 or more");
  int64_t rank = xType.getRank(), channels = xType.getDimSize(1);
  Type f32 = n.builder().getF32Type();
  SmallVector<int64_t> axes = {0}, kept(rank, 1), perChannel(rank - 1, 1);
  for (int64_t a = 2; a < rank; ++a)
    axes.push_back(a);
  kept[1] = channels;
  perChannel[0] = channels;
  auto keptType = RankedTensorType::get(kept, f32);
  auto vectorType = RankedTensorType::get({channels}, f32);
  auto scalar = [&](double v) -> Value {
    return n.create<ConstantOp>(DenseElementsAttr::get(
        RankedTensorType::get({}, f32), static_cast<float>(v)));
  };
  auto axesAttr = n.builder().getDenseI64ArrayAttr(axes);
  auto keep = n.builder().getBoolAttr(true);
  OpBuilder &b = n.builder();

  // Batch statistics (the variance is the biased one, as ONNX's).
  Value mean = n.create<ReduceMeanOp>(keptType, in[0], axesAttr, keep);
  Value centred = n.create<SubOp>(xType, in[0], mean);
  Value squares = n.create<MulOp>(xType, centred, centred);
  Value var = n.create<ReduceMeanOp>(keptType, squares, axesAttr, keep);
  Value eps = scalar(n.attrFloat("epsilon", 1e-5f));
  Value stddev =
      n.create<SqrtOp>(keptType, n.create<AddOp>(keptType, var, eps));
  Value normed = n.create<DivOp>(xType, centred, stddev);
  auto channelType = RankedTensorType::get(perChannel, f32);
  auto asChannel = [&](Value v) -> Value {
    return n.create<ReshapeOp>(channelType, v,
                               b.getDenseI64ArrayAttr(perChannel),
                               b.getBoolAttr(false));
  };
  Value scaled = n.create<MulOp>(xType, normed, asChannel(in[1]));
  n.setOutput(0, n.create<AddOp>(xType, scaled, asChannel(in[2])));

  // Running statistics: old * momentum + batch * (1 - momentum).
  double momentum = n.attrFloat("momentum", 0.9f);
  auto running = [&](Value old, Value batch) -> Value {
    Value flat = n.create<SqueezeOp>(vectorType, batch, axesAttr);
    Value a = n.create<MulOp>(vectorType, old, scalar(momentum));
    Value c = n.create<MulOp>(vectorType, flat, scalar(1 - momentum));
    return n.create<AddOp>(vectorType, a, c);
  };
  if (n.outputUsed(1))
    n.setOutput(1, running(in[3], mean));
  if (n.outputUsed(2))
    n.setOutput(2, running(in[4], var));
  return success();
}
