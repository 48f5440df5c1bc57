//===- DynamicShapeOps.cpp - verifiers of the run-time shape ops ----------===//
//
// Ops whose shapes depend on values known only at run time: the verifiers
// check what the types say (ranks, element types, static lengths) and
// accept dynamic dimensions.
//
//===----------------------------------------------------------------------===//

#include "ShapeUtils.h"
#include "heterps/Dialect/HPS/HPS.h"

using namespace mlir;
using namespace mlir::hps;

/// The static length of a 1-D shape operand, or kDynamic.
static int64_t shapeLength(Value shape) {
  return cast<RankedTensorType>(shape.getType()).getDimSize(0);
}

/// The ONNX data type number of an element type (FLOAT 1, INT64 7,
/// BOOL 9), or 0.
static int64_t onnxTypeOf(Type type) {
  Type elem = getElementTypeOrSelf(type);
  if (elem.isF32())
    return 1;
  if (elem.isInteger(64))
    return 7;
  if (elem.isInteger(1))
    return 9;
  return 0;
}

static LogicalResult verifyTo(Operation *op, int64_t to, Value result) {
  if (to != 1 && to != 7 && to != 9)
    return op->emitOpError("expects 'to' to be 1 (FLOAT), 7 (INT64) or 9 "
                           "(BOOL), got ")
           << to;
  if (onnxTypeOf(result.getType()) != to)
    return op->emitOpError("result type ")
           << result.getType() << " does not match 'to' = " << to;
  return success();
}

/// The result's rank must be the shape operand's length when both are known.
static LogicalResult verifyRankIsLength(Operation *op, Value shape,
                                        Value result) {
  std::optional<Shape> out = rankedShape(result);
  int64_t length = shapeLength(shape);
  if (out && !isDyn(length) && static_cast<int64_t>(out->size()) != length)
    return op->emitOpError("result of rank ")
           << out->size() << " for a shape operand of " << length << " values";
  return success();
}

LogicalResult DynamicReshapeOp::verify() {
  std::optional<Shape> in = rankedShape(getInput());
  std::optional<Shape> out = rankedShape(getOutput());
  if (getElementTypeOrSelf(getInput().getType()) !=
      getElementTypeOrSelf(getOutput().getType()))
    return emitOpError("changes the element type");
  if (in && out && !llvm::is_contained(*in, ShapedType::kDynamic) &&
      !llvm::is_contained(*out, ShapedType::kDynamic)) {
    int64_t a = 1, b = 1;
    for (int64_t d : *in)
      a *= d;
    for (int64_t d : *out)
      b *= d;
    if (a != b)
      return emitOpError("result ")
             << formatShape(*out) << " does not hold the " << a
             << " elements of the input";
  }
  return verifyRankIsLength(*this, getShape(), getOutput());
}

/// Same rank in and out, when both are ranked.
static LogicalResult verifySameRank(Operation *op, Value in, Value out) {
  std::optional<Shape> a = rankedShape(in), b = rankedShape(out);
  if (a && b && a->size() != b->size())
    return op->emitOpError("result of rank ")
           << b->size() << " for an input of rank " << a->size();
  return success();
}

LogicalResult DynamicSliceOp::verify() {
  int64_t n = shapeLength(getStarts());
  for (Value v : {getEnds(), getAxes(), getSteps()})
    if (!isDyn(n) && !isDyn(shapeLength(v)) && shapeLength(v) != n)
      return emitOpError("expects as many ends, axes and steps as starts (")
             << n << "), got " << shapeLength(v);
  return verifySameRank(*this, getInput(), getOutput());
}

LogicalResult DynamicPadOp::verify() {
  StringRef mode = getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return emitOpError("expects mode \"constant\", \"reflect\" or "
                       "\"edge\", got \"")
           << mode << "\"";
  std::optional<Shape> in = rankedShape(getInput());
  int64_t n = shapeLength(getPads());
  if (in && !isDyn(n) && n != 2 * static_cast<int64_t>(in->size()))
    return emitOpError("expects ")
           << 2 * in->size() << " pads (begin and end per dimension), got "
           << n;
  return verifySameRank(*this, getInput(), getOutput());
}

LogicalResult DynamicResizeOp::verify() {
  if (failed(verifyResizeModes(*this, getMode(),
                               getCoordinateTransformationMode(),
                               getNearestMode())))
    return failure();
  if ((getCoordinateTransformationMode() == "tf_crop_and_resize") !=
      static_cast<bool>(getRoi()))
    return emitOpError("expects a 'roi' operand exactly for "
                       "\"tf_crop_and_resize\"");
  std::optional<Shape> in = rankedShape(getInput());
  std::optional<Shape> target = rankedShape(getTarget());
  if (in && target && !isDyn((*target)[0]) &&
      (*target)[0] != static_cast<int64_t>(in->size()))
    return emitOpError("expects ")
           << in->size() << " scales or sizes (one per dimension), got "
           << (*target)[0];
  return verifySameRank(*this, getInput(), getOutput());
}

LogicalResult ExpandOp::verify() {
  std::optional<Shape> in = rankedShape(getInput());
  std::optional<Shape> out = rankedShape(getOutput());
  if (in && out) {
    if (out->size() < in->size())
      return emitOpError("result of rank ")
             << out->size() << " is below the input's rank " << in->size();
    size_t lead = out->size() - in->size();
    for (size_t i = 0; i < in->size(); ++i) {
      int64_t a = (*in)[i], b = (*out)[lead + i];
      if (!isDyn(a) && !isDyn(b) && a != 1 && a != b)
        return emitOpError("cannot expand dimension ")
               << i << " of size " << a << " to " << b;
    }
    // Bidirectional broadcast: the rank is the larger of the two.
    int64_t length = shapeLength(getShape());
    int64_t rank = std::max<int64_t>(length, in->size());
    if (!isDyn(length) && static_cast<int64_t>(out->size()) != rank)
      return emitOpError("result of rank ")
             << out->size() << " for an input of rank " << in->size()
             << " and a shape operand of " << length << " values";
  }
  return success();
}

LogicalResult ConstantOfShapeOp::verify() {
  if (failed(verifyTo(*this, static_cast<int64_t>(getTo()), getOutput())))
    return failure();
  return verifyRankIsLength(*this, getShape(), getOutput());
}

LogicalResult RangeOp::verify() {
  Type elem = getElementTypeOrSelf(getStart().getType());
  for (Value v : {getStart(), getLimit(), getDelta()}) {
    if (getElementTypeOrSelf(v.getType()) != elem)
      return emitOpError("expects start, limit and delta of one element type");
    std::optional<Shape> s = rankedShape(v);
    if (s && s->size() > 1)
      return emitOpError("expects scalar start, limit and delta, got shape ")
             << formatShape(*s);
    if (s && s->size() == 1 && !isDyn((*s)[0]) && (*s)[0] != 1)
      return emitOpError("expects scalar start, limit and delta, got shape ")
             << formatShape(*s);
  }
  if (getElementTypeOrSelf(getOutput().getType()) != elem)
    return emitOpError("result element type differs from the operands'");
  return success();
}

LogicalResult CastOp::verify() {
  if (failed(verifyTo(*this, static_cast<int64_t>(getTo()), getOutput())))
    return failure();
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  return verifyResultShape(*this, getOutput(), *in);
}

static LogicalResult verifyCompare(Operation *op) {
  if (getElementTypeOrSelf(op->getOperand(0).getType()) !=
      getElementTypeOrSelf(op->getOperand(1).getType()))
    return op->emitOpError("expects operands of one element type");
  return verifyBroadcastOp(op);
}

LogicalResult EqualOp::verify() { return verifyCompare(*this); }
LogicalResult LessOp::verify() { return verifyCompare(*this); }
LogicalResult GreaterOp::verify() { return verifyCompare(*this); }
LogicalResult LessOrEqualOp::verify() { return verifyCompare(*this); }
LogicalResult GreaterOrEqualOp::verify() { return verifyCompare(*this); }
LogicalResult AndOp::verify() { return verifyBroadcastOp(*this); }
LogicalResult OrOp::verify() { return verifyBroadcastOp(*this); }
LogicalResult XorOp::verify() { return verifyBroadcastOp(*this); }

LogicalResult WhereOp::verify() {
  std::optional<Shape> c = rankedShape(getCondition());
  std::optional<Shape> x = rankedShape(getX());
  std::optional<Shape> y = rankedShape(getY());
  if (!c || !x || !y)
    return success();
  std::optional<Shape> xy = broadcastShapes(*x, *y);
  std::optional<Shape> all = xy ? broadcastShapes(*c, *xy) : std::nullopt;
  if (!all)
    return emitOpError("operands of shapes ")
           << formatShape(*c) << ", " << formatShape(*x) << " and "
           << formatShape(*y) << " are not broadcastable";
  return verifyResultShape(*this, getOutput(), *all);
}

/// A one-element operand (a scalar or a 1-element 1-D tensor).
static LogicalResult verifyOneElement(Operation *op, StringRef name, Value v) {
  std::optional<Shape> s = rankedShape(v);
  if (s &&
      (s->size() > 1 || (s->size() == 1 && !isDyn((*s)[0]) && (*s)[0] != 1)))
    return op->emitOpError("expects a one-element '")
           << name << "', got shape " << formatShape(*s);
  return success();
}

LogicalResult CumSumOp::verify() {
  return verifyOneElement(*this, "axis", getAxis());
}

LogicalResult TriluOp::verify() {
  std::optional<Shape> in = rankedShape(getInput());
  if (in && in->size() < 2)
    return emitOpError("expects an input of rank at least 2, got rank ")
           << in->size();
  return getK() ? verifyOneElement(*this, "k", getK()) : success();
}

LogicalResult ModOp::verify() {
  if (!getFmod() && !getElementTypeOrSelf(getLhs().getType()).isInteger(64))
    return emitOpError("of floats needs fmod (the dividend's sign)");
  return verifyBroadcastOp(*this);
}

LogicalResult ScatterNDOp::verify() {
  StringRef reduction = getReduction();
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
    return emitOpError("expects reduction none, add, mul, max or min, got '")
           << reduction << "'";
  std::optional<Shape> data = rankedShape(getData());
  std::optional<Shape> indices = rankedShape(getIndices());
  std::optional<Shape> updates = rankedShape(getUpdates());
  if (indices && indices->empty())
    return emitOpError("expects indices of rank at least 1");
  if (!data || !indices || !updates || isDyn(indices->back()))
    return success();
  int64_t k = indices->back(), rank = data->size();
  if (k < 1 || k > rank)
    return emitOpError("index rows of length ")
           << k << " do not fit data of rank " << rank;
  // updates: indices.shape[:-1] + data.shape[k:]
  Shape expected(indices->begin(), indices->end() - 1);
  expected.append(data->begin() + k, data->end());
  bool fits = expected.size() == updates->size();
  for (size_t i = 0; fits && i < expected.size(); ++i)
    fits = isDyn(expected[i]) || isDyn((*updates)[i]) ||
           expected[i] == (*updates)[i];
  if (!fits)
    return emitOpError("expects updates of shape ")
           << formatShape(expected) << ", got " << formatShape(*updates);
  return success();
}
