//===- ConvKernel.cpp - ONNX Conv on oneDNN convolution -------------------===//
//
// 1-D to 3-D, grouped and dilated. Fusions: an optional fourth input is
// added to the result (a residual Add, as oneDNN's sum post-op), then an
// optional activation is applied (attribute `activation`, see
// appendFusedActivation). Source, weights and destination use
// format_tag::any, so oneDNN picks its fastest (blocked) formats; the
// destination keeps that layout for the next kernel. Constant weights are
// reordered once per shape. With autotuning (CPUBackendOptions), 2-D 3x3
// stride-1 convolutions also try oneDNN's Winograd algorithm when the
// primitive is created for a shape, time one run of each on that shape, and
// keep the faster. No fixed rule picks well: on this machine Winograd ran
// 0.4x to 3x the direct algorithm's speed, depending on channels, image size
// and batch in ways that do not sort by any one of them. Winograd's results
// differ from the direct algorithm's in the last bits (~1e-6 relative), so
// runs that choose differently differ there too.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ConvGeometry.h"

#include "llvm/ADT/STLExtras.h"

#include <chrono>
#include <cstring>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct ConvParams : ConvAttrs {
  /// A fourth input is summed into the output.
  bool sum = false;
  dnnl::post_ops postOps;
};

struct ConvEntry {
  dnnl::convolution_forward primitive;
  memory::desc srcMd, weightsMd, dstMd;
  /// The primitive's scratch memory, which the caller provides.
  memory::desc scratchpadMd;
  /// Plain weights viewed with the group split out (G, M/G, C/G, k...).
  memory::desc plainWeightsMd;
  /// The weights in weightsMd, when they are constant.
  Tensor weights;
  Shape outShape;
};

class ConvKernel : public Kernel {
public:
  ConvKernel(CPUContextPtr ctx, ConvParams params, bool constantWeights)
      : cache(std::move(ctx)), params(std::move(params)),
        constantWeights(constantWeights) {}
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  llvm::Expected<ConvEntry> make(const Tensor &x, const Tensor &w,
                                 const Tensor *b);
  double secondsPerRun(const ConvEntry &e, const Tensor &x, const Tensor &w,
                       const Tensor *b);

  PrimitiveCache<ConvEntry> cache;
  ConvParams params;
  bool constantWeights;
};

} // namespace

/// `w` reordered from its plain (grouped) view into the primitive's format.
static Tensor packWeights(const Tensor &w, const ConvEntry &e,
                          const CPUContextPtr &ctx) {
  Tensor plain = plainOf(w, ctx);
  Tensor packed = allocate(e.weightsMd, w.shape(), ctx);
  memory from(e.plainWeightsMd, ctx->engine, plain.rawData());
  memory to(e.weightsMd, ctx->engine, packed.rawData());
  dnnl::reorder(from, to).execute(ctx->stream, from, to);
  ctx->stream.wait();
  return packed;
}

llvm::Expected<ConvEntry> ConvKernel::make(const Tensor &x, const Tensor &w,
                                           const Tensor *b) {
  llvm::Expected<ConvGeometry> geometry = convGeometry(params, x, w);
  if (!geometry)
    return geometry.takeError();
  const ConvGeometry &geo = *geometry;
  int64_t m = w.dim(0);
  if (b && (b->rank() != 1 || b->dim(0) != m))
    return kernelError("bias is " + b->typeString() + ", expected " +
                       llvm::Twine(m) + " elements");
  auto any = [](const memory::dims &d) {
    return memory::desc(d, memory::data_type::f32, Tag::any);
  };
  memory::desc biasMd =
      b ? memory::desc({m}, memory::data_type::f32, Tag::a) : memory::desc();
  dnnl::primitive_attr attr;
  attr.set_post_ops(params.postOps);
  useCallerScratchpad(attr);
  const CPUContextPtr &ctx = cache.context();
  auto makeEntry = [&](dnnl::algorithm algorithm) {
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_inference, algorithm, any(toDims(x.shape())),
        any(geo.weightDims), biasMd, any(toDims(geo.outShape)), geo.strides,
        geo.dilations, geo.padL, geo.padR);
    dnnl::convolution_forward::primitive_desc pd(d, attr, ctx->engine);
    ConvEntry entry{dnnl::convolution_forward(pd),
                    pd.src_desc(),
                    pd.weights_desc(),
                    pd.dst_desc(),
                    pd.scratchpad_desc(),
                    plainDesc(geo.weightDims),
                    Tensor(),
                    geo.outShape};
    if (constantWeights)
      entry.weights = packWeights(w, entry, ctx);
    return entry;
  };
  ConvEntry direct = makeEntry(dnnl::algorithm::convolution_direct);

  // Winograd F(4x4, 3x3) does 2-3x fewer multiplications on 3x3, stride-1
  // convolutions, but its transforms cost more than they save on small
  // images: measure both on this shape and keep the faster.
  bool winogradShape =
      x.rank() == 4 && params.group == 1 && w.dim(2) == 3 && w.dim(3) == 3 &&
      llvm::all_of(geo.strides, [](int64_t s) { return s == 1; }) &&
      llvm::all_of(geo.dilations, [](int64_t d) { return d == 0; });
  if (!winogradShape || !ctx->autotune)
    return direct;
  std::optional<ConvEntry> winograd;
  try {
    winograd = makeEntry(dnnl::algorithm::convolution_winograd);
  } catch (const dnnl::error &) {
    return direct; // no Winograd implementation for this shape
  }
  if (secondsPerRun(*winograd, x, w, b) < secondsPerRun(direct, x, w, b))
    return std::move(*winograd);
  return direct;
}

/// One run of `e` on zeros (after a warm-up run), in seconds.
double ConvKernel::secondsPerRun(const ConvEntry &e, const Tensor &x,
                                 const Tensor &w, const Tensor *b) {
  const CPUContextPtr &ctx = cache.context();
  Tensor src = allocate(e.srcMd, x.shape(), ctx);
  Tensor dst = allocate(e.dstMd, e.outShape, ctx);
  // Zeros, not whatever the buffers held: denormals would skew the timing,
  // and the sum post-op reads the destination.
  std::memset(src.rawData(), 0, src.bytes());
  std::memset(dst.rawData(), 0, dst.bytes());
  Tensor packed = e.weights.isNull() ? packWeights(w, e, ctx) : e.weights;
  Tensor bias = b ? plainOf(*b, ctx) : Tensor();
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memoryOf(src, *ctx)},
      {DNNL_ARG_WEIGHTS, memory(e.weightsMd, ctx->engine, packed.rawData())},
      {DNNL_ARG_DST, memoryOf(dst, *ctx)}};
  if (b)
    args[DNNL_ARG_BIAS] = memoryOf(bias, *ctx);
  addScratchpad(e.scratchpadMd, *ctx, args);
  auto runOnce = [&] {
    auto start = std::chrono::steady_clock::now();
    e.primitive.execute(ctx->stream, args);
    ctx->stream.wait();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  runOnce();
  return runOnce();
}

llvm::Error ConvKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                            llvm::MutableArrayRef<Tensor> outputs) {
  if (llvm::Error e = checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return guardDnnl([&]() -> llvm::Error {
    const Tensor *b = inputs.size() > 2 ? inputs[2] : nullptr;
    // The addend's layout does not change the primitive.
    auto entry = cache.get(shapeKey(inputs.take_front(3)),
                           [&] { return make(*inputs[0], *inputs[1], b); });
    if (!entry)
      return entry.takeError();
    ConvEntry &e = **entry;
    Tensor src = reorderTo(*inputs[0], e.srcMd, ctx);
    Tensor packed =
        e.weights.isNull() ? packWeights(*inputs[1], e, ctx) : e.weights;
    Tensor dst;
    if (params.sum) {
      const Tensor &addend = *inputs[3];
      if (addend.shape() != e.outShape)
        return kernelError("summed input is " + addend.typeString() +
                           ", expected shape " + shapeToString(e.outShape));
      // The primitive accumulates into dst: never into the addend's buffer.
      dst = reorderTo(addend, e.dstMd, ctx);
      if (dst.rawData() == addend.rawData())
        dst = dst.clone();
    } else {
      dst = allocate(e.dstMd, e.outShape, ctx);
    }
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memoryOf(src, *ctx)},
        {DNNL_ARG_WEIGHTS, memory(e.weightsMd, ctx->engine, packed.rawData())},
        {DNNL_ARG_DST, memoryOf(dst, *ctx)}};
    Tensor bias = b ? plainOf(*b, ctx) : Tensor();
    if (b)
      args[DNNL_ARG_BIAS] = memoryOf(bias, *ctx);
    addScratchpad(e.scratchpadMd, *ctx, args);
    e.primitive.execute(ctx->stream, args);
    ctx->stream.wait();
    outputs[0] = std::move(dst);
    return llvm::Error::success();
  });
}

void cpu::registerConvKernel(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "Conv",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 4))
          return e;
        llvm::Expected<ConvAttrs> attrs = parseConvAttrs(info.attrs);
        if (!attrs)
          return attrs.takeError();
        ConvParams params;
        static_cast<ConvAttrs &>(params) = *attrs;
        params.sum = info.hasInput(3);
        if (params.sum)
          params.postOps.append_sum(1.f);
        if (llvm::Error e = appendFusedActivation(info.attrs, params.postOps))
          return e;
        return std::make_unique<ConvKernel>(ctx, std::move(params),
                                            info.constants[1] != nullptr);
      });
}
