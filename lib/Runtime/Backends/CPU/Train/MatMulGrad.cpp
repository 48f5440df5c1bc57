//===- MatMulGrad.cpp - MatMul forward and backward -----------------------===//
//
// [..., M, K] x [..., K, N] with numpy broadcasting of the leading (batch)
// dimensions: attention multiplies activations so. Forward and backward
// are one sgemm per batch index: dA = dY B^T and dB = A^T dY, each summed
// over the batch indices that share an operand matrix. With a 2-D B (a
// layer's weight) the leading dimensions of A fold into M: one sgemm; with
// `trans_b` (foldWeightTransposes: nn.Linear's x W^T) that B is read
// transposed, and its gradient is dY^T A. Batch indices that share no
// operand matrix run in parallel, one single-threaded sgemm each:
// attention's 96 heads of 197 x 64 ran 2-thread sgemms of a few
// microseconds, half of each spent starting the threads.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../Broadcast.h"

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::kernelError;

namespace {

/// Where each batch index of the output reads its A and B matrices.
struct BatchPlan {
  Shape outShape;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> aIndex, bIndex; // matrix index per output matrix
};

llvm::Expected<BatchPlan> planBatches(const Tensor &a, const Tensor &b,
                                      bool transB) {
  int64_t bRows = transB && b.rank() == 2 ? b.dim(1) : b.dim(b.rank() - 2);
  if (a.rank() < 2 || b.rank() < 2 || (transB && b.rank() != 2) ||
      a.shape().back() != bRows)
    return kernelError("MatMul of " + a.typeString() + " and " +
                       (transB ? "the transpose of " : "") + b.typeString() +
                       " cannot be trained");
  BatchPlan p;
  p.m = a.dim(a.rank() - 2);
  p.k = a.shape().back();
  p.n = transB ? b.dim(0) : b.shape().back();
  if (b.rank() == 2) {
    p.m = p.k ? a.numElements() / p.k : 0;
    p.aIndex = p.bIndex = {0};
    p.outShape = a.shape();
    p.outShape.back() = p.n;
    return p;
  }
  Shape ba(a.shape().begin(), a.shape().end() - 2);
  Shape bb(b.shape().begin(), b.shape().end() - 2);
  auto batch = cpu::broadcastShapes(ba, bb);
  if (!batch)
    return batch.takeError();
  int64_t count = numElements(*batch);
  p.aIndex.resize(count);
  p.bIndex.resize(count);
  // forEachRow walks rows of the batch shape with a stride per operand; a
  // scalar batch (rank 0) is one matrix each.
  Shape rows = batch->empty() ? Shape{1} : *batch;
  Shape sa = batch->empty() ? Shape{1} : ba,
        sb = batch->empty() ? Shape{1} : bb;
  cpu::forEachRow<2>(rows, {sa, sb},
                     [&](int64_t o, const std::array<int64_t, 2> &off,
                         int64_t len, const std::array<int64_t, 2> &step) {
                       for (int64_t j = 0; j < len; ++j) {
                         p.aIndex[o + j] = off[0] + j * step[0];
                         p.bIndex[o + j] = off[1] + j * step[1];
                       }
                     });
  p.outShape = *batch;
  p.outShape.push_back(p.m);
  p.outShape.push_back(p.n);
  return p;
}

/// fn(i) for i < count: in parallel, each call with single-threaded
/// sgemms (oneDNN's run on one thread inside a parallel region), when
/// `parallel`; else in order.
template <typename Fn> void forEachMatrix(size_t count, bool parallel, Fn fn) {
  if (!parallel || count < 2) {
    for (size_t i = 0; i < count; ++i)
      fn(i);
    return;
  }
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < count; ++i)
    fn(i);
}

/// Whether no two batch indices read the same matrix of an operand.
bool distinct(const std::vector<int64_t> &index) {
  std::vector<int64_t> sorted = index;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}

class MatMulGradKernel : public TrainKernel {
public:
  MatMulGradKernel(CPUContextPtr ctx, bool transB)
      : ctx(std::move(ctx)), transB(transB) {}
  bool differentiable(int i) const override { return i <= 1; }

  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    if (llvm::Error e = cpu::checkF32(inputs))
      return e;
    return cpu::guardDnnl([&]() -> llvm::Error {
      a = cpu::plainOf(*inputs[0], ctx);
      b = cpu::plainOf(*inputs[1], ctx);
      llvm::Expected<BatchPlan> planned = planBatches(a, b, transB);
      if (!planned)
        return planned.takeError();
      p = std::move(*planned);
      output = Tensor(DType::F32, p.outShape);
      const float *pa = a.data<float>(), *pb = b.data<float>();
      float *py = output.data<float>();
      forEachMatrix(p.aIndex.size(), true, [&](size_t i) {
        dnnl::sgemm('N', transB ? 'T' : 'N', p.m, p.n, p.k, 1.f,
                    pa + p.aIndex[i] * p.m * p.k, p.k,
                    pb + p.bIndex[i] * p.k * p.n, transB ? p.k : p.n, 0.f,
                    py + i * p.m * p.n, p.n);
      });
      return llvm::Error::success();
    });
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *>, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor dyT = cpu::plainOf(dOutput, ctx);
      const float *dy = dyT.data<float>();
      const float *pa = a.data<float>(), *pb = b.data<float>();
      // A matrix read by several batch indices (broadcast) sums their
      // gradients: the first write sets it, later ones add (beta 1).
      auto grad = [&](const Tensor &x, const std::vector<int64_t> &index,
                      auto product) {
        Tensor d(DType::F32, x.shape());
        if (distinct(index)) {
          forEachMatrix(index.size(), true,
                        [&](size_t i) { product(i, d.data<float>(), 0.f); });
          return d;
        }
        std::vector<bool> seen(index.size() + x.numElements(), false);
        for (size_t i = 0; i < index.size(); ++i) {
          product(i, d.data<float>(), seen[index[i]] ? 1.f : 0.f);
          seen[index[i]] = true;
        }
        return d;
      };
      if (needGrad[0]) // dA[ia] (+)= dY[i] B[ib]^T
        dInputs[0] = grad(a, p.aIndex, [&](size_t i, float *da, float beta) {
          dnnl::sgemm('N', transB ? 'N' : 'T', p.m, p.k, p.n, 1.f,
                      dy + i * p.m * p.n, p.n, pb + p.bIndex[i] * p.k * p.n,
                      transB ? p.k : p.n, beta, da + p.aIndex[i] * p.m * p.k,
                      p.k);
        });
      if (needGrad[1] && transB) // dW = (A^T dY)^T = dY^T A, W = B^T
        dInputs[1] = grad(b, p.bIndex, [&](size_t, float *dw, float) {
          dnnl::sgemm('T', 'N', p.n, p.k, p.m, 1.f, dy, p.n, pa, p.k, 0.f, dw,
                      p.k);
        });
      else if (needGrad[1]) // dB[ib] (+)= A[ia]^T dY[i]
        dInputs[1] = grad(b, p.bIndex, [&](size_t i, float *db, float beta) {
          dnnl::sgemm('T', 'N', p.k, p.n, p.m, 1.f,
                      pa + p.aIndex[i] * p.m * p.k, p.k, dy + i * p.m * p.n,
                      p.n, beta, db + p.bIndex[i] * p.k * p.n, p.n);
        });
      return llvm::Error::success();
    });
  }

private:
  CPUContextPtr ctx;
  bool transB;
  Tensor a, b;
  BatchPlan p;
};

} // namespace

void train::registerMatMulGrad(TrainRegistry &registry) {
  registry["MatMul"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    if (llvm::Error e = info.checkArity(2, 2))
      return e;
    auto transB = info.attrs.getInt("trans_b", 0);
    if (!transB)
      return transB.takeError();
    return std::make_unique<MatMulGradKernel>(env.ctx, *transB != 0);
  };
}
