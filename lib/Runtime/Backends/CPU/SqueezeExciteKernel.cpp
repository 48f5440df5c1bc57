//===- SqueezeExciteKernel.cpp - squeeze-excitation as one op -------------===//
//
// SqueezeExcite(x, w1, b1, w2, b2) = x * gate(w2 . act(w1 . mean(x) + b1)
// + b2), per (item, channel): the block that MobileNetV3, EfficientNet and
// RegNet-Y repeat after their depthwise convolutions, which fuseSqueeze-
// Excites forms from GlobalAveragePool, two 1x1 Convs, a gate and a Mul.
// At batch 1 those five ops and the reorders between their layouts cost
// more than their arithmetic; here it is a pass over x for the means, two
// small sgemms and a pass for the product, all in x's layout.
//
// Attributes: `activation` ("", "Relu" or "Swish", the first Conv's),
// `gate` ("Sigmoid" or "HardSigmoid") with `gate_alpha` and `gate_beta`.
//
//===----------------------------------------------------------------------===//

#include "BinaryMath.h"
#include "CPUKernels.h"

#include <algorithm>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// The element-wise functions the block applies.
struct Activation {
  enum Kind { None, Relu, Swish, Sigmoid, HardSigmoid } kind = None;
  float alpha = 0.f, beta = 0.f;

  float operator()(float v) const {
    switch (kind) {
    case None:
      return v;
    case Relu:
      return v > 0.f ? v : 0.f;
    case Swish:
      return v / (1.f + std::exp(-v));
    case Sigmoid:
      return 1.f / (1.f + std::exp(-v));
    case HardSigmoid:
      return std::clamp(alpha * v + beta, 0.f, 1.f);
    }
    return v;
  }
};

llvm::Expected<Activation> activationNamed(llvm::StringRef name,
                                           const OpAttributes &attrs,
                                           llvm::StringRef prefix) {
  Activation a;
  if (name.empty())
    return a;
  if (name == "Relu")
    a.kind = Activation::Relu;
  else if (name == "Swish")
    a.kind = Activation::Swish;
  else if (name == "Sigmoid")
    a.kind = Activation::Sigmoid;
  else if (name == "HardSigmoid")
    a.kind = Activation::HardSigmoid;
  else
    return kernelError("SqueezeExcite: unsupported " + prefix + " '" + name +
                       "'");
  auto alpha = attrs.getFloat((prefix + "_alpha").str(), 0.2f);
  auto beta = attrs.getFloat((prefix + "_beta").str(), 0.5f);
  if (!alpha)
    return alpha.takeError();
  if (!beta)
    return beta.takeError();
  a.alpha = *alpha;
  a.beta = *beta;
  return a;
}

/// y[i, j] = f(sum_k a[i, k] * w[j, k] + bias[j]): a [m, k], w [n, k].
llvm::Error denseLayer(const float *a, const Tensor &w, const Tensor *bias,
                       int64_t m, const Activation &f, float *y) {
  int64_t n = w.dim(0), k = w.dim(1);
  dnnl_status_t status =
      dnnl_sgemm('N', 'T', m, n, k, 1.f, a, k, w.data<float>(), k, 0.f, y, n);
  if (status != dnnl_success)
    return kernelError("SqueezeExcite: dnnl_sgemm failed with status " +
                       llvm::Twine(static_cast<int>(status)));
  const float *b = bias ? bias->data<float>() : nullptr;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      y[i * n + j] = f(y[i * n + j] + (b ? b[j] : 0.f));
  return llvm::Error::success();
}

class SqueezeExciteKernel : public Kernel {
public:
  SqueezeExciteKernel(CPUContextPtr ctx, Activation act, Activation gate)
      : ctx(std::move(ctx)), act(act), gate(gate) {}

  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor *b1 = inputs[2], *b2 = inputs.size() > 4 ? inputs[4] : nullptr;
    Tensor w1 = plainOf(*inputs[1], ctx), w2 = plainOf(*inputs[3], ctx);
    Tensor x = *inputs[0];
    int64_t reduced = w1.dim(0), channels = w2.dim(0);
    if (x.rank() < 3 || x.dim(1) != channels || w1.rank() < 2 ||
        w1.dim(1) != channels || w2.rank() < 2 || w2.dim(1) != reduced ||
        w1.numElements() != reduced * channels ||
        w2.numElements() != channels * reduced ||
        (b1 && b1->numElements() != reduced) ||
        (b2 && b2->numElements() != channels))
      return kernelError("SqueezeExcite: input " + x.typeString() +
                         " does not fit weights " + w1.typeString() + " and " +
                         w2.typeString());
    // Weights as [out, in]: a 1x1 Conv's [out, in, 1, 1] reshaped.
    w1 = w1.reshaped({reduced, channels});
    w2 = w2.reshaped({channels, reduced});
    int64_t items = x.dim(0);
    Shape perItem(x.rank(), 1);
    perItem[0] = items;
    perItem[1] = channels;
    Tensor scale(DType::F32, perItem);
    std::optional<ChannelBroadcast> form = channelBroadcastOf(x, scale);
    if (!form) { // a layout the loops do not read: plain then
      x = plainOf(x, ctx);
      form = channelBroadcastOf(x, scale);
    }
    std::vector<float> means = channelMeans(*form, x);
    std::vector<float> hidden(items * reduced);
    if (llvm::Error e =
            denseLayer(means.data(), w1, b1, items, act, hidden.data()))
      return e;
    if (llvm::Error e =
            denseLayer(hidden.data(), w2, b2, items, gate, scale.data<float>()))
      return e;
    outputs[0] = channelBroadcast(BinaryOp::Mul, *form, x, scale, ctx);
    return llvm::Error::success();
  }

private:
  CPUContextPtr ctx;
  Activation act, gate;
};

} // namespace

void cpu::registerSqueezeExciteKernel(KernelRegistry &registry,
                                      CPUContextPtr ctx) {
  registry.add(
      "SqueezeExcite",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(5, 5))
          return e;
        auto actName = info.attrs.getString("activation", std::string());
        if (!actName)
          return actName.takeError();
        auto gateName = info.attrs.getString("gate");
        if (!gateName)
          return gateName.takeError();
        auto act = activationNamed(*actName, info.attrs, "activation");
        if (!act)
          return act.takeError();
        auto gate = activationNamed(*gateName, info.attrs, "gate");
        if (!gate)
          return gate.takeError();
        return std::make_unique<SqueezeExciteKernel>(ctx, *act, *gate);
      });
}
