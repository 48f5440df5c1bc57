//===- DepthwiseFusedConvKernel.cpp - 1x1 Conv + depthwise Conv -----------===//
//
// The pair fuseDepthwiseConvs (Fusion.h) folds into one Conv, as oneDNN's
// depthwise post-op: the depthwise convolution reads rows of the pointwise
// result while they are in cache, instead of the pointwise convolution
// writing its whole output (in MobileNetV2 six times the block's channels)
// to memory for the depthwise one to read back. oneDNN implements the
// fusion for some instruction sets and formats only; where it has none, and
// where autotuning times the pair faster apart, the two convolutions run as
// separate Conv kernels. A depthwise Swish is also timed as a pass after
// the fused convolution (SwishPass.h), as in ConvKernel.cpp. Our own
// kernel for the pair (PointwiseDepthwise.h) is a third candidate, and the
// only fused one for 5x5 and 7x7 windows, which oneDNN's post-op lacks.
//
//===----------------------------------------------------------------------===//

#include "ConvKernels.h"
#include "DepthwiseDirect.h"
#include "PointwiseDepthwise.h"

#include <cstring>
#include <limits>
#include <optional>
#include <tuple>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// The fused primitive for one input shape, or `fused` false: run apart.
struct FusedConvEntry {
  bool fused = false;
  dnnl::convolution_forward primitive;
  memory::desc srcMd, dstMd, scratchpadMd, weightsMd, dwWeightsMd, biasMd,
      dwBiasMd;
  /// Both weights in the primitive's formats; the depthwise bias (zeros
  /// when the model has none).
  Tensor weights, dwWeights, dwBias;
  Shape outShape;
  /// The primitive leaves out the depthwise Swish; swishInPlace follows.
  bool swishApart = false;
  PrimitiveArgs args;
  /// Set when our own kernel runs the pair instead of `primitive`; the
  /// weights are then packed for it, `pointwiseBias` too.
  std::optional<PointwiseDepthwiseShape> own;
  Tensor pointwiseBias;
};

/// The two activations as our own kernel applies them.
struct OwnEpilogues {
  ConvEpilogue pointwise, depthwise;
};

class DepthwiseFusedConvKernel : public Kernel {
public:
  DepthwiseFusedConvKernel(CPUContextPtr ctx, ConvAttrs pointwise,
                           int64_t fusedStride, dnnl::post_ops fusedOps,
                           std::optional<dnnl::post_ops> fusedOpsBeforeSwish,
                           std::optional<OwnEpilogues> ownEpilogues,
                           std::unique_ptr<Kernel> pointwiseAlone,
                           std::unique_ptr<Kernel> depthwiseAlone)
      : cache(std::move(ctx)), pointwise(std::move(pointwise)),
        fusedStride(fusedStride), fusedOps(std::move(fusedOps)),
        fusedOpsBeforeSwish(std::move(fusedOpsBeforeSwish)),
        ownEpilogues(ownEpilogues), pointwiseAlone(std::move(pointwiseAlone)),
        depthwiseAlone(std::move(depthwiseAlone)) {}
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  /// The fused primitive with source and destination in `tag`, or an entry
  /// saying there is none.
  FusedConvEntry makeFused(llvm::ArrayRef<const Tensor *> inputs, Tag tag,
                           bool swishApart);
  /// Our own kernel for the pair (PointwiseDepthwise.h), or an entry saying
  /// it does not run these shapes.
  FusedConvEntry makeOwn(llvm::ArrayRef<const Tensor *> inputs);
  /// Runs the fused entry `e` on `src` into `dst`.
  void execute(const FusedConvEntry &e, const Tensor &src, Tensor &dst,
               const Tensor *bias, PrimitiveArgs &args);
  /// Seconds per run of the fused primitive, with the reorder of its input.
  double secondsPerRun(const FusedConvEntry &e,
                       llvm::ArrayRef<const Tensor *> inputs);
  llvm::Expected<FusedConvEntry> make(llvm::ArrayRef<const Tensor *> inputs);
  void bindFused(const FusedConvEntry &e, const Tensor &src, const Tensor &dst,
                 const Tensor *bias, PrimitiveArgs &args);
  llvm::Error runApart(llvm::ArrayRef<const Tensor *> inputs, Tensor &out);

  PrimitiveCache<FusedConvEntry> cache;
  ConvAttrs pointwise;
  /// The depthwise convolution's stride (its pads are half its window).
  int64_t fusedStride;
  /// oneDNN's post-ops for the pair, which it has for 3x3 windows only.
  dnnl::post_ops fusedOps;
  /// fusedOps less the depthwise Swish, when that is their last.
  std::optional<dnnl::post_ops> fusedOpsBeforeSwish;
  /// Set when our own kernel has both activations.
  std::optional<OwnEpilogues> ownEpilogues;
  std::unique_ptr<Kernel> pointwiseAlone, depthwiseAlone;
};

} // namespace

/// The plain tensor `t` reordered from `from` into `to`.
static Tensor reorderWeights(const Tensor &t, const memory::desc &from,
                             const memory::desc &to, const CPUContextPtr &ctx) {
  Tensor packed = allocate(to, t.shape(), ctx);
  memory src(from, ctx->engine, const_cast<void *>(t.rawData()));
  memory dst(to, ctx->engine, packed.rawData());
  dnnl::reorder(src, dst).execute(ctx->stream, src, dst);
  ctx->stream.wait();
  return packed;
}

FusedConvEntry
DepthwiseFusedConvKernel::makeFused(llvm::ArrayRef<const Tensor *> inputs,
                                    Tag tag, bool swishApart) {
  if (inputs[4]->dim(2) != 3)
    return {};
  const CPUContextPtr &ctx = cache.context();
  const Tensor &x = *inputs[0], &w = *inputs[1], &dwW = *inputs[4];
  llvm::Expected<ConvGeometry> geo = convGeometry(pointwise, x, w);
  if (!geo) {
    llvm::consumeError(geo.takeError());
    return {};
  }
  auto desc = [](const memory::dims &d, Tag tag) {
    return memory::desc(d, memory::data_type::f32, tag);
  };
  memory::desc biasMd = inputs[2] ? plainDesc({w.dim(0)}) : memory::desc();
  dnnl::primitive_attr attr;
  attr.set_post_ops(swishApart ? *fusedOpsBeforeSwish : fusedOps);
  useCallerScratchpad(attr);
  FusedConvEntry e;
  e.swishApart = swishApart;
  try {
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        desc(toDims(x.shape()), tag), desc(geo->weightDims, Tag::any), biasMd,
        desc(toDims(geo->outShape), tag), geo->strides, geo->dilations,
        geo->padL, geo->padR);
    dnnl::convolution_forward::primitive_desc pd(d, attr, ctx->engine);
    // oneDNN's generic fusion runs the two primitives it names after this
    // prefix; a reference one among them would be far too slow.
    llvm::StringRef impl = pd.impl_info_str();
    impl.consume_front("ref_fused_convolution");
    if (impl.contains("ref"))
      return {};
    e.primitive = dnnl::convolution_forward(pd);
    e.srcMd = pd.src_desc();
    e.dstMd = pd.dst_desc();
    e.scratchpadMd = pd.scratchpad_desc();
    e.weightsMd = pd.weights_desc();
    e.dwWeightsMd = pd.query_md(dnnl::query::exec_arg_md,
                                DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
  } catch (const dnnl::error &) {
    return {}; // no implementation of the fusion for these shapes
  }
  // The primitive's destination is the depthwise convolution's output.
  int64_t s = fusedStride;
  e.outShape = {geo->outShape[0], geo->outShape[1],
                (geo->outShape[2] - 1) / s + 1, (geo->outShape[3] - 1) / s + 1};
  memory::dims out = e.dstMd.dims();
  if (e.dwWeightsMd.is_zero() || Shape(out.begin(), out.end()) != e.outShape)
    return {};
  e.weights = reorderWeights(plainOf(w, ctx), plainDesc(geo->weightDims),
                             e.weightsMd, ctx);
  int64_t m = dwW.dim(0);
  e.dwWeights = reorderWeights(plainOf(dwW, ctx), plainDesc({m, 1, 1, 3, 3}),
                               e.dwWeightsMd, ctx);
  e.dwBias = Tensor(DType::F32, {m});
  e.dwBiasMd = plainDesc({m});
  e.biasMd = plainDesc({w.dim(0)});
  if (inputs[5])
    std::memcpy(e.dwBias.rawData(), plainOf(*inputs[5], ctx).rawData(),
                e.dwBias.bytes());
  else
    std::memset(e.dwBias.rawData(), 0, e.dwBias.bytes());
  e.fused = true;
  return e;
}

void DepthwiseFusedConvKernel::bindFused(const FusedConvEntry &e,
                                         const Tensor &src, const Tensor &dst,
                                         const Tensor *bias,
                                         PrimitiveArgs &args) {
  CPUContext &ctx = *cache.context();
  const dnnl::engine &engine = ctx.engine;
  args.set(DNNL_ARG_SRC, e.srcMd, src.rawData(), engine);
  args.set(DNNL_ARG_WEIGHTS, e.weightsMd, e.weights.rawData(), engine);
  args.set(DNNL_ARG_DST, e.dstMd, dst.rawData(), engine);
  args.set(DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, e.dwWeightsMd,
           e.dwWeights.rawData(), engine);
  args.set(DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, e.dwBiasMd,
           e.dwBias.rawData(), engine);
  if (bias)
    args.set(DNNL_ARG_BIAS, e.biasMd, bias->rawData(), engine);
  args.setScratchpad(e.scratchpadMd, ctx);
}

FusedConvEntry
DepthwiseFusedConvKernel::makeOwn(llvm::ArrayRef<const Tensor *> inputs) {
  const Tensor &x = *inputs[0], &w = *inputs[1], &dwW = *inputs[4];
  int64_t s = fusedStride;
  int64_t k = dwW.dim(2);
  if (!ownEpilogues || x.rank() != 4 || w.dim(2) != 1 || w.dim(3) != 1 ||
      !depthwiseDirectRuns(k, s))
    return {};
  const CPUContextPtr &ctx = cache.context();
  int64_t m = w.dim(0);
  PointwiseDepthwiseShape shape = pointwiseDepthwiseShapeOf(x.shape(), m, k, s);
  FusedConvEntry e;
  e.own = shape;
  e.outShape = {shape.n, m, shape.oh, shape.ow};
  e.srcMd =
      memory::desc(toDims(x.shape()), memory::data_type::f32, Tag::nChw16c);
  e.dstMd =
      memory::desc(toDims(e.outShape), memory::data_type::f32, Tag::nChw16c);
  e.weights = packPointwiseWeights(plainOf(w, ctx));
  e.dwWeights = packDepthwiseWeights(plainOf(dwW, ctx));
  for (auto [input, packed] :
       {std::pair{inputs[2], &e.pointwiseBias}, {inputs[5], &e.dwBias}}) {
    Tensor plain = input ? plainOf(*input, ctx) : Tensor();
    *packed = packPointwiseBias(input ? &plain : nullptr, m);
  }
  e.fused = true;
  return e;
}

void DepthwiseFusedConvKernel::execute(const FusedConvEntry &e,
                                       const Tensor &src, Tensor &dst,
                                       const Tensor *bias,
                                       PrimitiveArgs &args) {
  if (e.own) {
    pointwiseDepthwise(src.data<float>(), e.weights.data<float>(),
                       e.pointwiseBias.data<float>(), ownEpilogues->pointwise,
                       e.dwWeights.data<float>(), e.dwBias.data<float>(),
                       ownEpilogues->depthwise, dst.data<float>(), *e.own);
    return;
  }
  CPUContext &ctx = *cache.context();
  bindFused(e, src, dst, bias, args);
  e.primitive.execute(ctx.stream, args.get());
  ctx.stream.wait();
  swishIfApart(e.swishApart, dst, e.dstMd);
}

double
DepthwiseFusedConvKernel::secondsPerRun(const FusedConvEntry &e,
                                        llvm::ArrayRef<const Tensor *> inputs) {
  // On zeros: denormals would skew the timing.
  const CPUContextPtr &ctx = cache.context();
  Tensor src = allocate(e.srcMd, inputs[0]->shape(), ctx);
  Tensor dst = allocate(e.dstMd, e.outShape, ctx);
  std::memset(src.rawData(), 0, src.bytes());
  Tensor bias = inputs[2] ? plainOf(*inputs[2], ctx) : Tensor();
  PrimitiveArgs args;
  return bestSeconds(
             [&] { execute(e, src, dst, inputs[2] ? &bias : nullptr, args); }) +
         reorderSeconds(*inputs[0], e.srcMd, ctx);
}

llvm::Expected<FusedConvEntry>
DepthwiseFusedConvKernel::make(llvm::ArrayRef<const Tensor *> inputs) {
  const CPUContextPtr &ctx = cache.context();
  if (!ctx->autotune)
    return makeFused(inputs, Tag::any, /*swishApart=*/false);
  // oneDNN's choice of formats (channels-last, where it runs the two
  // convolutions one after the other on a scratchpad), channel-blocked
  // ones (where its 1x1 kernel computes the depthwise rows as it goes) and
  // our own kernel, against the two kernels apart; blocked wins ties
  // within 10%, as in ConvKernel. Candidates have names for
  // CPUContext::acceptConvCandidate, as there.
  auto accepts = [&](llvm::StringRef name) {
    return !ctx->acceptConvCandidate || ctx->acceptConvCandidate(name);
  };
  FusedConvEntry best;
  double fastest = std::numeric_limits<double>::infinity();
  auto consider = [&](llvm::StringRef name, double weight, FusedConvEntry e) {
    if (!e.fused || !accepts(name))
      return;
    double seconds = weight * secondsPerRun(e, inputs);
    if (seconds < fastest) {
      best = std::move(e);
      fastest = seconds;
    }
  };
  int64_t c = inputs[0]->dim(1), m = inputs[1]->dim(0);
  for (auto [block, tag, name] : {std::tuple{0, Tag::any, "oneDNN fused"},
                                  {16, Tag::nChw16c, "oneDNN fused nChw16c"},
                                  {8, Tag::nChw8c, "oneDNN fused nChw8c"}}) {
    if (block && (m % block || (c % block && c >= 8)))
      continue;
    for (bool swishApart : {false, true}) {
      if (swishApart && !fusedOpsBeforeSwish)
        break;
      consider(std::string(name) + (swishApart ? ", Swish as a pass" : ""),
               block ? 0.9 : 1.0, makeFused(inputs, tag, swishApart));
    }
  }
  consider("own pointwise-depthwise", 0.9, makeOwn(inputs));
  if (!best.fused || !accepts("apart"))
    return std::move(best);
  Tensor out;
  if (llvm::Error err = runApart(inputs, out))
    return std::move(err);
  double apart =
      bestSeconds([&] { llvm::consumeError(runApart(inputs, out)); });
  if (apart < fastest)
    return FusedConvEntry();
  return std::move(best);
}

llvm::Error
DepthwiseFusedConvKernel::runApart(llvm::ArrayRef<const Tensor *> inputs,
                                   Tensor &out) {
  Tensor mid;
  if (llvm::Error e = pointwiseAlone->run(inputs.take_front(3),
                                          llvm::MutableArrayRef<Tensor>(mid)))
    return e;
  const Tensor *dwInputs[] = {&mid, inputs[4], inputs[5]};
  return depthwiseAlone->run(dwInputs, llvm::MutableArrayRef<Tensor>(out));
}

llvm::Error
DepthwiseFusedConvKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                              llvm::MutableArrayRef<Tensor> outputs) {
  if (llvm::Error e = checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return guardDnnl([&]() -> llvm::Error {
    auto entry =
        cache.get(shapeKey(inputs.take_front(3)), [&] { return make(inputs); });
    if (!entry)
      return entry.takeError();
    FusedConvEntry &e = **entry;
    if (!e.fused)
      return runApart(inputs, outputs[0]);
    Tensor src = reorderTo(*inputs[0], e.srcMd, ctx);
    Tensor dst = allocate(e.dstMd, e.outShape, ctx);
    Tensor bias = inputs[2] ? plainOf(*inputs[2], ctx) : Tensor();
    execute(e, src, dst, inputs[2] ? &bias : nullptr, e.args);
    outputs[0] = std::move(dst);
    return llvm::Error::success();
  });
}

llvm::Expected<std::unique_ptr<Kernel>>
cpu::createDepthwiseFusedConv(const OpInfo &info, CPUContextPtr ctx) {
  if (llvm::Error e = info.checkArity(2, 6))
    return e;
  const Tensor *w = info.constants[1], *dwW = info.constants[4];
  int64_t k = dwW && dwW->rank() == 4 ? dwW->dim(2) : 0;
  if (!w || !dwW || info.hasInput(3) || (k != 3 && k != 5 && k != 7) ||
      dwW->dim(3) != k || (info.hasInput(2) && !info.constants[2]) ||
      (info.hasInput(5) && !info.constants[5]))
    return kernelError("a Conv with a fused depthwise Conv needs constant "
                       "weights and biases, a 3x3, 5x5 or 7x7 window and no "
                       "summed input");
  llvm::Expected<ConvAttrs> attrs = parseConvAttrs(info.attrs);
  if (!attrs)
    return attrs.takeError();
  auto stride = info.attrs.getInt("dw_stride", 1);
  if (!stride)
    return stride.takeError();

  ConvParams pw, dw;
  static_cast<ConvAttrs &>(pw) = *attrs;
  dw.group = dwW->dim(0);
  dw.strides = {*stride, *stride};
  dw.pads = {k / 2, k / 2, k / 2, k / 2};
  for (auto [name, convParams] :
       {std::pair("activation", &pw), std::pair("dw_activation", &dw)})
    if (llvm::Error e = appendConvActivation(info.attrs, *convParams, name))
      return e;
  // The pointwise activation, the depthwise convolution, its activation;
  // built twice when that is Swish, post_ops being a handle without a copy.
  auto fusedOps = [&](bool withDwActivation) -> llvm::Expected<dnnl::post_ops> {
    dnnl::post_ops ops;
    if (llvm::Error e = appendFusedActivation(info.attrs, ops))
      return std::move(e);
    ops.append_dw(memory::data_type::f32, memory::data_type::f32,
                  memory::data_type::f32, /*kernel=*/3, *stride,
                  /*padding_l=*/1,
                  /*mask=*/0, {});
    if (withDwActivation)
      if (llvm::Error e =
              appendFusedActivation(info.attrs, ops, "dw_activation"))
        return std::move(e);
    return ops;
  };
  llvm::Expected<dnnl::post_ops> fused = fusedOps(true);
  if (!fused)
    return fused.takeError();
  std::optional<dnnl::post_ops> beforeSwish;
  if (dw.swishLast) {
    llvm::Expected<dnnl::post_ops> ops = fusedOps(false);
    if (!ops)
      return ops.takeError();
    beforeSwish = *ops;
  }
  std::optional<OwnEpilogues> own;
  if (auto p = convEpilogueOf(pw.postOps), d = convEpilogueOf(dw.postOps);
      p && d)
    own = OwnEpilogues{*p, *d};
  return std::make_unique<DepthwiseFusedConvKernel>(
      ctx, *attrs, *stride, std::move(*fused), std::move(beforeSwish), own,
      createConvKernel(ctx, std::move(pw), /*constantWeights=*/true),
      createConvKernel(ctx, std::move(dw), /*constantWeights=*/true));
}
