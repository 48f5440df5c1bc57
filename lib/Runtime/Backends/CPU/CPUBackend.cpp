//===- CPUBackend.cpp - the oneDNN CPU backend ----------------------------===//

#include "CPUKernels.h"
#include "Fusion.h"

#include <cstring>
#include <omp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

CPUBackend::CPUBackend(BackendOptions options)
    : options(options), context(std::make_shared<CPUContext>()) {
  context->autotune = options.autotune;
  context->propagateNaN = options.propagateNaN;
  registerArgKernels(registry, context);
  registerBinaryKernels(registry, context);
  registerConcatKernel(registry, context);
  registerConvKernel(registry, context);
  registerEltwiseKernels(registry, context);
  registerGatherKernel(registry, context);
  registerIndexKernels(registry, context);
  registerLogicKernels(registry, context);
  registerConvTransposeKernel(registry, context);
  registerLayerNormKernel(registry, context);
  registerRecurrentKernels(registry, context);
  registerReduceKernels(registry, context);
  registerRollKernel(registry, context);
  registerResizeKernel(registry, context);
  registerSliceKernels(registry, context);
  registerMatMulKernels(registry, context);
  registerNormKernels(registry, context);
  registerPadKernel(registry, context);
  registerPoolKernels(registry, context);
  registerSoftmaxKernels(registry, context);
  registerSqueezeExciteKernel(registry, context);
  registerAttentionKernel(registry, context);
  registerViewKernels(registry, context);
}

CPUBackend::~CPUBackend() = default;

void CPUBackend::rewriteForInference(plan::Plan &plan, WeightMap &weights,
                                     OpFilter mine) const {
  foldBatchNorms(plan, weights, mine);
  // NaN-passing kernels run unfused: an activation inside a Conv is
  // oneDNN's, which turns NaN into 0.
  if (!options.fuse || options.propagateNaN)
    return;
  fusePads(plan, weights, mine);
  // The squeeze Convs of SqueezeNet read their Concat's parts: at batch 16
  // 8-13% faster than copying them, and level at batch 1 (the weights'
  // Slices are computed once, Executor.cpp).
  splitConcatConvs(plan, mine);
  fuseRolls(plan, weights, mine);
  fuseGelus(plan, weights, mine);
  fuseLayerNorms(plan, weights, mine);
  fuseMatMulBiases(plan, weights, mine);
  fuseAttention(plan, weights, mine);
  fuseSkipLayerNorms(plan, mine);
  fuseSelfGates(plan, mine);
  fuseResidualAdds(plan, mine);
  fuseActivations(plan, mine);
  fuseConcatBatchNorms(plan, weights, mine);
  fuseChannelShuffles(plan, mine);
  fuseShuffleChunks(plan, weights, mine);
  fuseDepthwiseConvs(plan, weights, mine);
  fuseSqueezeExcites(plan, weights, mine);
  fuseProjections(plan, weights, mine);
}

/// `weights` less the one-element initializers: the trainer trains those,
/// so a pattern must not take them for its fixed constants (GELU's 0.5, a
/// LayerNorm's epsilon), which a fused op would stop training.
static WeightMap withoutScalarParameters(const plan::Plan &plan,
                                         const WeightMap &weights) {
  WeightMap constants = weights;
  for (const plan::Weight &w : plan.weights()) {
    auto it = constants.find(w.value());
    if (w.source_case() == plan::Weight::kInitializer &&
        it != constants.end() && it->second.numElements() == 1)
      constants.erase(it);
  }
  return constants;
}

void CPUBackend::rewriteForTraining(plan::Plan &plan, const WeightMap &weights,
                                    OpFilter mine) const {
  // Zero Pads are the padding of the pool or Conv reading them; a
  // MatMul reads its transposed weight in place;
  // convolutions read the parts of a Concat instead of copies; GELU,
  // LayerNorm, SiLU and HardSwish are one op each (one pass forward and
  // back instead of a chain of element-wise ops), attention too (no
  // transposed copies of its operands); Relus run inside the Conv
  // or batch norm before them, and their gradient masks after a MaxPool.
  WeightMap constants = withoutScalarParameters(plan, weights);
  fusePads(plan, constants, mine);
  foldWeightTransposes(plan, mine);
  splitConcatConvs(plan, mine);
  fuseGelus(plan, constants, mine);
  fuseLayerNorms(plan, constants, mine);
  fuseTrainableAttention(plan, constants, mine);
  fuseSelfGates(plan, mine);
  fuseTrainableActivations(plan, mine);
  moveReluMasksToMaxPools(plan, mine);
}

llvm::Expected<Transfer> CPUBackend::copy(const Tensor &src, MemorySpace &to) {
  // Only ever host to host: the CPU's memory is the host's.
  if (!to.isHost() || !src.onHost())
    return kernelError("the cpu backend copies only within host memory, not "
                       "from " +
                       src.space().name() + " to " + to.name());
  return Transfer{src.clone(), Completion()};
}

void CPUBackend::enterThread() {
  // oneDNN's OpenMP runtime sizes its parallel regions by the calling
  // thread's nthreads-var, which omp_set_num_threads sets for this thread.
  if (options.numThreads > 0)
    omp_set_num_threads(options.numThreads);
}

PrimitiveCacheStats CPUBackend::cacheStats() const { return context->stats; }

std::vector<std::pair<std::string, int64_t>> CPUBackend::counters() const {
  const PrimitiveCacheStats &s = context->stats;
  return {{"primitives_created", s.created},
          {"primitive_cache_hits", s.hits},
          {"joined_in_place", s.joinedInPlace}};
}

void heterps::runtime::cpu::registerCPUBackend() {
  registerBackend("cpu",
                  [](const BackendOptions &options, llvm::StringRef)
                      -> llvm::Expected<std::unique_ptr<Backend>> {
                    return std::make_unique<CPUBackend>(options);
                  });
}
