//===- Fusion.cpp - load-time rewrites of a plan --------------------------===//

#include "Fusion.h"

#include "heterps/Runtime/Plan.h"
#include "heterps/Runtime/SliceGeometry.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace heterps::runtime;

namespace {
/// Where each value is defined and read: op indices and whether a graph
/// output is it.
struct Uses {
  explicit Uses(const plan::Plan &plan)
      : definedBy(plan.values_size(), -1), readers(plan.values_size()),
        isOutput(plan.values_size(), false) {
    for (int i = 0; i < plan.ops_size(); ++i) {
      for (int32_t v : plan.ops(i).inputs())
        if (v >= 0)
          readers[v].push_back(i);
      for (int32_t v : plan.ops(i).outputs())
        definedBy[v] = i;
    }
    for (const plan::Binding &b : plan.outputs())
      isOutput[b.value()] = true;
  }
  /// The one op reading `v`, or -1.
  int soleReader(int32_t v) const {
    return readers[v].size() == 1 && !isOutput[v] ? readers[v][0] : -1;
  }
  /// The op defining each value; -1 for graph inputs and weights.
  std::vector<int> definedBy;
  std::vector<std::vector<int>> readers;
  std::vector<bool> isOutput;
};
} // namespace

/// Whether a rewrite may join `a` and `b`: both are the backend's, and
/// they run in the same place.
static bool fusable(OpFilter mine, const plan::Op &a, const plan::Op &b) {
  return mine(a) && mine(b) && a.device() == b.device() &&
         a.stage() == b.stage();
}

/// The activation `op` fuses ("Relu", ...), or "" for none.
static llvm::StringRef activationOf(const plan::Op &op) {
  for (const plan::Attribute &a : op.attributes())
    if (a.name() == "activation")
      return a.s();
  return "";
}

/// Whether `op` already fuses an activation.
static bool hasActivation(const plan::Op &op) {
  return !activationOf(op).empty();
}

/// Copies the fused activation of `from` (its `activation*` attributes) to
/// `to`, their names prefixed with `prefix`.
static void copyActivation(const plan::Op &from, plan::Op &to,
                           llvm::StringRef prefix) {
  for (const plan::Attribute &a : from.attributes())
    if (llvm::StringRef(a.name()).starts_with("activation")) {
      plan::Attribute *copy = to.add_attributes();
      *copy = a;
      copy->set_name((prefix + a.name()).str());
    }
}

int heterps::runtime::fuseResidualAdds(plan::Plan &plan, OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    plan::Op &conv = *plan.mutable_ops(i);
    if (conv.type() != "Conv" || conv.outputs_size() != 1 ||
        conv.inputs_size() > 3 || hasActivation(conv))
      continue;
    int32_t out = conv.outputs(0);
    int j = uses.soleReader(out);
    if (j < 0)
      continue;
    const plan::Op &add = plan.ops(j);
    if (add.type() != "Add" || add.inputs_size() != 2 ||
        add.outputs_size() != 1 || !fusable(mine, conv, add))
      continue;
    int32_t other = add.inputs(0) == out ? add.inputs(1) : add.inputs(0);
    const plan::Value &a = plan.values(out), &b = plan.values(other);
    if (other == out || uses.definedBy[other] >= i || a.dtype() != b.dtype() ||
        a.dims_size() != b.dims_size() ||
        !std::equal(a.dims().begin(), a.dims().end(), b.dims().begin()))
      continue;
    while (conv.inputs_size() < 3)
      conv.add_inputs(-1);
    conv.add_inputs(other);
    // A trained plan's Add may carry the Relu after it.
    copyActivation(add, conv, "");
    conv.set_outputs(0, add.outputs(0));
    dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

/// Folds each activation that `fusible` accepts into the op of a type in
/// `producers` whose output only it reads (see fuseActivations).
static int fuseIntoProducers(plan::Plan &plan,
                             std::initializer_list<llvm::StringRef> producers,
                             llvm::function_ref<bool(llvm::StringRef)> fusible,
                             OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    plan::Op &producer = *plan.mutable_ops(i);
    if (!llvm::is_contained(producers, producer.type()) ||
        producer.outputs_size() != 1)
      continue;
    int j = uses.soleReader(producer.outputs(0));
    if (hasActivation(producer) || j < 0)
      continue;
    const plan::Op &act = plan.ops(j);
    if (!fusible(act.type()) || act.inputs_size() != 1 ||
        act.outputs_size() != 1 || !fusable(mine, producer, act))
      continue;
    plan::Attribute *type = producer.add_attributes();
    type->set_name("activation");
    type->set_s(act.type());
    for (const plan::Attribute &a : act.attributes()) {
      plan::Attribute *copy = producer.add_attributes();
      *copy = a;
      copy->set_name("activation_" + a.name());
    }
    producer.set_outputs(0, act.outputs(0));
    dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseActivations(plan::Plan &plan, OpFilter mine) {
  auto postOp = [](llvm::StringRef type) {
    return llvm::StringSwitch<bool>(type)
        .Cases("Relu", "LeakyRelu", "Clip", "Sigmoid", "Tanh", "Elu", true)
        .Cases("Swish", "HardSwish", "Gelu", true)
        .Default(false);
  };
  // A batch norm that a Conv cannot absorb (DenseNet's, after a Concat)
  // takes a Relu as oneDNN's fuse_norm_relu.
  return fuseIntoProducers(plan, {"Conv", "MatMul"}, postOp, mine) +
         fuseIntoProducers(
             plan, {"BatchNormalization"},
             [](llvm::StringRef type) { return type == "Relu"; }, mine);
}

int heterps::runtime::fuseTrainableActivations(plan::Plan &plan,
                                               OpFilter mine) {
  return fuseIntoProducers(
      plan, {"Conv", "BatchNormalization", "Add"},
      [](llvm::StringRef type) { return type == "Relu"; }, mine);
}

/// Sets the int attribute `name` of `op` to 1.
static void setFlag(plan::Op &op, llvm::StringRef name) {
  plan::Attribute *a = op.add_attributes();
  a->set_name(name.str());
  a->set_i(1);
}

int heterps::runtime::moveReluMasksToMaxPools(plan::Plan &plan, OpFilter mine) {
  Uses uses(plan);
  // The op defining `v` when only `reader` reads it.
  auto soleProducer = [&](int32_t v, int reader) {
    return v >= 0 && uses.soleReader(v) == reader ? uses.definedBy[v] : -1;
  };
  auto reluConv = [&](int i, int pool) {
    return i >= 0 && fusable(mine, plan.ops(i), plan.ops(pool)) &&
           plan.ops(i).type() == "Conv" && activationOf(plan.ops(i)) == "Relu";
  };
  int moved = 0;
  for (int p = 0; p < plan.ops_size(); ++p) {
    const plan::Op &pool = plan.ops(p);
    if (pool.type() != "MaxPool" || pool.outputs_size() != 1 ||
        pool.inputs_size() != 1)
      continue;
    int producer = soleProducer(pool.inputs(0), p);
    std::vector<int> convs;
    if (reluConv(producer, p)) {
      convs.push_back(producer);
    } else if (producer >= 0 && plan.ops(producer).type() == "Concat") {
      for (int32_t v : plan.ops(producer).inputs())
        convs.push_back(soleProducer(v, producer));
      if (!llvm::all_of(convs, [&](int c) { return reluConv(c, p); }))
        continue;
    } else {
      continue;
    }
    for (int c : convs)
      setFlag(*plan.mutable_ops(c), "relu_grad_masked");
    setFlag(*plan.mutable_ops(p), "grad_mask_relu");
    ++moved;
  }
  return moved;
}

/// The weight that input `k` of `op` is, or null (absent or computed).
static const Tensor *weightInput(const WeightMap &weights, const plan::Op &op,
                                 int k) {
  if (k >= op.inputs_size() || op.inputs(k) < 0)
    return nullptr;
  auto it = weights.find(op.inputs(k));
  return it == weights.end() ? nullptr : &it->second;
}

/// Integer list attribute `name` of `op`; empty when absent.
static std::vector<int64_t> intsOf(const plan::Op &op, llvm::StringRef name) {
  for (const plan::Attribute &a : op.attributes())
    if (a.name() == name) {
      if (a.value_case() == plan::Attribute::kI)
        return {a.i()};
      return {a.ints().values().begin(), a.ints().values().end()};
    }
  return {};
}

/// Whether every entry of attribute `name` is `v` (true when absent).
static bool allEqual(const plan::Op &op, llvm::StringRef name, int64_t v) {
  return llvm::all_of(intsOf(op, name), [&](int64_t x) { return x == v; });
}

int heterps::runtime::fuseDepthwiseConvs(plan::Plan &plan,
                                         const WeightMap &weights,
                                         OpFilter mine) {
  Uses uses(plan);
  // A bias is absent or a weight.
  auto constantBias = [&](const plan::Op &op) {
    return op.inputs_size() < 3 || op.inputs(2) < 0 ||
           weightInput(weights, op, 2);
  };
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    plan::Op &pw = *plan.mutable_ops(i);
    const Tensor *w = weightInput(weights, pw, 1);
    if (pw.type() != "Conv" || pw.outputs_size() != 1 || pw.inputs_size() > 3 ||
        !w || w->rank() != 4 || w->dim(2) != 1 || w->dim(3) != 1 ||
        !constantBias(pw) || !allEqual(pw, "group", 1) ||
        !allEqual(pw, "strides", 1) || !allEqual(pw, "pads", 0) ||
        !allEqual(pw, "dilations", 1))
      continue;
    int j = uses.soleReader(pw.outputs(0));
    if (j < 0)
      continue;
    const plan::Op &dw = plan.ops(j);
    const Tensor *dwW = weightInput(weights, dw, 1);
    int64_t m = w->dim(0);
    std::vector<int64_t> strides = intsOf(dw, "strides");
    int64_t stride = strides.empty() ? 1 : strides[0];
    int64_t k = dwW && dwW->rank() == 4 ? dwW->dim(2) : 0;
    if (dw.type() != "Conv" || dw.outputs_size() != 1 || dw.inputs_size() > 3 ||
        dw.inputs(0) != pw.outputs(0) || !dwW || (k != 3 && k != 5 && k != 7) ||
        dwW->shape() != Shape{m, 1, k, k} || !constantBias(dw) ||
        !fusable(mine, pw, dw) || intsOf(dw, "group") != std::vector{m} ||
        !allEqual(dw, "strides", stride) || (stride != 1 && stride != 2) ||
        intsOf(dw, "pads") != std::vector<int64_t>(4, k / 2) ||
        !allEqual(dw, "dilations", 1))
      continue;
    while (pw.inputs_size() < 4)
      pw.add_inputs(-1);
    pw.add_inputs(dw.inputs(1));
    pw.add_inputs(dw.inputs_size() > 2 ? dw.inputs(2) : -1);
    plan::Attribute *s = pw.add_attributes();
    s->set_name("dw_stride");
    s->set_i(stride);
    copyActivation(dw, pw, "dw_");
    pw.set_outputs(0, dw.outputs(0));
    dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseProjections(plan::Plan &plan,
                                      const WeightMap &weights, OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    // A pair of fuseDepthwiseConvs (6 inputs) or a SqueezeExcite (5).
    plan::Op &pair = *plan.mutable_ops(i);
    bool isPair =
        pair.type() == "Conv" && pair.inputs_size() == 6 && pair.inputs(4) >= 0;
    bool isGate = pair.type() == "SqueezeExcite" && pair.inputs_size() == 5;
    if ((!isPair && !isGate) || pair.outputs_size() != 1)
      continue;
    int j = uses.soleReader(pair.outputs(0));
    if (j < 0)
      continue;
    const plan::Op &proj = plan.ops(j);
    const Tensor *w = weightInput(weights, proj, 1);
    const plan::Value &wide = plan.values(pair.outputs(0));
    bool bias = proj.inputs_size() > 2 && proj.inputs(2) >= 0;
    int32_t addend = proj.inputs_size() > 3 ? proj.inputs(3) : -1;
    if (proj.type() != "Conv" || proj.outputs_size() != 1 ||
        proj.inputs_size() > 4 || proj.inputs(0) != pair.outputs(0) || !w ||
        wide.dims_size() != 4 || w->rank() != 4 || w->dim(1) != wide.dims(1) ||
        w->dim(2) != 1 || w->dim(3) != 1 ||
        (bias && !weightInput(weights, proj, 2)) ||
        (addend >= 0 && uses.definedBy[addend] >= i) ||
        !fusable(mine, pair, proj) || !allEqual(proj, "group", 1) ||
        !allEqual(proj, "strides", 1) || !allEqual(proj, "pads", 0) ||
        !allEqual(proj, "dilations", 1))
      continue;
    pair.add_inputs(proj.inputs(1));
    pair.add_inputs(bias ? proj.inputs(2) : -1);
    pair.add_inputs(addend);
    copyActivation(proj, pair, "proj_");
    pair.set_outputs(0, proj.outputs(0));
    dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

/// Attribute `name` of `op`, added when absent.
static plan::Attribute &attributeOf(plan::Op &op, llvm::StringRef name) {
  for (plan::Attribute &a : *op.mutable_attributes())
    if (a.name() == name)
      return a;
  plan::Attribute *a = op.add_attributes();
  a->set_name(name.str());
  return *a;
}

/// The string attribute `name` of `op`, or `otherwise`.
static std::string stringOf(const plan::Op &op, llvm::StringRef name,
                            llvm::StringRef otherwise) {
  for (const plan::Attribute &a : op.attributes())
    if (a.name() == name && a.value_case() == plan::Attribute::kS)
      return a.s();
  return otherwise.str();
}

/// The spatial pads ([begin..., end...], ONNX order) of a Pad whose output
/// a convolution or pooling could take over: constant mode with zeros, pads
/// from a weight (opset 11 on) or the attribute, none on the first two
/// axes and none negative. Empty otherwise.
static std::vector<int64_t> zeroSpatialPads(const plan::Op &pad,
                                            const WeightMap &weights) {
  if (stringOf(pad, "mode", "constant") != "constant" ||
      pad.inputs_size() > 3 || pad.outputs_size() != 1)
    return {};
  std::vector<int64_t> all = intsOf(pad, "pads");
  if (pad.inputs_size() > 1 && pad.inputs(1) >= 0) {
    const Tensor *p = weightInput(weights, pad, 1);
    if (!p || p->dtype() != DType::I64)
      return {};
    all.assign(p->data<int64_t>(), p->data<int64_t>() + p->numElements());
  }
  if (pad.inputs_size() > 2 && pad.inputs(2) >= 0) {
    const Tensor *v = weightInput(weights, pad, 2);
    if (!v || v->dtype() != DType::F32 || v->numElements() != 1 ||
        v->data<float>()[0] != 0.f)
      return {};
  }
  for (const plan::Attribute &a : pad.attributes())
    if (a.name() == "value" && a.value_case() == plan::Attribute::kF &&
        a.f() != 0.f)
      return {};
  size_t rank = all.size() / 2;
  if (rank < 3 || all.size() != 2 * rank || all[0] || all[1] || all[rank] ||
      all[rank + 1] || llvm::any_of(all, [](int64_t p) { return p < 0; }))
    return {};
  std::vector<int64_t> spatial(all.begin() + 2, all.begin() + rank);
  spatial.insert(spatial.end(), all.begin() + rank + 2, all.end());
  return spatial;
}

int heterps::runtime::fusePads(plan::Plan &plan, const WeightMap &weights,
                               OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &pad = plan.ops(i);
    if (pad.type() != "Pad")
      continue;
    std::vector<int64_t> extra = zeroSpatialPads(pad, weights);
    int j = extra.empty() ? -1 : uses.soleReader(pad.outputs(0));
    if (j < 0)
      continue;
    plan::Op &next = *plan.mutable_ops(j);
    bool pool = next.type() == "AveragePool";
    if ((!pool && next.type() != "Conv") || next.inputs(0) != pad.outputs(0) ||
        !fusable(mine, pad, next) ||
        stringOf(next, "auto_pad", "NOTSET") != "NOTSET")
      continue;
    std::vector<int64_t> pads = intsOf(next, "pads");
    if (pads.empty())
      pads.assign(extra.size(), 0);
    // An average over the padded input counts the zeros; one over the
    // pool's own pads must count them too, and ceil-mode windows past the
    // end must not.
    std::vector<int64_t> includePad = intsOf(next, "count_include_pad");
    if (pool && (!allEqual(next, "ceil_mode", 0) ||
                 (llvm::any_of(pads, [](int64_t p) { return p != 0; }) &&
                  includePad != std::vector<int64_t>{1})))
      continue;
    if (pads.size() != extra.size())
      continue;
    for (size_t k = 0; k < pads.size(); ++k)
      pads[k] += extra[k];
    attributeOf(next, "pads")
        .mutable_ints()
        ->mutable_values()
        ->Assign(pads.begin(), pads.end());
    if (pool)
      attributeOf(next, "count_include_pad").set_i(1);
    next.set_inputs(0, pad.inputs(0));
    dead[i] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::foldBatchNorms(plan::Plan &plan, WeightMap &weights,
                                     OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int folded = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    plan::Op &conv = *plan.mutable_ops(i);
    if (conv.type() != "Conv" || conv.outputs_size() != 1)
      continue;
    int j = uses.soleReader(conv.outputs(0));
    if (hasActivation(conv) || conv.inputs_size() > 3 || j < 0)
      continue;
    const plan::Op &bn = plan.ops(j);
    if (bn.type() != "BatchNormalization" || bn.inputs_size() != 5 ||
        bn.outputs_size() != 1 || bn.inputs(0) != conv.outputs(0) ||
        !fusable(mine, conv, bn))
      continue;
    const Tensor *w = weightInput(weights, conv, 1);
    const Tensor *b = weightInput(weights, conv, 2);
    bool hasBias = conv.inputs_size() > 2 && conv.inputs(2) >= 0;
    const Tensor *params[4];
    bool ok =
        w && w->dtype() == DType::F32 && w->rank() >= 3 && (!hasBias || b);
    for (int k = 0; k < 4 && ok; ++k) {
      params[k] = weightInput(weights, bn, k + 1);
      ok = params[k] && params[k]->dtype() == DType::F32 &&
           params[k]->numElements() == w->dim(0);
    }
    if (!ok)
      continue;
    float epsilon = 1e-5f;
    for (const plan::Attribute &a : bn.attributes())
      if (a.name() == "epsilon")
        epsilon = a.value_case() == plan::Attribute::kF ? a.f() : a.i();
    int64_t m = w->dim(0), per = w->numElements() / m;
    Tensor newW = w->clone();
    Tensor newB(DType::F32, {m});
    const float *scale = params[0]->data<float>(),
                *shift = params[1]->data<float>(),
                *mean = params[2]->data<float>(),
                *var = params[3]->data<float>();
    for (int64_t o = 0; o < m; ++o) {
      float s = scale[o] / std::sqrt(var[o] + epsilon);
      for (int64_t k = 0; k < per; ++k)
        newW.data<float>()[o * per + k] *= s;
      float bias = b ? b->data<float>()[o] : 0.f;
      newB.data<float>()[o] = (bias - mean[o]) * s + shift[o];
    }
    auto addWeight = [&](Tensor t, const std::string &name) {
      int32_t index = plan.values_size();
      plan::Value *v = plan.add_values();
      v->set_name(name);
      v->set_dtype(plan::FLOAT);
      for (int64_t d : t.shape())
        v->add_dims(d);
      weights.emplace(index, std::move(t));
      return index;
    };
    std::string base = conv.name().empty() ? "conv" : conv.name();
    int32_t wIndex = addWeight(std::move(newW), base + ".bn_folded_weight");
    int32_t bIndex = addWeight(std::move(newB), base + ".bn_folded_bias");
    conv.set_inputs(1, wIndex);
    if (conv.inputs_size() > 2)
      conv.set_inputs(2, bIndex);
    else
      conv.add_inputs(bIndex);
    // A Relu fused into the batch norm (fuseTrainableActivations) moves
    // onto the Conv.
    for (const plan::Attribute &a : bn.attributes())
      if (llvm::StringRef(a.name()).starts_with("activation"))
        *conv.add_attributes() = a;
    conv.set_outputs(0, bn.outputs(0));
    dead[j] = true;
    ++folded;
  }
  if (folded)
    eraseOps(plan, dead);
  return folded;
}

/// A new value like `like` (dtype and dims), named like it plus `suffix`,
/// with `channels` in dimension 1; returns its index.
static int32_t addValueLike(plan::Plan &plan, int32_t like,
                            const std::string &suffix, int64_t channels) {
  plan::Value value = plan.values(like);
  value.set_name(value.name() + suffix);
  value.set_dims(1, channels);
  *plan.add_values() = std::move(value);
  return plan.values_size() - 1;
}

/// The product of `v`'s dimensions after the first, or -1 when one is not
/// known.
static int64_t itemElements(const plan::Plan &plan, int32_t v) {
  int64_t n = 1;
  const auto &dims = plan.values(v).dims();
  for (int d = 1; d < dims.size(); ++d) {
    if (dims[d] <= 0)
      return -1;
    n *= dims[d];
  }
  return n;
}

namespace {
/// A Concat whose channels reach one ungrouped Conv's source only through
/// ops that act on each channel alone (see splitConcatConvs).
struct ConcatConv {
  int concat, conv;
  /// The ops between them, in order.
  std::vector<int> between;
};
} // namespace

/// The ConcatConv starting at op `c`, if it is one that pays to split.
static std::optional<ConcatConv> matchConcatConv(const plan::Plan &plan,
                                                 const Uses &uses, int c,
                                                 OpFilter mine) {
  const plan::Op &concat = plan.ops(c);
  if (concat.type() != "Concat" || concat.inputs_size() < 2 ||
      concat.outputs_size() != 1)
    return std::nullopt;
  int32_t joined = concat.outputs(0);
  std::vector<int64_t> axis = intsOf(concat, "axis");
  if (plan.values(joined).dims_size() != 4 || axis.size() != 1 ||
      (axis[0] != 1 && axis[0] != -3))
    return std::nullopt;
  for (int32_t v : concat.inputs())
    if (v < 0 || plan.values(v).dims_size() != 4 || plan.values(v).dims(1) <= 0)
      return std::nullopt;
  ConcatConv match{c, -1, {}};
  int32_t v = joined;
  for (int i = uses.soleReader(v); i >= 0; i = uses.soleReader(v)) {
    const plan::Op &op = plan.ops(i);
    if (!fusable(mine, op, concat) || op.inputs_size() < 1 ||
        op.inputs(0) != v || op.outputs_size() != 1)
      return std::nullopt;
    if (op.type() == "Conv") {
      int32_t w = op.inputs_size() > 1 ? op.inputs(1) : -1;
      if (op.inputs_size() > 3 || w < 0 || !allEqual(op, "group", 1) ||
          plan.values(w).dims_size() != 4 ||
          plan.values(w).dims(1) != plan.values(joined).dims(1))
        return std::nullopt;
      // The copies saved are of the Concat's output (forward and
      // backward); each extra part costs a pass over the Conv's output.
      int64_t in = itemElements(plan, joined),
              out = itemElements(plan, op.outputs(0));
      if (in < 0 || out < 0 || out >= in)
        return std::nullopt;
      match.conv = i;
      return match;
    }
    bool perChannel = llvm::StringSwitch<bool>(op.type())
                          .Cases("MaxPool", "AveragePool", "Dropout", true)
                          .Default(false);
    if (!perChannel || plan.values(op.outputs(0)).dims_size() != 4)
      return std::nullopt;
    match.between.push_back(i);
    v = op.outputs(0);
  }
  return std::nullopt;
}

int heterps::runtime::splitConcatConvs(plan::Plan &plan, OpFilter mine) {
  Uses uses(plan);
  std::vector<ConcatConv> matches;
  std::vector<int> matchAt(plan.ops_size(), -1);
  std::vector<bool> dead(plan.ops_size(), false);
  for (int c = 0; c < plan.ops_size(); ++c)
    if (std::optional<ConcatConv> m = matchConcatConv(plan, uses, c, mine)) {
      dead[m->concat] = true;
      for (int i : m->between)
        dead[i] = true;
      matchAt[m->conv] = static_cast<int>(matches.size());
      matches.push_back(std::move(*m));
    }
  if (matches.empty())
    return 0;
  google::protobuf::RepeatedPtrField<plan::Op> ops;
  for (int i = 0; i < plan.ops_size(); ++i) {
    if (dead[i])
      continue;
    if (matchAt[i] < 0) {
      *ops.Add() = plan.ops(i);
      continue;
    }
    const ConcatConv &m = matches[matchAt[i]];
    const plan::Op conv = plan.ops(i);
    const plan::Op &concat = plan.ops(m.concat);
    int32_t partial = -1;
    int64_t first = 0;
    for (int k = 0; k < concat.inputs_size(); ++k) {
      std::string part = ":part" + std::to_string(k);
      int32_t src = concat.inputs(k);
      int64_t channels = plan.values(src).dims(1);
      // The per-channel ops, on this part's channels.
      for (int b : m.between) {
        plan::Op &op = *ops.Add() = plan.ops(b);
        op.set_name(op.name() + part);
        op.set_inputs(0, src);
        src = addValueLike(plan, op.outputs(0), part, channels);
        op.set_outputs(0, src);
      }
      // The weights of this part's input channels.
      plan::Op &slice = *ops.Add();
      slice.set_name(conv.name() + "/weights" + part);
      slice.set_type("Slice");
      slice.set_device(conv.device());
      slice.set_stage(conv.stage());
      slice.add_inputs(conv.inputs(1));
      int32_t w = addValueLike(plan, conv.inputs(1), part, channels);
      slice.add_outputs(w);
      for (auto [name, value] : {std::pair("starts", first),
                                 {"ends", first + channels},
                                 {"axes", 1},
                                 {"steps", 1}}) {
        plan::Attribute *a = slice.add_attributes();
        a->set_name(name);
        a->mutable_ints()->add_values(value);
      }
      first += channels;
      // The Conv of this part, summing the parts before it; the bias
      // once, in the first.
      plan::Op &op = *ops.Add() = conv;
      op.set_name(conv.name() + part);
      op.clear_inputs();
      op.add_inputs(src);
      op.add_inputs(w);
      op.add_inputs(k == 0 && conv.inputs_size() > 2 ? conv.inputs(2) : -1);
      if (k > 0)
        op.add_inputs(partial);
      if (k + 1 < concat.inputs_size()) {
        partial = addValueLike(plan, conv.outputs(0), part,
                               plan.values(conv.outputs(0)).dims(1));
        op.set_outputs(0, partial);
      }
    }
  }
  plan.mutable_ops()->Swap(&ops);
  return static_cast<int>(matches.size());
}

/// The value of a one-element f32 weight, if input `k` of `op` is one.
static std::optional<float> scalarWeight(const WeightMap &weights,
                                         const plan::Op &op, int k) {
  const Tensor *t = weightInput(weights, op, k);
  if (!t || t->dtype() != DType::F32 || t->numElements() != 1)
    return std::nullopt;
  return t->data<float>()[0];
}

int heterps::runtime::fuseGelus(plan::Plan &plan, const WeightMap &weights,
                                OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  auto near = [](std::optional<float> v, double want) {
    return v && std::abs(*v - want) <= 1e-6 * want;
  };
  // The sole reader of `op`'s output, if it has type `type` and joins it.
  auto next = [&](int op, llvm::StringRef type) {
    const plan::Op &from = plan.ops(op);
    if (from.outputs_size() != 1)
      return -1;
    int j = uses.soleReader(from.outputs(0));
    if (j < 0 || dead[j] || plan.ops(j).type() != type ||
        plan.ops(j).inputs_size() != 2 || plan.ops(j).outputs_size() != 1 ||
        !fusable(mine, from, plan.ops(j)))
      return -1;
    return j;
  };
  // The other input of binary `op` than `v`, or -1.
  auto other = [&](int op, int32_t v) {
    const plan::Op &o = plan.ops(op);
    return o.inputs(0) == v ? 1 : o.inputs(1) == v ? 0 : -1;
  };
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &div = plan.ops(i);
    if (dead[i] || div.type() != "Div" || div.inputs_size() != 2 ||
        div.outputs_size() != 1 ||
        !near(scalarWeight(weights, div, 1), std::sqrt(2.0)))
      continue;
    int32_t x = div.inputs(0);
    int erf = uses.soleReader(div.outputs(0));
    if (erf < 0 || plan.ops(erf).type() != "Erf" ||
        plan.ops(erf).outputs_size() != 1 || !fusable(mine, div, plan.ops(erf)))
      continue;
    int add = next(erf, "Add");
    if (add < 0)
      continue;
    int k = other(add, plan.ops(erf).outputs(0));
    if (k < 0 || !near(scalarWeight(weights, plan.ops(add), k), 1.0))
      continue;
    int byX = next(add, "Mul");
    if (byX < 0 || other(byX, plan.ops(add).outputs(0)) < 0 ||
        plan.ops(byX).inputs(other(byX, plan.ops(add).outputs(0))) != x)
      continue;
    int half = next(byX, "Mul");
    if (half < 0)
      continue;
    k = other(half, plan.ops(byX).outputs(0));
    if (k < 0 || !near(scalarWeight(weights, plan.ops(half), k), 0.5))
      continue;
    plan::Op &gelu = *plan.mutable_ops(i);
    int32_t out = plan.ops(half).outputs(0);
    gelu.set_type("Gelu");
    gelu.clear_attributes();
    gelu.clear_inputs();
    gelu.add_inputs(x);
    gelu.set_outputs(0, out);
    for (int j : {erf, add, byX, half})
      dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

/// The float attribute `name` of `op`, or `dflt`.
static float floatAttr(const plan::Op &op, llvm::StringRef name, float dflt) {
  for (const plan::Attribute &a : op.attributes())
    if (a.name() == name)
      return a.value_case() == plan::Attribute::kI ? static_cast<float>(a.i())
                                                   : a.f();
  return dflt;
}

int heterps::runtime::fuseSelfGates(plan::Plan &plan, OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &gate = plan.ops(i);
    bool sigmoid = gate.type() == "Sigmoid";
    bool hard = gate.type() == "HardSigmoid" &&
                std::abs(floatAttr(gate, "alpha", 0.2f) - 1.f / 6) < 1e-6f &&
                floatAttr(gate, "beta", 0.5f) == 0.5f;
    if (!(sigmoid || hard) || gate.inputs_size() != 1 ||
        gate.outputs_size() != 1)
      continue;
    int32_t x = gate.inputs(0), s = gate.outputs(0);
    int j = uses.soleReader(s);
    if (j < 0)
      continue;
    const plan::Op &mul = plan.ops(j);
    if (mul.type() != "Mul" || mul.inputs_size() != 2 ||
        mul.outputs_size() != 1 || !fusable(mine, gate, mul) ||
        !((mul.inputs(0) == x && mul.inputs(1) == s) ||
          (mul.inputs(0) == s && mul.inputs(1) == x)))
      continue;
    plan::Op &fusedOp = *plan.mutable_ops(i);
    fusedOp.set_type(sigmoid ? "Swish" : "HardSwish");
    fusedOp.clear_attributes();
    fusedOp.set_outputs(0, mul.outputs(0));
    dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseLayerNorms(plan::Plan &plan, const WeightMap &weights,
                                     OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  // The sole reader of op `from`'s output if it has type `type` and joins it.
  auto next = [&](int from, llvm::StringRef type) {
    int j = uses.soleReader(plan.ops(from).outputs(0));
    if (j < 0 || dead[j] || plan.ops(j).type() != type ||
        plan.ops(j).outputs_size() != 1 ||
        !fusable(mine, plan.ops(from), plan.ops(j)))
      return -1;
    return j;
  };
  // Whether op `i` is a ReduceMean over the last axis keeping it.
  auto meanOfLastAxis = [&](int i) {
    const plan::Op &op = plan.ops(i);
    if (op.type() != "ReduceMean" || op.inputs_size() != 1 ||
        op.outputs_size() != 1)
      return false;
    int64_t rank = plan.values(op.inputs(0)).dims_size();
    std::vector<int64_t> axes = intsOf(op, "axes"),
                         keep = intsOf(op, "keepdims");
    return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1) &&
           (keep.empty() || keep[0] == 1);
  };
  // The input of binary op `i` other than `v` when it is a weight of
  // `elements` elements (0: any count), else null.
  auto weightBeside = [&](int i, int32_t v, int64_t elements) -> int {
    const plan::Op &op = plan.ops(i);
    if (op.inputs_size() != 2 || (op.inputs(0) != v && op.inputs(1) != v))
      return -1;
    int k = op.inputs(0) == v ? 1 : 0;
    const Tensor *t = weightInput(weights, op, k);
    if (!t || t->dtype() != DType::F32 ||
        (elements ? t->rank() != 1 || t->numElements() != elements
                  : t->numElements() != 1))
      return -1;
    return k;
  };
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    if (dead[i] || !meanOfLastAxis(i))
      continue;
    const plan::Op &mean = plan.ops(i);
    int32_t x = mean.inputs(0);
    const plan::Value &xv = plan.values(x);
    int64_t channels = xv.dims_size() ? xv.dims(xv.dims_size() - 1) : -1;
    int sub = next(i, "Sub");
    if (channels < 1 || sub < 0 || plan.ops(sub).inputs(0) != x)
      continue;
    int32_t centred = plan.ops(sub).outputs(0);
    const std::vector<int> &readers = uses.readers[centred];
    if (uses.isOutput[centred] || readers.size() != 2)
      continue;
    int pow = plan.ops(readers[0]).type() == "Pow" ? readers[0] : readers[1];
    int div = pow == readers[0] ? readers[1] : readers[0];
    if (plan.ops(pow).type() != "Pow" || plan.ops(pow).inputs(0) != centred ||
        scalarWeight(weights, plan.ops(pow), 1) != 2.f ||
        !fusable(mine, mean, plan.ops(pow)))
      continue;
    int variance = next(pow, "ReduceMean");
    if (variance < 0 || !meanOfLastAxis(variance))
      continue;
    int addEps = next(variance, "Add");
    if (addEps < 0)
      continue;
    int k = weightBeside(addEps, plan.ops(variance).outputs(0), 0);
    std::optional<float> eps =
        k < 0 ? std::nullopt : scalarWeight(weights, plan.ops(addEps), k);
    if (!eps || !(*eps > 0))
      continue;
    int sqrt = next(addEps, "Sqrt");
    if (sqrt < 0 || next(sqrt, "Div") != div ||
        plan.ops(div).inputs(0) != centred)
      continue;
    int scale = next(div, "Mul");
    int s = scale < 0 ? -1
                      : weightBeside(scale, plan.ops(div).outputs(0), channels);
    if (s < 0)
      continue;
    int bias = next(scale, "Add");
    int b = bias < 0 ? -1
                     : weightBeside(bias, plan.ops(scale).outputs(0), channels);
    if (b < 0)
      bias = -1;
    plan::Op &norm = *plan.mutable_ops(i);
    int32_t out = plan.ops(bias >= 0 ? bias : scale).outputs(0);
    int32_t gamma = plan.ops(scale).inputs(s);
    int32_t beta = bias >= 0 ? plan.ops(bias).inputs(b) : -1;
    norm.set_type("LayerNormalization");
    norm.clear_attributes();
    plan::Attribute *axis = norm.add_attributes();
    axis->set_name("axis");
    axis->set_i(-1);
    plan::Attribute *epsilon = norm.add_attributes();
    epsilon->set_name("epsilon");
    epsilon->set_f(*eps);
    norm.clear_inputs();
    norm.add_inputs(x);
    norm.add_inputs(gamma);
    if (beta >= 0)
      norm.add_inputs(beta);
    norm.set_outputs(0, out);
    for (int j : {sub, pow, variance, addEps, sqrt, div, scale, bias})
      if (j >= 0)
        dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseMatMulBiases(plan::Plan &plan,
                                       const WeightMap &weights,
                                       OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    plan::Op &mm = *plan.mutable_ops(i);
    if (mm.type() != "MatMul" || mm.inputs_size() != 2 ||
        mm.outputs_size() != 1)
      continue;
    const Tensor *w = weightInput(weights, mm, 1);
    if (!w || w->rank() != 2 || w->dtype() != DType::F32)
      continue;
    int j = uses.soleReader(mm.outputs(0));
    if (j < 0)
      continue;
    const plan::Op &add = plan.ops(j);
    if (add.type() != "Add" || add.inputs_size() != 2 ||
        !fusable(mine, mm, add))
      continue;
    int k = add.inputs(0) == mm.outputs(0) ? 1 : 0;
    const Tensor *bias = weightInput(weights, add, k);
    // Broadcast along the last axis only: [N] or [1, ..., 1, N], and no
    // more dimensions than the product has.
    const plan::Value &out = plan.values(mm.outputs(0));
    if (!bias || bias->dtype() != DType::F32 || bias->rank() == 0 ||
        bias->rank() > out.dims_size() || bias->numElements() != w->dim(1) ||
        bias->dim(bias->rank() - 1) != w->dim(1))
      continue;
    mm.add_inputs(add.inputs(k));
    mm.set_outputs(0, add.outputs(0));
    dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseSqueezeExcites(plan::Plan &plan,
                                         const WeightMap &weights,
                                         OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  // The op defining `v` when `reader` alone reads it and may join it.
  auto feeding = [&](int32_t v, int reader) {
    if (v < 0 || uses.soleReader(v) != reader)
      return -1;
    int i = uses.definedBy[v];
    return i >= 0 && !dead[i] && plan.ops(i).outputs_size() == 1 &&
                   fusable(mine, plan.ops(i), plan.ops(reader))
               ? i
               : -1;
  };
  // Whether op `i` is a 1x1 Conv from `in` to `out` channels by constant
  // weights (and bias), without pads or groups: on the pooled 1x1 image
  // strides and dilations change nothing.
  auto pointwise = [&](int i, int64_t in, int64_t out) {
    const plan::Op &op = plan.ops(i);
    if (op.type() != "Conv" || op.inputs_size() < 2 || op.inputs_size() > 3)
      return false;
    const Tensor *w = weightInput(weights, op, 1);
    const Tensor *b = weightInput(weights, op, 2);
    if (!w || w->shape() != Shape{out, in, 1, 1} ||
        (op.inputs_size() == 3 && op.inputs(2) >= 0 &&
         (!b || b->numElements() != out)))
      return false;
    static const llvm::StringRef known[] = {
        "kernel_shape", "strides", "dilations", "activation", "group", "pads"};
    for (const plan::Attribute &a : op.attributes())
      if (!llvm::is_contained(known, llvm::StringRef(a.name())))
        return false;
    return allEqual(op, "group", 1) && allEqual(op, "pads", 0);
  };
  auto input = [](const plan::Op &op, int k) {
    return k < op.inputs_size() ? op.inputs(k) : -1;
  };
  int fused = 0;
  for (int m = 0; m < plan.ops_size(); ++m) {
    const plan::Op &mul = plan.ops(m);
    if (mul.type() != "Mul" || mul.inputs_size() != 2 ||
        mul.outputs_size() != 1)
      continue;
    for (int k = 0; k < 2; ++k) {
      int32_t x = mul.inputs(k);
      const plan::Value &xv = plan.values(x);
      if (xv.dims_size() != 4 || xv.dims(1) < 1)
        continue;
      int64_t channels = xv.dims(1);
      // The gate: a Sigmoid or HardSigmoid op, or a Sigmoid in the Conv.
      int gate = feeding(mul.inputs(1 - k), m), conv2 = -1;
      if (gate < 0)
        continue;
      const plan::Op &g = plan.ops(gate);
      std::string gateType = g.type();
      if ((gateType == "Sigmoid" || gateType == "HardSigmoid") &&
          g.inputs_size() == 1) {
        conv2 = feeding(g.inputs(0), gate);
        if (conv2 >= 0 && hasActivation(plan.ops(conv2)))
          continue;
      } else if (gateType == "Conv" && activationOf(g) == "Sigmoid") {
        gateType = "Sigmoid";
        std::swap(conv2, gate);
      } else {
        continue;
      }
      int conv1 = conv2 < 0 ? -1 : feeding(plan.ops(conv2).inputs(0), conv2);
      if (conv1 < 0)
        continue;
      const plan::Op &c1 = plan.ops(conv1), &c2 = plan.ops(conv2);
      const Tensor *w1 = weightInput(weights, c1, 1);
      std::string act = activationOf(c1).str();
      if (!w1 || w1->rank() != 4 ||
          !(act.empty() || act == "Relu" || act == "Swish") ||
          !pointwise(conv1, channels, w1->dim(0)) ||
          !pointwise(conv2, w1->dim(0), channels))
        continue;
      int pool = feeding(c1.inputs(0), conv1);
      if (pool < 0 || plan.ops(pool).type() != "GlobalAveragePool" ||
          plan.ops(pool).inputs(0) != x)
        continue;
      int32_t ins[] = {x, c1.inputs(1), input(c1, 2), c2.inputs(1),
                       input(c2, 2)};
      float alpha = gate >= 0 ? floatAttr(plan.ops(gate), "alpha", 0.2f) : 0;
      float beta = gate >= 0 ? floatAttr(plan.ops(gate), "beta", 0.5f) : 0;
      plan::Op &se = *plan.mutable_ops(m);
      se.set_type("SqueezeExcite");
      se.clear_inputs();
      for (int32_t v : ins)
        se.add_inputs(v);
      se.clear_attributes();
      auto attr = [&](const char *name) {
        plan::Attribute *a = se.add_attributes();
        a->set_name(name);
        return a;
      };
      if (!act.empty())
        attr("activation")->set_s(act);
      attr("gate")->set_s(gateType);
      if (gateType == "HardSigmoid") {
        attr("gate_alpha")->set_f(alpha);
        attr("gate_beta")->set_f(beta);
      }
      for (int j : {pool, conv1, conv2, gate})
        if (j >= 0)
          dead[j] = true;
      ++fused;
      break;
    }
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

/// Sets the integer list attribute `name` of `op`.
static void setInts(plan::Op &op, llvm::StringRef name,
                    llvm::ArrayRef<int64_t> values) {
  plan::Attribute &a = attributeOf(op, name);
  a.mutable_ints()->clear_values();
  for (int64_t v : values)
    a.mutable_ints()->add_values(v);
}

/// fuseAttention, and with `trainable` fuseTrainableAttention.
static int fuseAttentions(plan::Plan &plan, const WeightMap &weights,
                          OpFilter mine, bool trainable) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  // The op defining `v` if only `reader` reads it, it has `type`, one
  // output, and joins `reader`; else -1.
  auto feeding = [&](int32_t v, int reader, llvm::StringRef type) {
    int p = v >= 0 ? uses.definedBy[v] : -1;
    if (p < 0 || dead[p] || uses.soleReader(v) != reader ||
        plan.ops(p).type() != type || plan.ops(p).outputs_size() != 1 ||
        !fusable(mine, plan.ops(p), plan.ops(reader)))
      return -1;
    return p;
  };
  // A Mul or Div by a one-element weight feeding `reader` through `v`:
  // folds the factor into `scale` and returns the op, or -1.
  auto scaling = [&](int32_t v, int reader, float &scale) {
    for (llvm::StringRef type : {"Mul", "Div"}) {
      int p = feeding(v, reader, type);
      if (p < 0 || plan.ops(p).inputs_size() != 2)
        continue;
      int k = type == "Mul" && !scalarWeight(weights, plan.ops(p), 1) ? 0 : 1;
      std::optional<float> c = scalarWeight(weights, plan.ops(p), k);
      if (!c || (type == "Div" && k == 0) || *c == 0.f)
        continue;
      scale *= type == "Mul" ? *c : 1.f / *c;
      return p;
    }
    return -1;
  };
  // What scaling op `m` scales: its input that is no weight.
  auto scaled = [&](int m) {
    const plan::Op &op = plan.ops(m);
    return weights.count(op.inputs(0)) ? op.inputs(1) : op.inputs(0);
  };
  auto rankOf = [&](int32_t v) { return plan.values(v).dims_size(); };
  auto identity = [](int rank) {
    std::vector<int64_t> perm(rank);
    for (int d = 0; d < rank; ++d)
      perm[d] = d;
    return perm;
  };
  // The Transpose feeding `reader` through `v`: takes it over (its input
  // in `v`, its perm in `perm`) and returns it, or -1 (perm the identity).
  auto transposed = [&](int32_t &v, int reader, std::vector<int64_t> &perm) {
    int t = feeding(v, reader, "Transpose");
    perm = t >= 0 ? intsOf(plan.ops(t), "perm") : identity(rankOf(v));
    if (t < 0)
      return -1;
    if (perm.empty()) // ONNX's default: the axes reversed
      for (int d = rankOf(v) - 1; d >= 0; --d)
        perm.push_back(d);
    v = plan.ops(t).inputs(0);
    return t;
  };
  auto dimsOf = [&](int32_t v) {
    const auto &dims = plan.values(v).dims();
    return std::vector<int64_t>(dims.begin(), dims.end());
  };
  // The operand `v` of `reader` as the kernel reads it: through a Transpose
  // (taken over, its perm in `perm`), and from there through a Gather of
  // one index along axis 0 of a Transpose that may have other readers
  // (Swin's q, k and v are three such Gathers of one): `v` then becomes
  // that Transpose's input, `perm` its axes in the order read, the first
  // fixed at `index`. The ops taken over go to `taken`, the Transpose read
  // through to `shared`.
  std::vector<int> shared;
  auto operand = [&](int32_t &v, int reader, std::vector<int64_t> &perm,
                     int64_t &index, std::vector<int> &taken) {
    index = -1;
    int outer = transposed(v, reader, perm);
    if (outer >= 0)
      taken.push_back(outer);
    int g = feeding(v, outer >= 0 ? outer : reader, "Gather");
    if (g < 0 || plan.ops(g).inputs_size() != 2 || trainable)
      return;
    const plan::Op &gather = plan.ops(g);
    std::vector<int64_t> axis = intsOf(gather, "axis");
    const Tensor *at = weightInput(weights, gather, 1);
    int t = uses.definedBy[gather.inputs(0)];
    if ((!axis.empty() && axis[0] != 0) || !at || at->dtype() != DType::I64 ||
        at->rank() != 0 || t < 0 || dead[t] ||
        plan.ops(t).type() != "Transpose" || plan.ops(t).outputs_size() != 1 ||
        !fusable(mine, plan.ops(t), gather))
      return;
    int32_t x = plan.ops(t).inputs(0);
    std::vector<int64_t> inner = intsOf(plan.ops(t), "perm");
    if (inner.empty())
      for (int d = rankOf(x) - 1; d >= 0; --d)
        inner.push_back(d);
    if (inner.size() != perm.size() + 1 || rankOf(x) != int(inner.size()))
      return;
    int64_t n = plan.values(x).dims(inner[0]), i = at->data<int64_t>()[0];
    i += i < 0 ? n : 0;
    if (n <= 0 || i < 0 || i >= n)
      return;
    std::vector<int64_t> composed = {inner[0]};
    for (int64_t a : perm)
      composed.push_back(inner[1 + a]);
    perm = std::move(composed);
    index = i;
    v = x;
    taken.push_back(g);
    shared.push_back(t);
  };
  // Whether `reshape` keeps the last two axes of its input, both known.
  auto keepsMatrices = [&](const plan::Op &reshape) {
    std::vector<int64_t> in = dimsOf(reshape.inputs(0)),
                         out = dimsOf(reshape.outputs(0));
    size_t a = in.size(), b = out.size();
    return a >= 2 && b >= 2 && in[a - 1] > 0 && in[a - 2] > 0 &&
           in[a - 1] == out[b - 1] && in[a - 2] == out[b - 2];
  };
  // Whether a bias of `shape` broadcasts to scores seen as `view`, whose
  // last two axes are known and which has at most one unknown size.
  auto biasFits = [](llvm::ArrayRef<int64_t> shape,
                     llvm::ArrayRef<int64_t> view) {
    size_t r = view.size();
    if (r < 2 || shape.size() > r || view[r - 1] <= 0 || view[r - 2] <= 0 ||
        llvm::count_if(view, [](int64_t d) { return d < 0; }) > 1)
      return false;
    for (size_t i = 1; i <= shape.size(); ++i)
      if (shape[shape.size() - i] != 1 &&
          shape[shape.size() - i] != view[r - i])
        return false;
    return true;
  };

  int fused = 0;
  for (int s = 0; s < plan.ops_size(); ++s) {
    const plan::Op &softmax = plan.ops(s);
    if (dead[s] || softmax.type() != "Softmax" || softmax.inputs_size() != 1 ||
        softmax.outputs_size() != 1)
      continue;
    int rank = rankOf(softmax.inputs(0));
    std::vector<int64_t> axis = intsOf(softmax, "axis");
    if (rank < 2 || (!axis.empty() && axis[0] != -1 && axis[0] != rank - 1))
      continue;
    std::vector<int> chain; // the ops replaced, besides the Softmax
    float scale = 1.f;
    int32_t scores = softmax.inputs(0);
    int reader = s;
    // Where(mask, fill, scores) or Where(mask, scores, fill).
    int32_t mask = -1;
    float fill = 0.f;
    int64_t fillWhere = 1;
    if (int w = trainable ? -1 : feeding(scores, reader, "Where");
        w >= 0 && plan.ops(w).inputs_size() == 3) {
      const plan::Op &where = plan.ops(w);
      int k = scalarWeight(weights, where, 1) ? 1 : 2;
      std::optional<float> f = scalarWeight(weights, where, k);
      if (!f || plan.values(where.inputs(0)).dtype() !=
                    static_cast<int32_t>(DType::Bool))
        continue;
      mask = where.inputs(0);
      fill = *f;
      fillWhere = k == 1;
      scores = where.inputs(k == 1 ? 2 : 1);
      chain.push_back(w);
      reader = w;
    }
    // Additive biases: Adds of the scores and an f32 weight, seen through
    // Reshapes that keep the matrices (Swin's relative-position bias and
    // shift mask); each bias with the scores' shape where it is added.
    std::vector<std::pair<int32_t, std::vector<int64_t>>> biases;
    for (bool more = !trainable; more;) {
      more = false;
      if (int r = feeding(scores, reader, "Reshape");
          r >= 0 && keepsMatrices(plan.ops(r))) {
        scores = plan.ops(r).inputs(0);
        chain.push_back(r);
        reader = r;
        more = true;
      } else if (int a = feeding(scores, reader, "Add");
                 a >= 0 && plan.ops(a).inputs_size() == 2) {
        const plan::Op &add = plan.ops(a);
        int k = weightInput(weights, add, 1) ? 1 : 0;
        const Tensor *bias = weightInput(weights, add, k);
        int32_t other = add.inputs(1 - k);
        std::vector<int64_t> view = dimsOf(other);
        if (!bias || bias->dtype() != DType::F32 || weights.count(other) ||
            !biasFits(bias->shape(), view))
          break;
        biases.push_back({add.inputs(k), view});
        scores = other;
        chain.push_back(a);
        reader = a;
        more = true;
      }
    }
    if (int m = scaling(scores, reader, scale); m >= 0) {
      scores = scaled(m);
      chain.push_back(m);
      reader = m;
    }
    int qk = feeding(scores, reader, "MatMul");
    if (qk < 0 || plan.ops(qk).inputs_size() != 2)
      continue;
    chain.push_back(qk);
    int32_t q = plan.ops(qk).inputs(0), k = plan.ops(qk).inputs(1);
    int qReader = qk;
    if (int m = scaling(q, qk, scale); m >= 0) {
      q = scaled(m);
      chain.push_back(m);
      qReader = m;
    }
    // The probabilities' one reader: the MatMul by V, or an inference
    // Dropout (Swin's) read only by it.
    int32_t probabilities = softmax.outputs(0);
    int pv = uses.soleReader(probabilities);
    if (pv >= 0 && !dead[pv] && !trainable &&
        plan.ops(pv).type() == "Dropout" && plan.ops(pv).outputs_size() == 1 &&
        fusable(mine, softmax, plan.ops(pv))) {
      chain.push_back(pv);
      probabilities = plan.ops(pv).outputs(0);
      pv = uses.soleReader(probabilities);
    }
    if (pv < 0 || dead[pv] || plan.ops(pv).type() != "MatMul" ||
        plan.ops(pv).inputs_size() != 2 ||
        plan.ops(pv).inputs(0) != probabilities ||
        plan.ops(pv).outputs_size() != 1 ||
        !fusable(mine, softmax, plan.ops(pv)))
      continue;
    int32_t v = plan.ops(pv).inputs(1);
    std::vector<int64_t> qPerm, kPerm, vPerm, outPerm = identity(rank);
    int64_t qIndex, kIndex, vIndex;
    size_t sharedBefore = shared.size();
    std::vector<int> taken;
    operand(q, qReader, qPerm, qIndex, taken);
    operand(k, qk, kPerm, kIndex, taken);
    operand(v, pv, vPerm, vIndex, taken);
    int last = pv;
    int32_t out = plan.ops(pv).outputs(0);
    if (int j = uses.soleReader(out);
        j >= 0 && !dead[j] && plan.ops(j).type() == "Transpose" &&
        fusable(mine, plan.ops(pv), plan.ops(j))) {
      std::vector<int64_t> perm = intsOf(plan.ops(j), "perm");
      if (!perm.empty()) {
        outPerm = perm;
        out = plan.ops(j).outputs(0);
        last = j;
      }
    }
    // Every operand f32 of the rank its perm covers (`rank`, one more with
    // an index), and the matrices' rows contiguous: Q's and V's last
    // logical axis is their source's last, one of Kt's last two is, and the
    // output's last stays last.
    auto fits = [&](int32_t x, llvm::ArrayRef<int64_t> perm, int64_t index) {
      return plan.values(x).dtype() == static_cast<int32_t>(DType::F32) &&
             perm.size() == size_t(rank + (index >= 0)) &&
             rankOf(x) == int(perm.size());
    };
    // Whether the source's last axis is among the last `places` of perm.
    auto lastIsLast = [](llvm::ArrayRef<int64_t> perm, size_t places) {
      return perm.back() == int64_t(perm.size() - 1) ||
             (places == 2 && perm[perm.size() - 2] == int64_t(perm.size() - 1));
    };
    // The kernels take Q, K and V with the same batch axes: a known size
    // that differs is a broadcast (one K for all heads), which stays apart.
    auto batchSizes = [&](int32_t x, llvm::ArrayRef<int64_t> perm,
                          int64_t index) {
      std::vector<int64_t> dims = dimsOf(x), sizes;
      for (int a = index >= 0 ? 1 : 0; a < int(perm.size()) - 2; ++a)
        sizes.push_back(dims[perm[a]]);
      return sizes;
    };
    auto sameBatches = [&] {
      std::vector<int64_t> bq = batchSizes(q, qPerm, qIndex),
                           bk = batchSizes(k, kPerm, kIndex),
                           bv = batchSizes(v, vPerm, vIndex);
      for (size_t a = 0; a < bq.size(); ++a)
        for (int64_t other : {bk[a], bv[a]})
          if (bq[a] > 0 && other > 0 && bq[a] != other)
            return false;
      return true;
    };
    if (!fits(q, qPerm, qIndex) || !fits(k, kPerm, kIndex) ||
        !fits(v, vPerm, vIndex) || outPerm.size() != size_t(rank) ||
        !lastIsLast(qPerm, 1) || !lastIsLast(kPerm, 2) ||
        !lastIsLast(vPerm, 1) || outPerm[rank - 1] != rank - 1 ||
        !sameBatches()) {
      shared.resize(sharedBefore);
      continue;
    }
    plan::Op &attention = *plan.mutable_ops(last);
    attention.set_type("Attention");
    attention.clear_attributes();
    attention.clear_inputs();
    for (int32_t x : {q, k, v, mask})
      attention.add_inputs(x);
    attention.set_outputs(0, out);
    setInts(attention, "q_perm", qPerm);
    setInts(attention, "k_perm", kPerm);
    setInts(attention, "v_perm", vPerm);
    setInts(attention, "out_perm", outPerm);
    for (auto [name, index] :
         {std::pair{"q_index", qIndex}, std::pair{"k_index", kIndex},
          std::pair{"v_index", vIndex}})
      if (index >= 0)
        attributeOf(attention, name).set_i(index);
    if (!biases.empty()) {
      std::vector<int64_t> ranks, views;
      for (auto &[bias, view] : biases) {
        attention.add_inputs(bias);
        ranks.push_back(static_cast<int64_t>(view.size()));
        views.insert(views.end(), view.begin(), view.end());
      }
      setInts(attention, "bias_ranks", ranks);
      setInts(attention, "bias_views", views);
    }
    attributeOf(attention, "scale").set_f(scale);
    if (mask >= 0) {
      attributeOf(attention, "mask_fill").set_f(fill);
      attributeOf(attention, "mask_fill_where").set_i(fillWhere);
    }
    for (int j : chain)
      dead[j] = true;
    for (int j : taken)
      dead[j] = true;
    for (int j : {s, pv})
      if (j != last)
        dead[j] = true;
    ++fused;
  }
  // A Transpose read through goes once no op reads its copy.
  for (int t : shared)
    if (!uses.isOutput[plan.ops(t).outputs(0)] &&
        llvm::all_of(uses.readers[plan.ops(t).outputs(0)],
                     [&](int j) { return dead[j]; }))
      dead[t] = true;
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseAttention(plan::Plan &plan, const WeightMap &weights,
                                    OpFilter mine) {
  return fuseAttentions(plan, weights, mine, /*trainable=*/false);
}

int heterps::runtime::fuseTrainableAttention(plan::Plan &plan,
                                             const WeightMap &weights,
                                             OpFilter mine) {
  return fuseAttentions(plan, weights, mine, /*trainable=*/true);
}

int heterps::runtime::fuseSkipLayerNorms(plan::Plan &plan, OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &norm = plan.ops(i);
    if (norm.type() != "LayerNormalization" || norm.inputs_size() < 2 ||
        norm.outputs_size() != 1)
      continue;
    int32_t x = norm.inputs(0);
    int rank = plan.values(x).dims_size();
    std::vector<int64_t> axis = intsOf(norm, "axis");
    int a = uses.definedBy[x];
    if (rank < 1 || (!axis.empty() && axis[0] != -1 && axis[0] != rank - 1) ||
        a < 0 || dead[a] || plan.ops(a).type() != "Add" ||
        plan.ops(a).inputs_size() != 2 || plan.ops(a).outputs_size() != 1 ||
        !fusable(mine, plan.ops(a), norm))
      continue;
    // Same declared shapes: the sum broadcasts nothing.
    const plan::Value &l = plan.values(plan.ops(a).inputs(0)),
                      &r = plan.values(plan.ops(a).inputs(1));
    if (l.dtype() != static_cast<int32_t>(DType::F32) ||
        r.dtype() != l.dtype() || l.dims_size() != rank ||
        r.dims_size() != rank ||
        !std::equal(l.dims().begin(), l.dims().end(), r.dims().begin()))
      continue;
    // The LayerNorm's place: both addends and its weights are defined
    // before it; the sum, when read elsewhere too, becomes its second
    // output, which readers after the Add and before the LayerNorm would
    // then read too early.
    bool sumReadElsewhere = uses.soleReader(x) != i;
    if (sumReadElsewhere &&
        llvm::any_of(uses.readers[x], [&](int j) { return j < i; }))
      continue;
    plan::Op &skip = *plan.mutable_ops(i);
    std::vector<int32_t> rest(skip.inputs().begin() + 1, skip.inputs().end());
    skip.set_type("SkipLayerNormalization");
    attributeOf(skip, "axis").set_i(-1);
    skip.clear_inputs();
    skip.add_inputs(plan.ops(a).inputs(0));
    skip.add_inputs(plan.ops(a).inputs(1));
    for (int32_t v : rest)
      skip.add_inputs(v);
    if (sumReadElsewhere)
      skip.add_outputs(x);
    dead[a] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseConcatBatchNorms(plan::Plan &plan,
                                           const WeightMap &weights,
                                           OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    plan::Op &concat = *plan.mutable_ops(i);
    if (concat.type() != "Concat" || concat.outputs_size() != 1 ||
        intsOf(concat, "axis") != std::vector<int64_t>{1} ||
        concat.attributes_size() != 1)
      continue;
    const plan::Value &out = plan.values(concat.outputs(0));
    int j = uses.soleReader(concat.outputs(0));
    if (out.dtype() != static_cast<int32_t>(DType::F32) ||
        out.dims_size() < 3 || out.dims(1) <= 0 || j < 0)
      continue;
    const plan::Op &bn = plan.ops(j);
    llvm::StringRef activation = activationOf(bn);
    if (bn.type() != "BatchNormalization" || bn.inputs_size() != 5 ||
        bn.outputs_size() != 1 || !fusable(mine, concat, bn) ||
        (!activation.empty() && activation != "Relu"))
      continue;
    int64_t channels = out.dims(1);
    const Tensor *params[4];
    bool ok = true;
    for (int k = 0; k < 4 && ok; ++k) {
      params[k] = weightInput(weights, bn, k + 1);
      ok = params[k] && params[k]->dtype() == DType::F32 &&
           params[k]->numElements() == channels;
    }
    if (!ok)
      continue;
    float epsilon = floatAttr(bn, "epsilon", 1e-5f);
    plan::Attribute &scale = attributeOf(concat, "scale");
    plan::Attribute &shift = attributeOf(concat, "shift");
    for (int64_t c = 0; c < channels; ++c) {
      float s = params[0]->data<float>()[c] /
                std::sqrt(params[3]->data<float>()[c] + epsilon);
      scale.mutable_floats()->add_values(s);
      shift.mutable_floats()->add_values(params[1]->data<float>()[c] -
                                         params[2]->data<float>()[c] * s);
    }
    if (!activation.empty())
      attributeOf(concat, "activation").set_s(activation.str());
    concat.set_outputs(0, bn.outputs(0));
    dead[j] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseChannelShuffles(plan::Plan &plan, OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  // The op that alone reads `op`'s one output, if it has `type` and joins
  // `op`; else -1.
  auto next = [&](int op, llvm::StringRef type) {
    const plan::Op &from = plan.ops(op);
    int j = from.outputs_size() == 1 ? uses.soleReader(from.outputs(0)) : -1;
    if (j < 0 || dead[j] || plan.ops(j).type() != type ||
        plan.ops(j).outputs_size() != 1 ||
        plan.ops(j).inputs(0) != from.outputs(0) ||
        !fusable(mine, from, plan.ops(j)))
      return -1;
    return j;
  };
  auto dims = [&](int32_t v) {
    const auto &d = plan.values(v).dims();
    return std::vector<int64_t>(d.begin(), d.end());
  };
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &concat = plan.ops(i);
    if (dead[i] || concat.type() != "Concat" || concat.inputs_size() != 2 ||
        intsOf(concat, "axis") != std::vector<int64_t>{1} ||
        concat.attributes_size() != 1 || concat.outputs_size() != 1)
      continue;
    int split = next(i, "Reshape");
    int transpose = split >= 0 ? next(split, "Transpose") : -1;
    int join = transpose >= 0 ? next(transpose, "Reshape") : -1;
    if (join < 0 || intsOf(plan.ops(transpose), "perm") !=
                        std::vector<int64_t>{0, 2, 1, 3, 4})
      continue;
    // [N, C, H, W] -> [N, 2, C/2, H, W] -> [N, C/2, 2, H, W] -> [N, C, H, W],
    // each half of C one input: a channel shuffle of two groups.
    std::vector<int64_t> a = dims(concat.inputs(0)), b = dims(concat.inputs(1)),
                         in = dims(concat.outputs(0)),
                         groups = dims(plan.ops(split).outputs(0)),
                         out = dims(plan.ops(join).outputs(0));
    bool f32 = plan.values(concat.outputs(0)).dtype() ==
               static_cast<int32_t>(DType::F32);
    if (!f32 || in.size() != 4 || a != b || a.size() != 4 || a[1] <= 0 ||
        in[1] != 2 * a[1] || in[2] <= 0 || in[3] <= 0 ||
        groups != std::vector<int64_t>{in[0], 2, a[1], in[2], in[3]} ||
        out != in)
      continue;
    plan::Op &shuffle = *plan.mutable_ops(join);
    shuffle.set_type("ConcatShuffle");
    shuffle.clear_attributes();
    shuffle.clear_inputs();
    shuffle.add_inputs(concat.inputs(0));
    shuffle.add_inputs(concat.inputs(1));
    dead[i] = dead[split] = dead[transpose] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

/// What `slice` takes of its input of `shape`, if its bounds are known:
/// from its attributes (where constant folding put computed ones) or from
/// `weights`.
static std::optional<SliceGeometry> sliceGeometryOf(const plan::Op &slice,
                                                    const Shape &shape,
                                                    const WeightMap &weights) {
  SliceParams fromAttributes{intsOf(slice, "starts"), intsOf(slice, "ends"),
                             intsOf(slice, "axes"), intsOf(slice, "steps")};
  std::vector<const Tensor *> inputs = {nullptr};
  for (int k = 1; k < slice.inputs_size(); ++k) {
    const Tensor *bound = weightInput(weights, slice, k);
    if (!bound && slice.inputs(k) >= 0)
      return std::nullopt;
    inputs.push_back(bound);
  }
  llvm::Expected<std::optional<SliceParams>> fromInputs =
      sliceParamsOfInputs(inputs);
  llvm::Expected<SliceParams> params =
      !fromInputs ? fromInputs.takeError()
                  : checkCounts(*fromInputs ? std::move(**fromInputs)
                                            : std::move(fromAttributes));
  if (!params) {
    llvm::consumeError(params.takeError());
    return std::nullopt;
  }
  llvm::Expected<SliceGeometry> g = sliceGeometry(shape, *params);
  if (!g) {
    llvm::consumeError(g.takeError());
    return std::nullopt;
  }
  return *g;
}

/// The channels [first, first + count) that `slice` takes of its input of
/// `shape`, if it takes a channel range.
static std::optional<std::pair<int64_t, int64_t>>
channelRangeOf(const plan::Op &slice, const Shape &shape,
               const WeightMap &weights) {
  std::optional<SliceGeometry> g = sliceGeometryOf(slice, shape, weights);
  if (!g || !g->takesChannelRange(shape))
    return std::nullopt;
  return std::pair(g->first[1], g->count[1]);
}

int heterps::runtime::fuseShuffleChunks(plan::Plan &plan,
                                        const WeightMap &weights,
                                        OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &shuffle = plan.ops(i);
    if (shuffle.type() != "ConcatShuffle" || shuffle.outputs_size() != 1)
      continue;
    int32_t whole = shuffle.outputs(0);
    const std::vector<int> &readers = uses.readers[whole];
    const auto &dims = plan.values(whole).dims();
    Shape shape(dims.begin(), dims.end());
    // Each output half interleaves half of each input's channels. A
    // dynamic batch stands as a size no Slice bound of a real one meets.
    if (uses.isOutput[whole] || readers.size() != 2 || shape.size() != 4 ||
        shape[1] <= 0 || shape[1] % 4 || shape[2] <= 0 || shape[3] <= 0)
      continue;
    if (shape[0] < 0)
      shape[0] = std::numeric_limits<int32_t>::max();
    int halves[2] = {-1, -1};
    for (int j : readers) {
      const plan::Op &slice = plan.ops(j);
      if (slice.type() != "Slice" || dead[j] || slice.inputs(0) != whole ||
          slice.outputs_size() != 1 || !fusable(mine, shuffle, slice))
        break;
      auto range = channelRangeOf(slice, shape, weights);
      if (range && range->second == shape[1] / 2 &&
          (range->first == 0 || range->first == shape[1] / 2))
        halves[range->first == 0 ? 0 : 1] = j;
    }
    if (halves[0] < 0 || halves[1] < 0)
      continue;
    plan::Op &rewritten = *plan.mutable_ops(i);
    rewritten.clear_outputs();
    for (int j : halves) {
      rewritten.add_outputs(plan.ops(j).outputs(0));
      dead[j] = true;
    }
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::fuseRolls(plan::Plan &plan, const WeightMap &weights,
                                OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int fused = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &concat = plan.ops(i);
    if (concat.type() != "Concat" || concat.inputs_size() != 2 ||
        concat.outputs_size() != 1)
      continue;
    int head = uses.definedBy[concat.inputs(0)],
        tail = uses.definedBy[concat.inputs(1)];
    if (head < 0 || tail < 0 || dead[head] || dead[tail] ||
        plan.ops(head).type() != "Slice" || plan.ops(tail).type() != "Slice" ||
        plan.ops(head).inputs(0) != plan.ops(tail).inputs(0) ||
        uses.soleReader(concat.inputs(0)) != i ||
        uses.soleReader(concat.inputs(1)) != i ||
        !fusable(mine, plan.ops(head), concat) ||
        !fusable(mine, plan.ops(tail), concat))
      continue;
    int32_t x = plan.ops(head).inputs(0);
    const auto &dims = plan.values(x).dims();
    Shape shape(dims.begin(), dims.end());
    int64_t rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> axisAttr = intsOf(concat, "axis");
    int64_t axis = axisAttr.empty() ? 0 : axisAttr[0];
    axis += axis < 0 ? rank : 0;
    if (axis < 0 || axis >= rank || shape[axis] <= 0 ||
        plan.values(x).dtype() != static_cast<int32_t>(DType::F32))
      continue;
    // A dynamic size stands as one no bound of a real one meets.
    for (int64_t &d : shape)
      if (d < 0)
        d = std::numeric_limits<int32_t>::max();
    std::optional<SliceGeometry> h = sliceGeometryOf(plan.ops(head), shape,
                                                     weights),
                                 t = sliceGeometryOf(plan.ops(tail), shape,
                                                     weights);
    // The head [k, d) and the tail [0, k) of `axis`, every other index.
    auto wholeElsewhere = [&](const SliceGeometry &g) {
      for (int64_t a = 0; a < rank; ++a)
        if (g.step[a] != 1 ||
            (a != axis && (g.first[a] != 0 || g.count[a] != shape[a])))
          return false;
      return true;
    };
    int64_t d = shape[axis];
    if (!h || !t || !wholeElsewhere(*h) || !wholeElsewhere(*t) ||
        t->first[axis] != 0 || h->first[axis] != t->count[axis] ||
        h->first[axis] + h->count[axis] != d || t->count[axis] == 0 ||
        h->count[axis] == 0)
      continue;
    std::vector<int64_t> offsets(rank, 0);
    offsets[axis] = h->first[axis];
    // A Roll of a Roll read only here is one Roll of both offsets.
    int before = uses.definedBy[x];
    if (before >= 0 && dead[before] == false &&
        plan.ops(before).type() == "Roll" && !uses.isOutput[x] &&
        uses.readers[x].size() == 2 &&
        fusable(mine, plan.ops(before), concat)) {
      std::vector<int64_t> earlier = intsOf(plan.ops(before), "offsets");
      for (int64_t a = 0; a < rank; ++a)
        offsets[a] = (offsets[a] + earlier[a]) % shape[a];
      x = plan.ops(before).inputs(0);
      dead[before] = true;
    }
    plan::Op &roll = *plan.mutable_ops(i);
    roll.set_type("Roll");
    roll.clear_attributes();
    roll.clear_inputs();
    roll.add_inputs(x);
    setInts(roll, "offsets", offsets);
    dead[head] = dead[tail] = true;
    ++fused;
  }
  if (fused)
    eraseOps(plan, dead);
  return fused;
}

int heterps::runtime::foldWeightTransposes(plan::Plan &plan, OpFilter mine) {
  Uses uses(plan);
  std::vector<bool> dead(plan.ops_size(), false);
  int folded = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &matmul = plan.ops(i);
    if (matmul.type() != "MatMul" || matmul.inputs_size() != 2 ||
        intsOf(matmul, "trans_b") == std::vector<int64_t>{1})
      continue;
    int t = uses.definedBy[matmul.inputs(1)];
    if (t < 0 || dead[t] || plan.ops(t).type() != "Transpose" ||
        uses.soleReader(matmul.inputs(1)) != i ||
        !fusable(mine, plan.ops(t), matmul))
      continue;
    const plan::Op &transpose = plan.ops(t);
    std::vector<int64_t> perm = intsOf(transpose, "perm");
    if (plan.values(transpose.inputs(0)).dims_size() != 2 ||
        (!perm.empty() && perm != std::vector<int64_t>{1, 0}))
      continue;
    plan::Op &rewritten = *plan.mutable_ops(i);
    rewritten.set_inputs(1, transpose.inputs(0));
    setFlag(rewritten, "trans_b");
    dead[t] = true;
    ++folded;
  }
  if (folded)
    eraseOps(plan, dead);
  return folded;
}
