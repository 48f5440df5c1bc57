//===- UnaryGrad.cpp - Selu, HardSigmoid, Softsign, Erf, Floor, Ceil ------===//
//
// The element-wise ops oneDNN has no algorithm for: the inference kernel is
// the forward, and the backward multiplies the output gradient by the
// derivative at the input (0 for Floor and Ceil, as PyTorch has it).
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

class UnaryGradKernel : public InferenceForward {
public:
  using Derivative = std::function<float(float)>;
  UnaryGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                  Derivative derivative)
      : InferenceForward(std::move(kernel), std::move(ctx)),
        derivative(std::move(derivative)) {}

  static llvm::Expected<std::unique_ptr<TrainKernel>>
  create(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
         const OpInfo &info) {
    llvm::StringRef type = info.op.type();
    auto attr = [&](const char *name, float def) {
      return info.attrs.getFloat(name, def);
    };
    Derivative d;
    if (type == "Selu") {
      auto alpha = attr("alpha", 1.67326319217681884f);
      auto gamma = attr("gamma", 1.05070102214813232f);
      if (!alpha || !gamma)
        return llvm::joinErrors(alpha.takeError(), gamma.takeError());
      d = [a = *alpha, g = *gamma](float x) {
        return x > 0 ? g : a * g * std::exp(x);
      };
    } else if (type == "HardSigmoid") {
      auto alpha = attr("alpha", 0.2f), beta = attr("beta", 0.5f);
      if (!alpha || !beta)
        return llvm::joinErrors(alpha.takeError(), beta.takeError());
      d = [a = *alpha, b = *beta](float x) {
        float v = a * x + b;
        return v > 0 && v < 1 ? a : 0.f;
      };
    } else if (type == "Softsign") {
      d = [](float x) { return 1 / ((1 + std::abs(x)) * (1 + std::abs(x))); };
    } else if (type == "Erf") {
      d = [](float x) { return 1.12837916709551257f * std::exp(-x * x); };
    } else {
      d = [](float) { return 0.f; };
    }
    return std::make_unique<UnaryGradKernel>(std::move(kernel), std::move(ctx),
                                             std::move(d));
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor x = cpu::plainOf(*inputs[0], ctx), g = cpu::plainOf(dOutput, ctx);
      Tensor dx(DType::F32, x.shape());
      const float *xv = x.data<float>(), *gv = g.data<float>();
      float *out = dx.data<float>();
      int64_t n = x.numElements();
#pragma omp parallel for schedule(static) if (n > 32768)
      for (int64_t i = 0; i < n; ++i)
        out[i] = gv[i] * derivative(xv[i]);
      dInputs[0] = std::move(dx);
      return llvm::Error::success();
    });
  }

private:
  Derivative derivative;
};

} // namespace

void train::registerUnaryGrad(TrainRegistry &registry) {
  for (const char *type :
       {"Selu", "HardSigmoid", "Softsign", "Erf", "Floor", "Ceil"})
    registry[type] = inferenceForward<UnaryGradKernel>();
}
