//===- ConvTransposeGrad.cpp - ConvTranspose backward on oneDNN -----------===//
//
// The inference kernel is the forward; the backward runs oneDNN's
// deconvolution backward-data and backward-weights primitives on plain
// layouts, the weight gradient landing in ONNX's weight layout
// (ConvTransposeGeometry.h).
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../ConvTransposeGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::memoryOf;

namespace {

/// The backward primitives of one input shape, made on its first backward.
struct ConvTransposeGradEntry {
  cpu::ConvTransposeGeometry geometry;
  dnnl::deconvolution_backward_data data;
  dnnl::deconvolution_backward_weights weights;
};

class ConvTransposeGradKernel : public InferenceForward {
public:
  ConvTransposeGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                          ConvTransposeAttrs attrs)
      : InferenceForward(std::move(kernel), ctx), cache(std::move(ctx)),
        attrs(std::move(attrs)) {}

  static llvm::Expected<std::unique_ptr<TrainKernel>>
  create(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
         const OpInfo &info) {
    ConvTransposeAttrs attrs;
    if (llvm::Error e = readConvTransposeAttrs(info.attrs, attrs))
      return e;
    return std::make_unique<ConvTransposeGradKernel>(
        std::move(kernel), std::move(ctx), std::move(attrs));
  }

  bool differentiable(int) const override { return true; }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor x = cpu::plainOf(*inputs[0], ctx);
      Tensor w = cpu::plainOf(*inputs[1], ctx);
      const Tensor *b = inputs.size() > 2 ? inputs[2] : nullptr;
      auto entry =
          cache.get(cpu::shapeKey(inputs), [&] { return make(x, w, b); });
      if (!entry)
        return entry.takeError();
      const cpu::ConvTransposeGeometry &g = (*entry)->geometry;
      Tensor dy = cpu::plainOf(dOutput, ctx);
      if (needGrad[0]) {
        Tensor dx(DType::F32, x.shape());
        (*entry)->data.execute(
            ctx->stream,
            {{DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
             {DNNL_ARG_WEIGHTS, memory(g.weights, ctx->engine, w.rawData())},
             {DNNL_ARG_DIFF_SRC, memoryOf(dx, *ctx)}});
        dInputs[0] = std::move(dx);
      }
      bool weights = needGrad.size() > 1 && needGrad[1];
      bool bias = b && needGrad.size() > 2 && needGrad[2];
      if (weights || bias) {
        Tensor dw(DType::F32, w.shape());
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_SRC, memoryOf(x, *ctx)},
            {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
            {DNNL_ARG_DIFF_WEIGHTS,
             memory(g.weights, ctx->engine, dw.rawData())}};
        Tensor db;
        if (b) {
          db = Tensor(DType::F32, b->shape());
          args.emplace(DNNL_ARG_DIFF_BIAS, memoryOf(db, *ctx));
        }
        (*entry)->weights.execute(ctx->stream, args);
        if (weights)
          dInputs[1] = std::move(dw);
        if (bias)
          dInputs[2] = std::move(db);
      }
      ctx->stream.wait();
      return llvm::Error::success();
    });
  }

private:
  llvm::Expected<ConvTransposeGradEntry> make(const Tensor &x, const Tensor &w,
                                              const Tensor *b) const {
    auto g = cpu::convTransposeGeometry(attrs, x, w);
    if (!g)
      return g.takeError();
    const dnnl::engine &engine = cache.context()->engine;
    memory::desc xMd = cpu::plainDesc(x.shape()),
                 yMd = cpu::plainDesc(g->outShape);
    memory::desc biasMd = b ? cpu::plainDesc(b->shape()) : memory::desc();
    auto algorithm = dnnl::algorithm::deconvolution_direct;
    dnnl::deconvolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, algorithm, xMd, g->weights, biasMd,
         yMd, g->strides, g->dilates, g->padL, g->padR},
        engine);
    dnnl::deconvolution_backward_data::primitive_desc data(
        {algorithm, xMd, g->weights, yMd, g->strides, g->dilates, g->padL,
         g->padR},
        engine, fwd);
    dnnl::deconvolution_backward_weights::primitive_desc weights(
        {algorithm, xMd, g->weights, biasMd, yMd, g->strides, g->dilates,
         g->padL, g->padR},
        engine, fwd);
    return ConvTransposeGradEntry{
        *g, dnnl::deconvolution_backward_data(data),
        dnnl::deconvolution_backward_weights(weights)};
  }

  cpu::PrimitiveCache<ConvTransposeGradEntry> cache;
  ConvTransposeAttrs attrs;
};

} // namespace

void train::registerConvTransposeGrad(TrainRegistry &registry) {
  registry["ConvTranspose"] = inferenceForward<ConvTransposeGradKernel>();
}
