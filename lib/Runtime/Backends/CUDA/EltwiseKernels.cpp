//===- EltwiseKernels.cpp - element-wise ops and normalisations -----------===//
//
// Activations, broadcasting binary ops, Softmax/LogSoftmax, LayerNorm and
// BatchNormalization (inference) on the backend's own kernels
// (DeviceKernels.cu), plus the helpers every CUDA kernel shares.
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"

#include "llvm/ADT/StringSwitch.h"

#include <cfloat>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

llvm::Error CUDAKernel::checkInputs(llvm::ArrayRef<const Tensor *> inputs,
                                    bool allowI64) const {
  for (auto [k, t] : llvm::enumerate(inputs)) {
    if (!t)
      continue;
    if (&t->space() != &ctx->memory())
      return cudaFailure("input " + llvm::Twine(k) + " " + t->typeString() +
                         " is in " + t->space().name() + " memory, not " +
                         ctx->memory().name() + ": a transfer is missing");
    if (t->dtype() != DType::F32 && !(allowI64 && t->dtype() == DType::I64))
      return cudaFailure("input " + llvm::Twine(k) + " is " + t->typeString() +
                         "; the cuda kernel takes f32");
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<int64_t>> cuda::readInts(CUDAContext &ctx,
                                                    const Tensor &t) {
  if (t.dtype() != DType::I64)
    return cudaFailure("expected i64 values, got " + t.typeString());
  std::vector<int64_t> values(t.numElements());
  if (llvm::Error e = ctx.toHost(devicePtr(t), values.data(), t.bytes()))
    return std::move(e);
  return values;
}

Dims cuda::stridesOf(llvm::ArrayRef<int64_t> shape) {
  Dims s;
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    s.v[d] = stride;
    stride *= shape[d];
  }
  return s;
}

llvm::Expected<Dims> cuda::dimsOf(llvm::ArrayRef<int64_t> shape) {
  if (shape.size() > static_cast<size_t>(kMaxRank))
    return cudaFailure("rank " + llvm::Twine(shape.size()) +
                       " is above the cuda kernels' " + llvm::Twine(kMaxRank));
  Dims d;
  for (size_t i = 0; i < shape.size(); ++i)
    d.v[i] = shape[i];
  return d;
}

llvm::Expected<UnarySpec> cuda::unarySpecFor(llvm::StringRef opType,
                                             const OpAttributes &attrs,
                                             llvm::StringRef prefix) {
  auto attr = [&](llvm::StringRef name, float dflt) {
    return attrs.getFloat((prefix + name).str(), dflt);
  };
  std::optional<Unary> simple = llvm::StringSwitch<std::optional<Unary>>(opType)
                                    .Case("Identity", Unary::Identity)
                                    .Case("Relu", Unary::Relu)
                                    .Case("Sigmoid", Unary::Sigmoid)
                                    .Case("Tanh", Unary::Tanh)
                                    .Case("HardSwish", Unary::HardSwish)
                                    .Case("Abs", Unary::Abs)
                                    .Case("Exp", Unary::Exp)
                                    .Case("Log", Unary::Log)
                                    .Case("Sqrt", Unary::Sqrt)
                                    .Case("Neg", Unary::Neg)
                                    .Case("Reciprocal", Unary::Reciprocal)
                                    .Case("Erf", Unary::Erf)
                                    .Case("Softplus", Unary::Softplus)
                                    .Case("Softsign", Unary::Softsign)
                                    .Case("Floor", Unary::Floor)
                                    .Case("Ceil", Unary::Ceil)
                                    .Default(std::nullopt);
  if (simple)
    return UnarySpec{*simple};
  struct WithParams {
    Unary op;
    const char *a, *b;
    float da, db;
  };
  std::optional<WithParams> p =
      llvm::StringSwitch<std::optional<WithParams>>(opType)
          .Case("LeakyRelu",
                WithParams{Unary::LeakyRelu, "alpha", nullptr, 0.01f, 0.f})
          .Case("Elu", WithParams{Unary::Elu, "alpha", nullptr, 1.f, 0.f})
          .Case("Clip",
                WithParams{Unary::Clip, "min", "max", -FLT_MAX, FLT_MAX})
          .Case("HardSigmoid",
                WithParams{Unary::HardSigmoid, "alpha", "beta", 0.2f, 0.5f})
          .Case("Selu", WithParams{Unary::Selu, "alpha", "gamma",
                                   1.67326319217681884765625f,
                                   1.05070102214813232421875f})
          .Default(std::nullopt);
  if (!p)
    return cudaFailure("'" + opType + "' has no cuda kernel");
  UnarySpec spec{p->op};
  llvm::Expected<float> a = attr(p->a, p->da);
  if (!a)
    return a.takeError();
  spec.alpha = *a;
  if (p->b) {
    llvm::Expected<float> b = attr(p->b, p->db);
    if (!b)
      return b.takeError();
    spec.beta = *b;
  }
  return spec;
}

llvm::Expected<UnarySpec> cuda::fusedActivation(const OpAttributes &attrs) {
  llvm::Expected<std::string> type = attrs.getString("activation", "");
  if (!type)
    return type.takeError();
  if (type->empty())
    return UnarySpec{};
  return unarySpecFor(*type, attrs, "activation_");
}

namespace {

class UnaryKernel : public CUDAKernel {
public:
  UnaryKernel(CUDAContextPtr ctx, UnarySpec f)
      : CUDAKernel(std::move(ctx)), f(f) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &x = *inputs[0];
    Tensor y = ctx->make(DType::F32, x.shape());
    launchUnary(ctx->stream(), f, devicePtr<float>(x), devicePtr<float>(y),
                x.numElements());
    outputs[0] = std::move(y);
    return ctx->launched("unary kernel");
  }

private:
  UnarySpec f;
};

/// ONNX (numpy) broadcasting of two shapes; strides 0 along broadcast axes.
llvm::Error broadcast(const Shape &a, const Shape &b, Shape &out, Dims &as,
                      Dims &bs) {
  size_t rank = std::max(a.size(), b.size());
  if (rank > static_cast<size_t>(kMaxRank))
    return cudaFailure("rank " + llvm::Twine(rank) +
                       " is above the cuda "
                       "kernels' " +
                       llvm::Twine(kMaxRank));
  out.assign(rank, 1);
  Shape pa(rank - a.size(), 1), pb(rank - b.size(), 1);
  pa.insert(pa.end(), a.begin(), a.end());
  pb.insert(pb.end(), b.begin(), b.end());
  for (size_t d = 0; d < rank; ++d) {
    if (pa[d] != pb[d] && pa[d] != 1 && pb[d] != 1)
      return cudaFailure("shapes " + shapeToString(a) + " and " +
                         shapeToString(b) + " do not broadcast");
    out[d] = pa[d] == 1 ? pb[d] : pa[d];
  }
  Dims sa = stridesOf(pa), sb = stridesOf(pb);
  for (size_t d = 0; d < rank; ++d) {
    as.v[d] = pa[d] == 1 && out[d] != 1 ? 0 : sa.v[d];
    bs.v[d] = pb[d] == 1 && out[d] != 1 ? 0 : sb.v[d];
  }
  return llvm::Error::success();
}

class BinaryKernel : public CUDAKernel {
public:
  BinaryKernel(CUDAContextPtr ctx, Binary op)
      : CUDAKernel(std::move(ctx)), op(op) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &a = *inputs[0], &b = *inputs[1];
    Shape shape;
    Dims as, bs;
    if (llvm::Error e = broadcast(a.shape(), b.shape(), shape, as, bs))
      return e;
    llvm::Expected<Dims> dims = dimsOf(shape);
    if (!dims)
      return dims.takeError();
    Tensor y = ctx->make(DType::F32, shape);
    launchBinary(ctx->stream(), op, devicePtr<float>(a), devicePtr<float>(b),
                 devicePtr<float>(y), static_cast<int>(shape.size()), *dims, as,
                 bs);
    outputs[0] = std::move(y);
    return ctx->launched("binary kernel");
  }

private:
  Binary op;
};

/// The input seen as [outer, n, inner] around `axis`.
struct AxisSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
llvm::Expected<AxisSplit> splitAt(const Shape &shape, int64_t axis,
                                  bool coerce2d) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return cudaFailure("axis " + llvm::Twine(axis) + " is out of range for " +
                       shapeToString(shape));
  if (axis < 0)
    axis += rank;
  AxisSplit s;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? s.outer : d == axis || coerce2d ? s.n : s.inner) *= shape[d];
  return s;
}

class SoftmaxKernel : public CUDAKernel {
public:
  SoftmaxKernel(CUDAContextPtr ctx, int64_t axis, bool coerce2d, bool log)
      : CUDAKernel(std::move(ctx)), axis(axis), coerce2d(coerce2d), log(log) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &x = *inputs[0];
    llvm::Expected<AxisSplit> s = splitAt(x.shape(), axis, coerce2d);
    if (!s)
      return s.takeError();
    Tensor y = ctx->make(DType::F32, x.shape());
    if (s->inner == 1) {
      launchSoftmax(ctx->stream(), devicePtr<float>(x), devicePtr<float>(y),
                    s->outer, s->n, log);
      outputs[0] = std::move(y);
      return ctx->launched("softmax kernel");
    }
    // The axis is not the last: rows of a transposed copy, then back.
    Tensor t = ctx->make(DType::F32, {s->outer, s->inner, s->n});
    Dims dims{{s->outer, s->inner, s->n}};
    Dims xs{{s->n * s->inner, 1, s->inner}};
    launchStridedCopy(ctx->stream(), 4, devicePtr(x), devicePtr(t), 3, dims, xs,
                      stridesOf({s->outer, s->inner, s->n}));
    launchSoftmax(ctx->stream(), devicePtr<float>(t), devicePtr<float>(t),
                  s->outer * s->inner, s->n, log);
    launchStridedCopy(ctx->stream(), 4, devicePtr(t), devicePtr(y), 3, dims,
                      stridesOf({s->outer, s->inner, s->n}), xs);
    outputs[0] = std::move(y);
    return ctx->launched("softmax kernel");
  }

private:
  int64_t axis;
  bool coerce2d, log;
};

class LayerNormKernel : public CUDAKernel {
public:
  LayerNormKernel(CUDAContextPtr ctx, int64_t axis, float epsilon)
      : CUDAKernel(std::move(ctx)), axis(axis), epsilon(epsilon) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &x = *inputs[0];
    llvm::Expected<AxisSplit> s = splitAt(x.shape(), axis, /*coerce2d=*/true);
    if (!s)
      return s.takeError();
    for (int k : {1, 2})
      if (k < static_cast<int>(inputs.size()) && inputs[k] &&
          inputs[k]->numElements() != s->n)
        return cudaFailure("LayerNormalization input " + llvm::Twine(k) + " " +
                           inputs[k]->typeString() + " does not have " +
                           llvm::Twine(s->n) + " elements");
    Tensor y = ctx->make(DType::F32, x.shape());
    const float *bias =
        inputs.size() > 2 && inputs[2] ? devicePtr<float>(*inputs[2]) : nullptr;
    launchLayerNorm(ctx->stream(), devicePtr<float>(x),
                    devicePtr<float>(*inputs[1]), bias, devicePtr<float>(y),
                    s->outer, s->n, epsilon);
    outputs[0] = std::move(y);
    return ctx->launched("layer norm kernel");
  }

private:
  int64_t axis;
  float epsilon;
};

/// Inference batch norm: per-channel scale and shift, computed on every run
/// (the statistics may be outputs of other ops), then one pass.
class BatchNormKernel : public CUDAKernel {
public:
  BatchNormKernel(CUDAContextPtr ctx, float epsilon, UnarySpec f)
      : CUDAKernel(std::move(ctx)), epsilon(epsilon), f(f) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &x = *inputs[0];
    if (x.rank() < 2)
      return cudaFailure("BatchNormalization input " + x.typeString() +
                         " has no channel axis");
    int64_t c = x.dim(1);
    for (int k = 1; k <= 4; ++k)
      if (inputs[k]->numElements() != c)
        return cudaFailure("BatchNormalization input " + llvm::Twine(k) + " " +
                           inputs[k]->typeString() + " does not have " +
                           llvm::Twine(c) + " channels");
    Tensor coefficients = ctx->make(DType::F32, {2, c});
    float *scale = devicePtr<float>(coefficients), *shift = scale + c;
    launchBatchNormCoefficients(
        ctx->stream(), devicePtr<float>(*inputs[1]),
        devicePtr<float>(*inputs[2]), devicePtr<float>(*inputs[3]),
        devicePtr<float>(*inputs[4]), epsilon, scale, shift, c);
    Tensor y = ctx->make(DType::F32, x.shape());
    launchChannelAffine(
        ctx->stream(), devicePtr<float>(x), devicePtr<float>(y), scale, shift,
        x.dim(0), c, x.numElements() / std::max<int64_t>(x.dim(0) * c, 1), f);
    outputs[0] = std::move(y);
    return ctx->launched("batch norm kernel");
  }

private:
  float epsilon;
  UnarySpec f;
};

} // namespace

void cuda::registerEltwiseKernels(KernelRegistry &registry,
                                  CUDAContextPtr ctx) {
  for (const char *type :
       {"Relu",     "LeakyRelu",   "Elu",       "Clip",       "Sigmoid",
        "Tanh",     "HardSigmoid", "HardSwish", "Abs",        "Exp",
        "Log",      "Sqrt",        "Neg",       "Reciprocal", "Erf",
        "Softplus", "Softsign",    "Selu",      "Floor",      "Ceil"})
    registry.add(type, [ctx](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(1, 1))
        return e;
      llvm::Expected<UnarySpec> f = unarySpecFor(info.op.type(), info.attrs);
      if (!f)
        return f.takeError();
      return std::make_unique<UnaryKernel>(ctx, *f);
    });
  for (auto [type, op] :
       {std::pair("Add", Binary::Add), std::pair("Sub", Binary::Sub),
        std::pair("Mul", Binary::Mul), std::pair("Div", Binary::Div),
        std::pair("Pow", Binary::Pow), std::pair("Max", Binary::Max),
        std::pair("Min", Binary::Min)})
    registry.add(type, [ctx, op = op](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(2, 2))
        return e;
      return std::make_unique<BinaryKernel>(ctx, op);
    });
  for (const char *type : {"Softmax", "LogSoftmax"})
    registry.add(type, [ctx](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(1, 1))
        return e;
      auto axis = info.attrs.getInt("axis", -1);
      if (!axis)
        return axis.takeError();
      auto coerce = info.attrs.getInt("coerce_2d", 0);
      if (!coerce)
        return coerce.takeError();
      return std::make_unique<SoftmaxKernel>(ctx, *axis, *coerce != 0,
                                             info.op.type() == "LogSoftmax");
    });
  registry.add("LayerNormalization", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 3))
      return e;
    auto axis = info.attrs.getInt("axis", -1);
    if (!axis)
      return axis.takeError();
    auto epsilon = info.attrs.getFloat("epsilon", 1e-5f);
    if (!epsilon)
      return epsilon.takeError();
    return std::make_unique<LayerNormKernel>(ctx, *axis, *epsilon);
  });
  registry.add("BatchNormalization", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(5, 5))
      return e;
    auto epsilon = info.attrs.getFloat("epsilon", 1e-5f);
    if (!epsilon)
      return epsilon.takeError();
    llvm::Expected<UnarySpec> f = fusedActivation(info.attrs);
    if (!f)
      return f.takeError();
    return std::make_unique<BatchNormKernel>(ctx, *epsilon, *f);
  });
}
