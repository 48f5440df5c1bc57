//===- PoolGrad.cpp - pooling forward and backward ------------------------===//
//
// MaxPool and AveragePool (2-D): each output's gradient is added into the
// inputs it came from (the window's maximum, found again from the input,
// or every element the average counted). GlobalAveragePool spreads each
// gradient evenly over its plane.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

class PoolGrad : public CUDATrainKernel {
public:
  PoolGrad(std::unique_ptr<Kernel> forward, CUDAContextPtr ctx, PoolAttrs attrs)
      : CUDATrainKernel(std::move(forward), std::move(ctx)),
        attrs(std::move(attrs)) {}

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &x = *inputs[0];
    Tensor dx = ctx->make(DType::F32, x.shape());
    if (attrs.global) {
      int64_t planes = x.dim(0) * x.dim(1);
      int64_t inner = x.numElements() / std::max<int64_t>(planes, 1);
      launchSpread(ctx->stream(), devicePtr<float>(dOutput),
                   devicePtr<float>(dx), planes, inner,
                   1.f / static_cast<float>(std::max<int64_t>(inner, 1)));
      dInputs[0] = std::move(dx);
      return ctx->launched("pooling backward kernel");
    }
    if (x.rank() != 4)
      return cudaFailure("the cuda backend trains 2-D pooling only, not " +
                         x.typeString());
    llvm::Expected<Window> w = poolWindow(attrs, x);
    if (!w)
      return w.takeError();
    Pool2D p = pool2DOf(x, *w);
    Pooling kind = poolingOf(attrs.kind);
    HPS_CUDA_CHECK(
        cudaMemsetAsync(devicePtr(dx), 0, dx.bytes(), ctx->stream()));
    launchPool2DBackward(ctx->stream(), kind, p, devicePtr<float>(x),
                         devicePtr<float>(dOutput), devicePtr<float>(dx));
    dInputs[0] = std::move(dx);
    return ctx->launched("pooling backward kernel");
  }

private:
  PoolAttrs attrs;
};

} // namespace

void cuda::registerPoolGrad(TrainRegistry &registry) {
  for (const char *type : {"MaxPool", "AveragePool", "GlobalAveragePool"})
    registry[type] = [](const OpInfo &info, const TrainEnv &env)
        -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
      auto forward = forwardKernelFor(info, env);
      if (!forward)
        return forward.takeError();
      llvm::Expected<PoolAttrs> attrs = parsePoolAttrs(info);
      if (!attrs)
        return attrs.takeError();
      return std::make_unique<PoolGrad>(std::move(*forward), env.ctx,
                                        std::move(*attrs));
    };
}
