//===- EltwiseGrad.cpp - activations forward and backward on oneDNN -------===//
//
// The activations oneDNN implements (the inference backend's eltwiseSpecFor
// list but GELU, GeluGrad.cpp), in the input's layout; the backward reads
// the forward's input.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::descOf;
using cpu::memoryOf;

namespace {

struct EltwiseEntry {
  dnnl::eltwise_forward forward;
  dnnl::eltwise_backward backward;
  memory::desc md;
};

class EltwiseGradKernel : public TrainKernel {
public:
  EltwiseGradKernel(CPUContextPtr ctx, cpu::EltwiseSpec spec)
      : cache(std::move(ctx)), spec(spec) {}
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  cpu::PrimitiveCache<EltwiseEntry> cache;
  cpu::EltwiseSpec spec;
  EltwiseEntry *entry = nullptr;
};

} // namespace

llvm::Error EltwiseGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                       Tensor &output) {
  if (llvm::Error e = cpu::checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &x = *inputs[0];
    auto got = cache.get(cpu::shapeKey(inputs), [&] {
      memory::desc md = descOf(x);
      dnnl::eltwise_forward::primitive_desc fwd(
          {dnnl::prop_kind::forward_training, spec.algorithm, md, spec.alpha,
           spec.beta},
          ctx->engine);
      dnnl::eltwise_backward::primitive_desc bwd(
          {spec.algorithm, md, md, spec.alpha, spec.beta}, ctx->engine, fwd);
      return llvm::Expected<EltwiseEntry>(EltwiseEntry{
          dnnl::eltwise_forward(fwd), dnnl::eltwise_backward(bwd), md});
    });
    if (!got)
      return got.takeError();
    entry = *got;
    output = cpu::allocate(entry->md, x.shape(), ctx);
    entry->forward.execute(ctx->stream,
                           {{DNNL_ARG_SRC, memoryOf(x, *ctx)},
                            {DNNL_ARG_DST, memoryOf(output, *ctx)}});
    ctx->stream.wait();
    return llvm::Error::success();
  });
}

llvm::Error EltwiseGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                        const Tensor &, const Tensor &dOutput,
                                        llvm::ArrayRef<bool> needGrad,
                                        llvm::MutableArrayRef<Tensor> dInputs) {
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &x = *inputs[0];
    Tensor dy = cpu::reorderTo(dOutput, entry->md, ctx);
    Tensor dx = cpu::allocate(entry->md, x.shape(), ctx);
    entry->backward.execute(ctx->stream,
                            {{DNNL_ARG_SRC, memoryOf(x, *ctx)},
                             {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
                             {DNNL_ARG_DIFF_SRC, memoryOf(dx, *ctx)}});
    ctx->stream.wait();
    dInputs[0] = std::move(dx);
    return llvm::Error::success();
  });
}

void train::registerEltwiseGrad(TrainRegistry &registry) {
  for (const char *type :
       {"Relu", "LeakyRelu", "Elu", "Clip", "Sigmoid", "Tanh", "Abs", "Exp",
        "Log", "Sqrt", "Softplus", "Neg", "Reciprocal", "Swish", "HardSwish"})
    registry[type] = [](const OpInfo &info, const TrainKernelEnv &env)
        -> llvm::Expected<std::unique_ptr<TrainKernel>> {
      if (llvm::Error e = info.checkArity(1, 1))
        return e;
      auto spec = cpu::eltwiseSpecFor(info.op.type(), info.attrs);
      if (!spec)
        return spec.takeError();
      return std::make_unique<EltwiseGradKernel>(env.ctx, *spec);
    };
}
