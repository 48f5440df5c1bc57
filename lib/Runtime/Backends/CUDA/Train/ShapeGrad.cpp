//===- ShapeGrad.cpp - ops that move data, forward and backward -----------===//
//
// Views (Flatten, Reshape, Squeeze, Unsqueeze, Identity): the gradient is
// the output's, seen in the input's shape. Concat: each input's gradient
// is its part of the output's (2-D copies).
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

class ViewGrad : public CUDATrainKernel {
public:
  using CUDATrainKernel::CUDATrainKernel;

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    dInputs[0] = dOutput.reshaped(inputs[0]->shape());
    return llvm::Error::success();
  }
};

class ConcatGrad : public CUDATrainKernel {
public:
  ConcatGrad(std::unique_ptr<Kernel> forward, CUDAContextPtr ctx, int64_t axis)
      : CUDATrainKernel(std::move(forward), std::move(ctx)), axis(axis) {}

  bool differentiable(int) const override { return true; }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    llvm::Expected<int64_t> a = normalizeAxis(axis, dOutput.rank());
    if (!a)
      return a.takeError();
    auto [outer, inner] = aroundAxis(dOutput.shape(), *a);
    size_t rowBytes = dOutput.dim(*a) * inner * sizeof(float), offset = 0;
    for (size_t k = 0; k < inputs.size(); ++k) {
      size_t part = inputs[k]->dim(*a) * inner * sizeof(float);
      if (needGrad[k]) {
        Tensor dx = ctx->make(DType::F32, inputs[k]->shape());
        if (part && outer)
          HPS_CUDA_CHECK(cudaMemcpy2DAsync(
              devicePtr(dx), part, devicePtr<uint8_t>(dOutput) + offset,
              rowBytes, part, outer, cudaMemcpyDeviceToDevice, ctx->stream()));
        dInputs[k] = std::move(dx);
      }
      offset += part;
    }
    return llvm::Error::success();
  }

private:
  int64_t axis;
};

} // namespace

void cuda::registerShapeGrad(TrainRegistry &registry) {
  for (const char *type :
       {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity"})
    registry[type] = [](const OpInfo &info, const TrainEnv &env)
        -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
      auto forward = forwardKernelFor(info, env);
      if (!forward)
        return forward.takeError();
      return std::make_unique<ViewGrad>(std::move(*forward), env.ctx);
    };
  registry["Concat"] = [](const OpInfo &info, const TrainEnv &env)
      -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
    auto forward = forwardKernelFor(info, env);
    if (!forward)
      return forward.takeError();
    auto axis = info.attrs.getInt("axis");
    if (!axis)
      return axis.takeError();
    return std::make_unique<ConcatGrad>(std::move(*forward), env.ctx, *axis);
  };
}
