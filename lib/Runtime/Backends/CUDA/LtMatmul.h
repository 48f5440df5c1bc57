//===- LtMatmul.h - row-major matrix products on cuBLASLt -------*- C++ -*-===//
//
// Row-major products through cuBLASLt's column-major API: D = A B is
// computed as D^T = B^T A^T, which reads the same bytes. f32 with f32
// compute (no TF32). Per shape the descriptors and cuBLASLt's heuristic
// algorithm are made once and cached. Used by Gemm and MatMul and by their
// backward passes.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_LTMATMUL_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_LTMATMUL_H

#include "CUDAContext.h"

#include <map>
#include <tuple>

namespace heterps::runtime::cuda {

/// One row-major product: D[b] = alpha op(A[b]) op(B[b]) + beta C[b].
struct Product {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  /// Elements between batches (0: shared).
  int64_t strideA = 0, strideB = 0;
  bool bias = false, accumulate = false;
  auto key() const {
    return std::tie(transA, transB, m, n, k, batch, strideA, strideB, bias,
                    accumulate);
  }
  bool operator<(const Product &o) const { return key() < o.key(); }
};

struct LtPlan;

/// Runs Products on one context, caching a plan per shape.
class LtRunner {
public:
  explicit LtRunner(CUDAContextPtr ctx);
  ~LtRunner();
  /// D = alpha op(A) op(B) (+ bias per column of D with Product::bias)
  /// + beta D.
  llvm::Error run(const Product &p, const float *a, const float *b, float *d,
                  const float *bias, float alpha, float beta);

private:
  llvm::Expected<LtPlan *> planFor(const Product &p);

  CUDAContextPtr ctx;
  std::map<Product, std::unique_ptr<LtPlan>> plans;
};

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_LTMATMUL_H
