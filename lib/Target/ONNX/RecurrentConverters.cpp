//===- RecurrentConverters.cpp - LSTM, GRU and RNN ------------------------===//
//
// ONNX's recurrent operators over a sequence of static length T. With
// the default activations (and for LSTM no peepholes, its cells not an
// output) as hps.lstm, hps.gru or hps.rnn, whose kernels run the whole
// sequence; otherwise written as the hps ops of their equations, step by
// step: the input projection of every step is one MatMul (X [T, N, I] by
// W^T, biases added), then each step a MatMul of the previous hidden state
// by R^T, a Split into the gates, their activations and the element-wise
// updates; the steps' states are concatenated into Y. Every op has its
// kernels and gradients, so those forms run and train too, at some 15 ops
// a step and direction.
//
// Supported: directions forward, reverse and bidirectional; layout 0 and
// 1; initial states (zeros when absent); LSTM peepholes; GRU with and
// without linear_before_reset; the activations Sigmoid, Tanh and Relu.
// Refused with a message: sequence_lens other than all T, clip,
// input_forget, other activations, a dynamic sequence length.
//
//===----------------------------------------------------------------------===//

#include "GraphImporter.h"

#include "heterps/Dialect/HPS/HPS.h"

#include <optional>

using namespace mlir;
using namespace mlir::hps;
using namespace mlir::hps::onnx_import;

namespace {

enum class Cell { LSTM, GRU, RNN };

/// Builds the ops of one recurrent node.
class Unroller {
public:
  Unroller(NodeImporter &n, Cell cell, int64_t hidden)
      : n(n), cell(cell), hidden(hidden), f32(n.builder().getF32Type()) {}

  RankedTensorType type(ArrayRef<int64_t> dims) {
    return RankedTensorType::get(dims, f32);
  }
  static Type typeOf(Value v) { return v.getType(); }

  SmallVector<Value> split(Value v, int64_t axis, ArrayRef<int64_t> sizes) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<Type> types;
    for (int64_t s : sizes) {
      SmallVector<int64_t> dims(t.getShape());
      dims[axis] = s;
      types.push_back(type(dims));
    }
    auto op = n.create<SplitOp>(types, v, n.builder().getI64IntegerAttr(axis),
                                n.builder().getDenseI64ArrayAttr(sizes));
    return SmallVector<Value>(op.getResults());
  }
  /// `v` without (squeeze) or with (unsqueeze) a leading dimension of 1.
  Value squeeze0(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return n.create<SqueezeOp>(type(t.getShape().drop_front()), v,
                               n.builder().getDenseI64ArrayAttr({0}));
  }
  Value unsqueeze(Value v, int64_t axis) {
    SmallVector<int64_t> dims(cast<RankedTensorType>(v.getType()).getShape());
    dims.insert(dims.begin() + axis, 1);
    return n.create<UnsqueezeOp>(type(dims), v,
                                 n.builder().getDenseI64ArrayAttr({axis}));
  }
  Value transpose(Value v, ArrayRef<int64_t> perm) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> dims;
    for (int64_t p : perm)
      dims.push_back(t.getDimSize(p));
    return n.create<TransposeOp>(type(dims), v,
                                 n.builder().getDenseI64ArrayAttr(perm));
  }
  Value concat(ArrayRef<Value> parts, int64_t axis) {
    if (parts.size() == 1)
      return parts[0];
    SmallVector<int64_t> dims(
        cast<RankedTensorType>(parts[0].getType()).getShape());
    dims[axis] = 0;
    for (Value p : parts)
      dims[axis] += cast<RankedTensorType>(p.getType()).getDimSize(axis);
    return n.create<ConcatOp>(type(dims), parts,
                              n.builder().getI64IntegerAttr(axis));
  }
  /// a [..., K] by b [K, M].
  Value matmul(Value a, Value b) {
    SmallVector<int64_t> dims(cast<RankedTensorType>(a.getType()).getShape());
    dims.back() = cast<RankedTensorType>(b.getType()).getDimSize(1);
    return n.create<MatMulOp>(type(dims), a, b);
  }
  Value add(Value a, Value b) { return n.create<AddOp>(typeOf(a), a, b); }
  Value sub(Value a, Value b) { return n.create<SubOp>(typeOf(a), a, b); }
  Value mul(Value a, Value b) { return n.create<MulOp>(typeOf(a), a, b); }
  Value activate(StringRef name, Value v) {
    if (name == "Sigmoid")
      return n.create<SigmoidOp>(typeOf(v), v);
    if (name == "Tanh")
      return n.create<TanhOp>(typeOf(v), v);
    return n.create<ReluOp>(typeOf(v), v);
  }

  /// One direction of the node over `steps` ([N, G*H] each: the input
  /// projections with the biases that add to them), from `h` (and `c`,
  /// LSTM) or zeros; `rT` is R^T (GRU without linear_before_reset: z and
  /// r's rows, h's in `rhT`), `rb` GRU's R bias, `peep` LSTM's peepholes
  /// or null, `acts` the direction's activations. Fills `states` ([N, H]
  /// in time order), `h` and `c` with the last ones.
  void direction(ArrayRef<Value> steps, Value rT, Value rhT, Value rb,
                 Value peep, ArrayRef<std::string> acts, bool reverse,
                 std::optional<Value> &h, std::optional<Value> &c,
                 SmallVector<Value> &states) {
    int64_t t = steps.size();
    states.assign(t, Value());
    SmallVector<Value> p, rb3;
    if (peep)
      p = split(peep, 0, {hidden, hidden, hidden}); // i, o, f
    if (cell == Cell::GRU)
      rb3 = split(rb, 0, {hidden, hidden, hidden}); // z, r, h
    for (int64_t k = 0; k < t; ++k) {
      int64_t step = reverse ? t - 1 - k : k;
      Value x = steps[step];
      switch (cell) {
      case Cell::RNN: {
        Value g = h ? add(x, matmul(*h, rT)) : x;
        h = activate(acts[0], g);
        break;
      }
      case Cell::LSTM: {
        Value g = h ? add(x, matmul(*h, rT)) : x;
        SmallVector<Value> gates =
            split(g, 1, {hidden, hidden, hidden, hidden});
        Value i = gates[0], o = gates[1], f = gates[2], cc = gates[3];
        if (peep && c) {
          i = add(i, mul(*c, p[0]));
          f = add(f, mul(*c, p[2]));
        }
        Value in = mul(activate(acts[0], i), activate(acts[1], cc));
        c = c ? add(mul(activate(acts[0], f), *c), in) : in;
        if (peep)
          o = add(o, mul(*c, p[1]));
        h = mul(activate(acts[0], o), activate(acts[2], *c));
        break;
      }
      case Cell::GRU: {
        SmallVector<Value> xs = split(x, 1, {hidden, hidden, hidden});
        // The state's projections with R's biases (R's bias alone from
        // zeros): [N, 3H] where R is one product, else z and r's [N, 2H].
        Value hr =
            h ? add(matmul(*h, rT), rhT ? concat({rb3[0], rb3[1]}, 0) : rb)
              : Value();
        Value z = xs[0], r = xs[1];
        Value hz, hrr, hh;
        if (hr) {
          SmallVector<Value> parts =
              rhT ? split(hr, 1, {hidden, hidden})
                  : split(hr, 1, {hidden, hidden, hidden});
          hz = parts[0];
          hrr = parts[1];
          hh = rhT ? Value() : parts[2];
        }
        z = activate(acts[0], hr ? add(z, hz) : add(z, rb3[0]));
        r = activate(acts[0], hr ? add(r, hrr) : add(r, rb3[1]));
        Value cand;
        if (!rhT) // linear_before_reset: r * (h Rh^T + Rbh)
          cand = add(xs[2], mul(r, hr ? hh : rb3[2]));
        else // (r * h) Rh^T + Rbh
          cand = add(xs[2], h ? add(matmul(mul(r, *h), rhT), rb3[2]) : rb3[2]);
        cand = activate(acts[1], cand);
        // h' = (1 - z) * cand + z * h = cand + z * (h - cand)
        h = h ? add(cand, mul(z, sub(*h, cand))) : sub(cand, mul(z, cand));
        break;
      }
      }
      states[step] = *h;
    }
  }

  NodeImporter &n;
  Cell cell;
  int64_t hidden;
  Type f32;
};

/// ONNX's activations for `cell`, per direction: LSTM Sigmoid, Tanh, Tanh;
/// GRU Sigmoid, Tanh; RNN Tanh.
SmallVector<std::string> defaultActivations(Cell cell, int64_t directions) {
  SmallVector<std::string> one;
  if (cell == Cell::RNN)
    one = {"Tanh"};
  else if (cell == Cell::GRU)
    one = {"Sigmoid", "Tanh"};
  else
    one = {"Sigmoid", "Tanh", "Tanh"};
  SmallVector<std::string> all;
  for (int64_t d = 0; d < directions; ++d)
    all.append(one.begin(), one.end());
  return all;
}

/// The node's `activations` (names), or the defaults for `cell`, per
/// direction; failure (node error set) on an unsupported one.
FailureOr<SmallVector<std::string>> activations(NodeImporter &n, Cell cell,
                                                int64_t directions) {
  SmallVector<std::string> names;
  for (const auto &a : n.node.attribute())
    if (a.name() == "activations")
      for (const std::string &s : a.strings())
        names.push_back(s);
  size_t per = cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1;
  if (names.empty())
    names = defaultActivations(cell, directions);
  if (names.size() != per * directions) {
    (void)n.fail("'activations' has " + Twine(names.size()) + " names for " +
                 Twine(directions) + " direction(s) of " + Twine(per));
    return failure();
  }
  for (const std::string &s : names)
    if (s != "Sigmoid" && s != "Tanh" && s != "Relu") {
      (void)n.unsupported("activation '" + s + "'");
      return failure();
    }
  return names;
}

/// The node as hps.lstm, hps.gru or hps.rnn over `x` [T, N, I]: zeros for
/// an absent bias, LSTM's initial states stacked, Y_h taken from Y.
LogicalResult convertFused(NodeImporter &n, Unroller &u, Cell cell, Value x,
                           Value w, Value r, StringRef dir, bool batchFirst) {
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t steps = xType.getDimSize(0), batch = xType.getDimSize(1),
          directions = dir == "bidirectional" ? 2 : 1, hidden = u.hidden,
          gates = cell == Cell::LSTM  ? 4
                  : cell == Cell::GRU ? 3
                                      : 1;
  Value bias;
  if (n.hasInput(3)) {
    FailureOr<Value> b = n.input(3);
    if (failed(b))
      return failure();
    bias = *b;
  } else {
    bias = n.create<ConstantOp>(
        DenseElementsAttr::get(u.type({directions, 2 * gates * hidden}), 0.f));
  }
  Value state;
  if (n.hasInput(5)) {
    SmallVector<Value> parts;
    for (unsigned i : {5u, 6u}) {
      if (i == 6 && cell != Cell::LSTM)
        break;
      FailureOr<Value> v = n.input(i);
      if (failed(v))
        return failure();
      parts.push_back(*v);
    }
    state = u.concat(parts, 0);
  }
  OpBuilder &b = n.builder();
  RankedTensorType type = u.type({steps, directions, batch, hidden});
  IntegerAttr hiddenAttr = b.getI64IntegerAttr(hidden);
  StringAttr dirAttr = b.getStringAttr(dir);
  BoolAttr lbr = b.getBoolAttr(n.attrInt("linear_before_reset", 0) != 0);
  Value y;
  if (cell == Cell::LSTM)
    y = n.create<LSTMOp>(type, x, w, r, bias, state, hiddenAttr, dirAttr, lbr);
  else if (cell == Cell::GRU)
    y = n.create<GRUOp>(type, x, w, r, bias, state, hiddenAttr, dirAttr, lbr);
  else
    y = n.create<RNNOp>(type, x, w, r, bias, state, hiddenAttr, dirAttr, lbr);
  if (n.outputUsed(0))
    n.setOutput(0, batchFirst ? u.transpose(y, {2, 0, 1, 3}) : y);
  if (n.outputUsed(1)) {
    // Each direction's last state: step T-1 forward, step 0 in reverse.
    SmallVector<Value> last;
    for (int64_t d = 0; d < directions; ++d) {
      int64_t t = dir == "reverse" || d == 1 ? 0 : steps - 1;
      Value slice = n.create<SliceOp>(
          u.type({1, 1, batch, hidden}), y, b.getDenseI64ArrayAttr({t, d}),
          b.getDenseI64ArrayAttr({t + 1, d + 1}),
          b.getDenseI64ArrayAttr({0, 1}), b.getDenseI64ArrayAttr({1, 1}));
      last.push_back(u.squeeze0(slice));
    }
    Value yh = u.concat(last, 0);
    n.setOutput(1, batchFirst ? u.transpose(yh, {1, 0, 2}) : yh);
  }
  return success();
}

LogicalResult convertRecurrent(NodeImporter &n, Cell cell) {
  int64_t gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  int64_t hidden = n.attrInt("hidden_size", 0);
  if (hidden <= 0 || hidden > (int64_t(1) << 30))
    return n.fail("'hidden_size' must be given, in [1, 2^30]");
  if (n.hasAttr("clip"))
    return n.unsupported("'clip'");
  if (n.attrInt("input_forget", 0) != 0)
    return n.unsupported("'input_forget'");
  std::string dir = n.attrString("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return n.fail("'direction' must be forward, reverse or bidirectional, "
                  "not '" +
                  dir + "'");
  int64_t directions = dir == "bidirectional" ? 2 : 1;
  bool batchFirst = n.attrInt("layout", 0) != 0;
  FailureOr<Value> xIn = n.input(0), w = n.input(1), r = n.input(2);
  if (failed(xIn) || failed(w) || failed(r))
    return failure();
  auto xType = dyn_cast<RankedTensorType>(xIn->getType());
  if (!xType || xType.getRank() != 3 || !xType.getElementType().isF32())
    return n.unsupported(n.node.op_type() + " of an input that is not 3-D f32");
  int64_t steps = xType.getDimSize(batchFirst ? 1 : 0),
          batch = xType.getDimSize(batchFirst ? 0 : 1),
          inputSize = xType.getDimSize(2);
  if (ShapedType::isDynamic(steps) || ShapedType::isDynamic(inputSize))
    return n.unsupported(n.node.op_type() +
                         " over a sequence of dynamic length (unrolled "
                         "over its steps)");
  auto wType = dyn_cast<RankedTensorType>(w->getType());
  auto rType = dyn_cast<RankedTensorType>(r->getType());
  SmallVector<int64_t> wShape{directions, gates * hidden, inputSize},
      rShape{directions, gates * hidden, hidden};
  if (!wType || !rType || wType.getShape() != ArrayRef<int64_t>(wShape) ||
      rType.getShape() != ArrayRef<int64_t>(rShape)) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "W must be [";
    llvm::interleaveComma(wShape, os);
    os << "] and R [";
    llvm::interleaveComma(rShape, os);
    os << "] for hidden_size " << hidden << ", got " << w->getType() << " and "
       << r->getType();
    return n.fail(os.str());
  }
  if (n.hasInput(4)) {
    const ConstTensor *lens = n.constInput(4);
    if (!lens || lens->isFloat() || !lens->allKnown())
      return n.unsupported("'sequence_lens' computed at run time");
    if (llvm::any_of(lens->ints,
                     [&](const SymInt &v) { return v.value != steps; }))
      return n.unsupported("'sequence_lens' shorter than the sequence");
  }
  FailureOr<SmallVector<std::string>> acts = activations(n, cell, directions);
  if (failed(acts))
    return failure();

  Unroller u(n, cell, hidden);
  Value x = batchFirst ? u.transpose(*xIn, {1, 0, 2}) : *xIn;
  // The whole sequence as one op where it has that op's form: the default
  // activations; LSTM without peepholes, with both initial states or
  // neither, its cells not an output. Otherwise unrolled below.
  if (*acts == defaultActivations(cell, directions) &&
      (cell != Cell::LSTM ||
       (!n.hasInput(7) && !n.outputUsed(2) && n.hasInput(5) == n.hasInput(6))))
    return convertFused(n, u, cell, x, *w, *r, dir, batchFirst);
  auto perDirection = [&](Value v) {
    SmallVector<Value> out;
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getDimSize(0) != directions)
      return out;
    for (Value part : u.split(v, 0, SmallVector<int64_t>(directions, 1)))
      out.push_back(u.squeeze0(part));
    return out;
  };
  auto optionalPerDirection = [&](unsigned i, ArrayRef<int64_t> rest,
                                  SmallVector<Value> &out) -> LogicalResult {
    if (!n.hasInput(i))
      return success();
    FailureOr<Value> v = n.input(i);
    if (failed(v))
      return failure();
    auto t = dyn_cast<RankedTensorType>(v->getType());
    SmallVector<int64_t> want = {directions};
    want.append(rest.begin(), rest.end());
    if (!t || t.getRank() != (int64_t)want.size() ||
        llvm::any_of(llvm::zip(t.getShape(), want), [](auto p) {
          auto [got, expected] = p;
          return !ShapedType::isDynamic(got) &&
                 !ShapedType::isDynamic(expected) && got != expected;
        }))
      return n.fail("input " + Twine(i) + " of " + n.node.op_type() +
                    " does not have the shape its inputs give");
    out = perDirection(*v);
    return success();
  };
  SmallVector<Value> ws = perDirection(*w), rs = perDirection(*r), bs, h0s, c0s,
                     ps;
  if (failed(optionalPerDirection(3, {2 * gates * hidden}, bs)) ||
      failed(optionalPerDirection(5, {batch, hidden}, h0s)) ||
      (cell == Cell::LSTM &&
       (failed(optionalPerDirection(6, {batch, hidden}, c0s)) ||
        failed(optionalPerDirection(7, {3 * hidden}, ps)))))
    return failure();

  bool lbr = cell == Cell::GRU && n.attrInt("linear_before_reset", 0) != 0;
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < directions; ++d) {
    // Input projections of every step: X W^T (+ W's bias; + R's too but
    // for GRU, whose R bias stays with the state's product).
    Value proj = u.matmul(x, u.transpose(ws[d], {1, 0}));
    Value wb, rb;
    if (!bs.empty()) {
      SmallVector<Value> b =
          u.split(bs[d], 0, {gates * hidden, gates * hidden});
      wb = b[0];
      rb = b[1];
      proj = u.add(proj, cell == Cell::GRU ? wb : u.add(wb, rb));
    }
    if (cell == Cell::GRU && !rb)
      rb = n.create<ConstantOp>(
          DenseElementsAttr::get(u.type({gates * hidden}), 0.f));
    SmallVector<Value> steps;
    for (Value s :
         u.split(proj, 0,
                 SmallVector<int64_t>(
                     cast<RankedTensorType>(proj.getType()).getDimSize(0), 1)))
      steps.push_back(u.squeeze0(s));
    Value rT = u.transpose(rs[d], {1, 0}), rhT;
    if (cell == Cell::GRU && !lbr) {
      // z and r's rows in one product, h's apart (it takes r * h).
      SmallVector<Value> parts = u.split(rs[d], 0, {2 * hidden, hidden});
      rT = u.transpose(parts[0], {1, 0});
      rhT = u.transpose(parts[1], {1, 0});
    }
    std::optional<Value> h, c;
    if (!h0s.empty())
      h = h0s[d];
    if (!c0s.empty())
      c = c0s[d];
    SmallVector<Value> states;
    ArrayRef<std::string> dirActs = ArrayRef<std::string>(*acts).slice(
        d * (acts->size() / directions), acts->size() / directions);
    u.direction(steps, rT, rhT, rb, ps.empty() ? Value() : ps[d], dirActs,
                dir == "reverse" || d == 1, h, c, states);
    SmallVector<Value> expanded;
    for (Value s : states)
      expanded.push_back(u.unsqueeze(s, 0));
    ys.push_back(u.unsqueeze(u.concat(expanded, 0), 1)); // [T, 1, N, H]
    hs.push_back(u.unsqueeze(*h, 0));
    if (c)
      cs.push_back(u.unsqueeze(*c, 0));
  }
  // Y [T, D, N, H] (layout 1: [N, T, D, H]); Y_h, Y_c [D, N, H] ([N, D, H]).
  if (n.outputUsed(0)) {
    Value y = u.concat(ys, 1);
    n.setOutput(0, batchFirst ? u.transpose(y, {2, 0, 1, 3}) : y);
  }
  if (n.outputUsed(1)) {
    Value y = u.concat(hs, 0);
    n.setOutput(1, batchFirst ? u.transpose(y, {1, 0, 2}) : y);
  }
  if (cell == Cell::LSTM && n.outputUsed(2)) {
    Value y = u.concat(cs, 0);
    n.setOutput(2, batchFirst ? u.transpose(y, {1, 0, 2}) : y);
  }
  return success();
}

} // namespace

LogicalResult mlir::hps::onnx_import::convertLSTM(NodeImporter &n) {
  return convertRecurrent(n, Cell::LSTM);
}
LogicalResult mlir::hps::onnx_import::convertGRU(NodeImporter &n) {
  return convertRecurrent(n, Cell::GRU);
}
LogicalResult mlir::hps::onnx_import::convertRNN(NodeImporter &n) {
  return convertRecurrent(n, Cell::RNN);
}
