//===- EltwiseKernels.cpp - element-wise activations ----------------------===//
//
// Activations oneDNN has run as eltwise primitives in the input's layout;
// the others (Selu, HardSigmoid, Softsign, Erf, Floor, Ceil) are loops over
// plain tensors.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "NaNPassing.h"

#include <cfloat>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using dnnl::algorithm;

llvm::Expected<EltwiseSpec> cpu::eltwiseSpecFor(llvm::StringRef opType,
                                                const OpAttributes &attrs,
                                                llvm::StringRef prefix) {
  auto attr = [&](llvm::StringRef name, float dflt) {
    return attrs.getFloat((prefix + name).str(), dflt);
  };
  auto spec = [](algorithm alg, float alpha = 0.f,
                 float beta = 0.f) -> llvm::Expected<EltwiseSpec> {
    return EltwiseSpec{alg, alpha, beta};
  };
  if (opType == "Relu")
    return spec(algorithm::eltwise_relu);
  if (opType == "LeakyRelu" || opType == "Elu") {
    llvm::Expected<float> alpha = attr("alpha", opType == "Elu" ? 1.f : 0.01f);
    if (!alpha)
      return alpha.takeError();
    return spec(opType == "Elu" ? algorithm::eltwise_elu
                                : algorithm::eltwise_relu,
                *alpha);
  }
  if (opType == "Clip") {
    llvm::Expected<float> lo = attr("min", -FLT_MAX);
    if (!lo)
      return lo.takeError();
    llvm::Expected<float> hi = attr("max", FLT_MAX);
    if (!hi)
      return hi.takeError();
    return spec(algorithm::eltwise_clip_v2, *lo, *hi);
  }
  if (opType == "Sigmoid")
    return spec(algorithm::eltwise_logistic);
  if (opType == "Tanh")
    return spec(algorithm::eltwise_tanh);
  if (opType == "Abs")
    return spec(algorithm::eltwise_abs);
  if (opType == "Exp")
    return spec(algorithm::eltwise_exp);
  if (opType == "Log")
    return spec(algorithm::eltwise_log);
  if (opType == "Sqrt")
    return spec(algorithm::eltwise_sqrt);
  if (opType == "Softplus")
    return spec(algorithm::eltwise_soft_relu);
  if (opType == "Gelu")
    return spec(algorithm::eltwise_gelu_erf);
  if (opType == "Swish")
    return spec(algorithm::eltwise_swish, 1.f);
  if (opType == "HardSwish")
    return spec(algorithm::eltwise_hardswish);
  if (opType == "Neg")
    return spec(algorithm::eltwise_linear, -1.f, 0.f);
  if (opType == "Reciprocal")
    return spec(algorithm::eltwise_pow, 1.f, -1.f);
  return kernelError("activation '" + opType + "' has no oneDNN form");
}

llvm::Expected<bool> cpu::fusesRelu(const OpAttributes &attrs,
                                    llvm::StringRef opType) {
  llvm::Expected<std::string> type = attrs.getString("activation", "");
  if (!type)
    return type.takeError();
  if (type->empty() || *type == "Relu")
    return *type == "Relu";
  return kernelError(opType + " can fuse a Relu only, not " + *type);
}

llvm::Error cpu::appendFusedActivation(const OpAttributes &attrs,
                                       dnnl::post_ops &ops,
                                       llvm::StringRef name) {
  llvm::Expected<std::string> type = attrs.getString(name, "");
  if (!type)
    return type.takeError();
  if (type->empty())
    return llvm::Error::success();
  llvm::Expected<EltwiseSpec> spec =
      eltwiseSpecFor(*type, attrs, (name + "_").str());
  if (!spec)
    return spec.takeError();
  ops.append_eltwise(1.f, spec->algorithm, spec->alpha, spec->beta);
  return llvm::Error::success();
}

namespace {

/// An activation on oneDNN's eltwise primitive, in the input's layout.
class DnnlEltwiseKernel : public Kernel {
public:
  DnnlEltwiseKernel(CPUContextPtr ctx, EltwiseSpec spec)
      : cache(std::move(ctx)), spec(spec) {}
  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0];
    const CPUContextPtr &ctx = cache.context();
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference,
                                          spec.algorithm, descOf(x), spec.alpha,
                                          spec.beta);
            return dnnl::eltwise_forward(
                dnnl::eltwise_forward::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      Tensor y = allocate(descOf(x), x.shape(), ctx);
      (*entry)->execute(ctx->stream, {{DNNL_ARG_SRC, memoryOf(x, *ctx)},
                                      {DNNL_ARG_DST, memoryOf(y, *ctx)}});
      ctx->stream.wait();
      if (ctx->propagateNaN && dropsNaN())
        restoreNaNs(x, y);
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  /// Whether oneDNN's form is a max or min that returns 0 or a bound for
  /// NaN (ONNX keeps NaN).
  bool dropsNaN() const {
    return (spec.algorithm == algorithm::eltwise_relu && spec.alpha == 0) ||
           spec.algorithm == algorithm::eltwise_clip_v2;
  }

  using Primitive = dnnl::eltwise_forward;
  PrimitiveCache<Primitive> cache;
  EltwiseSpec spec;
};

/// An element-wise function oneDNN lacks, on plain f32 tensors.
class LoopEltwiseKernel : public Kernel {
public:
  using Fn = std::function<float(float)>;
  explicit LoopEltwiseKernel(Fn fn) : fn(std::move(fn)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0];
    Tensor y(DType::F32, x.shape());
    const float *in = x.data<float>();
    float *out = y.data<float>();
    int64_t n = x.numElements();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      out[i] = fn(in[i]);
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  Fn fn;
};

/// The loop form of `opType`, or null.
llvm::Expected<LoopEltwiseKernel::Fn> loopFunction(const OpInfo &info) {
  llvm::StringRef type = info.op.type();
  const OpAttributes &attrs = info.attrs;
  if (type == "Selu") {
    llvm::Expected<float> alpha = attrs.getFloat("alpha", 1.67326319217681884f);
    if (!alpha)
      return alpha.takeError();
    llvm::Expected<float> gamma = attrs.getFloat("gamma", 1.05070102214813232f);
    if (!gamma)
      return gamma.takeError();
    float a = *alpha, g = *gamma;
    return
        [a, g](float x) { return x > 0 ? g * x : g * (a * std::exp(x) - a); };
  }
  if (type == "HardSigmoid") {
    llvm::Expected<float> alpha = attrs.getFloat("alpha", 0.2f);
    if (!alpha)
      return alpha.takeError();
    llvm::Expected<float> beta = attrs.getFloat("beta", 0.5f);
    if (!beta)
      return beta.takeError();
    float a = *alpha, b = *beta;
    return [a, b](float x) { return std::clamp(a * x + b, 0.f, 1.f); };
  }
  if (type == "Softsign")
    return [](float x) { return x / (1.f + std::fabs(x)); };
  if (type == "Erf")
    return [](float x) { return std::erf(x); };
  if (type == "Floor")
    return [](float x) { return std::floor(x); };
  if (type == "Ceil")
    return [](float x) { return std::ceil(x); };
  return LoopEltwiseKernel::Fn();
}

} // namespace

void cpu::registerEltwiseKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  for (const char *type : {"Relu", "LeakyRelu", "Elu", "Clip", "Sigmoid",
                           "Tanh", "Abs", "Exp", "Log", "Sqrt", "Softplus",
                           "Neg", "Reciprocal", "Gelu", "Swish", "HardSwish"})
    registry.add(
        type,
        [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
          if (llvm::Error e = info.checkArity(1, 1))
            return e;
          llvm::Expected<EltwiseSpec> spec =
              eltwiseSpecFor(info.op.type(), info.attrs);
          if (!spec)
            return spec.takeError();
          return std::make_unique<DnnlEltwiseKernel>(ctx, *spec);
        });
  for (const char *type :
       {"Selu", "HardSigmoid", "Softsign", "Erf", "Floor", "Ceil"})
    registry.add(
        type,
        [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
          if (llvm::Error e = info.checkArity(1, 1))
            return e;
          llvm::Expected<LoopEltwiseKernel::Fn> fn = loopFunction(info);
          if (!fn)
            return fn.takeError();
          return std::make_unique<LoopEltwiseKernel>(std::move(*fn));
        });
}
