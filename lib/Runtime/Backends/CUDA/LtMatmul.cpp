//===- LtMatmul.cpp - row-major matrix products on cuBLASLt ---------------===//

#include "LtMatmul.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace heterps::runtime::cuda {

constexpr size_t kLtWorkspace = size_t(32) << 20;

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

static llvm::Error setBatch(cublasLtMatrixLayout_t l, int64_t batch,
                            int64_t stride) {
  if (batch == 1)
    return llvm::Error::success();
  int32_t count = static_cast<int32_t>(batch);
  HPS_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
  HPS_CUDA_CHECK(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return llvm::Error::success();
}

} // namespace heterps::runtime::cuda

LtRunner::LtRunner(CUDAContextPtr ctx) : ctx(std::move(ctx)) {}
LtRunner::~LtRunner() = default;

llvm::Error LtRunner::run(const Product &p, const float *a, const float *b,
                          float *d, const float *bias, float alpha,
                          float beta) {
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
                                (*plan)->c, &(*plan)->algo, *work, kLtWorkspace,
                                ctx->stream()));
  return llvm::Error::success();
}

llvm::Expected<LtPlan *> LtRunner::planFor(const Product &p) {
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
                                            plan->b, plan->c, plan->c, pref, 1,
                                            &result, &count);
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
