//===- ConvTransposeKernel.cpp - ONNX ConvTranspose on oneDNN -------------===//
//
// oneDNN's deconvolution, in plain layouts (a GEMM and col2im) or in the
// blocked ones it chooses (its JIT backward-data convolution), or one
// stride-1 convolution per output phase (SubPixelConvTranspose.h),
// whichever autotuning finds fastest. The deconvolution's input is
// reordered to the chosen layout, its output left in it (a batch norm
// after it ran 20x slower on plain NCHW, on oneDNN's generic kernel); the
// weights, read as ConvTransposeGeometry.h describes, are reordered once
// where they are constants and on every run otherwise.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ConvTransposeGeometry.h"
#include "SubPixelConvTranspose.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class ConvTransposeKernel : public Kernel {
public:
  ConvTransposeKernel(CPUContextPtr ctx, ConvTransposeAttrs attrs,
                      bool constantWeights)
      : cache(std::move(ctx)), attrs(std::move(attrs)),
        constantWeights(constantWeights) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0], &w = *inputs[1];
    const Tensor *b = inputs.size() > 2 ? inputs[2] : nullptr;
    auto g = convTransposeGeometry(attrs, x, w);
    if (!g)
      return g.takeError();
    return guardDnnl([&]() -> llvm::Error {
      auto entry = cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Entry> {
        return choose(*g, x, w, b);
      });
      if (!entry)
        return entry.takeError();
      outputs[0] = execute(**entry, *g, x, w, b);
      return llvm::Error::success();
    });
  }

private:
  using Primitive = dnnl::deconvolution_forward;
  /// A oneDNN deconvolution, or the sub-pixel convolutions.
  struct Entry {
    std::optional<Primitive::primitive_desc> pd;
    std::optional<Primitive> primitive;
    /// The weights in the primitive's layout.
    Tensor weights;
    std::unique_ptr<SubPixelConvTranspose> subPixel;
  };

  /// The deconvolution in oneDNN's chosen layouts (`blocked`) or in plain
  /// ones.
  Entry build(const ConvTransposeGeometry &g, const Tensor &x, const Tensor *b,
              bool blocked) {
    auto layout = [&](const memory::desc &md) {
      return blocked ? memory::desc(md.dims(), memory::data_type::f32, Tag::any)
                     : md;
    };
    Primitive::desc d(
        dnnl::prop_kind::forward_inference,
        dnnl::algorithm::deconvolution_direct, layout(plainDesc(x.shape())),
        layout(g.weights), b ? plainDesc(b->shape()) : memory::desc(),
        layout(plainDesc(g.outShape)), g.strides, g.dilates, g.padL, g.padR);
    Entry e;
    e.pd.emplace(d, cache.context()->engine);
    e.primitive.emplace(*e.pd);
    return e;
  }

  /// The fastest candidate where autotuning times them, else the blocked
  /// deconvolution. On a UNet at batch 16 (2 threads) its k4 s2 upsampling
  /// ran 4.96 ms in plain layouts, 4.3-4.5 blocked and 3.9 as sub-pixel
  /// convolutions; its k2 s2 one (no overlap: one GEMM) 1.0 ms plain, 1.3
  /// blocked and 0.4-1.0 sub-pixel. The sub-pixel form packs its weights
  /// once, so it is a candidate only where they are constants.
  Entry choose(const ConvTransposeGeometry &g, const Tensor &x, const Tensor &w,
               const Tensor *b) {
    const CPUContextPtr &ctx = cache.context();
    if (!ctx->autotune)
      return build(g, x, b, /*blocked=*/true);
    auto accepts = [&](llvm::StringRef name) {
      return !ctx->acceptConvCandidate || ctx->acceptConvCandidate(name);
    };
    std::vector<Entry> candidates;
    if (accepts("deconvolution in blocked layouts"))
      candidates.push_back(build(g, x, b, /*blocked=*/true));
    if (accepts("deconvolution in plain layouts"))
      candidates.push_back(build(g, x, b, /*blocked=*/false));
    if (constantWeights && accepts("sub-pixel convolutions")) {
      llvm::Expected<Window> window = convTransposeWindow(attrs, x, w);
      if (!window)
        llvm::consumeError(window.takeError());
      else if (auto subPixel = SubPixelConvTranspose::create(
                   ctx, *window, attrs.group, x, w, b)) {
        candidates.emplace_back();
        candidates.back().subPixel = std::move(subPixel);
      }
    }
    if (candidates.empty())
      return build(g, x, b, /*blocked=*/true);
    size_t best = 0;
    double fastest = 0;
    for (size_t i = 0; i < candidates.size() && candidates.size() > 1; ++i) {
      double seconds = bestSeconds([&] { execute(candidates[i], g, x, w, b); });
      if (i == 0 || seconds < fastest) {
        best = i;
        fastest = seconds;
      }
    }
    return std::move(candidates[best]);
  }

  Tensor execute(Entry &e, const ConvTransposeGeometry &g, const Tensor &x,
                 const Tensor &w, const Tensor *b) {
    if (e.subPixel)
      return e.subPixel->run(x);
    const CPUContextPtr &ctx = cache.context();
    if (!constantWeights || e.weights.isNull()) {
      memory::desc want = e.pd->weights_desc();
      memory::dims dims = want.dims();
      e.weights = allocate(want, Shape(dims.begin(), dims.end()), ctx);
      memory from(g.weights, ctx->engine, const_cast<void *>(w.rawData()));
      memory to = memoryOf(e.weights, *ctx);
      dnnl::reorder(from, to).execute(ctx->stream, from, to);
    }
    Tensor src = reorderTo(x, e.pd->src_desc(), ctx);
    Tensor y = allocate(e.pd->dst_desc(), g.outShape, ctx);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memoryOf(src, *ctx)},
        {DNNL_ARG_WEIGHTS, memoryOf(e.weights, *ctx)},
        {DNNL_ARG_DST, memoryOf(y, *ctx)}};
    if (b)
      args.emplace(DNNL_ARG_BIAS, memoryOf(*b, *ctx));
    e.primitive->execute(ctx->stream, args);
    ctx->stream.wait();
    return y;
  }

  PrimitiveCache<Entry> cache;
  ConvTransposeAttrs attrs;
  bool constantWeights;
};

} // namespace

void cpu::registerConvTransposeKernel(KernelRegistry &registry,
                                      CPUContextPtr ctx) {
  registry.add(
      "ConvTranspose",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 3))
          return e;
        ConvTransposeAttrs attrs;
        if (llvm::Error e = readConvTransposeAttrs(info.attrs, attrs))
          return e;
        return std::make_unique<ConvTransposeKernel>(
            ctx, std::move(attrs),
            info.constants.size() > 1 && info.constants[1] != nullptr);
      });
}
