//===- LayerNormGrad.cpp - LayerNormalization backward --------------------===//
//
// The inference kernel is the forward. Over each row of the input seen as
// [rows, n] (n the normalised size), with xh = (x - mean) * rstd:
//   dscale = sum over rows of g * xh,  dbias = sum over rows of g,
//   dx = rstd * (g*scale - mean(g*scale) - xh * mean(g*scale * xh)).
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../CPUKernels.h"
#include "../ParallelSums.h"

#include <algorithm>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

/// One row of n: adds g * xh to ds and g to db, writes dx. Sums in double
/// (rows of thousands), vectorised: `omp simd` lets the compiler reorder
/// them, which it may not do for plain loops.
HETERPS_VECTOR_CLONES void layerNormGradRow(const float *x, const float *g,
                                            const float *scale, int64_t n,
                                            float epsilon, float *ds, float *db,
                                            float *dx) {
  double sum = 0, var = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j)
    sum += x[j];
  float mean = float(sum / n);
#pragma omp simd reduction(+ : var)
  for (int64_t j = 0; j < n; ++j)
    var += (x[j] - mean) * (x[j] - mean);
  float rstd = 1.f / std::sqrt(float(var / n) + epsilon);
  double meanGs = 0, meanGsXh = 0;
#pragma omp simd reduction(+ : meanGs, meanGsXh)
  for (int64_t j = 0; j < n; ++j) {
    float xh = (x[j] - mean) * rstd, gs = g[j] * scale[j];
    meanGs += gs;
    meanGsXh += gs * xh;
    ds[j] += g[j] * xh;
    db[j] += g[j];
  }
  float mg = float(meanGs / n), mgx = float(meanGsXh / n);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    dx[j] = rstd * (g[j] * scale[j] - mg - (x[j] - mean) * rstd * mgx);
}

class LayerNormGradKernel : public InferenceForward {
public:
  LayerNormGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                      int64_t axis, float epsilon)
      : InferenceForward(std::move(kernel), std::move(ctx)), axis(axis),
        epsilon(epsilon) {}

  static llvm::Expected<std::unique_ptr<TrainKernel>>
  create(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
         const OpInfo &info) {
    auto params = cpu::readLayerNormParams(info.attrs);
    if (!params)
      return params.takeError();
    return std::make_unique<LayerNormGradKernel>(
        std::move(kernel), std::move(ctx), params->axis, params->epsilon);
  }

  bool differentiable(int) const override { return true; }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor x = cpu::plainOf(*inputs[0], ctx);
      Tensor scale = cpu::plainOf(*inputs[1], ctx);
      Tensor g = cpu::plainOf(dOutput, ctx);
      auto a = normalizeAxis(axis, x.rank());
      if (!a)
        return a.takeError();
      int64_t n = 1;
      for (int64_t i = *a; i < x.rank(); ++i)
        n *= x.dim(i);
      int64_t rows = x.numElements() / std::max<int64_t>(n, 1);
      const float *xv = x.data<float>(), *sv = scale.data<float>(),
                  *gv = g.data<float>();
      Tensor dx(DType::F32, x.shape()), ds(DType::F32, scale.shape()),
          db(DType::F32, scale.shape());
      // Rows in parallel, the scale and bias gradients summed as [ds, db].
      int threads = cpu::threadsFor(rows * n);
      std::vector<float> sums = cpu::sumRowsInParallel(
          rows, 2 * n, threads, [&](int64_t r, float *acc) {
            layerNormGradRow(xv + r * n, gv + r * n, sv, n, epsilon, acc,
                             acc + n, dx.data<float>() + r * n);
          });
      std::copy_n(sums.begin(), n, ds.data<float>());
      std::copy_n(sums.begin() + n, n, db.data<float>());
      Tensor *results[] = {&dx, &ds, &db};
      for (size_t i = 0; i < dInputs.size() && i < 3; ++i)
        if (needGrad[i])
          dInputs[i] = std::move(*results[i]);
      return llvm::Error::success();
    });
  }

private:
  int64_t axis;
  float epsilon;
};

} // namespace

void train::registerLayerNormGrad(TrainRegistry &registry) {
  registry["LayerNormalization"] = inferenceForward<LayerNormGradKernel>();
}
