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

#include <cmath>
#include <omp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

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
      // Rows in parallel; each thread sums its rows' scale and bias
      // gradients apart, then the sums are added in thread order.
      int threads = rows * n > 32768 ? omp_get_max_threads() : 1;
      std::vector<float> sums(2 * n * threads, 0.f);
#pragma omp parallel num_threads(threads)
      {
        int t = omp_get_thread_num();
        float *dsT = sums.data() + 2 * n * t, *dbT = dsT + n;
        std::vector<float> xh(n), gs(n);
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          const float *xr = xv + r * n, *gr = gv + r * n;
          double mean = 0, var = 0;
          for (int64_t j = 0; j < n; ++j)
            mean += xr[j];
          mean /= n;
          for (int64_t j = 0; j < n; ++j)
            var += (xr[j] - mean) * (xr[j] - mean);
          float rstd = 1.f / std::sqrt(float(var / n) + epsilon);
          float m = float(mean);
          double meanGs = 0, meanGsXh = 0;
          for (int64_t j = 0; j < n; ++j) {
            xh[j] = (xr[j] - m) * rstd;
            gs[j] = gr[j] * sv[j];
            meanGs += gs[j];
            meanGsXh += gs[j] * xh[j];
            dsT[j] += gr[j] * xh[j];
            dbT[j] += gr[j];
          }
          float a = float(meanGs / n), b = float(meanGsXh / n);
          float *out = dx.data<float>() + r * n;
          for (int64_t j = 0; j < n; ++j)
            out[j] = rstd * (gs[j] - a - xh[j] * b);
        }
      }
      float *dsv = ds.data<float>(), *dbv = db.data<float>();
      std::fill_n(dsv, n, 0.f);
      std::fill_n(dbv, n, 0.f);
      for (int t = 0; t < threads; ++t)
        for (int64_t j = 0; j < n; ++j) {
          dsv[j] += sums[2 * n * t + j];
          dbv[j] += sums[2 * n * t + n + j];
        }
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
