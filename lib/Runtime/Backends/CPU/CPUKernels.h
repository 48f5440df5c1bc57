//===- CPUKernels.h - registration of the CPU kernels -----------*- C++ -*-===//
//
// One function per kernel family adds its factories to the backend's
// registry; each lives in the .cpp file of the family.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_CPUKERNELS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_CPUKERNELS_H

#include "DnnlUtils.h"

/// Compiles a hot loop of the backend's own for AVX-512 and AVX2 beside the
/// baseline, the variant picked when the library loads: the build targets
/// any x86-64, and oneDNN's jit kernels, which such loops sit beside, use
/// the widest vectors the machine has.
#if defined(__x86_64__)
#define HETERPS_VECTOR_CLONES                                                  \
  __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HETERPS_VECTOR_CLONES
#endif

namespace heterps::runtime::cpu {

/// An element-wise function as oneDNN computes it: alpha and beta are the
/// algorithm's parameters (see dnnl_eltwise docs).
struct EltwiseSpec {
  dnnl::algorithm algorithm;
  float alpha = 0.f;
  float beta = 0.f;
};

/// The oneDNN form of the ONNX activation `opType` with ONNX attributes
/// `alpha`/`beta`, or an error when oneDNN has none. `attrPrefix` is
/// prepended to the attribute names ("activation_" for fused ones).
llvm::Expected<EltwiseSpec> eltwiseSpecFor(llvm::StringRef opType,
                                           const OpAttributes &attrs,
                                           llvm::StringRef attrPrefix = "");

/// Appends to `ops` the activation an op fuses: the attribute `name` (an
/// ONNX activation op type) and its `<name>_alpha`, ... Nothing when there
/// is no attribute `name`.
llvm::Error appendFusedActivation(const OpAttributes &attrs,
                                  dnnl::post_ops &ops,
                                  llvm::StringRef name = "activation");

/// Whether an op whose kernels can fuse only a Relu (BatchNormalization;
/// Conv in training) fuses one: true for attribute `activation` = Relu,
/// false without it, an error naming any other.
llvm::Expected<bool> fusesRelu(const OpAttributes &attrs,
                               llvm::StringRef opType);

/// Attributes that an inference kernel and its backward both read.
struct LRNParams {
  int64_t size;
  float alpha, beta, bias;
};
llvm::Expected<LRNParams> readLRNParams(const OpAttributes &attrs);
struct SoftmaxParams {
  int64_t axis;
  bool coerce2d;
};
llvm::Expected<SoftmaxParams> readSoftmaxParams(const OpAttributes &attrs);
struct LayerNormParams {
  int64_t axis;
  float epsilon;
};
llvm::Expected<LayerNormParams> readLayerNormParams(const OpAttributes &attrs);
/// `axes` empty: all of them.
struct ReduceParams {
  std::vector<int64_t> axes;
  bool keepdims;
};
llvm::Expected<ReduceParams> readReduceParams(const OpAttributes &attrs);

/// The plain f32 tensor `x` with its axes permuted (ONNX Transpose: output
/// axis i is input axis perm[i]; empty perm reverses them), or an error
/// when perm is not a permutation of x's axes.
llvm::Expected<Tensor> transposePlain(const Tensor &x,
                                      llvm::ArrayRef<int64_t> perm,
                                      const CPUContextPtr &ctx);

/// transposePlain of `x` in any layout, except that channels-last
/// [N, C, S...] to [N, S..., C] and plain [N, S..., C] to [N, C, S...]
/// (channels-last) are views of x's buffer: the same bytes.
llvm::Expected<Tensor> transposeOf(const Tensor &x,
                                   llvm::ArrayRef<int64_t> perm,
                                   const CPUContextPtr &ctx);

void registerBinaryKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerIndexKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerLogicKernels(KernelRegistry &registry, CPUContextPtr ctx);

/// `opType` (Add, Sub, Mul, Div, Max, Min) of two i64 tensors, broadcast:
/// run-time shape arithmetic. Division truncates; by zero is an error.
llvm::Expected<Tensor> integerArithmetic(llvm::StringRef opType,
                                         const Tensor &a, const Tensor &b);
/// ScatterND: the element offset in `data` of the slice that `row` (the
/// first k indices) names, negative indices counting from the end, or an
/// error naming the index out of range.
llvm::Expected<int64_t> scatterSliceOffset(const int64_t *row, int64_t k,
                                           const Tensor &data);
void registerArgKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerAttentionKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerConcatKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerConvKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerEltwiseKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerGatherKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerConvTransposeKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerLayerNormKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerRecurrentKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerReduceKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerRollKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerResizeKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerSliceKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerMatMulKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerNormKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerPadKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerPoolKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerSoftmaxKernels(KernelRegistry &registry, CPUContextPtr ctx);
void registerSqueezeExciteKernel(KernelRegistry &registry, CPUContextPtr ctx);
void registerViewKernels(KernelRegistry &registry, CPUContextPtr ctx);

/// Registers the backend as kind "cpu" (called by Backends/Builtin.cpp).
void registerCPUBackend();

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_CPUKERNELS_H
