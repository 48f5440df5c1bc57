//===- SoftmaxGrad.cpp - Softmax and LogSoftmax backward ------------------===//
//
// The inference kernel is the forward; the backward works on the output y
// along the softmax axis (the input seen as [outer, n, inner], or as the
// matrix [outer, n] split at the axis with coerce_2d):
//   Softmax:    dx = y * (g - sum(g * y))
//   LogSoftmax: dx = g - exp(y) * sum(g)
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../CPUKernels.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

class SoftmaxGradKernel : public InferenceForward {
public:
  SoftmaxGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx, bool log,
                    int64_t axis, bool coerce2d)
      : InferenceForward(std::move(kernel), std::move(ctx)), log(log),
        axis(axis), coerce2d(coerce2d) {}

  static llvm::Expected<std::unique_ptr<TrainKernel>>
  create(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
         const OpInfo &info) {
    auto params = cpu::readSoftmaxParams(info.attrs);
    if (!params)
      return params.takeError();
    return std::make_unique<SoftmaxGradKernel>(
        std::move(kernel), std::move(ctx), info.op.type() == "LogSoftmax",
        params->axis, params->coerce2d);
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *>, const Tensor &output,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor y = cpu::plainOf(output, ctx), g = cpu::plainOf(dOutput, ctx);
      auto a = normalizeAxis(axis, std::max<int64_t>(y.rank(), 1));
      if (!a)
        return a.takeError();
      int64_t outer = 1, n = y.rank() ? y.dim(*a) : 1, inner = 1;
      for (int64_t i = 0; i < *a; ++i)
        outer *= y.dim(i);
      for (int64_t i = *a + 1; i < y.rank(); ++i)
        (coerce2d ? n : inner) *= y.dim(i);
      Tensor dx(DType::F32, y.shape());
      const float *yv = y.data<float>(), *gv = g.data<float>();
      float *out = dx.data<float>();
      // Attention's scores (Swin's, which keep their Softmax in training)
      // are 10^5 rows a layer at batch 8: split across the kernel's threads.
#pragma omp parallel for collapse(2) schedule(static) if (outer * inner > 64)
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < inner; ++k) {
          auto at = [&](int64_t i) { return (o * n + i) * inner + k; };
          double sum = 0;
          for (int64_t i = 0; i < n; ++i)
            sum += log ? gv[at(i)] : gv[at(i)] * yv[at(i)];
          for (int64_t i = 0; i < n; ++i)
            out[at(i)] = log ? gv[at(i)] - std::exp(yv[at(i)]) * float(sum)
                             : yv[at(i)] * (gv[at(i)] - float(sum));
        }
      dInputs[0] = std::move(dx);
      return llvm::Error::success();
    });
  }

private:
  bool log;
  int64_t axis;
  bool coerce2d;
};

} // namespace

void train::registerSoftmaxGrad(TrainRegistry &registry) {
  for (const char *type : {"Softmax", "LogSoftmax"})
    registry[type] = inferenceForward<SoftmaxGradKernel>();
}
