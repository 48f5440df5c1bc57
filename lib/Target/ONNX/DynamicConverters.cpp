//===- DynamicConverters.cpp - ops of run-time shapes and masks -----------===//
//
// Converters for what transformer exports compute at run time: index
// tensors (Range, ConstantOfShape), broadcasts to computed shapes (Expand),
// masks (comparisons, Not/And/Or/Xor, Where, ScatterND), Cast, Mod, Trilu
// and CumSum. Shape arithmetic on constants never gets here: tryFold
// evaluates it first, and a value that depends on a dynamic dimension
// reaches these converters only when something needs it as a tensor
// (GraphImporter::materialize).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "heterps/Dialect/HPS/HPS.h"

using namespace mlir;
using namespace mlir::hps;
using namespace mlir::hps::onnx_import;
using onnx::TensorProto;

namespace {

/// Output `i`'s inferred type, or a ranked one of `rank` dynamic dimensions
/// when ONNX inferred none (plans need ranked values).
Type typeOrRank(NodeImporter &n, Type elem, std::optional<int64_t> rank,
                unsigned i = 0) {
  Type t = n.outputType(i, elem);
  if (isa<RankedTensorType>(t) || !rank)
    return t;
  return RankedTensorType::get(
      SmallVector<int64_t>(*rank, ShapedType::kDynamic), elem);
}

/// The static length of a 1-D shape operand, if known.
std::optional<int64_t> lengthOf(Value shape) {
  auto t = dyn_cast<RankedTensorType>(shape.getType());
  if (!t || t.getRank() != 1 || t.isDynamicDim(0))
    return std::nullopt;
  return t.getDimSize(0);
}

/// The runtime's ONNX data type for an MLIR element type, or 0.
int64_t onnxTypeOf(Type elem) {
  if (elem.isF32())
    return TensorProto::FLOAT;
  if (elem.isSignlessInteger(64))
    return TensorProto::INT64;
  if (elem.isSignlessInteger(1))
    return TensorProto::BOOL;
  return 0;
}

/// The runtime computes these ops on f32, i64 and bool tensors only.
LogicalResult checkRuntimeTypes(NodeImporter &n, ArrayRef<Value> values) {
  for (Value v : values) {
    Type elem = getElementTypeOrSelf(v.getType());
    if (!onnxTypeOf(elem)) {
      std::string name;
      llvm::raw_string_ostream(name) << elem;
      return n.unsupported(n.node.op_type() + " of " + name +
                           " tensors (f32, i64 and i1 are supported)");
    }
  }
  return success();
}

LogicalResult convertRange(NodeImporter &n) {
  FailureOr<Value> start = n.input(0), limit = n.input(1), delta = n.input(2);
  if (failed(start) || failed(limit) || failed(delta))
    return failure();
  Type elem = getElementTypeOrSelf(start->getType());
  if (failed(checkRuntimeTypes(n, {*start, *limit, *delta})))
    return failure();
  n.setOutput(
      0, n.create<RangeOp>(typeOrRank(n, elem, 1), *start, *limit, *delta));
  return success();
}

LogicalResult convertConstantOfShape(NodeImporter &n) {
  FailureOr<Value> shape = n.input(0);
  if (failed(shape))
    return failure();
  double value = 0;
  int32_t type = TensorProto::FLOAT;
  if (const TensorProto *t = n.attrTensor("value")) {
    llvm::Expected<ConstTensor> v = readTensor(*t, n.modelDir(), 1);
    if (!v)
      return n.fail("attribute 'value': " + llvm::toString(v.takeError()));
    if (v->numElements() != 1)
      return n.fail("attribute 'value' must hold one element");
    type = v->elemType;
    value = v->isFloat() ? v->floats[0] : v->ints[0].value;
  }
  Type elem = convertElementType(type, n.context());
  if (!elem || !onnxTypeOf(elem))
    return n.unsupported("ConstantOfShape of " + dataTypeName(type));
  n.setOutput(0, n.create<ConstantOfShapeOp>(
                     typeOrRank(n, elem, lengthOf(*shape)), *shape,
                     n.builder().getF32FloatAttr(value),
                     n.builder().getI64IntegerAttr(onnxTypeOf(elem))));
  return success();
}

LogicalResult convertExpand(NodeImporter &n) {
  FailureOr<Value> x = n.input(0), shape = n.input(1);
  if (failed(x) || failed(shape) || failed(checkRuntimeTypes(n, {*x})))
    return failure();
  Type elem = getElementTypeOrSelf(x->getType());
  std::optional<int64_t> rank = lengthOf(*shape);
  if (auto in = dyn_cast<RankedTensorType>(x->getType()); in && rank)
    rank = std::max(*rank, in.getRank());
  n.setOutput(0, n.create<ExpandOp>(typeOrRank(n, elem, rank), *x, *shape));
  return success();
}

/// Rank of the broadcast of `values`, when all are ranked.
std::optional<int64_t> broadcastRank(ArrayRef<Value> values) {
  int64_t rank = 0;
  for (Value v : values) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return std::nullopt;
    rank = std::max(rank, t.getRank());
  }
  return rank;
}

template <typename OpTy> LogicalResult convertCompare(NodeImporter &n) {
  FailureOr<Value> a = n.input(0), b = n.input(1);
  if (failed(a) || failed(b) || failed(checkRuntimeTypes(n, {*a, *b})))
    return failure();
  Type i1 = n.builder().getI1Type();
  n.setOutput(
      0, n.create<OpTy>(typeOrRank(n, i1, broadcastRank({*a, *b})), *a, *b));
  return success();
}

LogicalResult convertNot(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x) || failed(checkRuntimeTypes(n, {*x})))
    return failure();
  n.setOutput(0, n.create<NotOp>(x->getType(), *x));
  return success();
}

LogicalResult convertWhere(NodeImporter &n) {
  FailureOr<Value> c = n.input(0), x = n.input(1), y = n.input(2);
  if (failed(c) || failed(x) || failed(y) ||
      failed(checkRuntimeTypes(n, {*c, *x, *y})))
    return failure();
  Type elem = getElementTypeOrSelf(x->getType());
  n.setOutput(
      0, n.create<WhereOp>(typeOrRank(n, elem, broadcastRank({*c, *x, *y})), *c,
                           *x, *y));
  return success();
}

LogicalResult convertTrilu(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x) || failed(checkRuntimeTypes(n, {*x})))
    return failure();
  Value k;
  if (n.hasInput(1)) {
    FailureOr<Value> v = n.input(1);
    if (failed(v))
      return failure();
    k = *v;
  }
  n.setOutput(0, n.create<TriluOp>(
                     x->getType(), *x, k,
                     n.builder().getBoolAttr(n.attrInt("upper", 1) != 0)));
  return success();
}

LogicalResult convertCumSum(NodeImporter &n) {
  FailureOr<Value> x = n.input(0), axis = n.input(1);
  if (failed(x) || failed(axis) || failed(checkRuntimeTypes(n, {*x, *axis})))
    return failure();
  n.setOutput(0, n.create<CumSumOp>(
                     x->getType(), *x, *axis,
                     n.builder().getBoolAttr(n.attrInt("exclusive", 0) != 0),
                     n.builder().getBoolAttr(n.attrInt("reverse", 0) != 0)));
  return success();
}

LogicalResult convertMod(NodeImporter &n) {
  FailureOr<Value> a = n.input(0), b = n.input(1);
  if (failed(a) || failed(b) || failed(checkRuntimeTypes(n, {*a, *b})))
    return failure();
  Type elem = getElementTypeOrSelf(a->getType());
  if (elem.isInteger(1))
    return n.unsupported("Mod of bool tensors");
  bool fmod = n.attrInt("fmod", 0) != 0;
  if (!fmod && !elem.isInteger(64))
    return n.fail("Mod of floats needs fmod=1 (ONNX)");
  n.setOutput(0, n.create<ModOp>(typeOrRank(n, elem, broadcastRank({*a, *b})),
                                 *a, *b, n.builder().getBoolAttr(fmod)));
  return success();
}

LogicalResult convertScatterND(NodeImporter &n) {
  FailureOr<Value> data = n.input(0), indices = n.input(1),
                   updates = n.input(2);
  if (failed(data) || failed(indices) || failed(updates) ||
      failed(checkRuntimeTypes(n, {*data, *indices, *updates})))
    return failure();
  if (getElementTypeOrSelf(data->getType()).isInteger(1))
    return n.unsupported("ScatterND of bool tensors");
  n.setOutput(
      0, n.create<ScatterNDOp>(
             data->getType(), *data, *indices, *updates,
             n.builder().getStringAttr(n.attrString("reduction", "none"))));
  return success();
}

LogicalResult convertCast(NodeImporter &n) {
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  Type from = getElementTypeOrSelf(x->getType());
  int32_t target = castTarget(n);
  Type to = convertElementType(target, n.context());
  if (from == to) {
    n.setOutput(0, n.create<IdentityOp>(x->getType(), *x));
    return success();
  }
  if (failed(checkRuntimeTypes(n, {*x})))
    return failure();
  if (!to || !onnxTypeOf(to))
    return n.unsupported("Cast to " + dataTypeName(target) +
                         " (FLOAT, INT64 and BOOL are supported)");
  Type type = to;
  if (auto in = dyn_cast<RankedTensorType>(x->getType()))
    type = RankedTensorType::get(in.getShape(), to);
  else
    type = UnrankedTensorType::get(to);
  n.setOutput(0, n.create<CastOp>(
                     type, *x, n.builder().getI64IntegerAttr(onnxTypeOf(to))));
  return success();
}

} // namespace

LogicalResult mlir::hps::onnx_import::convertDynamicSlice(NodeImporter &n) {
  FailureOr<Value> x = n.input(0), starts = n.input(1), ends = n.input(2);
  if (failed(x) || failed(starts) || failed(ends))
    return failure();
  std::optional<int64_t> count = lengthOf(*starts);
  auto defaults = [&](unsigned i, bool iota) -> FailureOr<Value> {
    if (n.hasInput(i))
      return n.input(i);
    if (!count)
      return n.unsupported("Slice with run-time starts of unknown length and "
                           "no axes or steps");
    SmallVector<int64_t> v(*count, 1);
    if (iota)
      for (int64_t k = 0; k < *count; ++k)
        v[k] = k;
    auto type = RankedTensorType::get({*count}, n.builder().getI64Type());
    return n.create<ConstantOp>(DenseElementsAttr::get(type, ArrayRef(v)))
        .getResult();
  };
  FailureOr<Value> axes = defaults(3, true), steps = defaults(4, false);
  if (failed(axes) || failed(steps))
    return failure();
  Type elem = getElementTypeOrSelf(x->getType());
  std::optional<int64_t> rank;
  if (auto t = dyn_cast<RankedTensorType>(x->getType()))
    rank = t.getRank();
  n.setOutput(0, n.create<DynamicSliceOp>(typeOrRank(n, elem, rank), *x,
                                          *starts, *ends, *axes, *steps));
  return success();
}

LogicalResult mlir::hps::onnx_import::convertDynamicPad(NodeImporter &n) {
  FailureOr<Value> x = n.input(0), pads = n.input(1);
  if (failed(x) || failed(pads))
    return failure();
  if (!getElementTypeOrSelf(x->getType()).isF32())
    return n.unsupported("Pad of a non-f32 tensor with run-time pads");
  Value value;
  if (n.hasInput(2)) {
    FailureOr<Value> v = n.input(2);
    if (failed(v))
      return failure();
    value = *v;
  }
  if (n.hasInput(3))
    return n.unsupported("Pad's 'axes' input");
  n.setOutput(0,
              n.create<DynamicPadOp>(
                  n.outputType(0, getElementTypeOrSelf(x->getType())), *x,
                  *pads, value,
                  n.builder().getStringAttr(n.attrString("mode", "constant"))));
  return success();
}

const llvm::StringMap<NodeConverter> &
mlir::hps::onnx_import::dynamicShapeConverters() {
  static const llvm::StringMap<NodeConverter> table = {
      {"Range", convertRange},
      {"ConstantOfShape", convertConstantOfShape},
      {"Expand", convertExpand},
      {"Equal", convertCompare<EqualOp>},
      {"Less", convertCompare<LessOp>},
      {"Greater", convertCompare<GreaterOp>},
      {"LessOrEqual", convertCompare<LessOrEqualOp>},
      {"GreaterOrEqual", convertCompare<GreaterOrEqualOp>},
      {"And", convertCompare<AndOp>},
      {"Or", convertCompare<OrOp>},
      {"Xor", convertCompare<XorOp>},
      {"Not", convertNot},
      {"Where", convertWhere},
      {"Trilu", convertTrilu},
      {"CumSum", convertCumSum},
      {"Mod", convertMod},
      {"ScatterND", convertScatterND},
      {"Cast", convertCast},
      {"Einsum", convertEinsum},
  };
  return table;
}
