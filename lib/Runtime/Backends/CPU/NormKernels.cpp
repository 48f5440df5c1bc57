//===- NormKernels.cpp - BatchNormalization and LRN on oneDNN -------------===//
//
// Inference-form batch normalisation (global statistics, scale and shift,
// optionally a fused Relu) and across-channel LRN, both in the input's
// layout.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class BatchNormKernel : public Kernel {
public:
  BatchNormKernel(CPUContextPtr ctx, float epsilon, bool relu)
      : cache(std::move(ctx)), epsilon(epsilon), relu(relu) {}
  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0];
    if (x.rank() < 2)
      return kernelError("input is " + x.typeString() +
                         "; BatchNormalization needs rank 2 or more");
    for (int i = 1; i < 5; ++i)
      if (inputs[i]->numElements() != x.dim(1))
        return kernelError("input " + llvm::Twine(i) + " is " +
                           inputs[i]->typeString() + ", expected " +
                           llvm::Twine(x.dim(1)) + " elements (channels)");
    const CPUContextPtr &ctx = cache.context();
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            using Flags = dnnl::normalization_flags;
            Flags flags =
                Flags::use_global_stats | Flags::use_scale | Flags::use_shift;
            if (relu)
              flags |= Flags::fuse_norm_relu;
            dnnl::batch_normalization_forward::desc d(
                dnnl::prop_kind::forward_inference, descOf(x), epsilon, flags);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      std::vector<Tensor> params;
      for (int i = 1; i < 5; ++i)
        params.push_back(plainOf(*inputs[i], ctx));
      memory::desc channelMd({x.dim(1)}, memory::data_type::f32, Tag::a);
      auto param = [&](int i) {
        return memory(channelMd, ctx->engine, params[i].rawData());
      };
      Tensor y = allocate(descOf(x), x.shape(), ctx);
      (*entry)->execute(ctx->stream, {{DNNL_ARG_SRC, memoryOf(x, *ctx)},
                                      {DNNL_ARG_SCALE, param(0)},
                                      {DNNL_ARG_SHIFT, param(1)},
                                      {DNNL_ARG_MEAN, param(2)},
                                      {DNNL_ARG_VARIANCE, param(3)},
                                      {DNNL_ARG_DST, memoryOf(y, *ctx)}});
      ctx->stream.wait();
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  using Primitive = dnnl::batch_normalization_forward;
  PrimitiveCache<Primitive> cache;
  float epsilon;
  /// A fused Relu (fuseTrainableActivations).
  bool relu;
};

class LRNKernel : public Kernel {
public:
  LRNKernel(CPUContextPtr ctx, LRNParams params)
      : cache(std::move(ctx)), params(params) {}
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
            dnnl::lrn_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::lrn_across_channels,
                                      descOf(x), params.size, params.alpha,
                                      params.beta, params.bias);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      Tensor y = allocate(descOf(x), x.shape(), ctx);
      (*entry)->execute(ctx->stream, {{DNNL_ARG_SRC, memoryOf(x, *ctx)},
                                      {DNNL_ARG_DST, memoryOf(y, *ctx)}});
      ctx->stream.wait();
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  using Primitive = dnnl::lrn_forward;
  PrimitiveCache<Primitive> cache;
  LRNParams params;
};

} // namespace

llvm::Expected<LRNParams> cpu::readLRNParams(const OpAttributes &attrs) {
  auto size = attrs.getInt("size");
  if (!size)
    return size.takeError();
  auto alpha = attrs.getFloat("alpha", 1e-4f);
  if (!alpha)
    return alpha.takeError();
  auto beta = attrs.getFloat("beta", 0.75f);
  if (!beta)
    return beta.takeError();
  auto bias = attrs.getFloat("bias", 1.f);
  if (!bias)
    return bias.takeError();
  if (*size < 1)
    return kernelError("attribute 'size' must be positive");
  return LRNParams{*size, *alpha, *beta, *bias};
}

void cpu::registerNormKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "BatchNormalization",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(5, 5))
          return e;
        auto epsilon = info.attrs.getFloat("epsilon", 1e-5f);
        if (!epsilon)
          return epsilon.takeError();
        auto relu = fusesRelu(info.attrs, "BatchNormalization");
        if (!relu)
          return relu.takeError();
        return std::make_unique<BatchNormKernel>(ctx, *epsilon, *relu);
      });
  registry.add(
      "LRN",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(1, 1))
          return e;
        auto params = readLRNParams(info.attrs);
        if (!params)
          return params.takeError();
        return std::make_unique<LRNKernel>(ctx, *params);
      });
}
