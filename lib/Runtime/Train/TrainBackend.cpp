//===- TrainBackend.cpp - the CPU training kernels ------------------------===//

#include "TrainKernels.h"

#include "heterps/Runtime/Plan.h"

#include <omp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

TrainKernel::~TrainKernel() = default;

struct TrainBackend::Impl {
  TrainBackendOptions options;
  CPUContextPtr ctx = std::make_shared<cpu::CPUContext>();
  /// Inference kernels that some training forwards reuse.
  CPUBackend inference;
  TrainRegistry registry;

  explicit Impl(TrainBackendOptions options)
      : options(options), inference(CPUBackendOptions{options.numThreads,
                                                      /*autotune=*/false}) {
    registerBatchNormGrad(registry);
    registerBinaryGrad(registry);
    registerConvGrad(registry);
    registerDropoutGrad(registry);
    registerEltwiseGrad(registry);
    registerGemmGrad(registry);
    registerPoolGrad(registry);
    registerShapeGrad(registry);
    registerUnaryGrad(registry);
    registerSoftmaxGrad(registry);
    registerReduceGrad(registry);
    registerLayerNormGrad(registry);
    registerLRNGrad(registry);
    registerConvTransposeGrad(registry);
  }
};

TrainBackend::TrainBackend(TrainBackendOptions options)
    : impl(std::make_unique<Impl>(options)) {}

TrainBackend::~TrainBackend() = default;

llvm::Expected<std::unique_ptr<TrainKernel>>
TrainBackend::createKernel(const OpInfo &info, int opIndex) const {
  auto it = impl->registry.find(info.op.type());
  if (it == impl->registry.end())
    return cpu::kernelError("op type '" + info.op.type() +
                            "' cannot be trained yet (no backward kernel)");
  if (info.numOutputs() != 1)
    return cpu::kernelError("ops with " + llvm::Twine(info.numOutputs()) +
                            " outputs cannot be trained");
  TrainKernelEnv env{impl->ctx, &impl->inference, opIndex, impl->options.seed};
  return it->second(info, env);
}

std::vector<std::string> TrainBackend::opTypes() const {
  std::vector<std::string> types;
  for (const auto &entry : impl->registry)
    types.push_back(entry.getKey().str());
  llvm::sort(types);
  return types;
}

void TrainBackend::enterThread() const { impl->inference.enterThread(); }

llvm::Error TrainBackend::accumulate(Tensor &dst, const Tensor &src) const {
  if (dst.shape() != src.shape())
    return cpu::kernelError("gradients " + dst.typeString() + " and " +
                            src.typeString() + " cannot be summed");
  return cpu::guardDnnl([&]() -> llvm::Error {
    // Same layout: sum the buffers (blocked formats pad with zeros, whose
    // sum stays zero). A fresh buffer: `dst` may share its buffer with a
    // gradient passed through unchanged (Identity, Add).
    Tensor other = cpu::reorderTo(src, cpu::descOf(dst), impl->ctx);
    Tensor sum = cpu::allocate(cpu::descOf(dst), dst.shape(), impl->ctx);
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
