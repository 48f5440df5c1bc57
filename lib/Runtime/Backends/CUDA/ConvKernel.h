//===- ConvKernel.h - ONNX Conv on cuDNN ------------------------*- C++ -*-===//
//
// The inference kernel (ConvKernel.cpp says how it works); its per-shape
// cuDNN descriptors also serve the training kernel's backward passes.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CONVKERNEL_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CONVKERNEL_H

#include "CUDAKernels.h"

#include "heterps/Runtime/OpGeometry.h"

#include <map>

namespace heterps::runtime::cuda {

/// Scratch limit for algorithm workspaces.
constexpr size_t kMaxConvWorkspace = size_t(512) << 20;

/// The cuDNN descriptors of one input shape and the algorithm chosen.
struct ConvSetup {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace = 0;
  Window window;
  /// The padded input's shape when pads are asymmetric, else empty.
  Shape padded;

  ~ConvSetup() {
    if (x)
      cudnnDestroyTensorDescriptor(x);
    if (y)
      cudnnDestroyTensorDescriptor(y);
    if (w)
      cudnnDestroyFilterDescriptor(w);
    if (conv)
      cudnnDestroyConvolutionDescriptor(conv);
  }
};

class ConvKernel : public CUDAKernel {
public:
  ConvKernel(CUDAContextPtr ctx, ConvAttrs attrs, UnarySpec f)
      : CUDAKernel(std::move(ctx)), attrs(std::move(attrs)), f(f) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;
  /// The descriptors and forward algorithm for input `x` and weight `w`,
  /// made on first use.
  llvm::Expected<ConvSetup *> setupFor(const Tensor &x, const Tensor &w);

private:
  llvm::Error chooseAlgorithm(ConvSetup &s, const Shape &xShape,
                              const Shape &yShape, const Tensor &w);

  ConvAttrs attrs;
  UnarySpec f;
  Shape weightShape;
  std::map<Shape, std::unique_ptr<ConvSetup>> setups;
};

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CONVKERNEL_H
