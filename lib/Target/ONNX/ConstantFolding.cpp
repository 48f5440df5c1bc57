//===- ConstantFolding.cpp - evaluate shape arithmetic at import time -----===//
//
// Exporters compute shapes inside the graph (Shape -> Gather -> Unsqueeze ->
// Concat -> Reshape). hps wants such values as attributes, so the importer
// evaluates these small integer computations. A dynamic dimension flows
// through as a symbol (ONNX shape inference's dim_param); Reshape turns a
// symbol that stays in place into 0, "copy the input dimension".
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::hps::onnx_import;
using onnx::TensorProto;

namespace {

/// Normalised axis into [0, rank], or -1.
int64_t normAxis(int64_t axis, int64_t rank) {
  if (axis < 0)
    axis += rank;
  return axis >= 0 && axis < rank ? axis : -1;
}

/// Value of a Constant node, or nullopt when it is too large (it becomes a
/// weight reference instead).
std::optional<ConstTensor> constantValue(NodeImporter &n) {
  ConstTensor out;
  auto scalarInt = [&](int64_t v, bool list) {
    out.elemType = TensorProto::INT64;
    out.ints.push_back({v, {}});
    if (list)
      out.shape.push_back(1);
  };
  if (const TensorProto *t = n.attrTensor("value")) {
    llvm::Expected<ConstTensor> v =
        readTensor(*t, n.modelDir(), n.inlineLimit());
    if (!v) {
      llvm::consumeError(v.takeError());
      return std::nullopt;
    }
    return *v;
  }
  if (n.hasAttr("value_float")) {
    out.elemType = TensorProto::FLOAT;
    out.floats.push_back(n.attrFloat("value_float", 0));
    return out;
  }
  if (n.hasAttr("value_int")) {
    scalarInt(n.attrInt("value_int", 0), false);
    return out;
  }
  if (std::optional<SmallVector<int64_t>> v = n.attrInts("value_ints")) {
    out.elemType = TensorProto::INT64;
    out.shape.push_back(v->size());
    for (int64_t x : *v)
      out.ints.push_back({x, {}});
    return out;
  }
  for (const auto &attr : n.node.attribute())
    if (attr.name() == "value_floats") {
      out.elemType = TensorProto::FLOAT;
      out.shape.push_back(attr.floats_size());
      out.floats.assign(attr.floats().begin(), attr.floats().end());
      return out;
    }
  return std::nullopt;
}

/// Shape (opset 15: with start/end) of input 0 as symbolic integers.
std::optional<ConstTensor> foldShape(NodeImporter &n) {
  std::optional<SmallVector<SymInt>> dims;
  if (std::optional<SmallVector<int64_t>> shape = n.inputShape(0);
      shape && llvm::none_of(*shape, ShapedType::isDynamic)) {
    dims.emplace();
    for (int64_t d : *shape)
      dims->push_back({d, {}});
  } else {
    dims = n.symbolicShape(n.node.input(0));
  }
  if (!dims)
    return std::nullopt;
  int64_t rank = dims->size();
  auto clampIndex = [&](int64_t v) {
    return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank);
  };
  int64_t start = clampIndex(n.attrInt("start", 0));
  int64_t end = clampIndex(n.attrInt("end", rank));
  ConstTensor out;
  out.elemType = TensorProto::INT64;
  for (int64_t i = start; i < end; ++i)
    out.ints.push_back((*dims)[i]);
  out.shape.push_back(out.ints.size());
  return out;
}

/// x mod y for y != 0: with `fmod` C's remainder (the dividend's sign),
/// else Python's (the divisor's).
int64_t modulo(int64_t x, int64_t y, bool fmod) {
  int64_t r = x % y;
  if (!fmod && r != 0 && (r < 0) != (y < 0))
    r += y;
  return r;
}

/// Element-wise integer arithmetic with scalar broadcasting.
std::optional<ConstTensor> foldArith(NodeImporter &n, const ConstTensor &a,
                                     const ConstTensor &b) {
  if (a.isFloat() || b.isFloat() || !a.allKnown() || !b.allKnown())
    return std::nullopt;
  int64_t na = a.numElements(), nb = b.numElements();
  // Empty operands (an empty one broadcast against a scalar read past its
  // end) and values that do not fill their shape stay unfolded.
  if (na == 0 || nb == 0 || static_cast<int64_t>(a.ints.size()) != na ||
      static_cast<int64_t>(b.ints.size()) != nb)
    return std::nullopt;
  if (na != nb && na != 1 && nb != 1)
    return std::nullopt;
  // The larger operand, or of two single elements the higher rank ([1]
  // minus a scalar is [1]).
  ConstTensor out =
      na > nb || (na == nb && a.shape.size() >= b.shape.size()) ? a : b;
  llvm::StringRef op = n.node.op_type();
  for (int64_t i = 0; i < std::max(na, nb); ++i) {
    int64_t x = a.ints[na == 1 ? 0 : i].value,
            y = b.ints[nb == 1 ? 0 : i].value;
    int64_t r;
    if (op == "Add")
      r = x + y;
    else if (op == "Sub")
      r = x - y;
    else if (op == "Mul")
      r = x * y;
    else if (y == 0)
      return std::nullopt;
    else if (y == -1) // INT64_MIN / -1 would trap: negate, wrapping
      r = op == "Div" ? int64_t(0 - uint64_t(x)) : 0;
    else if (op == "Div") // ONNX integer division truncates.
      r = x / y;
    else // Mod
      r = modulo(x, y, n.attrInt("fmod", 0) != 0);
    out.ints[i] = {r, {}};
  }
  return out;
}

std::optional<ConstTensor> foldGather(NodeImporter &n, const ConstTensor &data,
                                      const ConstTensor &indices) {
  if (data.shape.size() != 1 || indices.isFloat() || !indices.allKnown() ||
      normAxis(n.attrInt("axis", 0), 1) != 0)
    return std::nullopt;
  ConstTensor out;
  out.elemType = data.elemType;
  out.shape = indices.shape;
  int64_t size = data.shape[0];
  for (const SymInt &i : indices.ints) {
    int64_t k = i.value < 0 ? i.value + size : i.value;
    if (k < 0 || k >= size)
      return std::nullopt;
    if (data.isFloat())
      out.floats.push_back(data.floats[k]);
    else
      out.ints.push_back(data.ints[k]);
  }
  return out;
}

std::optional<ConstTensor> foldConcat(NodeImporter &n) {
  ConstTensor out;
  for (int i = 0; i < n.node.input_size(); ++i) {
    const ConstTensor *t = n.constInput(i);
    if (!t || t->shape.size() != 1 || t->isFloat())
      return std::nullopt;
    if (i == 0)
      out.elemType = t->elemType;
    out.ints.append(t->ints.begin(), t->ints.end());
  }
  out.shape.push_back(out.ints.size());
  return out;
}

/// Squeeze/Unsqueeze/Flatten-like ops that only change the shape.
std::optional<ConstTensor> foldReshapeLike(NodeImporter &n,
                                           const ConstTensor &in) {
  std::optional<SmallVector<int64_t>> outShape;
  llvm::StringRef op = n.node.op_type();
  SmallVector<int64_t> axes;
  if (auto a = n.attrInts("axes")) {
    axes = *a;
  } else if (n.hasInput(1)) {
    const ConstTensor *t = n.constInput(1);
    if (!t || !t->allKnown())
      return std::nullopt;
    for (const SymInt &v : t->ints)
      axes.push_back(v.value);
  }
  if (op == "Unsqueeze") {
    int64_t rank = in.shape.size() + axes.size();
    SmallVector<int64_t> shape;
    auto next = in.shape.begin();
    for (int64_t i = 0; i < rank; ++i) {
      bool inserted =
          llvm::any_of(axes, [&](int64_t a) { return normAxis(a, rank) == i; });
      shape.push_back(inserted ? 1 : *next++);
    }
    outShape = shape;
  } else { // Squeeze
    int64_t rank = in.shape.size();
    SmallVector<int64_t> shape;
    for (int64_t i = 0; i < rank; ++i) {
      bool removed =
          axes.empty() ? in.shape[i] == 1 : llvm::any_of(axes, [&](int64_t a) {
            return normAxis(a, rank) == i;
          });
      if (!removed)
        shape.push_back(in.shape[i]);
    }
    outShape = shape;
  }
  ConstTensor out = in;
  out.shape = *outShape;
  return out;
}

/// Row-major strides of `shape`.
SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

/// The elements of `in` at the index lists `picks` (one list per axis), in
/// row-major order: Slice and Transpose of small integer tensors.
ConstTensor pickElements(const ConstTensor &in,
                         ArrayRef<SmallVector<int64_t>> picks,
                         ArrayRef<int64_t> inStrides) {
  ConstTensor out;
  out.elemType = in.elemType;
  for (const SmallVector<int64_t> &p : picks)
    out.shape.push_back(p.size());
  int64_t count = 1;
  for (int64_t d : out.shape)
    count *= d;
  SmallVector<int64_t> index(out.shape.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d)
      offset += picks[d][index[d]] * inStrides[d];
    out.ints.push_back(in.ints[offset]);
    for (int64_t d = int64_t(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < out.shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

/// The values of a fully known 1-D integer input, or nullopt.
std::optional<SmallVector<int64_t>> knownInts(NodeImporter &n, unsigned i) {
  const ConstTensor *t = n.constInput(i);
  if (!t || t->isFloat() || t->shape.size() != 1 || !t->allKnown())
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const SymInt &v : t->ints)
    values.push_back(v.value);
  return values;
}

/// Slice with starts/ends/axes/steps inputs (opset 10+), any rank, negative
/// steps too (PyTorch's Pad export reverses its pads with one).
std::optional<ConstTensor> foldSlice(NodeImporter &n, const ConstTensor &in) {
  int64_t rank = in.shape.size();
  std::optional<SmallVector<int64_t>> starts = knownInts(n, 1),
                                      ends = knownInts(n, 2);
  if (n.opset < 10 || !starts || !ends || starts->size() != ends->size())
    return std::nullopt;
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  for (size_t i = 0; i < starts->size(); ++i)
    axes.push_back(i);
  if (n.hasInput(3)) {
    std::optional<SmallVector<int64_t>> given = knownInts(n, 3);
    if (!given || given->size() != starts->size())
      return std::nullopt;
    axes = *given;
  }
  if (n.hasInput(4)) {
    std::optional<SmallVector<int64_t>> given = knownInts(n, 4);
    if (!given || given->size() != starts->size())
      return std::nullopt;
    steps = *given;
  }
  SmallVector<SmallVector<int64_t>> picks(rank);
  for (int64_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < in.shape[d]; ++i)
      picks[d].push_back(i);
  SmallVector<bool> sliced(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normAxis(axes[i], rank), step = steps[i];
    if (axis < 0 || sliced[axis] || step == 0)
      return std::nullopt;
    sliced[axis] = true;
    int64_t size = in.shape[axis];
    auto clampIndex = [&](int64_t v, int64_t lo, int64_t hi) {
      return std::clamp<int64_t>(v < 0 ? v + size : v, lo, hi);
    };
    // ONNX: starts clamp to [0, size] going forward, [0, size - 1] going
    // back; ends to [0, size] and [-1, size - 1].
    int64_t start = step > 0 ? clampIndex((*starts)[i], 0, size)
                             : clampIndex((*starts)[i], 0, size - 1);
    int64_t end = step > 0 ? clampIndex((*ends)[i], 0, size)
                           : clampIndex((*ends)[i], -1, size - 1);
    picks[axis].clear();
    for (int64_t v = start; step > 0 ? v < end : v > end; v += step)
      picks[axis].push_back(v);
  }
  return pickElements(in, picks, stridesOf(in.shape));
}

std::optional<ConstTensor> foldTranspose(NodeImporter &n,
                                         const ConstTensor &in) {
  int64_t rank = in.shape.size();
  SmallVector<int64_t> perm;
  if (std::optional<SmallVector<int64_t>> given = n.attrInts("perm"))
    perm = *given;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  SmallVector<bool> seen(rank, false);
  if (int64_t(perm.size()) != rank)
    return std::nullopt;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return std::nullopt;
    seen[p] = true;
  }
  SmallVector<int64_t> inStrides = stridesOf(in.shape), strides;
  SmallVector<SmallVector<int64_t>> picks;
  for (int64_t p : perm) {
    strides.push_back(inStrides[p]);
    picks.emplace_back();
    for (int64_t i = 0; i < in.shape[p]; ++i)
      picks.back().push_back(i);
  }
  return pickElements(in, picks, strides);
}

/// Reshape of a known tensor to a known shape (0 copies the input's
/// dimension unless `allowzero`, -1 is inferred).
std::optional<ConstTensor> foldReshape(NodeImporter &n, const ConstTensor &in) {
  std::optional<SmallVector<int64_t>> target = knownInts(n, 1);
  if (!target)
    return std::nullopt;
  bool allowZero = n.attrInt("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(*target)) {
    if (d == 0 && !allowZero) {
      if (i >= in.shape.size())
        return std::nullopt;
      d = in.shape[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        return std::nullopt;
      inferred = i;
    } else if (d < 0 || llvm::MulOverflow(known, d, known)) {
      // Negative, or a product past int64: left unfolded.
      return std::nullopt;
    }
    shape.push_back(d);
  }
  int64_t count = in.numElements();
  if (inferred >= 0) {
    if (known == 0 || count % known)
      return std::nullopt;
    shape[inferred] = count / known;
  } else if (known != count) {
    return std::nullopt;
  }
  ConstTensor out = in;
  out.shape = shape;
  return out;
}

/// ConstantOfShape with an integer value (a float one is data, not shape
/// arithmetic) of at most the importer's inline limit of elements.
std::optional<ConstTensor> foldConstantOfShape(NodeImporter &n) {
  std::optional<SmallVector<int64_t>> shape = knownInts(n, 0);
  const TensorProto *value = n.attrTensor("value");
  if (!shape || !value)
    return std::nullopt;
  llvm::Expected<ConstTensor> v = readTensor(*value, n.modelDir(), 1);
  if (!v) {
    llvm::consumeError(v.takeError());
    return std::nullopt;
  }
  int64_t count = 1;
  for (int64_t d : *shape) {
    if (d < 0 || (d && count > n.inlineLimit() / d))
      return std::nullopt;
    count *= d;
  }
  if (v->isFloat() || v->numElements() != 1 || count > n.inlineLimit())
    return std::nullopt;
  ConstTensor out;
  out.elemType = v->elemType;
  out.shape = *shape;
  out.ints.assign(count, v->ints[0]);
  return out;
}

std::optional<ConstTensor> foldCast(NodeImporter &n, const ConstTensor &in) {
  int32_t to = castTarget(n);
  ConstTensor out = in;
  out.elemType = to;
  if (out.isFloat() == in.isFloat())
    return out;
  if (!in.allKnown())
    return std::nullopt;
  out.ints.clear();
  out.floats.clear();
  if (in.isFloat())
    for (double v : in.floats)
      out.ints.push_back({static_cast<int64_t>(v), {}});
  else
    for (const SymInt &v : in.ints)
      out.floats.push_back(static_cast<double>(v.value));
  return out;
}

} // namespace

int32_t mlir::hps::onnx_import::castTarget(const NodeImporter &n) {
  // Opsets 1-5 name the target type ("FLOAT"); later ones give its number.
  TensorProto::DataType type;
  std::string name = n.attrString("to", "");
  if (!name.empty() && TensorProto::DataType_Parse(name, &type))
    return type;
  return static_cast<int32_t>(n.attrInt("to", 0));
}

LogicalResult mlir::hps::onnx_import::tryFold(NodeImporter &n, bool &folded) {
  folded = false;
  llvm::StringRef op = n.node.op_type();
  std::optional<ConstTensor> result;
  if (op == "Constant") {
    result = constantValue(n);
  } else if (op == "Shape") {
    result = foldShape(n);
  } else {
    // Everything else folds only integer constants (shape arithmetic):
    // floating-point tensors are data and stay in the IR.
    const ConstTensor *a = n.constInput(0);
    if (!a || (a->isFloat() && op != "Cast"))
      return success();
    const ConstTensor *b = n.constInput(1);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" ||
        op == "Mod") {
      if (b)
        result = foldArith(n, *a, *b);
    } else if (op == "Gather") {
      if (b)
        result = foldGather(n, *a, *b);
    } else if (op == "Concat") {
      result = foldConcat(n);
    } else if (op == "Squeeze" || op == "Unsqueeze") {
      result = foldReshapeLike(n, *a);
    } else if (op == "Slice") {
      result = foldSlice(n, *a);
    } else if (op == "Transpose") {
      result = foldTranspose(n, *a);
    } else if (op == "Reshape") {
      result = foldReshape(n, *a);
    } else if (op == "ConstantOfShape") {
      result = foldConstantOfShape(n);
    } else if (op == "Cast") {
      result = foldCast(n, *a);
    }
  }
  if (!result)
    return success();
  n.setConstOutput(0, std::move(*result));
  folded = true;
  return success();
}
