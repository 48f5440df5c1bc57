//===- NodeConverters.cpp - one converter per supported ONNX operator -----===//
//
// Each converter reads the node's attributes with their ONNX defaults for the
// model's opset, folds inputs that hps wants as attributes (axes, pads,
// shapes, ...) and creates one hps op. Shapes are checked by the hps
// verifiers once the whole graph is imported.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "heterps/Dialect/HPS/HPS.h"
#include "llvm/ADT/StringMap.h"

#include <limits>

using namespace mlir;
using namespace mlir::hps;
using namespace mlir::hps::onnx_import;

namespace {

using Ints = SmallVector<int64_t>;

/// Inferred type of output `i`, with input 0's element type as fallback.
Type resultType(NodeImporter &n, unsigned i = 0) {
  return n.outputType(i, n.inputElementType(0));
}

DenseI64ArrayAttr ints(NodeImporter &n, ArrayRef<int64_t> values) {
  return n.builder().getDenseI64ArrayAttr(values);
}
FloatAttr f32(NodeImporter &n, double value) {
  return n.builder().getF32FloatAttr(static_cast<float>(value));
}
IntegerAttr i64(NodeImporter &n, int64_t value) {
  return n.builder().getI64IntegerAttr(value);
}
BoolAttr boolean(NodeImporter &n, bool value) {
  return n.builder().getBoolAttr(value);
}

/// An optional input: a null Value when absent.
FailureOr<Value> optionalInput(NodeImporter &n, unsigned i) {
  if (!n.hasInput(i))
    return Value();
  return n.input(i);
}

/// A list attribute of `count` values defaulting to `dflt` each.
Ints intsOr(NodeImporter &n, StringRef name, size_t count, int64_t dflt) {
  if (std::optional<Ints> v = n.attrInts(name))
    return *v;
  return Ints(count, dflt);
}

/// Axes given as an attribute (older opsets) or as input `index` (newer).
FailureOr<std::optional<Ints>>
axesAttrOrInput(NodeImporter &n, int inputSinceOpset, unsigned index) {
  if (n.opset < inputSinceOpset)
    return n.attrInts("axes");
  if (!n.hasInput(index))
    return std::optional<Ints>();
  FailureOr<Ints> axes = n.constInts(index, "axes");
  if (failed(axes))
    return failure();
  return std::optional<Ints>(*axes);
}

/// Explicit pads of a window op from `pads` or `auto_pad`.
FailureOr<Ints> resolvePads(NodeImporter &n, std::optional<Ints> inShape,
                            ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> dilations) {
  size_t spatial = kernel.size();
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return intsOr(n, "pads", 2 * spatial, 0);
  if (autoPad == "VALID")
    return Ints(2 * spatial, 0);
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER")
    return n.fail("unknown auto_pad value '" + autoPad + "'");
  if (strides.size() != spatial || dilations.size() != spatial)
    return n.fail("'strides' and 'dilations' need one value per spatial "
                  "dimension");
  Ints pads(2 * spatial, 0);
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = inShape && inShape->size() == spatial + 2
                     ? (*inShape)[2 + i]
                     : ShapedType::kDynamic;
    if (ShapedType::isDynamic(in))
      return n.fail("auto_pad " + autoPad +
                    " needs static spatial input dimensions");
    int64_t out = (in + strides[i] - 1) / strides[i];
    int64_t window = (kernel[i] - 1) * dilations[i] + 1;
    int64_t total = std::max<int64_t>((out - 1) * strides[i] + window - in, 0);
    int64_t small = total / 2, large = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[spatial + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

/// Kernel dimensions of a conv weight (M x C x k1 ... kn).
FailureOr<Ints> kernelOf(NodeImporter &n, Value weight) {
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || type.getRank() < 3)
    return n.fail("the weight must be a ranked tensor of rank 3 to 5");
  Ints kernel(type.getShape().drop_front(2));
  if (std::optional<Ints> attr = n.attrInts("kernel_shape")) {
    for (size_t i = 0; i < kernel.size() && i < attr->size(); ++i)
      if (ShapedType::isDynamic(kernel[i]))
        kernel[i] = (*attr)[i];
    if (attr->size() != kernel.size() || *attr != kernel)
      return n.fail("kernel_shape does not match the weight's spatial "
                    "dimensions");
  }
  if (llvm::any_of(kernel, ShapedType::isDynamic))
    return n.fail("the weight's spatial dimensions must be static");
  return kernel;
}

/// Operands and window attributes shared by Conv and ConvTranspose.
/// An error unless attribute `name` has `count` values (one per spatial
/// axis, say): the converters index them by axis.
LogicalResult checkCount(NodeImporter &n, StringRef name, ArrayRef<int64_t> v,
                         size_t count) {
  if (v.size() == count)
    return success();
  return n.fail("attribute '" + name + "' has " + Twine(v.size()) +
                " values, expected " + Twine(count));
}

struct ConvInputs {
  Value input, weight, bias;
  Ints kernel, strides, dilations;
};

FailureOr<ConvInputs> convInputs(NodeImporter &n) {
  FailureOr<Value> x = n.input(0), w = n.input(1), b = optionalInput(n, 2);
  if (failed(x) || failed(w) || failed(b))
    return failure();
  FailureOr<Ints> kernel = kernelOf(n, *w);
  if (failed(kernel))
    return failure();
  size_t spatial = kernel->size();
  ConvInputs c{*x,
               *w,
               *b,
               *kernel,
               intsOr(n, "strides", spatial, 1),
               intsOr(n, "dilations", spatial, 1)};
  if (failed(checkCount(n, "strides", c.strides, spatial)) ||
      failed(checkCount(n, "dilations", c.dilations, spatial)))
    return failure();
  return c;
}

LogicalResult convertConv(NodeImporter &n) {
  FailureOr<ConvInputs> c = convInputs(n);
  if (failed(c))
    return failure();
  FailureOr<Ints> pads =
      resolvePads(n, n.inputShape(0), c->kernel, c->strides, c->dilations);
  if (failed(pads))
    return failure();
  n.setOutput(0,
              n.create<ConvOp>(resultType(n), c->input, c->weight, c->bias,
                               ints(n, c->strides), ints(n, c->dilations),
                               ints(n, *pads), i64(n, n.attrInt("group", 1))));
  return success();
}

LogicalResult convertConvTranspose(NodeImporter &n) {
  FailureOr<ConvInputs> c = convInputs(n);
  if (failed(c))
    return failure();
  ArrayRef<int64_t> kernel = c->kernel, strides = c->strides,
                    dilations = c->dilations;
  size_t spatial = kernel.size();
  Ints outputPadding = intsOr(n, "output_padding", spatial, 0);
  std::string autoPad = n.attrString("auto_pad", "NOTSET");
  std::optional<Ints> outputShape = n.attrInts("output_shape");
  Ints pads = intsOr(n, "pads", 2 * spatial, 0);
  if (failed(checkCount(n, "output_padding", outputPadding, spatial)) ||
      failed(checkCount(n, "pads", pads, 2 * spatial)))
    return failure();
  if (autoPad == "VALID")
    pads.assign(2 * spatial, 0);
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    std::optional<Ints> in = n.inputShape(0);
    if (!in || in->size() != spatial + 2 ||
        llvm::any_of(ArrayRef<int64_t>(*in).drop_front(2),
                     ShapedType::isDynamic))
      return n.fail("output_shape/auto_pad need static spatial input "
                    "dimensions");
    if (outputShape && outputShape->size() == spatial + 2)
      outputShape->erase(outputShape->begin(), outputShape->begin() + 2);
    if (outputShape && outputShape->size() != spatial)
      return n.fail("output_shape needs one value per spatial dimension");
    for (size_t i = 0; i < spatial; ++i) {
      int64_t target =
          outputShape ? (*outputShape)[i] : (*in)[2 + i] * strides[i];
      int64_t full = strides[i] * ((*in)[2 + i] - 1) + outputPadding[i] +
                     (kernel[i] - 1) * dilations[i] + 1;
      int64_t total = full - target;
      if (total < 0) {
        // The requested output is larger: extend it at the end.
        outputPadding[i] -= total;
        total = 0;
      }
      int64_t small = total / 2, large = total - small;
      bool upper = autoPad == "SAME_UPPER";
      pads[i] = upper ? small : large;
      pads[spatial + i] = upper ? large : small;
    }
  }
  Value out = n.create<ConvTransposeOp>(
      resultType(n), c->input, c->weight, c->bias, ints(n, strides),
      ints(n, dilations), ints(n, pads), ints(n, outputPadding),
      i64(n, n.attrInt("group", 1)));
  n.setOutput(0, out);
  return success();
}

LogicalResult convertGemm(NodeImporter &n) {
  FailureOr<Value> a = n.input(0), b = n.input(1), c = optionalInput(n, 2);
  if (failed(a) || failed(b) || failed(c))
    return failure();
  // [M, K] x [K, N], each maybe transposed; typed here where ONNX left it
  // unknown (an input reshaped by a run-time shape, ViT's attention).
  Type type = resultType(n);
  auto ta = dyn_cast<RankedTensorType>(a->getType());
  auto tb = dyn_cast<RankedTensorType>(b->getType());
  if (!isa<RankedTensorType>(type) && ta && tb && ta.getRank() == 2 &&
      tb.getRank() == 2)
    type =
        RankedTensorType::get({ta.getDimSize(n.attrInt("transA", 0) ? 1 : 0),
                               tb.getDimSize(n.attrInt("transB", 0) ? 0 : 1)},
                              ta.getElementType());
  n.setOutput(0, n.create<GemmOp>(type, *a, *b, *c,
                                  f32(n, n.attrFloat("alpha", 1.0f)),
                                  f32(n, n.attrFloat("beta", 1.0f)),
                                  boolean(n, n.attrInt("transA", 0)),
                                  boolean(n, n.attrInt("transB", 0))));
  return success();
}

/// Opsets before 7 broadcast only when `broadcast` is set, aligning B with
/// A's dimensions from `axis` on. Returns B reshaped so that numpy rules give
/// the same result (trailing size-1 dimensions appended).
FailureOr<Value> legacyBroadcastOperand(NodeImporter &n, Value a, Value b) {
  if (n.opset >= 7 || !n.attrInt("broadcast", 0) || !n.hasAttr("axis"))
    return b;
  auto ta = dyn_cast<RankedTensorType>(a.getType());
  auto tb = dyn_cast<RankedTensorType>(b.getType());
  if (!ta || !tb || !tb.hasStaticShape())
    return n.fail("legacy broadcast with 'axis' needs ranked operands and a "
                  "static second operand");
  int64_t axis = n.attrInt("axis", 0);
  if (axis < 0)
    axis += ta.getRank();
  int64_t trailing = ta.getRank() - axis - tb.getRank();
  if (axis < 0 || trailing < 0)
    return n.fail("legacy broadcast 'axis' is out of range");
  if (trailing == 0)
    return b;
  Ints shape(tb.getShape());
  shape.append(trailing, 1);
  auto type = RankedTensorType::get(shape, tb.getElementType());
  return n.create<ReshapeOp>(type, b, ints(n, shape), boolean(n, false))
      .getResult();
}

/// The numpy broadcast of two ranked types where ONNX inferred none (a
/// mask added to scores reshaped by a run-time shape, Swin's): a dimension
/// is static where either operand's is and is not 1.
Type broadcastType(Type a, Type b, Type elem) {
  auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
  if (!ta || !tb)
    return UnrankedTensorType::get(elem);
  int64_t rank = std::max(ta.getRank(), tb.getRank());
  Ints shape(rank);
  for (int64_t i = 0; i < rank; ++i) {
    auto dim = [&](RankedTensorType t) -> int64_t {
      int64_t at = i - (rank - t.getRank());
      return at < 0 ? 1 : t.getDimSize(at);
    };
    int64_t x = dim(ta), y = dim(tb);
    if (ShapedType::isDynamic(x) || x == 1)
      shape[i] = y == 1 ? x : y;
    else
      shape[i] = x;
  }
  return RankedTensorType::get(shape, elem);
}

/// numpy.matmul's result type where ONNX inferred none: [..., M, K] x
/// [..., K, N] is [..., M, N] with the leading dimensions broadcast; a 1-D
/// operand's dimension is dropped.
Type matmulType(Type a, Type b, Type elem) {
  auto ta = dyn_cast<RankedTensorType>(a), tb = dyn_cast<RankedTensorType>(b);
  if (!ta || !tb || ta.getRank() == 0 || tb.getRank() == 0)
    return UnrankedTensorType::get(elem);
  Ints sa(ta.getShape()), sb(tb.getShape());
  Ints batchA(sa.begin(), sa.end() - std::min<size_t>(sa.size(), 2));
  Ints batchB(sb.begin(), sb.end() - std::min<size_t>(sb.size(), 2));
  auto batch = cast<RankedTensorType>(
      broadcastType(RankedTensorType::get(batchA, elem),
                    RankedTensorType::get(batchB, elem), elem));
  Ints shape(batch.getShape());
  if (sa.size() >= 2)
    shape.push_back(sa[sa.size() - 2]);
  if (sb.size() >= 2)
    shape.push_back(sb.back());
  return RankedTensorType::get(shape, elem);
}

template <typename OpTy> LogicalResult convertBinary(NodeImporter &n) {
  FailureOr<Value> a = n.input(0), b = n.input(1);
  if (failed(a) || failed(b))
    return failure();
  FailureOr<Value> rhs = legacyBroadcastOperand(n, *a, *b);
  if (failed(rhs))
    return failure();
  Type type = resultType(n);
  if (!isa<RankedTensorType>(type)) {
    Type elem = getElementTypeOrSelf(type);
    type = std::is_same_v<OpTy, MatMulOp>
               ? matmulType(a->getType(), rhs->getType(), elem)
               : broadcastType(a->getType(), rhs->getType(), elem);
  }
  n.setOutput(0, n.create<OpTy>(type, *a, *rhs));
  return success();
}

/// Unary ops keep their input's type exactly (SameOperandsAndResultType).
template <typename OpTy, typename... Attrs>
LogicalResult convertUnary(NodeImporter &n, Attrs... attrs) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  n.setOutput(0, n.create<OpTy>(x->getType(), *x, attrs...));
  return success();
}

template <typename OpTy> LogicalResult convertPlainUnary(NodeImporter &n) {
  return convertUnary<OpTy>(n);
}

LogicalResult convertLeakyRelu(NodeImporter &n) {
  return convertUnary<LeakyReluOp>(n, f32(n, n.attrFloat("alpha", 0.01f)));
}
LogicalResult convertElu(NodeImporter &n) {
  return convertUnary<EluOp>(n, f32(n, n.attrFloat("alpha", 1.0f)));
}
LogicalResult convertSelu(NodeImporter &n) {
  return convertUnary<SeluOp>(
      n, f32(n, n.attrFloat("alpha", 1.67326319217681884765625f)),
      f32(n, n.attrFloat("gamma", 1.05070102214813232421875f)));
}

LogicalResult convertClip(NodeImporter &n) {
  FloatAttr lo, hi;
  if (n.opset < 11) {
    if (n.hasAttr("min"))
      lo = f32(n, n.attrFloat("min", 0));
    if (n.hasAttr("max"))
      hi = f32(n, n.attrFloat("max", 0));
  } else {
    // Bounds computed at run time: Max and Min.
    for (unsigned i : {1u, 2u})
      if (n.hasInput(i) && !n.constInput(i))
        return convertClipOfTensors(n);
    if (n.hasInput(1)) {
      FailureOr<double> v = n.constScalar(1, "min");
      if (failed(v))
        return failure();
      lo = f32(n, *v);
    }
    if (n.hasInput(2)) {
      FailureOr<double> v = n.constScalar(2, "max");
      if (failed(v))
        return failure();
      hi = f32(n, *v);
    }
  }
  return convertUnary<ClipOp>(n, lo, hi);
}

LogicalResult convertDropout(NodeImporter &n) {
  if (n.outputUsed(1))
    return n.unsupported("the mask output");
  double ratio = n.attrFloat("ratio", 0.5f);
  // hps.dropout drops when hps trains the model and is the identity when it
  // runs it, whatever training_mode says: a model exported for training
  // (training_mode=true, as PyTorch exports a module in train mode) imports
  // as one exported for inference.
  const ConstTensor *mode =
      n.opset >= 12 && n.hasInput(2) ? n.constInput(2) : nullptr;
  bool training = n.opset >= 12 && n.hasInput(2) &&
                  (!mode || llvm::any_of(mode->ints, [](const auto &v) {
                    return v.value != 0;
                  }));
  if (n.opset >= 12 && n.hasInput(1) && !n.constInput(1)) {
    // Without training_mode ONNX's Dropout is the identity: a ratio computed
    // at run time is never used, but hps cannot train with one.
    if (training)
      return n.unsupported("a ratio computed at run time with training_mode");
    return convertUnary<IdentityOp>(n);
  }
  if (n.opset >= 12 && n.hasInput(1)) {
    FailureOr<double> v = n.constScalar(1, "ratio");
    if (failed(v))
      return failure();
    ratio = *v;
  }
  return convertUnary<DropoutOp>(n, f32(n, ratio));
}

LogicalResult convertPRelu(NodeImporter &n) {
  FailureOr<Value> x = n.input(0), slope = n.input(1);
  if (failed(x) || failed(slope))
    return failure();
  // Before opset 7 a 1-D slope of C values is per channel (dimension 1);
  // since opset 7 it broadcasts numpy-style, so give it trailing 1s.
  auto tx = dyn_cast<RankedTensorType>(x->getType());
  auto ts = dyn_cast<RankedTensorType>(slope->getType());
  if (n.opset < 7 && tx && ts && tx.getRank() > 2 && ts.getRank() == 1 &&
      ts.getDimSize(0) > 1) {
    Ints shape(tx.getRank() - 1, 1);
    shape[0] = ts.getDimSize(0);
    auto type = RankedTensorType::get(shape, ts.getElementType());
    slope = n.create<ReshapeOp>(type, *slope, ints(n, shape), boolean(n, false))
                .getResult();
  }
  n.setOutput(0, n.create<PReluOp>(resultType(n), *x, *slope));
  return success();
}

LogicalResult convertHardSigmoid(NodeImporter &n) {
  return convertUnary<HardSigmoidOp>(n, f32(n, n.attrFloat("alpha", 0.2f)),
                                     f32(n, n.attrFloat("beta", 0.5f)));
}

/// The numpy broadcast of two ranked types (a dimension known on one side
/// and 1 or unknown on the other takes the known size), else unranked: the
/// type of an intermediate result of a chain of binary ops.
Type broadcastType(Type a, Type b) {
  auto ra = dyn_cast<RankedTensorType>(a), rb = dyn_cast<RankedTensorType>(b);
  if (!ra || !rb)
    return UnrankedTensorType::get(getElementTypeOrSelf(a));
  int64_t rank = std::max(ra.getRank(), rb.getRank());
  Ints dims(rank, 1);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t da =
        i < rank - ra.getRank() ? 1 : ra.getDimSize(i - (rank - ra.getRank()));
    int64_t db =
        i < rank - rb.getRank() ? 1 : rb.getDimSize(i - (rank - rb.getRank()));
    if (ShapedType::isDynamic(da) || ShapedType::isDynamic(db))
      dims[i] = da == 1                     ? db
                : db == 1                   ? da
                : ShapedType::isDynamic(da) ? db
                                            : da;
    else
      dims[i] = da == 1 ? db : da;
  }
  return RankedTensorType::get(dims, ra.getElementType());
}

/// Max, Min and Sum take one or more inputs: a chain of binary ops.
template <typename OpTy> LogicalResult convertVariadic(NodeImporter &n) {
  FailureOr<Value> acc = n.input(0);
  if (failed(acc))
    return failure();
  if (n.node.input_size() == 1)
    return convertUnary<IdentityOp>(n);
  for (int i = 1; i < n.node.input_size(); ++i) {
    FailureOr<Value> next = n.input(i);
    if (failed(next))
      return failure();
    Type type = i + 1 == n.node.input_size()
                    ? resultType(n)
                    : broadcastType(acc->getType(), next->getType());
    acc = n.create<OpTy>(type, *acc, *next).getResult();
  }
  n.setOutput(0, *acc);
  return success();
}

LogicalResult convertLayerNorm(NodeImporter &n) {
  if (n.outputUsed(1) || n.outputUsed(2))
    return n.unsupported("the Mean/InvStdDev outputs");
  FailureOr<Value> x = n.input(0), scale = n.input(1),
                   bias = optionalInput(n, 2);
  if (failed(x) || failed(scale) || failed(bias))
    return failure();
  n.setOutput(0, n.create<LayerNormOp>(resultType(n), *x, *scale, *bias,
                                       i64(n, n.attrInt("axis", -1)),
                                       f32(n, n.attrFloat("epsilon", 1e-5f))));
  return success();
}

LogicalResult convertIdentity(NodeImporter &n) {
  // Identity on a weight (PyTorch shares weights this way) is another name
  // for the same parameter; on a folded constant it is the same constant.
  if (n.aliasOutput(0, 0))
    return success();
  if (const ConstTensor *c = n.constInput(0)) {
    n.setConstOutput(0, *c);
    return success();
  }
  return convertUnary<IdentityOp>(n);
}

template <typename OpTy> LogicalResult convertSoftmax(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  int64_t axis = n.attrInt("axis", n.opset < 13 ? 1 : -1);
  bool coerce = false;
  if (n.opset < 13) {
    auto type = dyn_cast<RankedTensorType>(x->getType());
    int64_t rank = type ? type.getRank() : -1;
    coerce = rank < 0 || (axis < 0 ? axis + rank : axis) != rank - 1;
  }
  auto op = n.create<OpTy>(x->getType(), *x, i64(n, axis),
                           coerce ? n.builder().getUnitAttr() : UnitAttr());
  n.setOutput(0, op);
  return success();
}

/// Kernel, strides, dilations and pads of a pooling node.
struct PoolWindow {
  Ints kernel, strides, dilations, pads;
};

FailureOr<PoolWindow> poolWindow(NodeImporter &n) {
  std::optional<Ints> kernel = n.attrInts("kernel_shape");
  if (!kernel)
    return n.fail("missing required attribute 'kernel_shape'");
  PoolWindow w;
  w.kernel = *kernel;
  w.strides = intsOr(n, "strides", kernel->size(), 1);
  w.dilations = intsOr(n, "dilations", kernel->size(), 1);
  FailureOr<Ints> pads =
      resolvePads(n, n.inputShape(0), w.kernel, w.strides, w.dilations);
  if (failed(pads))
    return failure();
  w.pads = *pads;
  return w;
}

LogicalResult convertMaxPool(NodeImporter &n) {
  if (n.outputUsed(1))
    return n.unsupported("the Indices output");
  FailureOr<Value> x = n.input(0);
  FailureOr<PoolWindow> w = poolWindow(n);
  if (failed(x) || failed(w))
    return failure();
  n.setOutput(0, n.create<MaxPoolOp>(resultType(n), *x, ints(n, w->kernel),
                                     ints(n, w->strides), ints(n, w->dilations),
                                     ints(n, w->pads),
                                     boolean(n, n.attrInt("ceil_mode", 0))));
  return success();
}

LogicalResult convertAveragePool(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<PoolWindow> w = poolWindow(n);
  if (failed(x) || failed(w))
    return failure();
  n.setOutput(0, n.create<AveragePoolOp>(
                     resultType(n), *x, ints(n, w->kernel), ints(n, w->strides),
                     ints(n, w->pads), boolean(n, n.attrInt("ceil_mode", 0)),
                     boolean(n, n.attrInt("count_include_pad", 0))));
  return success();
}

template <typename OpTy> LogicalResult convertGlobalPool(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  n.setOutput(0, n.create<OpTy>(resultType(n), *x));
  return success();
}

LogicalResult convertBatchNorm(NodeImporter &n) {
  if (n.attrInt("training_mode", 0) != 0)
    return convertBatchNormTraining(n);
  if (n.attrInt("spatial", 1) != 1)
    return n.unsupported("spatial=0");
  for (unsigned i = 1; i < n.numOutputs(); ++i)
    if (n.outputUsed(i))
      return n.unsupported("the running-statistics outputs");
  FailureOr<SmallVector<Value>> operands = n.inputs(5);
  if (failed(operands))
    return failure();
  SmallVector<Value> &in = *operands;
  n.setOutput(0, n.create<BatchNormOp>(resultType(n), in[0], in[1], in[2],
                                       in[3], in[4],
                                       f32(n, n.attrFloat("epsilon", 1e-5f)),
                                       f32(n, n.attrFloat("momentum", 0.9f))));
  return success();
}

/// ArgMax and ArgMin: the result type from the input's where ONNX inferred
/// none.
template <typename OpTy> LogicalResult convertArg(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  int64_t axis = n.attrInt("axis", 0);
  bool keep = n.attrInt("keepdims", 1) != 0;
  Type i64Type = n.builder().getI64Type();
  Type type = resultType(n);
  if (auto in = dyn_cast<RankedTensorType>(x->getType());
      in && !isa<RankedTensorType>(type) && axis >= -in.getRank() &&
      axis < in.getRank()) {
    int64_t a = axis < 0 ? axis + in.getRank() : axis;
    Ints shape;
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (d != a)
        shape.push_back(in.getDimSize(d));
      else if (keep)
        shape.push_back(1);
    type = RankedTensorType::get(shape, i64Type);
  }
  n.setOutput(
      0, n.create<OpTy>(type, *x, i64(n, axis), boolean(n, keep),
                        boolean(n, n.attrInt("select_last_index", 0) != 0)));
  return success();
}

LogicalResult convertLRN(NodeImporter &n) {
  if (!n.hasAttr("size"))
    return n.fail("missing required attribute 'size'");
  return convertUnary<LRNOp>(
      n, i64(n, n.attrInt("size", 1)), f32(n, n.attrFloat("alpha", 1e-4f)),
      f32(n, n.attrFloat("beta", 0.75f)), f32(n, n.attrFloat("bias", 1.0f)));
}

LogicalResult convertFlatten(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  n.setOutput(
      0, n.create<FlattenOp>(resultType(n), *x, i64(n, n.attrInt("axis", 1))));
  return success();
}

/// The entries of a 1-D i64 shape operand that are known at import time,
/// kDynamic for the others: those of constants, also inside a Concat along
/// axis 0 of constants and computed parts. Swin's window reshapes build
/// their targets so, the batch divided by the window count before constant
/// window, head and token counts.
std::optional<Ints> knownEntries(Value shape) {
  auto type = dyn_cast<RankedTensorType>(shape.getType());
  if (!type || type.getRank() != 1 || type.isDynamicDim(0))
    return std::nullopt;
  auto append = [](Value part, Ints &entries) {
    auto t = dyn_cast<RankedTensorType>(part.getType());
    if (!t || t.getRank() != 1 || t.isDynamicDim(0))
      return false;
    auto constant = part.getDefiningOp<ConstantOp>();
    if (!constant) {
      entries.append(t.getDimSize(0), ShapedType::kDynamic);
      return true;
    }
    auto values = dyn_cast<DenseIntElementsAttr>(constant.getValue());
    if (!values)
      return false;
    for (const APInt &v : values)
      entries.push_back(v.getSExtValue());
    return true;
  };
  Ints entries;
  auto concat = shape.getDefiningOp<ConcatOp>();
  if (concat && concat.getAxis() == 0) {
    for (Value part : concat.getInputs())
      if (!append(part, entries))
        return std::nullopt;
  } else if (!append(shape, entries)) {
    return std::nullopt;
  }
  if (static_cast<int64_t>(entries.size()) != type.getDimSize(0))
    return std::nullopt;
  return entries;
}

/// `type` (the result type of a reshape of `input` to `shape`, computed at
/// run time) with the dimensions that the known entries of `shape` fix: a
/// positive entry is the dimension, a 0 copies the input's (unless
/// `allowzero`). Later ops, and the runtime's fusions, then see the window
/// and head counts of a reshape whose only unknown is the batch. Entries
/// past 2^31 stay unknown: no real model has them, and a hostile one's
/// would only feed overflowing products to later shape checks.
Type refineReshapeType(Type type, Value input, Value shape, bool allowzero) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  std::optional<Ints> entries = knownEntries(shape);
  if (!ranked || !entries || ranked.getRank() != (int64_t)entries->size())
    return type;
  auto in = dyn_cast<RankedTensorType>(input.getType());
  Ints dims(ranked.getShape());
  for (auto [i, e] : llvm::enumerate(*entries)) {
    if (!ShapedType::isDynamic(dims[i]))
      continue;
    if ((e > 0 && e <= std::numeric_limits<int32_t>::max()) ||
        (e == 0 && allowzero))
      dims[i] = e;
    else if (e == 0 && in && (int64_t)i < in.getRank())
      dims[i] = in.getDimSize(i);
  }
  return RankedTensorType::get(dims, ranked.getElementType());
}

LogicalResult convertReshape(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  if (n.opset < 5) {
    std::optional<Ints> attr = n.attrInts("shape");
    if (!attr)
      return n.fail("missing required attribute 'shape'");
    n.setOutput(0, n.create<ReshapeOp>(resultType(n), *x, ints(n, *attr),
                                       boolean(n, false)));
    return success();
  }
  bool allowzero = n.opset >= 14 && n.attrInt("allowzero", 0) != 0;
  const ConstTensor *shape = n.constInput(1);
  if (shape && shape->isFloat())
    return n.fail("'shape' must be an INT64 tensor");
  FailureOr<Ints> target =
      shape ? resolveReshapeTarget(n, *shape) : FailureOr<Ints>(failure());
  if (failed(target)) {
    // Computed at run time: the target depends on a dynamic dimension.
    FailureOr<Value> computed = n.input(1);
    if (failed(computed))
      return failure();
    Type type = resultType(n);
    auto length = dyn_cast<RankedTensorType>(computed->getType());
    if (!isa<RankedTensorType>(type) && length && length.getRank() == 1 &&
        !length.isDynamicDim(0))
      type = RankedTensorType::get(
          Ints(length.getDimSize(0), ShapedType::kDynamic),
          getElementTypeOrSelf(x->getType()));
    type = refineReshapeType(type, *x, *computed, allowzero);
    n.setOutput(0, n.create<DynamicReshapeOp>(type, *x, *computed,
                                              boolean(n, allowzero)));
    return success();
  }
  n.setOutput(0, n.create<ReshapeOp>(resultType(n), *x, ints(n, *target),
                                     boolean(n, allowzero)));
  return success();
}

LogicalResult convertTranspose(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Ints perm;
  if (std::optional<Ints> attr = n.attrInts("perm")) {
    perm = *attr;
  } else {
    auto type = dyn_cast<RankedTensorType>(x->getType());
    if (!type)
      return n.fail("Transpose without 'perm' needs a ranked input");
    for (int64_t i = type.getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  }
  // The permuted input type where ONNX inferred none.
  Type type = resultType(n);
  if (auto in = dyn_cast<RankedTensorType>(x->getType());
      in && !isa<RankedTensorType>(type) &&
      int64_t(perm.size()) == in.getRank() &&
      llvm::all_of(perm,
                   [&](int64_t p) { return p >= 0 && p < in.getRank(); })) {
    Ints shape;
    for (int64_t p : perm)
      shape.push_back(in.getDimSize(p));
    type = RankedTensorType::get(shape, in.getElementType());
  }
  n.setOutput(0, n.create<TransposeOp>(type, *x, ints(n, perm)));
  return success();
}

LogicalResult convertConcat(NodeImporter &n) {
  if (!n.hasAttr("axis") && n.opset >= 4)
    return n.fail("missing required attribute 'axis'");
  SmallVector<Value> inputs;
  for (int i = 0; i < n.node.input_size(); ++i) {
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  n.setOutput(0, n.create<ConcatOp>(resultType(n), inputs,
                                    i64(n, n.attrInt("axis", 1))));
  return success();
}

LogicalResult convertSplit(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  int64_t axis = n.attrInt("axis", 0);
  std::optional<Ints> split;
  if (n.opset < 13 && !(n.opset < 2 && n.hasInput(1))) {
    split = n.attrInts("split");
  } else if (n.hasInput(1)) {
    FailureOr<Ints> v = n.constInts(1, "split");
    if (failed(v))
      return failure();
    split = *v;
  }
  unsigned parts = n.numOutputs();
  if (!split) {
    std::optional<Ints> shape = n.inputShape(0);
    int64_t rank = shape ? shape->size() : 0;
    int64_t a = axis < 0 ? axis + rank : axis;
    if (!shape || a < 0 || a >= rank || ShapedType::isDynamic((*shape)[a]) ||
        (*shape)[a] % parts != 0)
      return n.fail("an equal split needs a static axis size divisible by "
                    "the number of outputs");
    split = Ints(parts, (*shape)[a] / parts);
  }
  SmallVector<Type> types;
  for (unsigned i = 0; i < parts; ++i)
    types.push_back(resultType(n, i));
  auto op = n.create<SplitOp>(types, *x, i64(n, axis), ints(n, *split));
  for (unsigned i = 0; i < parts; ++i)
    n.setOutput(i, op.getResult(i));
  return success();
}

LogicalResult convertSlice(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Ints starts, ends, axes, steps;
  if (n.opset < 10) {
    std::optional<Ints> s = n.attrInts("starts"), e = n.attrInts("ends");
    if (!s || !e)
      return n.fail("missing required attribute 'starts' or 'ends'");
    starts = *s;
    ends = *e;
    if (std::optional<Ints> a = n.attrInts("axes"))
      axes = *a;
  } else {
    for (unsigned i = 1; i <= 4; ++i)
      if (n.hasInput(i) && (!n.constInput(i) || !n.constInput(i)->allKnown()))
        return convertDynamicSlice(n);
    FailureOr<Ints> s = n.constInts(1, "starts"), e = n.constInts(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (n.hasInput(3)) {
      FailureOr<Ints> a = n.constInts(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (n.hasInput(4)) {
      FailureOr<Ints> st = n.constInts(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (auto type = dyn_cast<RankedTensorType>(x->getType()))
    for (int64_t &a : axes)
      if (a < 0)
        a += type.getRank();
  n.setOutput(0,
              n.create<SliceOp>(resultType(n), *x, ints(n, starts),
                                ints(n, ends), ints(n, axes), ints(n, steps)));
  return success();
}

LogicalResult convertSqueeze(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<Ints>> axes = axesAttrOrInput(n, 13, 1);
  if (failed(x) || failed(axes))
    return failure();
  Ints resolved;
  if (*axes) {
    resolved = **axes;
  } else {
    // No axes: every dimension of size 1, which must be known now.
    std::optional<Ints> shape = n.inputShape(0);
    if (!shape || llvm::any_of(*shape, ShapedType::isDynamic))
      return n.fail("Squeeze without 'axes' needs a static input shape");
    for (auto [i, d] : llvm::enumerate(*shape))
      if (d == 1)
        resolved.push_back(i);
  }
  n.setOutput(0, n.create<SqueezeOp>(resultType(n), *x, ints(n, resolved)));
  return success();
}

LogicalResult convertUnsqueeze(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<Ints>> axes = axesAttrOrInput(n, 13, 1);
  if (failed(x) || failed(axes))
    return failure();
  if (!*axes)
    return n.fail("missing 'axes'");
  n.setOutput(0, n.create<UnsqueezeOp>(resultType(n), *x, ints(n, **axes)));
  return success();
}

LogicalResult convertPad(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Ints pads;
  double value = 0.0;
  if (n.opset < 11) {
    std::optional<Ints> attr = n.attrInts(n.opset < 2 ? "paddings" : "pads");
    if (!attr)
      return n.fail("missing required attribute 'pads'");
    pads = *attr;
    value = n.attrFloat("value", 0.0f);
  } else {
    for (unsigned i = 1; i <= 2; ++i)
      if (n.hasInput(i) && !n.constInput(i))
        return convertDynamicPad(n);
    FailureOr<Ints> p = n.constInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (n.hasInput(2)) {
      FailureOr<double> v = n.constScalar(2, "constant_value");
      if (failed(v))
        return failure();
      value = *v;
    }
  }
  // Exporters pad to a multiple of a window size that the image often is
  // already (Swin): no pads is the identity, not a copy.
  if (llvm::all_of(pads, [](int64_t p) { return p == 0; })) {
    n.setOutput(0, n.create<IdentityOp>(x->getType(), *x));
    return success();
  }
  n.setOutput(0, n.create<PadOp>(resultType(n), *x, ints(n, pads),
                                 n.builder().getStringAttr(
                                     n.attrString("mode", "constant")),
                                 f32(n, value)));
  return success();
}

LogicalResult convertGather(NodeImporter &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1);
  if (failed(data) || failed(indices))
    return failure();
  // data.shape[:axis] + indices.shape + data.shape[axis + 1:] where ONNX
  // inferred no type (ViT's class token, x[:, 0], of an untyped x).
  int64_t axis = n.attrInt("axis", 0);
  Type type = resultType(n);
  auto td = dyn_cast<RankedTensorType>(data->getType());
  auto ti = dyn_cast<RankedTensorType>(indices->getType());
  if (!isa<RankedTensorType>(type) && td && ti) {
    int64_t a = axis < 0 ? axis + td.getRank() : axis;
    if (a >= 0 && a < td.getRank()) {
      Ints shape(td.getShape().take_front(a));
      llvm::append_range(shape, ti.getShape());
      llvm::append_range(shape, td.getShape().drop_front(a + 1));
      type = RankedTensorType::get(shape, td.getElementType());
    }
  }
  n.setOutput(0, n.create<GatherOp>(type, *data, *indices, i64(n, axis)));
  return success();
}

/// What ReduceL1, ReduceL2, ReduceSumSquare and ReduceLogSum add around a
/// ReduceSum: an element-wise op before it (|x|, x * x) and after (sqrt,
/// log); none for the plain reductions.
enum class ReduceForm { Plain, Abs, Square, SquareSqrt, Log };

template <typename OpTy>
LogicalResult convertReduce(NodeImporter &n, int axesInputSince,
                            ReduceForm form = ReduceForm::Plain) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<Ints>> axes = axesAttrOrInput(n, axesInputSince, 1);
  if (failed(x) || failed(axes))
    return failure();
  bool noop = n.attrInt("noop_with_empty_axes", 0) != 0;
  if (noop && (!*axes || (*axes)->empty()) && form == ReduceForm::Plain)
    return convertUnary<IdentityOp>(n);
  if (noop && (!*axes || (*axes)->empty()))
    return n.unsupported("'noop_with_empty_axes' on " + n.node.op_type());
  // Where ONNX inferred no type: the input's, reduced axes kept as 1 (or
  // dropped).
  Type type = resultType(n);
  bool keep = n.attrInt("keepdims", 1) != 0;
  if (auto in = dyn_cast<RankedTensorType>(x->getType());
      in && !isa<RankedTensorType>(type)) {
    Ints reduced = axes->value_or(Ints());
    auto isReduced = [&](int64_t d) {
      return reduced.empty() || llvm::any_of(reduced, [&](int64_t a) {
               return (a < 0 ? a + in.getRank() : a) == d;
             });
    };
    Ints shape;
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (!isReduced(d))
        shape.push_back(in.getDimSize(d));
      else if (keep)
        shape.push_back(1);
    type = RankedTensorType::get(shape, in.getElementType());
  }
  Value in = *x;
  if (form == ReduceForm::Abs)
    in = n.create<AbsOp>(in.getType(), in);
  else if (form == ReduceForm::Square || form == ReduceForm::SquareSqrt)
    in = n.create<MulOp>(in.getType(), in, in);
  Value y = n.create<OpTy>(type, in, ints(n, axes->value_or(Ints())),
                           boolean(n, keep));
  if (form == ReduceForm::SquareSqrt)
    y = n.create<SqrtOp>(type, y);
  else if (form == ReduceForm::Log)
    y = n.create<LogOp>(type, y);
  n.setOutput(0, y);
  return success();
}

LogicalResult convertReduceMean(NodeImporter &n) {
  return convertReduce<ReduceMeanOp>(n, /*axes input since opset*/ 18);
}
LogicalResult convertReduceSum(NodeImporter &n) {
  return convertReduce<ReduceSumOp>(n, 13);
}
LogicalResult convertReduceL1(NodeImporter &n) {
  return convertReduce<ReduceSumOp>(n, 18, ReduceForm::Abs);
}
LogicalResult convertReduceL2(NodeImporter &n) {
  return convertReduce<ReduceSumOp>(n, 18, ReduceForm::SquareSqrt);
}
LogicalResult convertReduceSumSquare(NodeImporter &n) {
  return convertReduce<ReduceSumOp>(n, 18, ReduceForm::Square);
}
LogicalResult convertReduceLogSum(NodeImporter &n) {
  return convertReduce<ReduceSumOp>(n, 18, ReduceForm::Log);
}
/// log(sum(exp(x))) as m + log(sum(exp(x - m))), m the maximum over the
/// same axes (kept as 1), so that large values do not overflow; the axes
/// squeezed after where keepdims is 0.
LogicalResult convertReduceLogSumExp(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  FailureOr<std::optional<Ints>> axes = axesAttrOrInput(n, 18, 1);
  if (failed(x) || failed(axes))
    return failure();
  auto in = dyn_cast<RankedTensorType>(x->getType());
  if (!in)
    return n.unsupported("ReduceLogSumExp of a tensor of unknown rank");
  if (n.attrInt("noop_with_empty_axes", 0) != 0 && (!*axes || (*axes)->empty()))
    return n.unsupported("'noop_with_empty_axes' on ReduceLogSumExp");
  Ints reduced;
  for (int64_t a : axes->value_or(Ints())) {
    if (a < -in.getRank() || a >= in.getRank())
      return n.fail("axis " + Twine(a) + " is out of range for rank " +
                    Twine(in.getRank()));
    reduced.push_back(a < 0 ? a + in.getRank() : a);
  }
  if (reduced.empty())
    for (int64_t d = 0; d < in.getRank(); ++d)
      reduced.push_back(d);
  llvm::sort(reduced);
  reduced.erase(std::unique(reduced.begin(), reduced.end()), reduced.end());
  Ints kept(in.getShape());
  for (int64_t a : reduced)
    kept[a] = 1;
  auto keptType = RankedTensorType::get(kept, in.getElementType());
  Value m =
      n.create<ReduceMaxOp>(keptType, *x, ints(n, reduced), boolean(n, true));
  Value e = n.create<ExpOp>(in, n.create<SubOp>(in, *x, m));
  Value s =
      n.create<ReduceSumOp>(keptType, e, ints(n, reduced), boolean(n, true));
  Value y = n.create<AddOp>(keptType, n.create<LogOp>(keptType, s), m);
  if (n.attrInt("keepdims", 1) == 0) {
    Ints rest;
    for (int64_t d = 0; d < in.getRank(); ++d)
      if (!llvm::is_contained(reduced, d))
        rest.push_back(in.getDimSize(d));
    y = n.create<SqueezeOp>(RankedTensorType::get(rest, in.getElementType()), y,
                            ints(n, reduced));
  }
  n.setOutput(0, y);
  return success();
}

LogicalResult convertReduceMax(NodeImporter &n) {
  return convertReduce<ReduceMaxOp>(n, 18);
}
LogicalResult convertReduceMin(NodeImporter &n) {
  return convertReduce<ReduceMinOp>(n, 18);
}

LogicalResult convertShape(NodeImporter &n) {
  // Reached only when tryFold could not evaluate it.
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  if (!isa<RankedTensorType>(x->getType()))
    return n.fail("Shape of a tensor of unknown rank is not supported");
  n.setOutput(0, n.create<ShapeOp>(resultType(n), *x,
                                   i64(n, n.attrInt("start", 0)),
                                   i64(n, n.attrInt("end", INT64_MAX))));
  return success();
}

LogicalResult convertConstant(NodeImporter &n) {
  // Reached only for a Constant too large to fold: a weight reference.
  const onnx::TensorProto *t = n.attrTensor("value");
  if (!t)
    return n.fail("only the 'value' form of a large Constant is supported");
  n.registerLargeConstant(0, *t);
  return success();
}

const llvm::StringMap<NodeConverter> &converters() {
  static const llvm::StringMap<NodeConverter> table = {
      {"Conv", convertConv},
      {"ConvTranspose", convertConvTranspose},
      {"Gemm", convertGemm},
      {"MatMul", convertBinary<MatMulOp>},
      {"Add", convertBinary<AddOp>},
      {"Sub", convertBinary<SubOp>},
      {"Mul", convertBinary<MulOp>},
      {"Div", convertBinary<DivOp>},
      {"Pow", convertBinary<PowOp>},
      {"PRelu", convertPRelu},
      {"Max", convertVariadic<MaxOp>},
      {"Min", convertVariadic<MinOp>},
      {"Relu", convertPlainUnary<ReluOp>},
      {"HardSigmoid", convertHardSigmoid},
      {"HardSwish", convertPlainUnary<HardSwishOp>},
      {"Softplus", convertPlainUnary<SoftplusOp>},
      {"Softsign", convertPlainUnary<SoftsignOp>},
      {"Erf", convertPlainUnary<ErfOp>},
      {"Abs", convertPlainUnary<AbsOp>},
      {"Neg", convertPlainUnary<NegOp>},
      {"Exp", convertPlainUnary<ExpOp>},
      {"Log", convertPlainUnary<LogOp>},
      {"Sqrt", convertPlainUnary<SqrtOp>},
      {"Reciprocal", convertPlainUnary<ReciprocalOp>},
      {"Floor", convertPlainUnary<FloorOp>},
      {"Ceil", convertPlainUnary<CeilOp>},
      {"LayerNormalization", convertLayerNorm},
      {"InstanceNormalization", convertInstanceNorm},
      {"LSTM", convertLSTM},
      {"GRU", convertGRU},
      {"RNN", convertRNN},
      {"ReduceMax", convertReduceMax},
      {"ReduceL1", convertReduceL1},
      {"ReduceL2", convertReduceL2},
      {"ReduceSumSquare", convertReduceSumSquare},
      {"ReduceLogSum", convertReduceLogSum},
      {"ReduceLogSumExp", convertReduceLogSumExp},
      {"Sum", convertVariadic<AddOp>},
      {"ReduceMin", convertReduceMin},
      {"Sigmoid", convertPlainUnary<SigmoidOp>},
      {"Tanh", convertPlainUnary<TanhOp>},
      {"LeakyRelu", convertLeakyRelu},
      {"Elu", convertElu},
      {"Selu", convertSelu},
      {"Clip", convertClip},
      {"Dropout", convertDropout},
      {"Identity", convertIdentity},
      {"Softmax", convertSoftmax<SoftmaxOp>},
      {"LogSoftmax", convertSoftmax<LogSoftmaxOp>},
      {"MaxPool", convertMaxPool},
      {"AveragePool", convertAveragePool},
      {"GlobalAveragePool", convertGlobalPool<GlobalAveragePoolOp>},
      {"GlobalMaxPool", convertGlobalPool<GlobalMaxPoolOp>},
      {"BatchNormalization", convertBatchNorm},
      {"LRN", convertLRN},
      {"ArgMax", convertArg<ArgMaxOp>},
      {"ArgMin", convertArg<ArgMinOp>},
      {"Flatten", convertFlatten},
      {"Reshape", convertReshape},
      {"Transpose", convertTranspose},
      {"DepthToSpace", convertDepthToSpace},
      {"SpaceToDepth", convertDepthToSpace},
      {"Concat", convertConcat},
      {"Split", convertSplit},
      {"Slice", convertSlice},
      {"Squeeze", convertSqueeze},
      {"Unsqueeze", convertUnsqueeze},
      {"Pad", convertPad},
      {"Resize", convertResize},
      {"Upsample", convertResize},
      {"Gather", convertGather},
      {"ReduceMean", convertReduceMean},
      {"ReduceSum", convertReduceSum},
      {"Shape", convertShape},
      {"Constant", convertConstant},
  };
  return table;
}

} // namespace

FailureOr<SmallVector<int64_t>>
mlir::hps::onnx_import::resolveReshapeTarget(NodeImporter &n,
                                             const ConstTensor &shape) {
  bool allowzero = n.opset >= 14 && n.attrInt("allowzero", 0) != 0;
  // A dynamic dimension taken from a Shape op that stays where it was is
  // written as 0 ("copy the input dimension").
  std::optional<SmallVector<SymInt>> inDims = n.symbolicShape(n.node.input(0));
  // One other dynamic dimension can be inferred (-1) from the element count.
  Ints target;
  std::optional<size_t> inferred;
  for (auto [i, v] : llvm::enumerate(shape.ints)) {
    if (v.isKnown()) {
      target.push_back(v.value);
      continue;
    }
    bool sameDim = inDims && i < inDims->size() &&
                   (*inDims)[i].symbol == v.symbol && !allowzero;
    if (!sameDim && inferred)
      return n.fail("target dimensions " + llvm::Twine(*inferred) + " and " +
                    llvm::Twine(i) + " are dynamic and not the input's");
    if (!sameDim)
      inferred = i;
    target.push_back(sameDim ? 0 : -1);
  }
  if (inferred && llvm::count(target, -1) > 1)
    return n.fail("target dimension " + llvm::Twine(*inferred) +
                  " is dynamic beside a -1");
  if (inferred && allowzero && llvm::is_contained(target, 0))
    return n.fail("target dimension " + llvm::Twine(*inferred) +
                  " is dynamic beside a 0 with 'allowzero'");
  return target;
}

NodeConverter mlir::hps::onnx_import::lookupConverter(llvm::StringRef opType) {
  auto it = converters().find(opType);
  if (it != converters().end())
    return it->second;
  it = dynamicShapeConverters().find(opType);
  return it == dynamicShapeConverters().end() ? nullptr : it->second;
}
