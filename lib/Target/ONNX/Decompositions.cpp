//===- Decompositions.cpp - ONNX forms written as several hps ops ---------===//
//
// Forms of ONNX operators whose hps op would need a constant where the
// model computes the value at run time, or a mode hps's op does not have:
// Clip with run-time bounds becomes Max and Min; BatchNormalization in
// training mode normalises with the batch's own statistics (ReduceMean, Sub,
// Mul, Sqrt, Div) and gives the updated running statistics too; Einsum of
// one or two operands becomes ReduceSum, Transpose, Reshape and a MatMul
// (static sizes; batch labels stay dimensions of the MatMul);
// DepthToSpace and SpaceToDepth become Reshape, Transpose, Reshape, and
// InstanceNormalization a LayerNormalization over the spatial dimensions
// with a per-channel Mul and Add (each op with its kernels and gradients).
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "heterps/Dialect/HPS/HPS.h"
#include "mlir/IR/Matchers.h"

#include <cctype>
#include <map>

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
  FailureOr<SmallVector<Value>> operands = n.inputs(5);
  if (failed(operands))
    return failure();
  SmallVector<Value> &in = *operands;
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

namespace {

/// An Einsum operand's labels and the value that carries them.
struct Labelled {
  Value value;
  std::string labels;
};

/// The size of each label: static where any operand has it static
/// (shape inference can leave a dimension dynamic in one operand that the
/// other knows), else dynamic; failure on unranked operands or two
/// different static sizes.
FailureOr<llvm::StringMap<int64_t>> labelSizes(ArrayRef<Labelled> operands) {
  llvm::StringMap<int64_t> sizes;
  for (const Labelled &op : operands) {
    auto type = dyn_cast<RankedTensorType>(op.value.getType());
    if (!type || type.getRank() != static_cast<int64_t>(op.labels.size()))
      return failure();
    for (auto [i, c] : llvm::enumerate(op.labels)) {
      int64_t d = type.getDimSize(i);
      auto [it, added] = sizes.try_emplace(StringRef(&c, 1), d);
      if (added || ShapedType::isDynamic(d))
        continue;
      if (ShapedType::isDynamic(it->second))
        it->second = d;
      else if (it->second != d)
        return failure();
    }
  }
  return sizes;
}

/// Einsum as ReduceSum, Transpose, Reshape and one MatMul.
class EinsumLowering {
public:
  EinsumLowering(NodeImporter &n, llvm::StringMap<int64_t> sizes)
      : n(n), sizes(std::move(sizes)) {}

  /// Sums out the labels of `x` that `keep` does not have.
  Labelled sumOut(Labelled x, StringRef keep) {
    SmallVector<int64_t> axes;
    std::string rest;
    for (auto [i, c] : llvm::enumerate(x.labels))
      if (keep.contains(c))
        rest += c;
      else
        axes.push_back(i);
    if (axes.empty())
      return x;
    Value v = n.create<ReduceSumOp>(typeOf(rest), x.value,
                                    n.builder().getDenseI64ArrayAttr(axes),
                                    n.builder().getBoolAttr(false));
    return {v, rest};
  }

  /// `x` with its labels in the order `order` (a permutation of them).
  Labelled permute(Labelled x, StringRef order) {
    if (x.labels == order)
      return x;
    SmallVector<int64_t> perm;
    for (char c : order)
      perm.push_back(x.labels.find(c));
    return {n.create<TransposeOp>(typeOf(order), x.value,
                                  n.builder().getDenseI64ArrayAttr(perm)),
            order.str()};
  }

  /// `x` reshaped to `dims`, the first `batch` of them its own: a dynamic
  /// one of those is copied (0), one other dynamic dimension is inferred
  /// (-1); failure where two others are dynamic. No op where `x` has that
  /// shape already.
  FailureOr<Value> reshape(Value x, ArrayRef<int64_t> dims, size_t batch) {
    if (cast<RankedTensorType>(x.getType()).getShape() == dims)
      return x;
    SmallVector<int64_t> shape(dims);
    int inferred = 0;
    for (auto [i, d] : llvm::enumerate(shape))
      if (ShapedType::isDynamic(d)) {
        d = i < batch ? 0 : -1;
        inferred += i >= batch;
      }
    if (inferred > 1)
      return failure();
    return Value(n.create<ReshapeOp>(RankedTensorType::get(dims, f32()), x,
                                     n.builder().getDenseI64ArrayAttr(shape),
                                     n.builder().getBoolAttr(false)));
  }

  /// The size of `labels` merged into one dimension (dynamic if one is).
  int64_t product(StringRef labels) {
    int64_t p = 1;
    for (char c : labels) {
      int64_t d = sizes.lookup(StringRef(&c, 1));
      if (ShapedType::isDynamic(d))
        return d;
      p *= d;
    }
    return p;
  }

  SmallVector<int64_t> dimsOf(StringRef labels) {
    SmallVector<int64_t> dims;
    for (char c : labels)
      dims.push_back(sizes.lookup(StringRef(&c, 1)));
    return dims;
  }

  Type typeOf(StringRef labels) {
    return RankedTensorType::get(dimsOf(labels), f32());
  }

  Type f32() { return n.builder().getF32Type(); }

private:
  NodeImporter &n;
  llvm::StringMap<int64_t> sizes;
};

} // namespace

LogicalResult mlir::hps::onnx_import::convertEinsum(NodeImporter &n) {
  std::string equation;
  for (char c : n.attrString("equation", ""))
    if (c != ' ')
      equation += c;
  StringRef eq(equation);
  auto [lhs, rhs] = eq.split("->");
  SmallVector<StringRef> lhsTerms;
  lhs.split(lhsTerms, ',');
  if (lhsTerms.size() != static_cast<size_t>(n.node.input_size()) ||
      lhsTerms.size() > 2)
    return n.unsupported("Einsum '" + equation + "' (one or two operands are)");
  SmallVector<Value> inputs;
  for (size_t i = 0; i < lhsTerms.size(); ++i) {
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  // '...' stands for the dimensions no label names, aligned from the right
  // across the operands: each gets labels of its own, unused letters.
  std::string unused;
  for (char c = 'A'; c <= 'z'; ++c)
    if (std::isalpha(static_cast<unsigned char>(c)) && !eq.contains(c))
      unused += c;
  size_t ellipsisRank = 0;
  SmallVector<std::string> terms;
  for (auto [i, term] : llvm::enumerate(lhsTerms)) {
    auto type = dyn_cast<RankedTensorType>(inputs[i].getType());
    size_t named = term.size() - (term.contains("...") ? 3 : 0);
    if (term.contains("...") &&
        (!type || type.getRank() < static_cast<int64_t>(named)))
      return n.unsupported("Einsum '" + equation + "': operand " + Twine(i) +
                           " has fewer dimensions than labels");
    if (term.contains("..."))
      ellipsisRank = std::max<size_t>(ellipsisRank, type.getRank() - named);
  }
  if (ellipsisRank > unused.size())
    return n.unsupported("Einsum '" + equation + "': too many dimensions");
  auto expand = [&](StringRef term, size_t rank) {
    auto [before, after] = term.split("...");
    return term.contains("...")
               ? (before + StringRef(unused).substr(ellipsisRank - rank, rank) +
                  after)
                     .str()
               : term.str();
  };
  for (auto [i, term] : llvm::enumerate(lhsTerms)) {
    size_t named = term.size() - (term.contains("...") ? 3 : 0);
    auto type = dyn_cast<RankedTensorType>(inputs[i].getType());
    terms.push_back(expand(term, type ? type.getRank() - named : 0));
  }
  std::string out = expand(rhs, ellipsisRank);
  if (!eq.contains("->")) { // Implicit: '...', then the labels seen once.
    out = StringRef(unused).take_front(ellipsisRank).str();
    std::map<char, int> seen;
    for (StringRef t : lhsTerms)
      for (char c : t)
        if (c != '.')
          ++seen[c];
    for (auto [c, count] : seen)
      if (count == 1)
        out += c;
  }
  SmallVector<Labelled> operands;
  for (auto [i, term] : llvm::enumerate(terms)) {
    StringRef t = term; // a lambda cannot capture a structured binding
    FailureOr<Value> v = inputs[i];
    if (!getElementTypeOrSelf(v->getType()).isF32())
      return n.unsupported("Einsum of non-f32 tensors");
    if (llvm::any_of(t, [&](char c) { return t.count(c) > 1; }))
      return n.unsupported("Einsum '" + equation +
                           "' with a label repeated in an operand (a "
                           "diagonal)");
    operands.push_back({*v, t.str()});
  }
  FailureOr<llvm::StringMap<int64_t>> sizes = labelSizes(operands);
  if (failed(sizes)) {
    std::string types;
    llvm::raw_string_ostream os(types);
    llvm::interleaveComma(operands, os, [&](const Labelled &op) {
      os << op.value.getType() << " '" << op.labels << "'";
    });
    return n.unsupported("Einsum '" + equation + "' of operands with " +
                         "dynamic or mismatched dimensions (" + types + ")");
  }
  EinsumLowering e(n, std::move(*sizes));
  if (operands.size() == 1) {
    Labelled y = e.permute(e.sumOut(operands[0], out), out);
    if (y.value == operands[0].value)
      y.value = n.create<IdentityOp>(y.value.getType(), y.value);
    n.setOutput(0, y.value);
    return success();
  }
  // Labels of both operands and the output are batch dimensions, of one
  // operand and the output rows or columns, of both operands only summed.
  std::string la = operands[0].labels, lb = operands[1].labels;
  std::string batch, rows, cols, inner;
  for (char c : out)
    if (la.find(c) != std::string::npos && lb.find(c) != std::string::npos)
      batch += c;
  for (char c : la)
    if (out.find(c) != std::string::npos && lb.find(c) == std::string::npos)
      rows += c;
    else if (out.find(c) == std::string::npos &&
             lb.find(c) != std::string::npos)
      inner += c;
  for (char c : lb)
    if (out.find(c) != std::string::npos && la.find(c) == std::string::npos)
      cols += c;
  Labelled a = e.permute(e.sumOut(operands[0], batch + rows + inner),
                         batch + rows + inner);
  Labelled b = e.permute(e.sumOut(operands[1], batch + inner + cols),
                         batch + inner + cols);
  SmallVector<int64_t> shapeA = e.dimsOf(batch), shapeB = e.dimsOf(batch),
                       shapeY = e.dimsOf(batch);
  shapeA.append({e.product(rows), e.product(inner)});
  shapeB.append({e.product(inner), e.product(cols)});
  shapeY.append({e.product(rows), e.product(cols)});
  // Rows, inner and column labels merge into one dimension each: a
  // reshape infers at most one dynamic size.
  FailureOr<Value> matA = e.reshape(a.value, shapeA, batch.size());
  FailureOr<Value> matB = e.reshape(b.value, shapeB, batch.size());
  FailureOr<Value> y = failure();
  if (succeeded(matA) && succeeded(matB))
    y = e.reshape(n.create<MatMulOp>(RankedTensorType::get(shapeY, e.f32()),
                                     *matA, *matB),
                  e.dimsOf(batch + rows + cols), batch.size());
  if (failed(y))
    return n.unsupported("Einsum '" + equation +
                         "' that merges two dimensions of dynamic size");
  n.setOutput(0, e.permute({*y, batch + rows + cols}, out).value);
  return success();
}

namespace {

/// `x` reshaped to `dims` (static but for a dynamic batch, dimension 0,
/// which the target copies).
Value reshapeKeepingBatch(NodeImporter &n, Value x, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> target(dims);
  if (ShapedType::isDynamic(target[0]))
    target[0] = 0;
  return n.create<ReshapeOp>(
      RankedTensorType::get(dims, getElementTypeOrSelf(x.getType())), x,
      n.builder().getDenseI64ArrayAttr(target), n.builder().getBoolAttr(false));
}

/// x's type where it is ranked with every dimension but the batch static
/// and at least `minRank` of them; null otherwise.
RankedTensorType staticButBatch(Value x, int64_t minRank) {
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type || type.getRank() < minRank ||
      llvm::any_of(type.getShape().drop_front(), ShapedType::isDynamic))
    return nullptr;
  return type;
}

} // namespace

/// DepthToSpace and SpaceToDepth as ONNX defines them: a reshape to six
/// dimensions, a transpose and a reshape back to four.
LogicalResult mlir::hps::onnx_import::convertDepthToSpace(NodeImporter &n) {
  bool toSpace = n.node.op_type() == "DepthToSpace";
  FailureOr<Value> x = n.input(0);
  if (failed(x))
    return failure();
  RankedTensorType type = staticButBatch(*x, 4);
  if (!type || type.getRank() != 4)
    return n.unsupported(n.node.op_type() +
                         " of an input that is not 4-D with static channels "
                         "and spatial sizes");
  if (!n.hasAttr("blocksize"))
    return n.fail("missing required attribute 'blocksize'");
  int64_t b = n.attrInt("blocksize", 0);
  int64_t batch = type.getDimSize(0), c = type.getDimSize(1),
          h = type.getDimSize(2), w = type.getDimSize(3);
  if (b <= 0 || b > (int64_t(1) << 16))
    return n.fail("'blocksize' " + Twine(b) + " is not in [1, 65536]");
  std::string mode = n.attrString("mode", "DCR");
  SmallVector<int64_t> split, perm, merged;
  if (toSpace) {
    if (c % (b * b) != 0)
      return n.fail(
          "DepthToSpace of " + Twine(c) +
          " channels: not a multiple of blocksize^2 = " + Twine(b * b));
    if (mode == "DCR") {
      split = {batch, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      split = {batch, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      return n.fail("DepthToSpace 'mode' must be DCR or CRD, not '" + mode +
                    "'");
    }
    merged = {batch, c / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0)
      return n.fail("SpaceToDepth of a " + Twine(h) + "x" + Twine(w) +
                    " image: not a multiple of blocksize " + Twine(b));
    split = {batch, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    merged = {batch, c * b * b, h / b, w / b};
  }
  Value six = reshapeKeepingBatch(n, *x, split);
  SmallVector<int64_t> permuted;
  for (int64_t p : perm)
    permuted.push_back(split[p]);
  Value moved = n.create<TransposeOp>(
      RankedTensorType::get(permuted, type.getElementType()), six,
      n.builder().getDenseI64ArrayAttr(perm));
  n.setOutput(0, reshapeKeepingBatch(n, moved, merged));
  return success();
}

/// InstanceNormalization(x, scale, B): LayerNormalization over dimensions
/// 2 on (mean and variance per item and channel) with a scale of ones, then
/// x * scale + B per channel. A constant all-ones scale or all-zeros B (what
/// GroupNorm's export passes) gives no op.
LogicalResult mlir::hps::onnx_import::convertInstanceNorm(NodeImporter &n) {
  FailureOr<SmallVector<Value>> operands = n.inputs(3);
  if (failed(operands))
    return failure();
  Value x = (*operands)[0], scale = (*operands)[1], bias = (*operands)[2];
  RankedTensorType type = staticButBatch(x, 3);
  if (!type || !type.getElementType().isF32())
    return n.unsupported("InstanceNormalization of an input that is not f32 "
                         "with static channels and spatial sizes");
  int64_t channels = type.getDimSize(1);
  for (Value v : {scale, bias}) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || t.getRank() != 1 || t.getDimSize(0) != channels)
      return n.fail("InstanceNormalization scale and B must be [" +
                    Twine(channels) + "] for " + Twine(channels) + " channels");
  }
  Type f32 = type.getElementType();
  auto spatialType = RankedTensorType::get(type.getShape().drop_front(2), f32);
  Value ones = n.create<ConstantOp>(DenseElementsAttr::get(spatialType, 1.f));
  Value y = n.create<LayerNormOp>(
      type, x, ones, Value(), n.builder().getI64IntegerAttr(2),
      n.builder().getF32FloatAttr(n.attrFloat("epsilon", 1e-5f)));
  SmallVector<int64_t> perChannel(type.getRank() - 1, 1);
  perChannel[0] = channels;
  auto isSplat = [](Value v, float value) {
    DenseElementsAttr attr;
    return matchPattern(v, m_Constant(&attr)) && attr.isSplat() &&
           attr.getSplatValue<APFloat>().convertToFloat() == value;
  };
  auto asChannel = [&](Value v) -> Value {
    return n.create<ReshapeOp>(RankedTensorType::get(perChannel, f32), v,
                               n.builder().getDenseI64ArrayAttr(perChannel),
                               n.builder().getBoolAttr(false));
  };
  if (!isSplat(scale, 1.f))
    y = n.create<MulOp>(type, y, asChannel(scale));
  if (!isSplat(bias, 0.f))
    y = n.create<AddOp>(type, y, asChannel(bias));
  n.setOutput(0, y);
  return success();
}
