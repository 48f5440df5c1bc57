//===- PoolKernels.cpp - max and average pooling --------------------------===//
//
// 2-D pooling on the backend's own kernel: cuDNN's pooling takes only
// symmetric pads, and ceil mode or ONNX's pads often are not. Global pools
// are reductions over the spatial axes.
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

Pooling cuda::poolingOf(PoolKind kind) {
  return kind == PoolKind::Max                   ? Pooling::Max
         : kind == PoolKind::AverageCountingPads ? Pooling::AverageWithPads
                                                 : Pooling::AverageWithoutPads;
}

Pool2D cuda::pool2DOf(const Tensor &x, const Window &w) {
  return Pool2D{x.dim(0),      x.dim(1),      x.dim(2),       x.dim(3),
                w.outShape[2], w.outShape[3], w.kernel[0],    w.kernel[1],
                w.strides[0],  w.strides[1],  w.dilations[0], w.dilations[1],
                w.padBegin[0], w.padBegin[1], w.padEnd[0],    w.padEnd[1]};
}

namespace {

class PoolKernel : public CUDAKernel {
public:
  PoolKernel(CUDAContextPtr ctx, PoolAttrs attrs)
      : CUDAKernel(std::move(ctx)), attrs(std::move(attrs)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &x = *inputs[0];
    if (x.rank() < 3)
      return cudaFailure("pooling input " + x.typeString() +
                         " has no spatial axes");
    Pooling kind = poolingOf(attrs.kind);
    if (attrs.global) {
      int64_t planes = x.dim(0) * x.dim(1);
      Shape shape(x.rank(), 1);
      shape[0] = x.dim(0);
      shape[1] = x.dim(1);
      Tensor y = ctx->make(DType::F32, shape);
      launchReduce(ctx->stream(),
                   kind == Pooling::Max ? Reduction::Max : Reduction::Mean,
                   devicePtr<float>(x), devicePtr<float>(y), planes,
                   x.numElements() / std::max<int64_t>(planes, 1), 1);
      outputs[0] = std::move(y);
      return ctx->launched("global pooling kernel");
    }
    if (x.rank() != 4)
      return cudaFailure("the cuda backend pools 2-D inputs, not " +
                         x.typeString());
    llvm::Expected<Window> w = poolWindow(attrs, x);
    if (!w)
      return w.takeError();
    Pool2D p = pool2DOf(x, *w);
    Tensor y = ctx->make(DType::F32, w->outShape);
    launchPool2D(ctx->stream(), kind, p, devicePtr<float>(x),
                 devicePtr<float>(y));
    outputs[0] = std::move(y);
    return ctx->launched("pooling kernel");
  }

private:
  PoolAttrs attrs;
};

} // namespace

void cuda::registerPoolKernels(KernelRegistry &registry, CUDAContextPtr ctx) {
  for (const char *type :
       {"MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"})
    registry.add(type, [ctx](const OpInfo &info) -> Factory {
      llvm::Expected<PoolAttrs> attrs = parsePoolAttrs(info);
      if (!attrs)
        return attrs.takeError();
      return std::make_unique<PoolKernel>(ctx, std::move(*attrs));
    });
}
