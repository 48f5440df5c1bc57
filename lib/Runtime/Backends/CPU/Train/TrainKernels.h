//===- TrainKernels.h - CPU training kernel registry ------------*- C++ -*-===//
//
// Internal to the CPU backend's training kernels: each kernel family
// registers its factories here, as the inference kernels do in
// ../CPUKernels.h, and shares their oneDNN helpers (DnnlUtils.h).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_TRAIN_TRAINKERNELS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_TRAIN_TRAINKERNELS_H

#include "../DnnlUtils.h"
#include "heterps/Runtime/Train/TrainKernel.h"

#include "llvm/ADT/StringMap.h"

namespace heterps::runtime::train {

using cpu::CPUContextPtr;
using cpu::memory;
using cpu::Tag;

/// What a factory gets besides the op: the oneDNN context, the inference
/// backend (whose kernels some forwards reuse), the op's index (dropout
/// seeds its stream with it) and the run's seed.
struct TrainKernelEnv {
  CPUContextPtr ctx;
  Backend *inference = nullptr;
  int opIndex = 0;
  uint64_t seed = 1;
};

using TrainKernelFactory =
    std::function<llvm::Expected<std::unique_ptr<TrainKernel>>(
        const OpInfo &, const TrainKernelEnv &)>;
using TrainRegistry = llvm::StringMap<TrainKernelFactory>;

void registerConvGrad(TrainRegistry &registry);
void registerEltwiseGrad(TrainRegistry &registry);
void registerGeluGrad(TrainRegistry &registry);
void registerPoolGrad(TrainRegistry &registry);
void registerGemmGrad(TrainRegistry &registry);
void registerBinaryGrad(TrainRegistry &registry);
void registerShapeGrad(TrainRegistry &registry);
void registerBatchNormGrad(TrainRegistry &registry);
void registerDropoutGrad(TrainRegistry &registry);
void registerUnaryGrad(TrainRegistry &registry);
void registerSoftmaxGrad(TrainRegistry &registry);
void registerReduceGrad(TrainRegistry &registry);
void registerLayerNormGrad(TrainRegistry &registry);
void registerLRNGrad(TrainRegistry &registry);
void registerConvTransposeGrad(TrainRegistry &registry);
void registerIndexGrad(TrainRegistry &registry);
void registerMatMulGrad(TrainRegistry &registry);
void registerAttentionGrad(TrainRegistry &registry);
void registerResizeGrad(TrainRegistry &registry);
void registerRecurrentGrad(TrainRegistry &registry);

/// Runs an inference kernel as the forward (plain inputs unless it takes
/// layouts); the backward is the subclass's.
class InferenceForward : public TrainKernel {
public:
  InferenceForward(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx)
      : kernel(std::move(kernel)), ctx(std::move(ctx)) {}
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    std::vector<Tensor> plain;
    std::vector<const Tensor *> args(inputs.begin(), inputs.end());
    if (!kernel->acceptsLayouts()) {
      plain.reserve(inputs.size());
      for (const Tensor *&t : args)
        if (t && !t->isPlain())
          t = &plain.emplace_back(cpu::plainOf(*t, ctx));
    }
    return kernel->run(args, llvm::MutableArrayRef<Tensor>(output));
  }

protected:
  std::unique_ptr<Kernel> kernel;
  CPUContextPtr ctx;
};

/// A factory for an InferenceForward subclass `K` constructed from the
/// inference kernel, the context and the op's info. The inference kernel
/// is told of no constants: in training the weights change every step, and
/// a kernel that keeps what it makes from constant weights (the reordered
/// weights of ConvTranspose) would run on the first step's.
template <typename K> TrainKernelFactory inferenceForward() {
  return [](const OpInfo &info, const TrainKernelEnv &env)
             -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    auto kernel = env.inference->createKernel(
        OpInfo(info.op, std::vector<const Tensor *>(info.constants.size())));
    if (!kernel)
      return kernel.takeError();
    return K::create(std::move(*kernel), env.ctx, info);
  };
}

/// `dy` reduced (summed) over broadcast dimensions to `shape`, the shape of
/// an input that numpy broadcasting expanded to dy's; plain f32.
Tensor reduceToShape(const Tensor &dy, const Shape &shape);

} // namespace heterps::runtime::train

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_TRAIN_TRAINKERNELS_H
