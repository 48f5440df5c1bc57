//===- CPUContext.cpp - the oneDNN CPU backend ----------------------------===//

#include "CPUKernels.h"

#include <omp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

CPUBackend::CPUBackend(CPUBackendOptions options)
    : options(options), context(std::make_shared<CPUContext>()) {
  context->autotune = options.autotune;
  context->propagateNaN = options.propagateNaN;
  registerBinaryKernels(registry, context);
  registerConcatKernel(registry, context);
  registerConvKernel(registry, context);
  registerEltwiseKernels(registry, context);
  registerGatherKernel(registry, context);
  registerConvTransposeKernel(registry, context);
  registerLayerNormKernel(registry, context);
  registerReduceKernels(registry, context);
  registerSliceKernels(registry, context);
  registerMatMulKernels(registry, context);
  registerNormKernels(registry, context);
  registerPadKernel(registry, context);
  registerPoolKernels(registry, context);
  registerSoftmaxKernels(registry, context);
  registerViewKernels(registry, context);
}

CPUBackend::~CPUBackend() = default;

void CPUBackend::enterThread() {
  // oneDNN's OpenMP runtime sizes its parallel regions by the calling
  // thread's nthreads-var, which omp_set_num_threads sets for this thread.
  if (options.numThreads > 0)
    omp_set_num_threads(options.numThreads);
}

PrimitiveCacheStats CPUBackend::cacheStats() const { return context->stats; }
