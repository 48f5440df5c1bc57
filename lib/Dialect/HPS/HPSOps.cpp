//===- HPSOps.cpp - hps op verifiers --------------------------------------===//
//
// Every verifier checks attributes first, then the operand shapes that are
// known, then compares the result type with the shape the op produces.
// Unknown (dynamic or unranked) dimensions are never reported as errors.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HPS/HPS.h"

#include "ShapeUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::hps;

static constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static LogicalResult verifyRankBetween(Operation *op, StringRef what,
                                       ArrayRef<int64_t> shape, int64_t lo,
                                       int64_t hi) {
  int64_t rank = shape.size();
  if (rank >= lo && rank <= hi)
    return success();
  auto diag = op->emitOpError("expects ") << what << " of rank ";
  if (hi == INT64_MAX)
    diag << "at least " << lo;
  else if (lo == hi)
    diag << lo;
  else
    diag << lo << " to " << hi;
  return diag << ", got rank " << rank;
}

static LogicalResult verifyCount(Operation *op, StringRef name,
                                 ArrayRef<int64_t> values, int64_t expected,
                                 StringRef why) {
  if (static_cast<int64_t>(values.size()) == expected)
    return success();
  return op->emitOpError("expects '")
         << name << "' to have " << expected << " values (" << why << "), got "
         << values.size();
}

static LogicalResult verifyAll(Operation *op, StringRef name,
                               ArrayRef<int64_t> values, int64_t minimum) {
  if (llvm::all_of(values, [&](int64_t v) { return v >= minimum; }))
    return success();
  return op->emitOpError("expects '")
         << name << "' values to be "
         << (minimum == 0 ? "non-negative" : "positive") << ", got ["
         << llvm::make_range(values.begin(), values.end()) << "]";
}

static FailureOr<int64_t> verifyAxis(Operation *op, StringRef name,
                                     int64_t axis, int64_t rank) {
  std::optional<int64_t> normalized = normalizeAxis(axis, rank);
  if (!normalized)
    return op->emitOpError("expects '") << name << "' in [" << -rank << ", "
                                        << rank - 1 << "], got " << axis;
  return *normalized;
}

/// Checks a list of axes: each in [-rank, rank), no axis twice. Returns the
/// normalised axes.
static FailureOr<Shape> verifyAxes(Operation *op, StringRef name,
                                   ArrayRef<int64_t> axes, int64_t rank) {
  Shape normalized;
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : axes) {
    FailureOr<int64_t> a = verifyAxis(op, name, axis, rank);
    if (failed(a))
      return failure();
    if (!seen.insert(*a).second)
      return op->emitOpError("expects '")
             << name << "' to name each axis once, got axis " << *a << " twice";
    normalized.push_back(*a);
  }
  return normalized;
}

/// Checks strides, dilations and pads of a sliding-window op over `spatial`
/// dimensions.
static LogicalResult verifyWindowAttrs(Operation *op, int64_t spatial,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> dilations,
                                       ArrayRef<int64_t> pads) {
  if (failed(verifyCount(op, "strides", strides, spatial,
                         "one per spatial dimension")) ||
      failed(verifyCount(op, "dilations", dilations, spatial,
                         "one per spatial dimension")) ||
      failed(verifyCount(op, "pads", pads, 2 * spatial,
                         "begin and end per spatial dimension")) ||
      failed(verifyAll(op, "strides", strides, 1)) ||
      failed(verifyAll(op, "dilations", dilations, 1)) ||
      failed(verifyAll(op, "pads", pads, 0)))
    return failure();
  return success();
}

/// Output spatial sizes of a window op; emits an error when the padded input
/// is smaller than the dilated window.
static FailureOr<Shape> windowOutput(Operation *op, ArrayRef<int64_t> input,
                                     ArrayRef<int64_t> kernel,
                                     ArrayRef<int64_t> strides,
                                     ArrayRef<int64_t> dilations,
                                     ArrayRef<int64_t> pads, bool ceilMode) {
  int64_t spatial = kernel.size();
  Shape out;
  for (int64_t i = 0; i < spatial; ++i) {
    std::optional<int64_t> size =
        windowOutputSize(input[2 + i], kernel[i], strides[i], dilations[i],
                         pads[i], pads[spatial + i], ceilMode);
    if (!size)
      return op->emitOpError("spatial dimension ")
             << i << " of size " << input[2 + i] << " padded by " << pads[i]
             << "+" << pads[spatial + i]
             << " is smaller than the dilated window of size "
             << (kernel[i] - 1) * dilations[i] + 1;
    out.push_back(*size);
  }
  return out;
}

static LogicalResult verifyNonNegative(Operation *op, StringRef name,
                                       APFloat value) {
  if (value.convertToFloat() >= 0.0f)
    return success();
  return op->emitOpError("expects '")
         << name << "' to be non-negative, got " << value.convertToFloat();
}

/// True when `from` broadcasts to `target` without changing it (ONNX
/// unidirectional broadcasting).
static bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> target) {
  std::optional<Shape> b = broadcastShapes(target, from);
  if (!b || b->size() != target.size())
    return false;
  for (auto [r, t] : llvm::zip(*b, target))
    if (!isDyn(r) && !isDyn(t) && r != t)
      return false;
  return true;
}

/// A per-channel operand: rank 1 with `channels` elements.
static LogicalResult verifyPerChannel(Operation *op, StringRef name,
                                      Value value, int64_t channels) {
  std::optional<Shape> shape = rankedShape(value);
  if (!shape)
    return success();
  if (shape->size() != 1 ||
      (!isDyn((*shape)[0]) && !isDyn(channels) && (*shape)[0] != channels))
    return op->emitOpError("expects '")
           << name << "' of shape " << formatShape({channels}) << ", got "
           << formatShape(*shape);
  return success();
}

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("expects a non-empty 'name'");
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult ShapeOp::verify() {
  int64_t rank = getInput().getType().getRank();
  auto clampIndex = [&](int64_t v) {
    return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank);
  };
  // I64Attr getters return uint64_t; the attribute holds a signed value.
  int64_t start = clampIndex(static_cast<int64_t>(getStart()));
  int64_t end = clampIndex(static_cast<int64_t>(getEnd()));
  return verifyResultShape(*this, getOutput(),
                           {std::max<int64_t>(end - start, 0)});
}

//===----------------------------------------------------------------------===//
// Convolution and dense layers
//===----------------------------------------------------------------------===//

/// Shared by Conv and ConvTranspose. `outChannelsOf` gives the number of
/// output channels from the weight shape.
static FailureOr<int64_t>
verifyConvCommon(Operation *op, Value input, Value weight, Value bias,
                 ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                 ArrayRef<int64_t> pads, int64_t group) {
  if (group < 1)
    return op->emitOpError("expects 'group' to be positive, got ") << group;
  std::optional<Shape> in = rankedShape(input);
  std::optional<Shape> w = rankedShape(weight);
  int64_t rank = in ? in->size() : w ? w->size() : -1;
  if (rank < 0)
    return kDyn;
  if (in && failed(verifyRankBetween(op, "input", *in, 3, 5)))
    return failure();
  if (!in && failed(verifyRankBetween(op, "weight", *w, 3, 5)))
    return failure();
  if (w && static_cast<int64_t>(w->size()) != rank)
    return op->emitOpError("expects weight of rank ")
           << rank << " like the input, got rank " << w->size();
  if (failed(verifyWindowAttrs(op, rank - 2, strides, dilations, pads)))
    return failure();
  return rank;
}

LogicalResult ConvOp::verify() {
  FailureOr<int64_t> rank = verifyConvCommon(
      *this, getInput(), getWeight(), getBias(), getStrides(), getDilations(),
      getPads(), static_cast<int64_t>(getGroup()));
  if (failed(rank))
    return failure();
  std::optional<Shape> in = rankedShape(getInput());
  std::optional<Shape> w = rankedShape(getWeight());
  if (!in || !w)
    return success();
  int64_t group = static_cast<int64_t>(getGroup());
  int64_t channels = (*in)[1], filters = (*w)[0], perGroup = (*w)[1];
  if (!isDyn(channels) && !isDyn(perGroup) && channels != perGroup * group)
    return emitOpError("expects input channels (")
           << channels << ") to equal weight dimension 1 (" << perGroup
           << ") times group (" << group << ")";
  if (!isDyn(filters) && filters % group != 0)
    return emitOpError("expects the number of filters (")
           << filters << ") to be divisible by group (" << group << ")";
  if (getBias() && failed(verifyPerChannel(*this, "bias", getBias(), filters)))
    return failure();
  FailureOr<Shape> spatial =
      windowOutput(*this, *in, ArrayRef<int64_t>(*w).drop_front(2),
                   getStrides(), getDilations(), getPads(), false);
  if (failed(spatial))
    return failure();
  Shape expected{(*in)[0], filters};
  expected.append(spatial->begin(), spatial->end());
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult ConvTransposeOp::verify() {
  FailureOr<int64_t> rank = verifyConvCommon(
      *this, getInput(), getWeight(), getBias(), getStrides(), getDilations(),
      getPads(), static_cast<int64_t>(getGroup()));
  if (failed(rank))
    return failure();
  if (failed(verifyCount(*this, "output_padding", getOutputPadding(), *rank - 2,
                         "one per spatial dimension")) ||
      failed(verifyAll(*this, "output_padding", getOutputPadding(), 0)))
    return failure();
  std::optional<Shape> in = rankedShape(getInput());
  std::optional<Shape> w = rankedShape(getWeight());
  if (!in || !w)
    return success();
  int64_t group = static_cast<int64_t>(getGroup());
  if (!isDyn((*in)[1]) && !isDyn((*w)[0]) && (*in)[1] != (*w)[0])
    return emitOpError("expects input channels (")
           << (*in)[1] << ") to equal weight dimension 0 (" << (*w)[0] << ")";
  if (!isDyn((*in)[1]) && (*in)[1] % group != 0)
    return emitOpError("expects input channels (")
           << (*in)[1] << ") to be divisible by group (" << group << ")";
  int64_t filters = isDyn((*w)[1]) ? kDyn : (*w)[1] * group;
  if (getBias() && failed(verifyPerChannel(*this, "bias", getBias(), filters)))
    return failure();
  Shape expected{(*in)[0], filters};
  int64_t spatial = *rank - 2;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t x = (*in)[2 + i], k = (*w)[2 + i];
    if (isDyn(x) || isDyn(k)) {
      expected.push_back(kDyn);
      continue;
    }
    int64_t size = getStrides()[i] * (x - 1) + getOutputPadding()[i] +
                   (k - 1) * getDilations()[i] + 1 - getPads()[i] -
                   getPads()[spatial + i];
    if (size <= 0)
      return emitOpError("spatial dimension ")
             << i << " of the output would have size " << size;
    expected.push_back(size);
  }
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult GemmOp::verify() {
  std::optional<Shape> a = rankedShape(getA());
  std::optional<Shape> b = rankedShape(getB());
  if (a && failed(verifyRankBetween(*this, "'a'", *a, 2, 2)))
    return failure();
  if (b && failed(verifyRankBetween(*this, "'b'", *b, 2, 2)))
    return failure();
  if (!a || !b)
    return success();
  int64_t m = getTransA() ? (*a)[1] : (*a)[0];
  int64_t ka = getTransA() ? (*a)[0] : (*a)[1];
  int64_t kb = getTransB() ? (*b)[1] : (*b)[0];
  int64_t n = getTransB() ? (*b)[0] : (*b)[1];
  if (!isDyn(ka) && !isDyn(kb) && ka != kb)
    return emitOpError("expects the inner dimensions to agree, got ")
           << ka << " (a) and " << kb << " (b)";
  if (getC()) {
    std::optional<Shape> c = rankedShape(getC());
    std::optional<Shape> bc = c ? broadcastShapes(*c, {m, n}) : std::nullopt;
    if (c && (c->size() > 2 || !bc ||
              !(isDyn((*bc)[0]) || isDyn(m) || (*bc)[0] == m) ||
              !(isDyn((*bc)[1]) || isDyn(n) || (*bc)[1] == n)))
      return emitOpError("expects 'c' of shape ")
             << formatShape(*c) << " to broadcast to " << formatShape({m, n});
  }
  return verifyResultShape(*this, getOutput(), {m, n});
}

/// Numpy matmul shape; emits errors on the op.
static FailureOr<Shape> matmulShape(Operation *op, ArrayRef<int64_t> lhs,
                                    ArrayRef<int64_t> rhs) {
  if (lhs.empty() || rhs.empty())
    return op->emitOpError("expects operands of rank at least 1");
  Shape l(lhs), r(rhs);
  bool lhsVector = l.size() == 1, rhsVector = r.size() == 1;
  if (lhsVector)
    l.insert(l.begin(), 1);
  if (rhsVector)
    r.push_back(1);
  int64_t kl = l.back(), kr = r[r.size() - 2];
  if (!isDyn(kl) && !isDyn(kr) && kl != kr)
    return op->emitOpError("expects the inner dimensions to agree, got ")
           << kl << " and " << kr;
  ArrayRef<int64_t> lb = ArrayRef<int64_t>(l).drop_back(2);
  ArrayRef<int64_t> rb = ArrayRef<int64_t>(r).drop_back(2);
  std::optional<Shape> batch = broadcastShapes(lb, rb);
  if (!batch)
    return op->emitOpError("batch dimensions ")
           << formatShape(lb) << " and " << formatShape(rb)
           << " are not broadcastable";
  Shape result = *batch;
  if (!lhsVector)
    result.push_back(l[l.size() - 2]);
  if (!rhsVector)
    result.push_back(r.back());
  return result;
}

LogicalResult MatMulOp::verify() {
  std::optional<Shape> l = rankedShape(getLhs());
  std::optional<Shape> r = rankedShape(getRhs());
  if (!l || !r)
    return success();
  FailureOr<Shape> shape = matmulShape(*this, *l, *r);
  if (failed(shape))
    return failure();
  return verifyResultShape(*this, getOutput(), *shape);
}

//===----------------------------------------------------------------------===//
// Element-wise ops
//===----------------------------------------------------------------------===//

LogicalResult AddOp::verify() { return verifyBroadcastOp(*this); }
LogicalResult SubOp::verify() { return verifyBroadcastOp(*this); }
LogicalResult MulOp::verify() { return verifyBroadcastOp(*this); }
LogicalResult DivOp::verify() { return verifyBroadcastOp(*this); }
LogicalResult PowOp::verify() {
  // The exponent may have another element type; the result has the base's.
  Type base = getElementTypeOrSelf(getLhs().getType());
  if (getElementTypeOrSelf(getOutput().getType()) != base)
    return emitOpError("expects the result element type to be the base's (")
           << base << ")";
  return verifyBroadcastOp(*this);
}
LogicalResult MaxOp::verify() { return verifyBroadcastOp(*this); }
LogicalResult MinOp::verify() { return verifyBroadcastOp(*this); }

LogicalResult PReluOp::verify() {
  // The slope broadcasts to the input (unidirectionally): the result has the
  // input's shape.
  std::optional<Shape> x = rankedShape(getLhs());
  std::optional<Shape> slope = rankedShape(getRhs());
  if (!x || !slope)
    return success();
  if (!broadcastsTo(*slope, *x))
    return emitOpError("expects the slope of shape ")
           << formatShape(*slope) << " to broadcast to the input shape "
           << formatShape(*x);
  return verifyResultShape(*this, getOutput(), *x);
}

LogicalResult ClipOp::verify() {
  if (getMin() && getMax() &&
      getMin()->convertToFloat() > getMax()->convertToFloat())
    return emitOpError("expects 'min' (")
           << getMin()->convertToFloat() << ") to be at most 'max' ("
           << getMax()->convertToFloat() << ")";
  return success();
}

LogicalResult DropoutOp::verify() {
  float ratio = getRatio().convertToFloat();
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return emitOpError("expects 'ratio' in [0, 1), got ") << ratio;
  return success();
}

static LogicalResult verifySoftmax(Operation *op, Value input, int64_t axis) {
  std::optional<Shape> in = rankedShape(input);
  if (in && failed(verifyAxis(op, "axis", axis, in->size())))
    return failure();
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifySoftmax(*this, getInput(), getAxis());
}
LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmax(*this, getInput(), getAxis());
}

//===----------------------------------------------------------------------===//
// Pooling and normalisation
//===----------------------------------------------------------------------===//

static LogicalResult verifyPool(Operation *op, Value input, Value output,
                                ArrayRef<int64_t> kernel,
                                ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> dilations,
                                ArrayRef<int64_t> pads, bool ceilMode) {
  int64_t spatial = kernel.size();
  if (spatial == 0)
    return op->emitOpError("expects a non-empty 'kernel_shape'");
  if (failed(verifyAll(op, "kernel_shape", kernel, 1)) ||
      failed(verifyWindowAttrs(op, spatial, strides, dilations, pads)))
    return failure();
  std::optional<Shape> in = rankedShape(input);
  if (!in)
    return success();
  if (static_cast<int64_t>(in->size()) != spatial + 2)
    return op->emitOpError("expects input of rank ")
           << spatial + 2 << " (N x C and one dimension per kernel axis), "
           << "got rank " << in->size();
  for (int64_t i = 0; i < spatial; ++i)
    if (pads[i] >= kernel[i] || pads[spatial + i] >= kernel[i])
      return op->emitOpError("expects pads smaller than the kernel, got pad ")
             << std::max(pads[i], pads[spatial + i]) << " for kernel size "
             << kernel[i] << " on spatial dimension " << i;
  FailureOr<Shape> out =
      windowOutput(op, *in, kernel, strides, dilations, pads, ceilMode);
  if (failed(out))
    return failure();
  Shape expected{(*in)[0], (*in)[1]};
  expected.append(out->begin(), out->end());
  return verifyResultShape(op, output, expected);
}

LogicalResult MaxPoolOp::verify() {
  return verifyPool(*this, getInput(), getOutput(), getKernelShape(),
                    getStrides(), getDilations(), getPads(), getCeilMode());
}

LogicalResult AveragePoolOp::verify() {
  Shape ones(getKernelShape().size(), 1);
  return verifyPool(*this, getInput(), getOutput(), getKernelShape(),
                    getStrides(), ones, getPads(), getCeilMode());
}

static LogicalResult verifyGlobalPool(Operation *op) {
  std::optional<Shape> in = rankedShape(op->getOperand(0));
  if (!in)
    return success();
  if (failed(verifyRankBetween(op, "input", *in, 3, INT64_MAX)))
    return failure();
  Shape expected(in->size(), 1);
  expected[0] = (*in)[0];
  expected[1] = (*in)[1];
  return verifyResultShape(op, op->getResult(0), expected);
}

LogicalResult GlobalAveragePoolOp::verify() { return verifyGlobalPool(*this); }
LogicalResult GlobalMaxPoolOp::verify() { return verifyGlobalPool(*this); }

LogicalResult BatchNormOp::verify() {
  if (failed(verifyNonNegative(*this, "epsilon", getEpsilon())))
    return failure();
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  if (failed(verifyRankBetween(*this, "input", *in, 2, INT64_MAX)))
    return failure();
  int64_t channels = (*in)[1];
  if (failed(verifyPerChannel(*this, "scale", getScale(), channels)) ||
      failed(verifyPerChannel(*this, "bias", getBias(), channels)) ||
      failed(verifyPerChannel(*this, "mean", getMean(), channels)) ||
      failed(verifyPerChannel(*this, "var", getVar(), channels)))
    return failure();
  return verifyResultShape(*this, getOutput(), *in);
}

LogicalResult LRNOp::verify() {
  int64_t size = static_cast<int64_t>(getSize());
  if (size < 1)
    return emitOpError("expects 'size' to be positive, got ") << size;
  std::optional<Shape> in = rankedShape(getInput());
  if (in && failed(verifyRankBetween(*this, "input", *in, 3, INT64_MAX)))
    return failure();
  return success();
}

/// Whether `a` and `b` have the same rank and agree where both are known.
static bool sameKnownShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  if (a.size() != b.size())
    return false;
  for (auto [x, y] : llvm::zip(a, b))
    if (!isDyn(x) && !isDyn(y) && x != y)
      return false;
  return true;
}

/// The shapes of a recurrent op: the input [T, N, I], weights
/// [D, G*H, I], recurrence [D, G*H, H], bias [D, 2*G*H], initial state
/// [D or 2D (LSTM), N, H], result [T, D, N, H].
template <typename OpTy> static LogicalResult verifyRecurrent(OpTy op) {
  int64_t h = op.getHiddenSize(), g = OpTy::kGates;
  if (h <= 0)
    return op.emitOpError("expects a positive 'hidden_size', got ") << h;
  StringRef dir = op.getDirection();
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return op.emitOpError("expects 'direction' forward, reverse or "
                          "bidirectional, got '")
           << dir << "'";
  int64_t d = dir == "bidirectional" ? 2 : 1;
  std::optional<Shape> in = rankedShape(op.getInput());
  if (!in)
    return success();
  if (in->size() != 3)
    return op.emitOpError("expects a 3-D input [T, N, I], got ")
           << formatShape(*in);
  int64_t t = (*in)[0], n = (*in)[1], i = (*in)[2];
  int64_t states = std::is_same_v<OpTy, LSTMOp> ? 2 * d : d;
  const std::pair<StringRef, Value> operands[] = {
      {"weights", op.getWeights()},
      {"recurrence", op.getRecurrence()},
      {"bias", op.getBias()},
      {"initial_state", op.getInitialState()}};
  const Shape expected[] = {
      {d, g * h, i}, {d, g * h, h}, {d, 2 * g * h}, {states, n, h}};
  for (auto [k, named] : llvm::enumerate(operands)) {
    std::optional<Shape> shape =
        named.second ? rankedShape(named.second) : std::nullopt;
    if (shape && !sameKnownShape(*shape, expected[k]))
      return op.emitOpError("expects '")
             << named.first << "' of shape " << formatShape(expected[k])
             << ", got " << formatShape(*shape);
  }
  return verifyResultShape(op, op.getOutput(), Shape{t, d, n, h});
}

LogicalResult LSTMOp::verify() { return verifyRecurrent(*this); }
LogicalResult GRUOp::verify() { return verifyRecurrent(*this); }
LogicalResult RNNOp::verify() { return verifyRecurrent(*this); }

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNonNegative(*this, "epsilon", getEpsilon())))
    return failure();
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  FailureOr<int64_t> axis = verifyAxis(*this, "axis", getAxis(), in->size());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = ArrayRef<int64_t>(*in).drop_front(*axis);
  for (auto [name, value] : {std::pair<StringRef, Value>{"scale", getScale()},
                             {"bias", getBias()}}) {
    std::optional<Shape> shape = value ? rankedShape(value) : std::nullopt;
    if (!shape)
      continue;
    if (!broadcastsTo(*shape, normalized))
      return emitOpError("expects '")
             << name << "' of shape " << formatShape(*shape)
             << " to broadcast to the normalised dimensions "
             << formatShape(normalized);
  }
  return verifyResultShape(*this, getOutput(), *in);
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

/// Product of dims; kDynamic if any is dynamic, and when it overflows
/// (then nothing can be checked against it; ReshapeOp reports it).
static int64_t product(ArrayRef<int64_t> dims) {
  if (llvm::any_of(dims, isDyn))
    return kDyn;
  if (llvm::is_contained(dims, 0))
    return 0;
  int64_t p = 1;
  for (int64_t d : dims)
    if (llvm::MulOverflow(p, d, p))
      return kDyn;
  return p;
}

/// Whether the static dims of `dims` multiply without overflowing.
static bool productFits(ArrayRef<int64_t> dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    if (!isDyn(d) && d != 0 && llvm::MulOverflow(p, d, p))
      return false;
  return true;
}

LogicalResult FlattenOp::verify() {
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  int64_t rank = in->size(), axis = getAxis();
  if (axis < -rank || axis > rank)
    return emitOpError("expects 'axis' in [")
           << -rank << ", " << rank << "], got " << axis;
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> dims(*in);
  return verifyResultShape(
      *this, getOutput(),
      {product(dims.take_front(axis)), product(dims.drop_front(axis))});
}

LogicalResult ReshapeOp::verify() {
  ArrayRef<int64_t> target = getShape();
  int64_t inferred = -1;
  for (auto [i, d] : llvm::enumerate(target)) {
    if (d < -1)
      return emitOpError("expects 'shape' values of at least -1, got ") << d;
    if (d == -1) {
      if (inferred >= 0)
        return emitOpError("expects at most one -1 in 'shape'");
      inferred = i;
    }
  }
  if (getAllowzero() && inferred >= 0 && llvm::is_contained(target, 0))
    return emitOpError("cannot combine 0 and -1 in 'shape' when 'allowzero' "
                       "is set");
  if (!productFits(llvm::map_to_vector(
          target, [](int64_t d) { return d < 0 ? kDyn : d; })))
    return emitOpError("expects a 'shape' whose element count fits in 64 "
                       "bits");
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  Shape expected(target);
  for (auto [i, d] : llvm::enumerate(expected)) {
    if (d != 0 || getAllowzero())
      continue;
    if (i >= in->size())
      return emitOpError("'shape' copies input dimension ")
             << i << " (value 0) but the input has rank " << in->size();
    d = (*in)[i];
  }
  int64_t total = product(*in);
  if (inferred >= 0) {
    expected[inferred] = 1;
    int64_t known = product(expected);
    if (isDyn(total) || isDyn(known)) {
      expected[inferred] = kDyn;
    } else if (known == 0) {
      return emitOpError("cannot infer the -1 dimension next to a dimension "
                         "of size 0");
    } else if (total % known != 0) {
      return emitOpError("cannot infer the -1 dimension: ")
             << total << " elements are not divisible by " << known;
    } else {
      expected[inferred] = total / known;
    }
  } else if (!isDyn(total) && !isDyn(product(expected)) &&
             total != product(expected)) {
    return emitOpError("expects ") << formatShape(expected) << " to hold the "
                                   << total << " elements of the input";
  }
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult TransposeOp::verify() {
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  int64_t rank = in->size();
  ArrayRef<int64_t> perm = getPerm();
  Shape sorted(perm);
  llvm::sort(sorted);
  bool isPermutation = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t i = 0; isPermutation && i < rank; ++i)
    isPermutation = sorted[i] == i;
  if (!isPermutation)
    return emitOpError("expects 'perm' to be a permutation of [0, ")
           << rank << "), got [" << llvm::make_range(perm.begin(), perm.end())
           << "]";
  Shape expected;
  for (int64_t p : perm)
    expected.push_back((*in)[p]);
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult ConcatOp::verify() {
  // (No inputs at all is rejected by SameOperandsAndResultElementType.)
  // Unranked inputs are skipped; they make the concatenated size unknown.
  std::optional<Shape> expected;
  int64_t axis = 0;
  bool anyUnranked = false;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    std::optional<Shape> shape = rankedShape(input);
    if (!shape) {
      anyUnranked = true;
      continue;
    }
    if (!expected) {
      FailureOr<int64_t> a =
          verifyAxis(*this, "axis", getAxis(), shape->size());
      if (failed(a))
        return failure();
      axis = *a;
      expected = shape;
      continue;
    }
    if (shape->size() != expected->size())
      return emitOpError("expects all inputs to have rank ")
             << expected->size() << ", input " << i << " has rank "
             << shape->size();
    for (size_t d = 0; d < shape->size(); ++d) {
      int64_t &e = (*expected)[d];
      int64_t s = (*shape)[d];
      if (static_cast<int64_t>(d) == axis) {
        e = isDyn(e) || isDyn(s) ? kDyn : e + s;
      } else if (!isDyn(e) && !isDyn(s) && e != s) {
        return emitOpError("expects input ")
               << i << " to have size " << e << " in dimension " << d
               << " like the first ranked input, got " << s;
      } else if (isDyn(e)) {
        e = s;
      }
    }
  }
  if (!expected)
    return success();
  if (anyUnranked)
    (*expected)[axis] = kDyn;
  return verifyResultShape(*this, getOutput(), *expected);
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> split = getSplit();
  if (static_cast<int64_t>(split.size()) !=
      static_cast<int64_t>(getOutputs().size()))
    return emitOpError("expects 'split' to have one size per result (")
           << getOutputs().size() << "), got " << split.size();
  if (failed(verifyAll(*this, "split", split, 0)))
    return failure();
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  FailureOr<int64_t> axis = verifyAxis(*this, "axis", getAxis(), in->size());
  if (failed(axis))
    return failure();
  int64_t total = 0;
  for (int64_t s : split)
    total += s;
  if (!isDyn((*in)[*axis]) && total != (*in)[*axis])
    return emitOpError("expects 'split' sizes to add up to dimension ")
           << *axis << " of the input (" << (*in)[*axis] << "), got " << total;
  for (auto [size, result] : llvm::zip(split, getOutputs())) {
    Shape expected = *in;
    expected[*axis] = size;
    if (failed(verifyResultShape(*this, result, expected)))
      return failure();
  }
  return success();
}

/// Number of elements ONNX Slice selects on an axis of size `dim`.
static int64_t sliceSize(int64_t dim, int64_t start, int64_t end,
                         int64_t step) {
  if (isDyn(dim))
    return kDyn;
  auto clampIndex = [&](int64_t v, bool forStart) {
    if (v < 0)
      v += dim;
    if (step > 0)
      return std::clamp<int64_t>(v, 0, dim);
    // Negative steps run from dim-1 down to -1 (exclusive end).
    return std::clamp<int64_t>(v, forStart ? 0 : -1, dim - 1);
  };
  int64_t s = clampIndex(start, true), e = clampIndex(end, false);
  int64_t n = step > 0 ? (e - s + step - 1) / step : (s - e - step - 1) / -step;
  return std::max<int64_t>(n, 0);
}

LogicalResult SliceOp::verify() {
  size_t n = getStarts().size();
  if (getEnds().size() != n || getAxes().size() != n || getSteps().size() != n)
    return emitOpError("expects 'starts', 'ends', 'axes' and 'steps' to have "
                       "the same length");
  if (llvm::is_contained(getSteps(), 0))
    return emitOpError("expects 'steps' values to be non-zero");
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  FailureOr<Shape> axes = verifyAxes(*this, "axes", getAxes(), in->size());
  if (failed(axes))
    return failure();
  Shape expected = *in;
  for (size_t i = 0; i < n; ++i) {
    int64_t a = (*axes)[i];
    expected[a] =
        sliceSize((*in)[a], getStarts()[i], getEnds()[i], getSteps()[i]);
  }
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult SqueezeOp::verify() {
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  FailureOr<Shape> axes = verifyAxes(*this, "axes", getAxes(), in->size());
  if (failed(axes))
    return failure();
  Shape expected;
  for (auto [i, d] : llvm::enumerate(*in)) {
    bool named = llvm::is_contained(*axes, static_cast<int64_t>(i));
    if (named && !isDyn(d) && d != 1)
      return emitOpError("cannot squeeze dimension ") << i << " of size " << d;
    if (axes->empty() && isDyn(d))
      return success(); // Which dimensions go is only known at run time.
    if (!named && !(axes->empty() && d == 1))
      expected.push_back(d);
  }
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult UnsqueezeOp::verify() {
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  int64_t outRank = in->size() + getAxes().size();
  FailureOr<Shape> axes = verifyAxes(*this, "axes", getAxes(), outRank);
  if (failed(axes))
    return failure();
  Shape expected;
  auto next = in->begin();
  for (int64_t i = 0; i < outRank; ++i)
    expected.push_back(llvm::is_contained(*axes, i) ? 1 : *next++);
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult mlir::hps::verifyResizeModes(Operation *op, StringRef mode,
                                           StringRef transform,
                                           StringRef rounding) {
  static const llvm::StringSet<> modes = {"nearest", "linear", "cubic"};
  static const llvm::StringSet<> transforms = {
      "half_pixel",          "half_pixel_symmetric", "pytorch_half_pixel",
      "align_corners",       "asymmetric",           "tf_crop_and_resize",
      "tf_half_pixel_for_nn"};
  static const llvm::StringSet<> roundings = {
      "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  if (!modes.contains(mode))
    return op->emitOpError("expects 'mode' to be \"nearest\", \"linear\" "
                           "or \"cubic\", got \"")
           << mode << "\"";
  if (!transforms.contains(transform))
    return op->emitOpError("has unknown 'coordinate_transformation_mode' \"")
           << transform << "\"";
  if (!roundings.contains(rounding))
    return op->emitOpError("has unknown 'nearest_mode' \"") << rounding << "\"";
  return success();
}

LogicalResult ResizeOp::verify() {
  if (failed(verifyResizeModes(*this, getMode(),
                               getCoordinateTransformationMode(),
                               getNearestMode())))
    return failure();
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  int64_t rank = in->size();
  ArrayRef<float> scales = getScales();
  ArrayRef<int64_t> sizes = getSizes();
  if (static_cast<int64_t>(scales.size()) != rank)
    return emitOpError("expects 'scales' to have ")
           << rank << " values (one per dimension), got " << scales.size();
  if (!sizes.empty() &&
      failed(verifyCount(*this, "sizes", sizes, rank, "one per dimension")))
    return failure();
  if (getCoordinateTransformationMode() == "tf_crop_and_resize" &&
      static_cast<int64_t>(getRoi().size()) != 2 * rank)
    return emitOpError("expects 'roi' to have ")
           << 2 * rank << " values (begin and end per dimension), got "
           << getRoi().size();
  Shape expected;
  for (int64_t i = 0; i < rank; ++i) {
    if (!(scales[i] > 0.f) || !std::isfinite(scales[i]))
      return emitOpError("expects positive finite 'scales', got ")
             << scales[i] << " for dimension " << i;
    if (!sizes.empty() && sizes[i] < 0)
      return emitOpError("expects non-negative 'sizes', got ")
             << sizes[i] << " for dimension " << i;
    int64_t d = (*in)[i];
    if (!sizes.empty() && sizes[i] > 0)
      expected.push_back(sizes[i]);
    else if (isDyn(d))
      expected.push_back(kDyn);
    else if (!sizes.empty())
      expected.push_back(d);
    else
      expected.push_back(
          static_cast<int64_t>(std::floor(double(scales[i]) * double(d))));
  }
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult PadOp::verify() {
  StringRef mode = getMode();
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return emitOpError("expects 'mode' to be \"constant\", \"reflect\" or "
                       "\"edge\", got \"")
           << mode << "\"";
  std::optional<Shape> in = rankedShape(getInput());
  if (!in)
    return success();
  int64_t rank = in->size();
  if (failed(verifyCount(*this, "pads", getPads(), 2 * rank,
                         "begin and end per dimension")))
    return failure();
  Shape expected;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = (*in)[i];
    int64_t size = isDyn(d) ? kDyn : d + getPads()[i] + getPads()[rank + i];
    if (!isDyn(size) && size < 0)
      return emitOpError("expects pads to keep dimension ")
             << i << " non-negative, got " << d << " + " << getPads()[i]
             << " + " << getPads()[rank + i];
    expected.push_back(size);
  }
  return verifyResultShape(*this, getOutput(), expected);
}

LogicalResult GatherOp::verify() {
  std::optional<Shape> data = rankedShape(getData());
  std::optional<Shape> indices = rankedShape(getIndices());
  if (!data)
    return success();
  if (data->empty())
    return emitOpError("expects 'data' of rank at least 1");
  FailureOr<int64_t> axis = verifyAxis(*this, "axis", getAxis(), data->size());
  if (failed(axis) || !indices)
    return failure(failed(axis));
  Shape expected(data->begin(), data->begin() + *axis);
  expected.append(indices->begin(), indices->end());
  expected.append(data->begin() + *axis + 1, data->end());
  return verifyResultShape(*this, getOutput(), expected);
}

static LogicalResult verifyReduce(Operation *op, Value input, Value output,
                                  ArrayRef<int64_t> axesAttr, bool keepdims) {
  std::optional<Shape> in = rankedShape(input);
  if (!in)
    return success();
  FailureOr<Shape> axes = verifyAxes(op, "axes", axesAttr, in->size());
  if (failed(axes))
    return failure();
  Shape expected;
  for (auto [i, d] : llvm::enumerate(*in)) {
    bool reduced =
        axes->empty() || llvm::is_contained(*axes, static_cast<int64_t>(i));
    if (!reduced)
      expected.push_back(d);
    else if (keepdims)
      expected.push_back(1);
  }
  return verifyResultShape(op, output, expected);
}

template <typename OpTy> static LogicalResult verifyArg(OpTy op) {
  std::optional<Shape> in = rankedShape(op.getInput());
  if (!in)
    return success();
  FailureOr<int64_t> axis = verifyAxis(op, "axis", op.getAxis(), in->size());
  if (failed(axis))
    return failure();
  Shape expected;
  for (auto [i, d] : llvm::enumerate(*in))
    if (static_cast<int64_t>(i) != *axis)
      expected.push_back(d);
    else if (op.getKeepdims())
      expected.push_back(1);
  return verifyResultShape(op, op.getOutput(), expected);
}
LogicalResult ArgMaxOp::verify() { return verifyArg(*this); }
LogicalResult ArgMinOp::verify() { return verifyArg(*this); }

LogicalResult ReduceMeanOp::verify() {
  return verifyReduce(*this, getInput(), getOutput(), getAxes(), getKeepdims());
}
LogicalResult ReduceSumOp::verify() {
  return verifyReduce(*this, getInput(), getOutput(), getAxes(), getKeepdims());
}
LogicalResult ReduceMaxOp::verify() {
  return verifyReduce(*this, getInput(), getOutput(), getAxes(), getKeepdims());
}
LogicalResult ReduceMinOp::verify() {
  return verifyReduce(*this, getInput(), getOutput(), getAxes(), getKeepdims());
}

#define GET_OP_CLASSES
#include "heterps/Dialect/HPS/HPSOps.cpp.inc"
