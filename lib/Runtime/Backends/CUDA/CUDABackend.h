//===- CUDABackend.h - NVIDIA GPUs on cuDNN and cuBLASLt --------*- C++ -*-===//
//
// Kind "cuda". Each backend instance (one per executor, so one per stage
// replica) has its own stream, memory space and library handles
// (CUDAContext): replicas on one GPU overlap. Kernels are in this folder,
// one file per family; view ops (Flatten, Reshape, ...) are the CPU
// backend's, which only relabel shapes. Plan rewrites: the CPU's
// device-neutral ones (batch norms folded into convolutions, pads, residual
// adds and activations fused into them, layer normalisation as PyTorch
// exports it as one LayerNormalization). Copies go through pinned staging
// buffers; a copy to the host waits for the stream. Op types without a
// kernel (or training kernel) here run on the CPU backend (Devices falls
// back and reports them). Training kernels are in Train/.
//
// The GPU is device 0: CUDA_VISIBLE_DEVICES picks which one that is. With
// BackendOptions::synchronous each kernel waits for its work, for --op-times.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H

#include "CUDAContext.h"

#include "heterps/Runtime/Backend.h"

namespace heterps::runtime::cuda {

class CUDABackend final : public Backend {
public:
  CUDABackend(CUDAContextPtr ctx, std::unique_ptr<Backend> cpu,
              BackendOptions options);
  ~CUDABackend() override;

  llvm::StringRef name() const override { return memory().name(); }
  MemorySpace &memory() const override { return ctx->memory(); }
  const KernelRegistry &kernels() const override { return registry; }
  /// Pad in constant mode only.
  bool supports(const plan::Op &op) const override;
  void rewriteForInference(plan::Plan &plan, WeightMap &weights,
                           OpFilter mine) const override;
  llvm::Expected<std::unique_ptr<train::TrainBackend>>
  createTrainBackend(const train::TrainBackendOptions &options) const override;
  llvm::Expected<Transfer> copy(const Tensor &src, MemorySpace &to) override;
  void enterThread() override;
  std::vector<std::pair<std::string, int64_t>> counters() const override;

private:
  CUDAContextPtr ctx;
  /// Lends its view kernels.
  std::unique_ptr<Backend> cpu;
  BackendOptions options;
  KernelRegistry registry;
};

/// Registers the backend as kind "cuda" (Backends/Builtin.cpp).
void registerCUDABackend();

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDABACKEND_H
