//===- CUDAKernels.h - the CUDA backend's inference kernels -----*- C++ -*-===//
//
// Kernels read and write plain row-major tensors in their context's GPU
// memory and queue their work on its stream; run() returns once the work
// is queued. Each kernel family registers its op types here.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H

#include "CUDAContext.h"
#include "DeviceKernels.h"

#include "heterps/Runtime/Kernel.h"
#include "heterps/Runtime/OpGeometry.h"

namespace heterps::runtime::cuda {

using Factory = llvm::Expected<std::unique_ptr<Kernel>>;

class CUDAKernel : public Kernel {
public:
  explicit CUDAKernel(CUDAContextPtr ctx) : ctx(std::move(ctx)) {}

protected:
  /// An error unless every given input is an f32 tensor (or i64 where
  /// `allowI64`) in this GPU's memory.
  llvm::Error checkInputs(llvm::ArrayRef<const Tensor *> inputs,
                          bool allowI64 = false) const;
  CUDAContextPtr ctx;
};

/// The values of a small i64 tensor in GPU memory, read back.
llvm::Expected<std::vector<int64_t>> readInts(CUDAContext &ctx,
                                              const Tensor &t);
/// `x` reduced over the axes marked in `reduced` (kept as 1s with
/// `keepDims`).
llvm::Expected<Tensor> reduceAxes(CUDAContext &ctx, Reduction r,
                                  const Tensor &x,
                                  const std::vector<bool> &reduced,
                                  bool keepDims);
/// The elements of `shape` before and after axis `axis` (0-based).
std::pair<int64_t, int64_t> aroundAxis(const Shape &shape, int64_t axis);
/// Row-major strides of `shape`, in elements.
Dims stridesOf(llvm::ArrayRef<int64_t> shape);
/// `shape` as Dims (an error above kMaxRank dimensions).
llvm::Expected<Dims> dimsOf(llvm::ArrayRef<int64_t> shape);
/// The element-wise function ONNX op `opType` computes, with attributes
/// named `prefix` + "alpha", ...; an error for types it does not know.
llvm::Expected<UnarySpec> unarySpecFor(llvm::StringRef opType,
                                       const OpAttributes &attrs,
                                       llvm::StringRef prefix = "");
/// The activation an op fuses (attribute `activation`), Identity if none.
llvm::Expected<UnarySpec> fusedActivation(const OpAttributes &attrs);

/// The pooling kernels' form of pooling with `kind` over `window` of the
/// 4-D `x`.
Pooling poolingOf(PoolKind kind);
Pool2D pool2DOf(const Tensor &x, const Window &window);

void registerConvKernel(KernelRegistry &registry, CUDAContextPtr ctx);
void registerMatMulKernels(KernelRegistry &registry, CUDAContextPtr ctx);
void registerPoolKernels(KernelRegistry &registry, CUDAContextPtr ctx);
void registerEltwiseKernels(KernelRegistry &registry, CUDAContextPtr ctx);
void registerDataKernels(KernelRegistry &registry, CUDAContextPtr ctx);

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H
