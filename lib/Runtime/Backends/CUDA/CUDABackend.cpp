//===- CUDABackend.cpp - NVIDIA GPUs on cuDNN and cuBLASLt ----------------===//

#include "CUDABackend.h"
#include "CUDAKernels.h"

#include "../CPU/Fusion.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {
/// A kernel that returns only once its work on the GPU is done.
class SynchronousKernel : public Kernel {
public:
  SynchronousKernel(std::unique_ptr<Kernel> inner, CUDAContextPtr ctx)
      : inner(std::move(inner)), ctx(std::move(ctx)) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = inner->run(inputs, outputs))
      return e;
    return ctx->synchronize();
  }

private:
  std::unique_ptr<Kernel> inner;
  CUDAContextPtr ctx;
};
} // namespace

CUDABackend::CUDABackend(CUDAContextPtr context, std::unique_ptr<Backend> cpu,
                         BackendOptions options)
    : ctx(std::move(context)), cpu(std::move(cpu)), options(options) {
  // Shape-only ops: the CPU's kernels relabel any tensor's shape.
  for (const char *type :
       {"Identity", "Dropout", "Flatten", "Reshape", "Squeeze", "Unsqueeze"})
    if (const KernelFactory *view = this->cpu->kernels().lookup(type))
      registry.add(type, *view);
  registerConvKernel(registry, ctx);
  registerDataKernels(registry, ctx);
  registerEltwiseKernels(registry, ctx);
  registerMatMulKernels(registry, ctx);
  registerPoolKernels(registry, ctx);
  if (options.synchronous)
    for (const std::string &type : registry.opTypes()) {
      KernelFactory make = *registry.lookup(type);
      registry.add(type, [make, ctx = ctx](const OpInfo &info) -> Factory {
        Factory kernel = make(info);
        if (!kernel)
          return kernel;
        return std::make_unique<SynchronousKernel>(std::move(*kernel), ctx);
      });
    }
}

bool CUDABackend::supports(const plan::Op &op) const {
  if (!Backend::supports(op))
    return false;
  if (op.type() != "Pad")
    return true;
  llvm::Expected<std::string> mode =
      OpAttributes(op).getString("mode", "constant");
  if (!mode) {
    llvm::consumeError(mode.takeError());
    return false;
  }
  return *mode == "constant" && op.inputs_size() < 4;
}

// Kernels still queued may read buffers the context holds.
CUDABackend::~CUDABackend() { llvm::consumeError(ctx->synchronize()); }

void CUDABackend::rewriteForInference(plan::Plan &plan, WeightMap &weights,
                                      OpFilter mine) const {
  foldBatchNorms(plan, weights, mine);
  if (!options.fuse || options.propagateNaN)
    return;
  fusePads(plan, weights, mine);
  fuseLayerNorms(plan, weights, mine);
  fuseResidualAdds(plan, mine);
  fuseActivations(plan, mine);
}

llvm::Expected<Transfer> CUDABackend::copy(const Tensor &src, MemorySpace &to) {
  if (!canCopy(src.space(), to) || !src.isPlain())
    return cudaFailure("the " + name() + " backend cannot copy " +
                       src.typeString() + " from " + src.space().name() +
                       " to " + to.name() + " memory");
  Tensor dst(src.dtype(), src.shape(), to);
  if (to.isHost()) {
    if (llvm::Error e = ctx->toHost(devicePtr(src), dst.rawData(), src.bytes()))
      return std::move(e);
  } else if (llvm::Error e =
                 ctx->toDevice(src.rawData(), devicePtr(dst), src.bytes())) {
    return std::move(e);
  }
  // A copy to the device is ordered before every later kernel on the
  // stream, so it is complete for them as soon as it is queued.
  return Transfer{std::move(dst), Completion()};
}

void CUDABackend::enterThread() {
  cudaSetDevice(ctx->device());
  cpu->enterThread();
}

std::vector<std::pair<std::string, int64_t>> CUDABackend::counters() const {
  CUDAMemory::Stats m = ctx->memory().stats();
  return {{"cuda conv algorithm searches", ctx->convSearches.load()},
          {"cuda matmul plans", ctx->matmulPlans.load()},
          {"cuda peak memory bytes", static_cast<int64_t>(m.peak)},
          {"cuda mallocs", m.mallocs}};
}

void heterps::runtime::cuda::registerCUDABackend() {
  registerBackend("cuda",
                  [](const BackendOptions &options, llvm::StringRef deviceType)
                      -> llvm::Expected<std::unique_ptr<Backend>> {
                    auto ctx = CUDAContext::create(0, options.autotune);
                    if (!ctx)
                      return ctx.takeError();
                    const BackendFactory *cpu = findBackend("cpu");
                    if (!cpu)
                      return cudaFailure("the cuda backend needs the cpu "
                                         "backend's view kernels");
                    auto host = (*cpu)(options, "");
                    if (!host)
                      return host.takeError();
                    return std::make_unique<CUDABackend>(
                        std::move(*ctx), std::move(*host), options);
                  });
}
