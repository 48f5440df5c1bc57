//===- GemmGrad.cpp - Gemm forward and backward ---------------------------===//
//
// On oneDNN's sgemm, plain row-major: Y = alpha op(A) op(B) + beta C, C
// broadcast to Y. (MatMul is MatMulGrad.cpp's.)
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "heterps/Runtime/OpGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::kernelError;

/// C[m, n] = alpha op(A) op(B) (+ C when `accumulate`), op(A) [m, k] stored
/// as [m, k], or [k, m] when `ta`; likewise B.
static void matmul(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, const float *b, float *c,
                   bool accumulate = false) {
  dnnl::sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, ta ? m : k, b,
              tb ? k : n, accumulate ? 1.f : 0.f, c, n);
}

namespace {

class GemmGradKernel : public TrainKernel {
public:
  GemmGradKernel(CPUContextPtr ctx, bool transA, bool transB, float alpha,
                 float beta)
      : ctx(std::move(ctx)), transA(transA), transB(transB), alpha(alpha),
        beta(beta) {}
  bool differentiable(int i) const override { return i <= 2; }
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  CPUContextPtr ctx;
  bool transA, transB;
  float alpha, beta;
  /// The forward's plain A and B, and the product's sizes.
  Tensor a, b;
  int64_t m = 0, n = 0, k = 0;
};

} // namespace

llvm::Error GemmGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                    Tensor &output) {
  if (llvm::Error e = cpu::checkF32(inputs))
    return e;
  return cpu::guardDnnl([&]() -> llvm::Error {
    a = cpu::plainOf(*inputs[0], ctx);
    b = cpu::plainOf(*inputs[1], ctx);
    if (a.rank() != 2 || b.rank() != 2)
      return kernelError("Gemm needs 2-D A and B, got " + a.typeString() +
                         " and " + b.typeString());
    m = transA ? a.dim(1) : a.dim(0);
    k = transA ? a.dim(0) : a.dim(1);
    n = transB ? b.dim(0) : b.dim(1);
    if ((transB ? b.dim(1) : b.dim(0)) != k)
      return kernelError("Gemm operands " + a.typeString() + " and " +
                         b.typeString() + " do not match");
    output = Tensor(DType::F32, {m, n});
    float *y = output.data<float>();
    bool bias = inputs.size() > 2 && inputs[2] && beta != 0.f;
    if (bias) {
      Tensor c = cpu::plainOf(*inputs[2], ctx);
      auto broadcast = cpu::broadcastShapes(c.shape(), {m, n});
      if (!broadcast || *broadcast != Shape{m, n})
        return kernelError("Gemm bias " + c.typeString() +
                           " does not broadcast to [" + llvm::Twine(m) + ", " +
                           llvm::Twine(n) + "]");
      // Y = beta C, broadcast row- and column-wise, then the product added.
      const float *cv = c.data<float>();
      int64_t rows = c.rank() == 2 ? c.dim(0) : 1;
      int64_t cols = c.rank() >= 1 ? c.shape().back() : 1;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          y[i * n + j] =
              beta * cv[(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j)];
    }
    matmul(transA, transB, m, n, k, alpha, a.data<float>(), b.data<float>(), y,
           bias);
    return llvm::Error::success();
  });
}

llvm::Error GemmGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                     const Tensor &, const Tensor &dOutput,
                                     llvm::ArrayRef<bool> needGrad,
                                     llvm::MutableArrayRef<Tensor> dInputs) {
  return cpu::guardDnnl([&]() -> llvm::Error {
    Tensor dyT = cpu::plainOf(dOutput, ctx);
    const float *dy = dyT.data<float>();
    bool ta = transA, tb = transB;
    if (needGrad[0]) {
      Tensor da(DType::F32, a.shape());
      if (!ta) // dA = alpha dY op(B)^T
        matmul(false, !tb, m, k, n, alpha, dy, b.data<float>(),
               da.data<float>());
      else // dA = alpha op(B) dY^T
        matmul(tb, true, k, m, n, alpha, b.data<float>(), dy, da.data<float>());
      dInputs[0] = std::move(da);
    }
    if (needGrad[1]) {
      Tensor db(DType::F32, b.shape());
      if (!tb) // dB = alpha op(A)^T dY
        matmul(!ta, false, k, n, m, alpha, a.data<float>(), dy,
               db.data<float>());
      else // dB = alpha dY^T op(A)
        matmul(true, ta, n, k, m, alpha, dy, a.data<float>(), db.data<float>());
      dInputs[1] = std::move(db);
    }
    if (inputs.size() > 2 && inputs[2] && needGrad[2]) {
      Tensor dc = reduceToShape(dyT.reshaped({m, n}), inputs[2]->shape());
      float *v = dc.data<float>();
      for (int64_t i = 0; i < dc.numElements(); ++i)
        v[i] *= beta;
      dInputs[2] = std::move(dc);
    }
    return llvm::Error::success();
  });
}

void train::registerGemmGrad(TrainRegistry &registry) {
  registry["Gemm"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    if (llvm::Error e = info.checkArity(2, 3))
      return e;
    if (info.attrs.has("activation"))
      return kernelError("a fused activation cannot be trained");
    llvm::Expected<GemmAttrs> g = parseGemmAttrs(info.attrs);
    if (!g)
      return g.takeError();
    return std::make_unique<GemmGradKernel>(env.ctx, g->transA, g->transB,
                                            g->alpha, g->beta);
  };
}
