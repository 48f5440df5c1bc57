//===- CPUTrainBackend.cpp - the CPU backend's training kernels -----------===//

#include "TrainKernels.h"

#include "heterps/Runtime/Plan.h"

#include <omp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {
/// The CPU backend's training kernels, on oneDNN's training primitives.
class CPUTrainBackend final : public TrainBackend {
public:
  explicit CPUTrainBackend(TrainBackendOptions options)
      : options(options),
        inference(BackendOptions{options.numThreads, /*autotune=*/false}) {
    registerBatchNormGrad(registry);
    registerBinaryGrad(registry);
    registerConvGrad(registry);
    registerDropoutGrad(registry);
    registerEltwiseGrad(registry);
    registerGeluGrad(registry);
    registerGemmGrad(registry);
    registerPoolGrad(registry);
    registerShapeGrad(registry);
    registerUnaryGrad(registry);
    registerSoftmaxGrad(registry);
    registerReduceGrad(registry);
    registerLayerNormGrad(registry);
    registerLRNGrad(registry);
    registerConvTransposeGrad(registry);
    registerIndexGrad(registry);
    registerMatMulGrad(registry);
    registerAttentionGrad(registry);
    registerResizeGrad(registry);
    registerRecurrentGrad(registry);
  }

  llvm::Expected<std::unique_ptr<TrainKernel>>
  createKernel(const OpInfo &info, int opIndex) const override {
    auto it = registry.find(info.op.type());
    if (it == registry.end())
      return cpu::kernelError("op type '" + info.op.type() +
                              "' cannot be trained yet (no backward kernel)");
    if (info.numOutputs() != 1)
      return cpu::kernelError("ops with " + llvm::Twine(info.numOutputs()) +
                              " outputs cannot be trained");
    TrainKernelEnv env{ctx, &inference, opIndex, options.seed};
    return it->second(info, env);
  }

  std::vector<std::string> opTypes() const override {
    std::vector<std::string> types;
    for (const auto &entry : registry)
      types.push_back(entry.getKey().str());
    llvm::sort(types);
    return types;
  }

  void enterThread() const override { inference.enterThread(); }

  llvm::Error accumulate(Tensor &dst, const Tensor &src) const override;

private:
  TrainBackendOptions options;
  CPUContextPtr ctx = std::make_shared<cpu::CPUContext>();
  /// Inference kernels that some training forwards reuse.
  mutable CPUBackend inference;
  TrainRegistry registry;
};
} // namespace

llvm::Expected<std::unique_ptr<TrainBackend>>
CPUBackend::createTrainBackend(const TrainBackendOptions &options) const {
  TrainBackendOptions own = options;
  if (own.numThreads == 0)
    own.numThreads = this->options.numThreads;
  return std::make_unique<CPUTrainBackend>(own);
}

llvm::Error CPUTrainBackend::accumulate(Tensor &dst, const Tensor &src) const {
  if (dst.shape() != src.shape())
    return cpu::kernelError("gradients " + dst.typeString() + " and " +
                            src.typeString() + " cannot be summed");
  return cpu::guardDnnl([&]() -> llvm::Error {
    // Same layout: sum the buffers (blocked formats pad with zeros, whose
    // sum stays zero). Into `dst` when no one else holds its buffer; else
    // a fresh one: `dst` may share its buffer with a gradient passed
    // through unchanged (Identity, Add).
    Tensor other = cpu::reorderTo(src, cpu::descOf(dst), ctx);
    Tensor sum = dst.ownsBufferAlone()
                     ? dst
                     : cpu::allocate(cpu::descOf(dst), dst.shape(), ctx);
    const float *a = dst.data<float>(), *b = other.data<float>();
    float *s = sum.data<float>();
    int64_t n = static_cast<int64_t>(dst.bytes() / sizeof(float));
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i)
      s[i] = a[i] + b[i];
    dst = std::move(sum);
    return llvm::Error::success();
  });
}
