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
#include "LtMatmul.h"

#include "heterps/Runtime/OpGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

class GemmKernel : public CUDAKernel {
public:
  GemmKernel(CUDAContextPtr ctx, GemmAttrs attrs)
      : CUDAKernel(ctx), lt(ctx), alpha(attrs.alpha), beta(attrs.beta),
        transA(attrs.transA), transB(attrs.transB) {}

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
    llvm::Expected<GemmAttrs> g = parseGemmAttrs(info.attrs);
    if (!g)
      return g.takeError();
    return std::make_unique<GemmKernel>(ctx, *g);
  });
  registry.add("MatMul", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 2))
      return e;
    return std::make_unique<MatMulKernel>(ctx);
  });
}
