//===- TrainKernels.h - the CUDA backend's training kernels -----*- C++ -*-===//
//
// Each op type's forward is its inference kernel (the CUDA registry's),
// run unfused; its backward is here, one file per family. Kernels read and
// write plain tensors in the context's GPU memory, on its stream. A weight
// arrives as an uninitialised stand-in when the kernel is made (only its
// shape counts), so no factory reads constant values.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_TRAIN_TRAINKERNELS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_TRAIN_TRAINKERNELS_H

#include "../CUDAKernels.h"

#include "heterps/Runtime/Train/TrainKernel.h"

#include <map>

namespace heterps::runtime::cuda {

/// What a training kernel factory gets besides its op.
struct TrainEnv {
  CUDAContextPtr ctx;
  /// The inference kernels that run the forward passes.
  const KernelRegistry *inference;
};

using TrainFactory =
    std::function<llvm::Expected<std::unique_ptr<train::TrainKernel>>(
        const OpInfo &, const TrainEnv &)>;
using TrainRegistry = std::map<std::string, TrainFactory>;

/// A training kernel whose forward is its op's inference kernel.
class CUDATrainKernel : public train::TrainKernel {
public:
  CUDATrainKernel(std::unique_ptr<Kernel> forwardKernel, CUDAContextPtr ctx)
      : forwardKernel(std::move(forwardKernel)), ctx(std::move(ctx)) {}
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    return forwardKernel->run(inputs, llvm::MutableArrayRef<Tensor>(output));
  }

protected:
  std::unique_ptr<Kernel> forwardKernel;
  CUDAContextPtr ctx;
};

/// The inference kernel of `info.op` from `env`.
llvm::Expected<std::unique_ptr<Kernel>> forwardKernelFor(const OpInfo &info,
                                                         const TrainEnv &env);
/// `grad` summed down to `shape` over the axes it was broadcast along
/// (numpy rules); `grad` itself when the shapes agree.
llvm::Expected<Tensor> sumToShape(CUDAContext &ctx, const Tensor &grad,
                                  const Shape &shape);

void registerConvGrad(TrainRegistry &registry);
void registerGemmGrad(TrainRegistry &registry);
void registerEltwiseGrad(TrainRegistry &registry);
void registerPoolGrad(TrainRegistry &registry);
void registerBatchNormGrad(TrainRegistry &registry);
void registerShapeGrad(TrainRegistry &registry);

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_TRAIN_TRAINKERNELS_H
