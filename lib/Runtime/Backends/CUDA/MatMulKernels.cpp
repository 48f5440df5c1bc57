//===- MatMulKernels.cpp - Gemm and MatMul on cuBLASLt --------------------===//
//
// Row-major products through cuBLASLt's column-major API: C = A B is
// computed as C^T = B^T A^T, which reads the same bytes. f32 with f32
// compute (no TF32). Gemm's bias, when it is a vector over the output
// columns and beta is 1, is cuBLASLt's bias epilogue; any other C is
// broadcast into the output first and summed with beta. MatMul batches
// over leading axes (strided batches; an operand without them is shared).
// Per shape the descriptors and cuBLASLt's heuristic algorithm are made
// once and cached.
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"

#include <map>
#include <tuple>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

constexpr size_t kLtWorkspace = size_t(32) << 20;

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

/// cuBLASLt's descriptors and algorithm for one Product.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo;
  ~LtPlan() {
    if (op)
      cublasLtMatmulDescDestroy(op);
    for (cublasLtMatrixLayout_t l : {a, b, c})
      if (l)
        cublasLtMatrixLayoutDestroy(l);
  }
};

llvm::Error setBatch(cublasLtMatrixLayout_t l, int64_t batch, int64_t stride) {
  if (batch == 1)
    return llvm::Error::success();
  int32_t count = static_cast<int32_t>(batch);
  HPS_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
  HPS_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return llvm::Error::success();
}

/// Runs Products on one context, caching a plan per shape.
class LtRunner {
public:
  explicit LtRunner(CUDAContextPtr ctx) : ctx(std::move(ctx)) {}

  llvm::Error run(const Product &p, const float *a, const float *b, float *d,
                  const float *bias, float alpha, float beta) {
    llvm::Expected<LtPlan *> plan = planFor(p);
    if (!plan)
      return plan.takeError();
    if (p.bias)
      HPS_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
          (*plan)->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    llvm::Expected<void *> work = ctx->workspace(kLtWorkspace);
    if (!work)
      return work.takeError();
    // Column-major: the "A" operand is our B, the "B" operand our A.
    HPS_CUDA_CHECK(cublasLtMatmul(ctx->lt(), (*plan)->op, &alpha, b, (*plan)->a,
                                  a, (*plan)->b, &beta, d, (*plan)->c, d,
                                  (*plan)->c, &(*plan)->algo, *work,
                                  kLtWorkspace, ctx->stream()));
    return llvm::Error::success();
  }

private:
  llvm::Expected<LtPlan *> planFor(const Product &p) {
    auto it = plans.find(p);
    if (it != plans.end())
      return it->second.get();
    ++ctx->matmulPlans;
    auto plan = std::make_unique<LtPlan>();
    HPS_CUDA_CHECK(
        cublasLtMatmulDescCreate(&plan->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    // D^T (n x m, column-major) = op(B)^T (n x k) op(A)^T (k x m).
    cublasOperation_t opB = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opA = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    HPS_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
        plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &opB, sizeof opB));
    HPS_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
        plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &opA, sizeof opA));
    if (p.bias) {
      cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      HPS_CUDA_CHECK(cublasLtMatmulDescSetAttribute(
          plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    }
    // Stored shapes (rows x cols, column-major, ld = rows).
    uint64_t bRows = p.transB ? p.k : p.n, bCols = p.transB ? p.n : p.k;
    uint64_t aRows = p.transA ? p.m : p.k, aCols = p.transA ? p.k : p.m;
    HPS_CUDA_CHECK(
        cublasLtMatrixLayoutCreate(&plan->a, CUDA_R_32F, bRows, bCols, bRows));
    HPS_CUDA_CHECK(
        cublasLtMatrixLayoutCreate(&plan->b, CUDA_R_32F, aRows, aCols, aRows));
    HPS_CUDA_CHECK(
        cublasLtMatrixLayoutCreate(&plan->c, CUDA_R_32F, p.n, p.m, p.n));
    if (llvm::Error e = setBatch(plan->a, p.batch, p.strideB))
      return std::move(e);
    if (llvm::Error e = setBatch(plan->b, p.batch, p.strideA))
      return std::move(e);
    if (llvm::Error e = setBatch(plan->c, p.batch, p.m * p.n))
      return std::move(e);
    cublasLtMatmulPreference_t pref;
    HPS_CUDA_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t limit = kLtWorkspace;
    cublasLtMatmulHeuristicResult_t result;
    int count = 0;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit, sizeof limit);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(ctx->lt(), plan->op, plan->a,
                                              plan->b, plan->c, plan->c, pref,
                                              1, &result, &count);
    cublasLtMatmulPreferenceDestroy(pref);
    HPS_CUDA_CHECK(status);
    if (count == 0)
      return cudaFailure("cuBLASLt has no algorithm for a " + llvm::Twine(p.m) +
                         "x" + llvm::Twine(p.k) + " by " + llvm::Twine(p.k) +
                         "x" + llvm::Twine(p.n) + " product");
    plan->algo = result.algo;
    LtPlan *made = plan.get();
    plans[p] = std::move(plan);
    return made;
  }

  CUDAContextPtr ctx;
  std::map<Product, std::unique_ptr<LtPlan>> plans;
};

class GemmKernel : public CUDAKernel {
public:
  GemmKernel(CUDAContextPtr ctx, float alpha, float beta, bool transA,
             bool transB)
      : CUDAKernel(ctx), lt(ctx), alpha(alpha), beta(beta), transA(transA),
        transB(transB) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &a = *inputs[0], &b = *inputs[1];
    const Tensor *c = inputs.size() > 2 ? inputs[2] : nullptr;
    if (a.rank() != 2 || b.rank() != 2)
      return cudaFailure("Gemm takes 2-D inputs, not " + a.typeString() +
                         " and " + b.typeString());
    Product p;
    p.transA = transA;
    p.transB = transB;
    p.m = transA ? a.dim(1) : a.dim(0);
    p.k = transA ? a.dim(0) : a.dim(1);
    p.n = transB ? b.dim(0) : b.dim(1);
    if ((transB ? b.dim(1) : b.dim(0)) != p.k)
      return cudaFailure("Gemm inputs " + a.typeString() + " and " +
                         b.typeString() + " do not multiply");
    Tensor y = ctx->make(DType::F32, {p.m, p.n});
    const float *bias = nullptr;
    float cScale = 0.f;
    if (c && beta != 0.f) {
      bool vector = c->numElements() == p.n &&
                    (c->rank() == 1 || (c->rank() == 2 && c->dim(0) == 1));
      if (vector && beta == 1.f) {
        p.bias = true;
        bias = devicePtr<float>(*c);
      } else {
        // C broadcast into the output, then summed with beta.
        Shape cs = c->shape();
        if (cs.size() > 2)
          return cudaFailure("Gemm C " + c->typeString() + " is not 2-D");
        cs.insert(cs.begin(), 2 - cs.size(), 1);
        if ((cs[0] != 1 && cs[0] != p.m) || (cs[1] != 1 && cs[1] != p.n))
          return cudaFailure("Gemm C " + c->typeString() +
                             " does not broadcast to the output");
        Dims dims{{p.m, p.n}};
        Dims strides{{cs[0] == 1 ? 0 : cs[1], cs[1] == 1 ? 0 : 1}};
        launchStridedCopy(ctx->stream(), 4, devicePtr(*c), devicePtr(y), 2,
                          dims, strides, stridesOf({p.m, p.n}));
        p.accumulate = true;
        cScale = beta;
      }
    }
    if (llvm::Error e = lt.run(p, devicePtr<float>(a), devicePtr<float>(b),
                               devicePtr<float>(y), bias, alpha, cScale))
      return e;
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  LtRunner lt;
  float alpha, beta;
  bool transA, transB;
};

class MatMulKernel : public CUDAKernel {
public:
  explicit MatMulKernel(CUDAContextPtr ctx) : CUDAKernel(ctx), lt(ctx) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &a = *inputs[0], &b = *inputs[1];
    if (a.rank() < 1 || b.rank() < 1)
      return cudaFailure("MatMul of scalars");
    // 1-D operands are a row (A) or a column (B), dropped from the output.
    Shape as = a.shape(), bs = b.shape();
    if (as.size() == 1)
      as.insert(as.begin(), 1);
    if (bs.size() == 1)
      bs.push_back(1);
    Product p;
    p.m = as[as.size() - 2];
    p.k = as.back();
    p.n = bs.back();
    if (bs[bs.size() - 2] != p.k)
      return cudaFailure("MatMul inputs " + a.typeString() + " and " +
                         b.typeString() + " do not multiply");
    Shape aBatch(as.begin(), as.end() - 2), bBatch(bs.begin(), bs.end() - 2);
    int64_t na = numElements(aBatch), nb = numElements(bBatch);
    Shape batch = aBatch.size() >= bBatch.size() ? aBatch : bBatch;
    if (nb == 1 && !aBatch.empty()) {
      // B shared: A's batches are rows of one product.
      p.m *= na;
      batch = aBatch;
    } else if (na == nb) {
      p.batch = na;
      p.strideA = p.m * p.k;
      p.strideB = p.k * p.n;
    } else if (na == 1) {
      p.batch = nb;
      p.strideB = p.k * p.n;
    } else {
      return cudaFailure("MatMul batch shapes " + shapeToString(aBatch) +
                         " and " + shapeToString(bBatch) +
                         " are not supported on cuda (equal, or one of them "
                         "all ones)");
    }
    Shape shape = batch;
    if (a.rank() > 1)
      shape.push_back(as[as.size() - 2]);
    if (b.rank() > 1)
      shape.push_back(p.n);
    Tensor y = ctx->make(DType::F32, shape);
    if (llvm::Error e = lt.run(p, devicePtr<float>(a), devicePtr<float>(b),
                               devicePtr<float>(y), nullptr, 1.f, 0.f))
      return e;
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  LtRunner lt;
};

} // namespace

void cuda::registerMatMulKernels(KernelRegistry &registry, CUDAContextPtr ctx) {
  registry.add("Gemm", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 3))
      return e;
    auto alpha = info.attrs.getFloat("alpha", 1.f);
    if (!alpha)
      return alpha.takeError();
    auto beta = info.attrs.getFloat("beta", 1.f);
    if (!beta)
      return beta.takeError();
    auto transA = info.attrs.getInt("trans_a", 0);
    if (!transA)
      return transA.takeError();
    auto transB = info.attrs.getInt("trans_b", 0);
    if (!transB)
      return transB.takeError();
    return std::make_unique<GemmKernel>(ctx, *alpha, *beta, *transA != 0,
                                        *transB != 0);
  });
  registry.add("MatMul", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 2))
      return e;
    return std::make_unique<MatMulKernel>(ctx);
  });
}
