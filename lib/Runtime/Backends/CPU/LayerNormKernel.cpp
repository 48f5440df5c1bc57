//===- LayerNormKernel.cpp - ONNX LayerNormalization on oneDNN ------------===//
//
// oneDNN normalises over the last dimension: the input is viewed as
// [prod(dims[:axis]), prod(dims[axis:])], and scale and bias (shaped as
// dims[axis:]) as vectors of the second size.
//
// SkipLayerNormalization (a, b, scale[, bias]) -> (y[, sum]) is the
// LayerNormalization of a + b over the last axis that fuseSkipLayerNorms
// forms from a transformer's residual Add: each row is summed, its mean
// and variance taken and normalised while it is in the cache, so the sum
// is written once (when it is read elsewhere) or never.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ParallelSums.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class LayerNormKernel : public Kernel {
public:
  LayerNormKernel(CPUContextPtr ctx, int64_t axis, float epsilon)
      : cache(std::move(ctx)), axis(axis), epsilon(epsilon) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0], &scale = *inputs[1];
    const Tensor *bias = inputs.size() > 2 ? inputs[2] : nullptr;
    auto a = normalizeAxis(axis, x.rank());
    if (!a)
      return a.takeError();
    int64_t rows = numElements(llvm::ArrayRef(x.shape()).take_front(*a));
    int64_t cols = x.numElements() / std::max<int64_t>(rows, 1);
    if (scale.numElements() != cols || (bias && bias->numElements() != cols))
      return kernelError("LayerNormalization scale " + scale.typeString() +
                         (bias ? " and bias " + bias->typeString() : "") +
                         " do not match the normalised size " +
                         llvm::Twine(cols) + " of " + x.typeString());
    Tensor y(DType::F32, x.shape());
    if (x.numElements() == 0) {
      outputs[0] = std::move(y);
      return llvm::Error::success();
    }
    const CPUContextPtr &ctx = cache.context();
    memory::desc md = plainDesc({rows, cols});
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            auto flags = dnnl::normalization_flags::use_scale;
            if (bias)
              flags = flags | dnnl::normalization_flags::use_shift;
            Primitive::desc d(dnnl::prop_kind::forward_inference, md, epsilon,
                              flags);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      memory::desc vec = plainDesc({cols});
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC,
           memory(md, ctx->engine, const_cast<void *>(x.rawData()))},
          {DNNL_ARG_DST, memory(md, ctx->engine, y.rawData())},
          {DNNL_ARG_SCALE,
           memory(vec, ctx->engine, const_cast<void *>(scale.rawData()))}};
      if (bias)
        args.emplace(
            DNNL_ARG_SHIFT,
            memory(vec, ctx->engine, const_cast<void *>(bias->rawData())));
      (*entry)->execute(ctx->stream, args);
      ctx->stream.wait();
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  using Primitive = dnnl::layer_normalization_forward;
  PrimitiveCache<Primitive> cache;
  int64_t axis;
  float epsilon;
};

/// y = LayerNorm(a + b) of one row, s = a + b. Compiled for AVX-512 and
/// AVX2 as well as the baseline, chosen at load time: oneDNN's jit layer
/// norm, which this replaces with its Add, uses them.
HETERPS_VECTOR_CLONES void normalizeSumRow(const float *a, const float *b,
                                           const float *gamma,
                                           const float *beta, int64_t n,
                                           float eps, float *s, float *y) {
  float total = 0.f;
#pragma omp simd reduction(+ : total)
  for (int64_t j = 0; j < n; ++j) {
    s[j] = a[j] + b[j];
    total += s[j];
  }
  float mean = total / static_cast<float>(n), squares = 0.f;
#pragma omp simd reduction(+ : squares)
  for (int64_t j = 0; j < n; ++j)
    squares += (s[j] - mean) * (s[j] - mean);
  float inv = 1.f / std::sqrt(squares / static_cast<float>(n) + eps);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    y[j] = (s[j] - mean) * inv * gamma[j] + (beta ? beta[j] : 0.f);
}

class SkipLayerNormKernel : public Kernel {
public:
  explicit SkipLayerNormKernel(float epsilon) : epsilon(epsilon) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &a = *inputs[0], &b = *inputs[1], &scale = *inputs[2];
    const Tensor *bias = inputs.size() > 3 ? inputs[3] : nullptr;
    if (a.shape() != b.shape() || a.rank() == 0)
      return kernelError("SkipLayerNormalization adds " + a.typeString() +
                         " and " + b.typeString() +
                         ", which must have one shape of rank 1 or more");
    int64_t cols = a.shape().back();
    int64_t rows = cols ? a.numElements() / cols : 0;
    if (scale.numElements() != cols || (bias && bias->numElements() != cols))
      return kernelError("SkipLayerNormalization scale " + scale.typeString() +
                         (bias ? " and bias " + bias->typeString() : "") +
                         " do not match the normalised size " +
                         llvm::Twine(cols) + " of " + a.typeString());
    Tensor y(DType::F32, a.shape());
    std::optional<Tensor> sum;
    if (outputs.size() > 1)
      sum.emplace(DType::F32, a.shape());
    const float *pa = a.data<float>(), *pb = b.data<float>(),
                *gamma = scale.data<float>(),
                *beta = bias ? bias->data<float>() : nullptr;
    float *py = y.data<float>(), *ps = sum ? sum->data<float>() : nullptr;
    float eps = epsilon;
#pragma omp parallel num_threads(threadsFor(a.numElements()))
    {
      std::vector<float> scratch(ps ? 0 : cols);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r)
        normalizeSumRow(pa + r * cols, pb + r * cols, gamma, beta, cols, eps,
                        ps ? ps + r * cols : scratch.data(), py + r * cols);
    }
    outputs[0] = std::move(y);
    if (sum)
      outputs[1] = std::move(*sum);
    return llvm::Error::success();
  }

private:
  float epsilon;
};

} // namespace

llvm::Expected<LayerNormParams>
cpu::readLayerNormParams(const OpAttributes &attrs) {
  auto axis = attrs.getInt("axis", -1);
  if (!axis)
    return axis.takeError();
  auto epsilon = attrs.getFloat("epsilon", 1e-5f);
  if (!epsilon)
    return epsilon.takeError();
  return LayerNormParams{*axis, *epsilon};
}

void cpu::registerLayerNormKernel(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "LayerNormalization",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 3))
          return e;
        auto params = readLayerNormParams(info.attrs);
        if (!params)
          return params.takeError();
        return std::make_unique<LayerNormKernel>(ctx, params->axis,
                                                 params->epsilon);
      });
  registry.add(
      "SkipLayerNormalization",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        // y, and the sum when it is read elsewhere.
        if (llvm::Error e =
                info.checkArity(3, 4, info.numOutputs() == 2 ? 2 : 1))
          return e;
        auto params = readLayerNormParams(info.attrs);
        if (!params)
          return params.takeError();
        if (params->axis != -1)
          return kernelError("SkipLayerNormalization normalises the last "
                             "axis only, not axis " +
                             llvm::Twine(params->axis));
        return std::make_unique<SkipLayerNormKernel>(params->epsilon);
      });
}
