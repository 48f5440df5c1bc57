//===- GemmGrad.cpp - Gemm forward and backward on cuBLASLt ---------------===//
//
// Y = alpha op(A) op(B) + beta C. The input gradients are products of dY
// with the other operand, each arranged so that cuBLASLt reads the stored
// matrices as they are (no transposed copies):
//   dA = alpha dY op(B)^T   (alpha op(B) dY^T when A is stored transposed)
//   dB = alpha op(A)^T dY   (alpha dY^T op(A) when B is stored transposed)
//   dC = beta dY summed to C's shape.
//
//===----------------------------------------------------------------------===//

#include "../LtMatmul.h"
#include "TrainKernels.h"

#include "heterps/Runtime/OpGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

class GemmGrad : public CUDATrainKernel {
public:
  GemmGrad(std::unique_ptr<Kernel> forward, CUDAContextPtr ctx, GemmAttrs attrs)
      : CUDATrainKernel(std::move(forward), ctx), lt(ctx), alpha(attrs.alpha),
        beta(attrs.beta), transA(attrs.transA), transB(attrs.transB) {}

  bool differentiable(int i) const override { return i <= 2; }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    int64_t m = output.dim(0), n = output.dim(1);
    int64_t k = transA ? a.dim(0) : a.dim(1);
    const float *dy = devicePtr<float>(dOutput);
    if (needGrad[0]) {
      Tensor da = ctx->make(DType::F32, a.shape());
      Product p;
      const float *left = dy, *right = devicePtr<float>(b);
      if (!transA) {
        // [m, k] = dY [m, n] . op(B)^T, op(B)^T = B when B is stored [n, k].
        p = {false, !transB, m, k, n};
      } else {
        // [k, m] = op(B) [k, n] . dY^T.
        p = {transB, true, k, m, n};
        std::swap(left, right);
      }
      if (llvm::Error e =
              lt.run(p, left, right, devicePtr<float>(da), nullptr, alpha, 0))
        return e;
      dInputs[0] = std::move(da);
    }
    if (needGrad[1]) {
      Tensor db = ctx->make(DType::F32, b.shape());
      Product p;
      const float *left = devicePtr<float>(a), *right = dy;
      if (!transB) {
        // [k, n] = op(A)^T [k, m] . dY.
        p = {!transA, false, k, n, m};
      } else {
        // [n, k] = dY^T [n, m] . op(A).
        p = {true, transA, n, k, m};
        std::swap(left, right);
      }
      if (llvm::Error e =
              lt.run(p, left, right, devicePtr<float>(db), nullptr, alpha, 0))
        return e;
      dInputs[1] = std::move(db);
    }
    if (needGrad.size() > 2 && needGrad[2]) {
      llvm::Expected<Tensor> dc = sumToShape(*ctx, dOutput, inputs[2]->shape());
      if (!dc)
        return dc.takeError();
      Tensor scaled = ctx->make(DType::F32, dc->shape());
      launchScale(ctx->stream(), devicePtr<float>(*dc),
                  devicePtr<float>(scaled), beta, scaled.numElements());
      dInputs[2] = std::move(scaled);
      return ctx->launched("scale kernel");
    }
    return llvm::Error::success();
  }

private:
  LtRunner lt;
  float alpha, beta;
  bool transA, transB;
};

} // namespace

void cuda::registerGemmGrad(TrainRegistry &registry) {
  registry["Gemm"] = [](const OpInfo &info, const TrainEnv &env)
      -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
    auto forward = forwardKernelFor(info, env);
    if (!forward)
      return forward.takeError();
    llvm::Expected<GemmAttrs> g = parseGemmAttrs(info.attrs);
    if (!g)
      return g.takeError();
    return std::make_unique<GemmGrad>(std::move(*forward), env.ctx, *g);
  };
}
