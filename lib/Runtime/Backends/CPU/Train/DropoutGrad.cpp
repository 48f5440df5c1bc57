//===- DropoutGrad.cpp - dropout in training mode -------------------------===//
//
// Zeroes each element with probability `ratio` and scales the rest by
// 1 / (1 - ratio); the backward applies the same mask. Element i of the
// n-th call draws splitmix64(key, n, i), key from the run's seed and the op's
// index: a counter-based generator, so threads fill the mask in parallel
// and a run is reproducible whatever the thread count. A ratio of 0 (the
// transformers' default: ViT-B/16 has 37 such Dropouts) passes the input
// and the gradient on as they are.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"
#include "heterps/Runtime/Hash.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

class DropoutGradKernel : public TrainKernel {
public:
  DropoutGradKernel(CPUContextPtr ctx, float ratio, uint64_t seed)
      : ctx(std::move(ctx)), ratio(ratio), key(mix64(seed)) {}
  uint64_t randomDraws() const override { return calls; }
  void setRandomDraws(uint64_t n) override { calls = n; }
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    if (llvm::Error e = cpu::checkF32(inputs))
      return e;
    if (ratio == 0.f) {
      ++calls;
      return cpu::guardDnnl([&]() -> llvm::Error {
        output = cpu::plainOf(*inputs[0], ctx);
        return llvm::Error::success();
      });
    }
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor x = cpu::plainOf(*inputs[0], ctx);
      int64_t n = x.numElements();
      mask = Tensor(DType::F32, x.shape());
      output = Tensor(DType::F32, x.shape());
      float keep = 1.f / (1.f - ratio), *m = mask.data<float>(),
            *y = output.data<float>();
      const float *xv = x.data<float>();
      // 24 random bits per element, compared with the drop threshold.
      auto threshold = static_cast<uint32_t>(ratio * (1u << 24));
      uint64_t stream = mix64(key + ++calls * kGolden64);
#pragma omp parallel for schedule(static) if (n > (1 << 15))
      for (int64_t i = 0; i < n; ++i) {
        auto bits = static_cast<uint32_t>(mix64(stream + i) >> 40);
        m[i] = bits < threshold ? 0.f : keep;
        y[i] = xv[i] * m[i];
      }
      return llvm::Error::success();
    });
  }
  llvm::Error backward(llvm::ArrayRef<const Tensor *>, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    if (ratio == 0.f)
      return cpu::guardDnnl([&]() -> llvm::Error {
        dInputs[0] = cpu::plainOf(dOutput, ctx);
        return llvm::Error::success();
      });
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor dy = cpu::plainOf(dOutput, ctx);
      Tensor dx(DType::F32, dy.shape());
      const float *g = dy.data<float>(), *m = mask.data<float>();
      float *d = dx.data<float>();
      int64_t n = dy.numElements();
#pragma omp parallel for simd schedule(static) if (n > (1 << 15))
      for (int64_t i = 0; i < n; ++i)
        d[i] = g[i] * m[i];
      dInputs[0] = std::move(dx);
      return llvm::Error::success();
    });
  }

private:
  CPUContextPtr ctx;
  float ratio;
  uint64_t key;
  /// Forward calls so far: each draws a fresh mask.
  uint64_t calls = 0;
  /// 0 where dropped, 1 / (1 - ratio) where kept.
  Tensor mask;
};

} // namespace

void train::registerDropoutGrad(TrainRegistry &registry) {
  registry["Dropout"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto ratio = info.attrs.getFloat("ratio", 0.5f);
    if (!ratio)
      return ratio.takeError();
    if (*ratio < 0.f || *ratio >= 1.f)
      return cpu::kernelError("Dropout ratio " +
                              llvm::Twine(std::to_string(*ratio)) +
                              " is outside [0, 1)");
    uint64_t seed = env.seed * kGolden64 + env.opIndex + 1;
    return std::make_unique<DropoutGradKernel>(env.ctx, *ratio, seed);
  };
}
