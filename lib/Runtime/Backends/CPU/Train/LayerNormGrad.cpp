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
            const float *xr = xv + r * n, *gr = gv + r * n;
            double sum = 0, var = 0;
            for (int64_t j = 0; j < n; ++j)
              sum += xr[j];
            float mean = float(sum / n);
            for (int64_t j = 0; j < n; ++j)
              var += (xr[j] - mean) * (xr[j] - mean);
            float rstd = 1.f / std::sqrt(float(var / n) + epsilon);
            double meanGs = 0, meanGsXh = 0;
            for (int64_t j = 0; j < n; ++j) {
              float xh = (xr[j] - mean) * rstd, gs = gr[j] * sv[j];
              meanGs += gs;
              meanGsXh += gs * xh;
              acc[j] += gr[j] * xh;
              acc[n + j] += gr[j];
            }
            float mg = float(meanGs / n), mgx = float(meanGsXh / n);
            float *out = dx.data<float>() + r * n;
            for (int64_t j = 0; j < n; ++j)
              out[j] =
                  rstd * (gr[j] * sv[j] - mg - (xr[j] - mean) * rstd * mgx);
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
