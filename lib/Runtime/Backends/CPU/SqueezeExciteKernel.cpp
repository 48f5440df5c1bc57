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
// With the block's projection (fuseProjections: inputs 5 to 7, the 1x1
// Conv's weight, bias and summed input, and `proj_activation*`), the
// product need not be written: the projection of x * scale is the
// projection of x by weights scaled per input channel, packed per item
// for our own 1x1 kernel (PointwiseDepthwise.h). That saves a write and a
// read of the wide tensor; autotuning times it against the gate and the
// projection's Conv kernel apart.
//
//===----------------------------------------------------------------------===//

#include "BinaryMath.h"
#include "CPUKernels.h"
#include "ConvKernels.h"
#include "PointwiseDepthwise.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <omp.h>
#include <optional>
#include <unistd.h>

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
    Tensor x = *inputs[0], scale;
    std::optional<ChannelBroadcast> form;
    if (llvm::Error e = scaleOf(inputs, x, scale, form))
      return e;
    outputs[0] = channelBroadcast(BinaryOp::Mul, *form, x, scale, ctx);
    return llvm::Error::success();
  }

  /// The gate's scale per (item, channel) of `x` (*inputs[0]; replaced by
  /// its plain form where the loops cannot read its layout), and the form
  /// of the product.
  llvm::Error scaleOf(llvm::ArrayRef<const Tensor *> inputs, Tensor &x,
                      Tensor &scale, std::optional<ChannelBroadcast> &form) {
    const Tensor *b1 = inputs[2], *b2 = inputs.size() > 4 ? inputs[4] : nullptr;
    Tensor w1 = plainOf(*inputs[1], ctx), w2 = plainOf(*inputs[3], ctx);
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
    scale = Tensor(DType::F32, perItem);
    form = channelBroadcastOf(x, scale);
    if (!form) { // a layout the loops do not read: plain then
      x = plainOf(x, ctx);
      form = channelBroadcastOf(x, scale);
    }
    std::vector<float> means = channelMeans(*form, x);
    std::vector<float> hidden(items * reduced);
    if (llvm::Error e =
            denseLayer(means.data(), w1, b1, items, act, hidden.data()))
      return e;
    return denseLayer(hidden.data(), w2, b2, items, gate, scale.data<float>());
  }

private:
  CPUContextPtr ctx;
  Activation act, gate;
};

/// SqueezeExcite with the block's projection (inputs 5 to 7).
class GatedProjectionKernel : public Kernel {
public:
  GatedProjectionKernel(CPUContextPtr ctx,
                        std::unique_ptr<SqueezeExciteKernel> gate,
                        std::unique_ptr<Kernel> projection,
                        std::optional<ConvEpilogue> epilogue)
      : ctx(std::move(ctx)), gate(std::move(gate)),
        projection(std::move(projection)), epilogue(epilogue) {}
  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    return guardDnnl([&]() -> llvm::Error {
      const Tensor &x = *inputs[0], &w = *inputs[5];
      if (x.rank() != 4 || w.rank() != 4 || w.dim(1) != x.dim(1) ||
          w.dim(2) != 1 || w.dim(3) != 1)
        return kernelError("SqueezeExcite: projection " + w.typeString() +
                           " does not fit input " + x.typeString());
      std::string key = shapeKey(inputs.take_front(1));
      auto choice = own.find(key);
      if (choice == own.end())
        choice = own.emplace(key, ownIsFaster(inputs)).first;
      if (!choice->second)
        return runApart(inputs, outputs[0]);
      if (inputs[7])
        if (llvm::Error e = checkSummedInput(
                *inputs[7], {x.dim(0), w.dim(0), x.dim(2), x.dim(3)}))
          return e;
      return runOwn(inputs, outputs[0]);
    });
  }

private:
  /// Times our kernel against the two apart once per input shape; each
  /// run gets a copy of the residual, which the projection's Conv kernel
  /// may sum into in place.
  bool ownIsFaster(llvm::ArrayRef<const Tensor *> inputs) {
    auto accepts = [&](llvm::StringRef name) {
      return !ctx->acceptConvCandidate || ctx->acceptConvCandidate(name);
    };
    if (!epilogue || !pointwiseRuns() || !ctx->autotune ||
        !accepts("own gated projection"))
      return false;
    if (!accepts("apart"))
      return true;
    // Scaling the weights per item costs their size, the product it saves
    // the image's: not tried on images of fewer pixels than the projection
    // has outputs (MobileNetV3-L's 7x7 blocks at batch 16 ran 3% slower
    // with it, though faster timed alone); nor where the product fits in
    // a core's L2 cache, where writing and reading it back costs little
    // (at batch 1 the EfficientNets ran level to 2.5% slower with it).
    const Tensor &x = *inputs[0];
    static const int64_t l2 = [] {
      long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
      return bytes > 0 ? int64_t(bytes) : int64_t(1) << 20;
    }();
    if (x.dim(2) * x.dim(3) < inputs[5]->dim(0) ||
        x.numElements() * int64_t(sizeof(float)) <= l2)
      return false;
    std::vector<const Tensor *> args(inputs.begin(), inputs.end());
    Tensor residual, out;
    auto copyResidual = [&] {
      if (inputs[7]) {
        residual = inputs[7]->clone();
        args[7] = &residual;
      }
    };
    auto apart = [&] {
      copyResidual();
      llvm::consumeError(runApart(args, out));
    };
    auto fused = [&] {
      copyResidual();
      llvm::consumeError(runOwn(args, out));
    };
    apart();
    double apartSeconds = bestSeconds(apart);
    return bestSeconds(fused) < apartSeconds;
  }

  llvm::Error runApart(llvm::ArrayRef<const Tensor *> inputs, Tensor &out) {
    Tensor gated;
    if (llvm::Error e = gate->run(inputs.take_front(5),
                                  llvm::MutableArrayRef<Tensor>(gated)))
      return e;
    const Tensor *projInputs[] = {&gated, inputs[5], inputs[6], inputs[7]};
    return projection->run(
        llvm::ArrayRef<const Tensor *>(projInputs, inputs[7] ? 4 : 3),
        llvm::MutableArrayRef<Tensor>(out));
  }

  llvm::Error runOwn(llvm::ArrayRef<const Tensor *> inputs, Tensor &out) {
    Tensor x = *inputs[0], scale;
    std::optional<ChannelBroadcast> form;
    if (llvm::Error e = gate->scaleOf(inputs, x, scale, form))
      return e;
    const Tensor &w = *inputs[5];
    int64_t items = x.dim(0), c = x.dim(1), m = w.dim(0);
    int64_t positions = x.dim(2) * x.dim(3);
    auto blocked = [](const Shape &s) {
      return memory::desc(toDims(s), memory::data_type::f32, Tag::nChw16c);
    };
    Shape outShape{items, m, x.dim(2), x.dim(3)};
    Tensor src = reorderTo(*inputs[0], blocked(x.shape()), ctx);
    Tensor addend =
        inputs[7] ? reorderTo(*inputs[7], blocked(outShape), ctx) : Tensor();
    out = allocate(blocked(outShape), outShape, ctx);
    if (weights.isNull()) {
      weights = plainOf(w, ctx);
      Tensor bias = inputs[6] ? plainOf(*inputs[6], ctx) : Tensor();
      packedBias = packPointwiseBias(inputs[6] ? &bias : nullptr, m);
    }
    int64_t cBlocks = (c + 15) / 16, mBlocks = (m + 15) / 16;
    // Items on their own threads where there are enough of them (each
    // packs its weights); else each item over all threads.
    bool byItem = items >= omp_get_max_threads();
#pragma omp parallel for schedule(static) if (byItem)
    for (int64_t n = 0; n < items; ++n) {
      thread_local std::vector<float> packed;
      packed.resize(mBlocks * cBlocks * 16 * 16);
      packScaledPointwiseWeights(weights.data<float>(),
                                 scale.data<float>() + n * c, m, c,
                                 packed.data());
      pointwiseConv(src.data<float>() + n * cBlocks * 16 * positions, c,
                    packed.data(), packedBias.data<float>(), m, positions,
                    inputs[7]
                        ? addend.data<float>() + n * mBlocks * 16 * positions
                        : nullptr,
                    *epilogue, out.data<float>() + n * mBlocks * 16 * positions,
                    /*parallel=*/!byItem);
    }
    return llvm::Error::success();
  }

  CPUContextPtr ctx;
  std::unique_ptr<SqueezeExciteKernel> gate;
  std::unique_ptr<Kernel> projection;
  std::optional<ConvEpilogue> epilogue;
  /// Per input shape: whether our kernel runs.
  std::map<std::string, bool> own;
  /// The projection's plain weights and packed bias.
  Tensor weights, packedBias;
};

} // namespace

void cpu::registerSqueezeExciteKernel(KernelRegistry &registry,
                                      CPUContextPtr ctx) {
  registry.add(
      "SqueezeExcite",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(5, 8))
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
        auto se = std::make_unique<SqueezeExciteKernel>(ctx, *act, *gate);
        if (!info.hasInput(5))
          return std::move(se);
        const Tensor *w = info.constants[5];
        if (!w || (info.hasInput(6) && !info.constants[6]))
          return kernelError("a SqueezeExcite with a fused projection needs "
                             "its constant weight and bias");
        // The projection: 1x1, stride 1, unpadded (fuseProjections).
        ConvParams proj, activationOnly;
        proj.sum = info.hasInput(7);
        if (proj.sum)
          proj.postOps.append_sum(1.f);
        for (ConvParams *p : {&proj, &activationOnly})
          if (llvm::Error e =
                  appendConvActivation(info.attrs, *p, "proj_activation"))
            return std::move(e);
        return std::make_unique<GatedProjectionKernel>(
            ctx, std::move(se),
            createConvKernel(ctx, std::move(proj), /*constantWeights=*/true),
            convEpilogueOf(activationOnly.postOps));
      });
}
