//===- ConvKernels.h - the Conv kernels' shared entry points ----*- C++ -*-===//
//
// Internal to the CPU backend: the plain Conv kernel (ConvKernel.cpp), which
// the depthwise-fused Conv (DepthwiseFusedConvKernel.cpp) falls back on.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVKERNELS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVKERNELS_H

#include "CPUKernels.h"
#include "ConvGeometry.h"
#include "SwishPass.h"

namespace heterps::runtime::cpu {

struct ConvParams : ConvAttrs {
  /// A fourth input is summed into the output.
  bool sum = false;
  dnnl::post_ops postOps;
  /// The last of postOps is Swish: autotuning also times the convolution
  /// with postOps less it (postOpsBeforeSwish) followed by swishInPlace
  /// (SwishPass.h).
  bool swishLast = false;
  dnnl::post_ops postOpsBeforeSwish;
};

/// Swish over all of a convolution's output in `md` (its padding too:
/// swish(0) = 0) when its primitive left the Swish out.
inline void swishIfApart(bool apart, Tensor &dst, const memory::desc &md) {
  if (apart)
    swishInPlace(dst.data<float>(), md.get_size() / sizeof(float));
}

/// Appends the activation that attribute `name` of `attrs` names (if any)
/// to params.postOps, noting a Swish in params.swishLast.
llvm::Error appendConvActivation(const OpAttributes &attrs, ConvParams &params,
                                 llvm::StringRef name = "activation");

/// A Conv kernel over inputs (X, W, B, Sum); W constant when
/// `constantWeights`.
std::unique_ptr<Kernel> createConvKernel(CPUContextPtr ctx, ConvParams params,
                                         bool constantWeights);

/// The kernel of a Conv that fuseDepthwiseConvs (Fusion.h) gave a depthwise
/// Conv: inputs (X, W, B, -, DwW, DwB).
llvm::Expected<std::unique_ptr<Kernel>>
createDepthwiseFusedConv(const OpInfo &info, CPUContextPtr ctx);

/// The kernel of a Conv that fuseProjections (Fusion.h) also gave the
/// block's projection: inputs (X, W, B, -, DwW, DwB, ProjW, ProjB, Sum).
llvm::Expected<std::unique_ptr<Kernel>>
createInvertedResidual(const OpInfo &info, CPUContextPtr ctx);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_CONVKERNELS_H
