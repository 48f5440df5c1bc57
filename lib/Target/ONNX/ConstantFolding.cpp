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

/// Element-wise integer arithmetic with scalar broadcasting.
std::optional<ConstTensor> foldArith(NodeImporter &n, const ConstTensor &a,
                                     const ConstTensor &b) {
  if (a.isFloat() || b.isFloat() || !a.allKnown() || !b.allKnown())
    return std::nullopt;
  int64_t na = a.numElements(), nb = b.numElements();
  if (na != nb && na != 1 && nb != 1)
    return std::nullopt;
  ConstTensor out = na >= nb ? a : b;
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
    else // Div: ONNX integer division truncates.
      r = x / y;
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

std::optional<ConstTensor> foldSlice(NodeImporter &n, const ConstTensor &in) {
  if (in.shape.size() != 1 || n.opset < 10)
    return std::nullopt;
  auto scalar = [&](unsigned i, int64_t dflt) -> std::optional<int64_t> {
    if (!n.hasInput(i))
      return dflt;
    const ConstTensor *t = n.constInput(i);
    if (!t || t->isFloat() || t->ints.size() != 1 || !t->allKnown())
      return std::nullopt;
    return t->ints[0].value;
  };
  std::optional<int64_t> start = scalar(1, 0), end = scalar(2, 0),
                         axis = scalar(3, 0), step = scalar(4, 1);
  if (!start || !end || !axis || !step || *step <= 0 || normAxis(*axis, 1) != 0)
    return std::nullopt;
  int64_t size = in.shape[0];
  auto clampIndex = [&](int64_t v) {
    return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size);
  };
  ConstTensor out;
  out.elemType = in.elemType;
  for (int64_t i = clampIndex(*start); i < clampIndex(*end); i += *step)
    out.ints.push_back(in.ints[i]);
  out.shape.push_back(out.ints.size());
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
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") {
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
