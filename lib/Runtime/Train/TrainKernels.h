//===- TrainKernels.h - registration of the CPU training kernels -*- C++
//-*-===//
//
// Internal to lib/Runtime/Train: each kernel family registers its factories
// here, as the inference kernels do in lib/Runtime/CPU/CPUKernels.h, and
// shares the inference backend's oneDNN helpers (DnnlUtils.h).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_TRAIN_TRAINKERNELS_H
#define HETERPS_LIB_RUNTIME_TRAIN_TRAINKERNELS_H

#include "../CPU/DnnlUtils.h"
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
void registerPoolGrad(TrainRegistry &registry);
void registerGemmGrad(TrainRegistry &registry);
void registerBinaryGrad(TrainRegistry &registry);
void registerShapeGrad(TrainRegistry &registry);
void registerBatchNormGrad(TrainRegistry &registry);
void registerDropoutGrad(TrainRegistry &registry);

/// `dy` reduced (summed) over broadcast dimensions to `shape`, the shape of
/// an input that numpy broadcasting expanded to dy's; plain f32.
Tensor reduceToShape(const Tensor &dy, const Shape &shape);

} // namespace heterps::runtime::train

#endif // HETERPS_LIB_RUNTIME_TRAIN_TRAINKERNELS_H
