//===- CUDATrainBackend.cpp - the CUDA backend's training kernels ---------===//

#include "../CUDABackend.h"
#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

llvm::Expected<std::unique_ptr<Kernel>>
cuda::forwardKernelFor(const OpInfo &info, const TrainEnv &env) {
  const KernelFactory *make = env.inference->lookup(info.op.type());
  if (!make)
    return cudaFailure("'" + info.op.type() + "' has no cuda kernel");
  return (*make)(info);
}

llvm::Expected<Tensor> cuda::sumToShape(CUDAContext &ctx, const Tensor &grad,
                                        const Shape &shape) {
  if (grad.shape() == shape)
    return grad;
  size_t rank = grad.shape().size();
  if (shape.size() > rank)
    return cudaFailure("gradient " + grad.typeString() +
                       " cannot be summed "
                       "to " +
                       shapeToString(shape));
  std::vector<bool> reduced(rank, false);
  size_t lead = rank - shape.size();
  for (size_t d = 0; d < rank; ++d)
    reduced[d] = d < lead || (shape[d - lead] == 1 && grad.dim(d) != 1);
  llvm::Expected<Tensor> sum =
      reduceAxes(ctx, Reduction::Sum, grad, reduced, /*keepDims=*/false);
  if (!sum)
    return sum.takeError();
  return sum->reshaped(shape);
}

namespace {

class CUDATrainBackend final : public train::TrainBackend {
public:
  CUDATrainBackend(CUDAContextPtr ctx, const KernelRegistry &inference)
      : env{std::move(ctx), &inference} {
    registerBatchNormGrad(registry);
    registerConvGrad(registry);
    registerEltwiseGrad(registry);
    registerGemmGrad(registry);
    registerPoolGrad(registry);
    registerShapeGrad(registry);
  }

  llvm::Expected<std::unique_ptr<train::TrainKernel>>
  createKernel(const OpInfo &info, int) const override {
    auto it = registry.find(info.op.type());
    if (it == registry.end())
      return cudaFailure("op type '" + info.op.type() +
                         "' has no cuda training kernel");
    if (info.numOutputs() != 1)
      return cudaFailure("ops with " + llvm::Twine(info.numOutputs()) +
                         " outputs cannot be trained");
    return it->second(info, env);
  }

  std::vector<std::string> opTypes() const override {
    std::vector<std::string> types;
    for (const auto &entry : registry)
      types.push_back(entry.first);
    return types;
  }

  void enterThread() const override { cudaSetDevice(env.ctx->device()); }

  llvm::Error accumulate(Tensor &dst, const Tensor &src) const override {
    if (dst.shape() != src.shape())
      return cudaFailure("gradients " + dst.typeString() + " and " +
                         src.typeString() + " cannot be summed");
    // A fresh buffer: `dst` may share its buffer with a gradient passed
    // through unchanged (Identity, Add).
    Tensor sum = env.ctx->make(DType::F32, dst.shape());
    Dims flat = stridesOf({dst.numElements()});
    launchBinary(env.ctx->stream(), Binary::Add, devicePtr<float>(dst),
                 devicePtr<float>(src), devicePtr<float>(sum), 1,
                 Dims{{dst.numElements()}}, flat, flat);
    dst = std::move(sum);
    return env.ctx->launched("gradient sum");
  }

private:
  TrainEnv env;
  TrainRegistry registry;
};

} // namespace

llvm::Expected<std::unique_ptr<train::TrainBackend>>
CUDABackend::createTrainBackend(const train::TrainBackendOptions &) const {
  return std::make_unique<CUDATrainBackend>(ctx, registry);
}
