//===- ConvKernel.cpp - ONNX Conv on oneDNN convolution -------------------===//
//
// 1-D to 3-D, grouped and dilated. Fusions: an optional fourth input is
// added to the result (a residual Add, as oneDNN's sum post-op), then an
// optional activation is applied (attribute `activation`, see
// appendFusedActivation). Source, weights and destination use
// format_tag::any, so oneDNN picks its fastest (blocked) formats; the
// destination keeps that layout for the next kernel. Constant weights are
// reordered once per shape.
//
// With autotuning (CPUBackendOptions), a 2-D convolution times candidates
// when its primitive is created for a shape and keeps the fastest: the
// direct algorithm in oneDNN's preferred formats (channels-last for f32),
// the direct algorithm in channel-blocked formats (nChw8c, nChw16c, the
// latter padded for channel counts that 8 divides but 16 does not), in
// channels-last when the input is channels-last, and
// for 3x3 stride-1 convolutions Winograd, and for groups of 4 or 8
// channels the groups merged into 16- or 8-channel ones (GroupWidening.h;
// ResNeXt-50 and RegNet-Y 3-7% faster) and, 3x3 at stride 1, our own
// kernel that merges nothing (NarrowGroupConv.h), for depthwise convolutions
// our own kernel (DepthwiseDirect.h) in blocks of 16 and, when the input is,
// channels-last, for 3x3 stride-1 convolutions our own Winograd
// (WinogradConv.h; on AVX2 hosts, where oneDNN has none, and on AVX-512
// ones, where it often beats oneDNN's; grouped ones too, which oneDNN's
// Winograd does not take) in blocks of 8 and of 16 (only those
// of the input when it has some), for 1x1
// convolutions on small images and for a first convolution (a plain
// input of up to 4 channels) our own kernels in blocks of 8
// (DirectConvAVX2.h);
// where the activation is Swish,
// each of these again with the Swish as a pass after the convolution
// instead of oneDNN's post-op (SwishPass.h). Each candidate has a name,
// by which CPUContext::acceptConvCandidate can leave it out (tests run
// each alone). A candidate whose source format differs from the input's
// is charged the reorder, so a chain of convolutions keeps one format
// unless another pays for the change. No
// fixed rule picks well: blocked formats ran depthwise and narrow 1x1
// convolutions (MobileNetV2 at batch 16) up to 1.9x faster than
// channels-last, but forced on every convolution made VGG-16 and ResNets
// slower; Winograd ran 0.4x to 3x the direct algorithm's speed depending on
// channels, image size and batch. Winograd's results differ from the
// direct algorithm's in the last bits (~1e-6 relative), so runs that
// choose differently differ there too.
//
//===----------------------------------------------------------------------===//

#include "ConvKernels.h"
#include "DepthwiseDirect.h"
#include "DirectConvAVX2.h"
#include "GroupWidening.h"
#include "NarrowGroupConv.h"
#include "PointwiseDepthwise.h"
#include "WinogradConv.h"

#include "llvm/ADT/STLExtras.h"

#include <chrono>
#include <cstring>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

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
  /// Groups merged into one (GroupWidening.h); 1: none.
  int64_t widening = 1;
  /// The primitive leaves out the Swish post-op; swishInPlace follows it.
  bool swishApart = false;
  memory::desc biasMd;
  /// The last run's arguments, for the next.
  PrimitiveArgs args;
  /// Set when our own depthwise kernel (DepthwiseDirect.h) runs instead
  /// of `primitive`; `weights` are then packed for it.
  std::optional<DepthwiseShape> depthwise;
  /// The same for our own Winograd kernel (WinogradConv.h).
  std::optional<WinogradShape> winograd;
  /// The same for our own direct kernels in blocks of 8
  /// (DirectConvAVX2.h): 1x1, and a first convolution's.
  std::optional<PointwiseShape> pointwise;
  std::optional<StemShape> stem;
  /// The same for our own kernel for groups of 4 or 8 channels
  /// (NarrowGroupConv.h).
  std::optional<NarrowGroupShape> narrowGroups;
  /// What our own kernels apply before their store.
  ConvEpilogue epilogue;
};

class ConvKernel : public Kernel {
public:
  ConvKernel(CPUContextPtr ctx, ConvParams params, bool constantWeights)
      : cache(std::move(ctx)), params(std::move(params)),
        constantWeights(constantWeights) {}
  bool acceptsLayouts() const override { return true; }
  bool fillsOfferedOutputs() const override { return !params.sum; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  llvm::Expected<ConvEntry> make(const Tensor &x, const Tensor &w,
                                 const Tensor *b);
  double secondsPerRun(const ConvEntry &e, const Tensor &x, const Tensor &w,
                       const Tensor *b);
  /// Our own depthwise kernel for this shape and layout, if it runs it
  /// (null else).
  std::optional<ConvEntry> ownDepthwise(const Tensor &x, const Tensor &w,
                                        const ConvGeometry &geo,
                                        bool channelsLast, bool swishApart);
  /// Our own Winograd kernel for this shape, if it runs it (null else).
  std::optional<ConvEntry> ownWinograd(const Tensor &x, const Tensor &w,
                                       const ConvGeometry &geo, int64_t block,
                                       bool swishApart);
  /// Our own 1x1 kernel for this shape, if it runs it (null else).
  std::optional<ConvEntry> ownPointwise(const Tensor &x, const Tensor &w,
                                        const ConvGeometry &geo,
                                        bool swishApart);
  /// Our own kernel for groups of 4 or 8 channels, if it runs this shape
  /// (null else).
  std::optional<ConvEntry> ownNarrowGroups(const Tensor &x, const Tensor &w,
                                           const ConvGeometry &geo,
                                           bool swishApart);
  /// Our own kernel for a first convolution, if it runs it (null else).
  std::optional<ConvEntry> ownStem(const Tensor &x, const Tensor &w,
                                   const ConvGeometry &geo, bool swishApart);
  /// Runs `e` on `src` into `dst` with `packed` weights and plain `bias`,
  /// keeping its memory objects in `args`.
  void execute(const ConvEntry &e, PrimitiveArgs &args, const Tensor &src,
               const Tensor &packed, const Tensor *bias, Tensor &dst);

  PrimitiveCache<ConvEntry> cache;
  ConvParams params;
  bool constantWeights;
};

} // namespace

/// `w` reordered from its plain (grouped) view into the primitive's format.
static Tensor packWeights(const Tensor &w, const ConvEntry &e,
                          const CPUContextPtr &ctx, int64_t groups) {
  Tensor plain = plainOf(w, ctx);
  if (e.depthwise)
    return packDepthwiseWeights(plain);
  if (e.winograd)
    return packWinogradWeights(plain, e.winograd->groups);
  if (e.pointwise)
    return packPointwiseWeights(plain);
  if (e.stem)
    return packStemWeights(plain);
  if (e.narrowGroups)
    return packNarrowGroupWeights(plain, e.narrowGroups->width);
  if (e.widening > 1)
    plain = widenGroupWeights(plain, groups, e.widening);
  Tensor packed = allocate(e.weightsMd, plain.shape(), ctx);
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
  auto desc = [](const memory::dims &d, Tag tag) {
    return memory::desc(d, memory::data_type::f32, tag);
  };
  memory::desc biasMd =
      b ? memory::desc({m}, memory::data_type::f32, Tag::a) : memory::desc();
  const CPUContextPtr &ctx = cache.context();
  // Null when oneDNN has only its reference implementation for the
  // candidate (orders of magnitude slower: not worth timing; a blocked
  // output of the 16-channel blocks an AVX2 host lacks took 0.6 s a run
  // for ResNet's first convolution), unless `acceptRef`.
  auto makeEntry = [&](dnnl::algorithm algorithm, Tag srcTag, Tag dstTag,
                       int64_t widening = 1, bool swishApart = false,
                       bool acceptRef = false) -> std::optional<ConvEntry> {
    dnnl::primitive_attr attr;
    attr.set_post_ops(swishApart ? params.postOpsBeforeSwish : params.postOps);
    useCallerScratchpad(attr);
    memory::dims weightDims = geo.weightDims;
    mergeGroupDims(weightDims, widening);
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_inference, algorithm,
        desc(toDims(x.shape()), srcTag), desc(weightDims, Tag::any), biasMd,
        desc(toDims(geo.outShape), dstTag), geo.strides, geo.dilations,
        geo.padL, geo.padR);
    dnnl::convolution_forward::primitive_desc pd(d, attr, ctx->engine);
    if (!acceptRef && llvm::StringRef(pd.impl_info_str()).starts_with("ref"))
      return std::nullopt;
    ConvEntry entry{dnnl::convolution_forward(pd),
                    pd.src_desc(),
                    pd.weights_desc(),
                    pd.dst_desc(),
                    pd.scratchpad_desc(),
                    plainDesc(weightDims),
                    Tensor(),
                    geo.outShape,
                    widening,
                    swishApart,
                    biasMd};
    if (constantWeights)
      entry.weights = packWeights(w, entry, ctx, params.group);
    return entry;
  };
  // oneDNN's own choice, whatever implementation it is.
  auto fallback = [&] {
    return *makeEntry(dnnl::algorithm::convolution_direct, Tag::any, Tag::any,
                      1, false, /*acceptRef=*/true);
  };
  if (!ctx->autotune || x.rank() != 4)
    return fallback();

  // Times the candidate named `name` that build(swishApart) makes (and,
  // after a Swish, the same with the Swish as a pass) and keeps it if its
  // time, scaled by `weight`, is the best yet.
  std::optional<ConvEntry> best;
  double fastest = 0;
  auto considerBuilt = [&](llvm::StringRef name, double weight, auto build) {
    for (bool swishApart : {false, true}) {
      if (swishApart && !params.swishLast)
        break;
      std::optional<ConvEntry> candidate;
      try {
        candidate = build(swishApart);
      } catch (const dnnl::error &) {
        // No implementation for this shape, format and post-ops; Winograd
        // has no swish post-op but runs with the Swish as a pass.
        continue;
      }
      // Filtered after the build, so that a test of one candidate also
      // goes through the failures of the others before it.
      std::string fullName =
          (name + (swishApart ? ", Swish as a pass" : "")).str();
      if (!candidate ||
          (ctx->acceptConvCandidate && !ctx->acceptConvCandidate(fullName)))
        continue;
      double seconds = weight * secondsPerRun(*candidate, x, w, b);
      if (!best || seconds < fastest) {
        best = std::move(candidate);
        fastest = seconds;
      }
    }
  };
  auto consider = [&](llvm::StringRef name, dnnl::algorithm algorithm,
                      Tag srcTag, Tag dstTag, double weight,
                      int64_t widening = 1) {
    considerBuilt(name, weight, [&](bool swishApart) {
      return makeEntry(algorithm, srcTag, dstTag, widening, swishApart);
    });
  };
  consider("direct", dnnl::algorithm::convolution_direct, Tag::any, Tag::any,
           1);
  // Channel blocks of 16 and 8 when both channel counts divide; a source
  // with fewer than 8 channels (an RGB image) stays in oneDNN's choice.
  // A blocked output also saves work downstream that this timing does not
  // see (blocked pooling and depthwise convolutions, concats as block
  // copies, no reorder into the next blocked convolution), so a blocked
  // candidate wins unless it is 10% slower. Without that, an image's first
  // convolution chose channels-last by a hair and the whole network
  // followed (SqueezeNet at batch 1: 9 ms instead of 7).
  int64_t c = x.dim(1);
  auto blocks = [&](int64_t block) {
    return m % block == 0 && (c % block == 0 || c < 8);
  };
  if (blocks(16))
    consider("direct nChw16c", dnnl::algorithm::convolution_direct,
             c < 8 ? Tag::any : Tag::nChw16c, Tag::nChw16c, 0.9);
  if (blocks(8))
    consider("direct nChw8c", dnnl::algorithm::convolution_direct,
             c < 8 ? Tag::any : Tag::nChw8c, Tag::nChw8c, 0.9);
  // Blocks of 16 with the last one padded where the counts are multiples of
  // 8 only (the MobileNets' and EfficientNets' 24, 40, 72 and 120
  // channels): next to 16-blocked neighbours this saves reorders to blocks
  // of 8, whose kernels are AVX2 ones (batch 16: MobileNetV2 10% faster,
  // EfficientNet-B0 4%). Not for grouped convolutions, where it made
  // RegNet-Y choose worse layouts around them.
  if (params.group == 1 && !blocks(16) && blocks(8))
    consider("direct nChw16c padded", dnnl::algorithm::convolution_direct,
             c < 8 ? Tag::any : Tag::nChw16c, Tag::nChw16c, 0.9);
  // Narrow groups merged into groups of a whole channel block (AVX2's
  // kernels take blocks of 8 only); not for non-finite inputs, which the
  // merged zeros would spread to the neighbouring groups (0 * inf).
  for (auto [block, tag] : {std::pair(16, Tag::nChw16c), {8, Tag::nChw8c}})
    if (int64_t widening = groupWidening(params.group, w.shape(), block);
        widening > 1 && !ctx->propagateNaN)
      consider(block == 16 ? "direct nChw16c, groups merged"
                           : "direct nChw8c, groups merged",
               dnnl::algorithm::convolution_direct, tag, tag, 0.9, widening);
  // Channels-last in and out when the input is: oneDNN's own choice for
  // some shapes is blocked although a channels-last neighbour (a
  // Transpose that is then a view, ConvNeXt's) would need no reorder.
  if (isChannelsLast(x))
    consider("direct nhwc", dnnl::algorithm::convolution_direct, Tag::nhwc,
             Tag::nhwc, 1);
  // Winograd's transforms cost more than they save on small images.
  if (geo.winogradWindow) {
    if (geo.winogradShape)
      consider("winograd", dnnl::algorithm::convolution_winograd, Tag::any,
               Tag::any, 1);
    // In blocks of 8 and of 16, weighted as oneDNN's blocked candidates;
    // only in the input's blocks when it has some. The two run alike, and
    // the one that won a timing by a hair left its output to be reordered
    // for the neighbours (DenseNet-121 at batch 16: 12% slower).
    std::optional<int64_t> inBlock = channelBlockOf(descOf(x), x.shape());
    for (int64_t block : {8, 16})
      if (!inBlock || *inBlock == 1 || *inBlock == block)
        considerBuilt(block == 8 ? "own winograd nChw8c"
                                 : "own winograd nChw16c",
                      0.9, [&](bool swishApart) {
                        return ownWinograd(x, w, geo, block, swishApart);
                      });
  }
  considerBuilt("own pointwise nChw8c", 0.9, [&](bool swishApart) {
    return ownPointwise(x, w, geo, swishApart);
  });
  considerBuilt("own stem nChw8c", 0.9, [&](bool swishApart) {
    return ownStem(x, w, geo, swishApart);
  });
  // Groups of 4 or 8 channels with no merged zeros (NarrowGroupConv.h),
  // weighted as oneDNN's blocked candidates.
  considerBuilt("own narrow groups nChw16c", 0.9, [&](bool swishApart) {
    return ownNarrowGroups(x, w, geo, swishApart);
  });
  // Our own depthwise kernel (DepthwiseDirect.h): in blocks of 16, and
  // channels-last when the input is, weighted as oneDNN's in those.
  considerBuilt("own depthwise nChw16c", 0.9, [&](bool swishApart) {
    return ownDepthwise(x, w, geo, false, swishApart);
  });
  if (isChannelsLast(x))
    considerBuilt("own depthwise nhwc", 1, [&](bool swishApart) {
      return ownDepthwise(x, w, geo, true, swishApart);
    });
  if (!best && ctx->acceptConvCandidate)
    return kernelError("no convolution candidate for " + x.typeString() +
                       " by " + w.typeString() + " passes the filter");
  if (!best)
    return fallback();
  return std::move(*best);
}

/// Bytes per second at which a run reads its weights from memory: the
/// read bandwidth of two cores of the AVX2 host of docs/benchmarks.md.
/// Timing repeats a run, so its weights come from cache; in a network
/// whose weights outgrow the cache they come from memory each time. The
/// charge matters where candidates' weights differ in size: Winograd's
/// are 4x the plain ones (ResNet-18's 7x7 layers: 38 MB against 9 MB).
constexpr double kWeightBytesPerSecond = 15e9;

/// A run of `e` on zeros (bestSeconds), plus the reorder of `x` into its
/// source format and the read of its weights from memory, in seconds.
double ConvKernel::secondsPerRun(const ConvEntry &e, const Tensor &x,
                                 const Tensor &w, const Tensor *b) {
  const CPUContextPtr &ctx = cache.context();
  Tensor src = allocate(e.srcMd, x.shape(), ctx);
  Tensor dst = allocate(e.dstMd, e.outShape, ctx);
  // Zeros, not whatever the buffers held: denormals would skew the timing,
  // and the sum post-op reads the destination.
  std::memset(src.rawData(), 0, src.bytes());
  std::memset(dst.rawData(), 0, dst.bytes());
  Tensor packed =
      e.weights.isNull() ? packWeights(w, e, ctx, params.group) : e.weights;
  Tensor bias = b ? plainOf(*b, ctx) : Tensor();
  PrimitiveArgs args;
  return bestSeconds(
             [&] { execute(e, args, src, packed, b ? &bias : nullptr, dst); }) +
         reorderSeconds(x, e.srcMd, ctx) +
         packed.bytes() / kWeightBytesPerSecond;
}

void ConvKernel::execute(const ConvEntry &e, PrimitiveArgs &args,
                         const Tensor &src, const Tensor &packed,
                         const Tensor *bias, Tensor &dst) {
  const CPUContextPtr &ctx = cache.context();
  if (e.depthwise) {
    depthwiseDirect(src.data<float>(), packed.data<float>(),
                    bias ? bias->data<float>() : nullptr, dst.data<float>(),
                    *e.depthwise, e.epilogue);
  } else if (e.winograd) {
    winogradConv(src.data<float>(), packed.data<float>(),
                 bias ? bias->data<float>() : nullptr, dst.data<float>(),
                 *e.winograd, e.epilogue, params.sum);
  } else if (e.pointwise) {
    pointwiseConvAVX2(src.data<float>(), packed.data<float>(),
                      bias ? bias->data<float>() : nullptr, dst.data<float>(),
                      *e.pointwise, e.epilogue, params.sum);
  } else if (e.stem) {
    stemConvAVX2(src.data<float>(), packed.data<float>(),
                 bias ? bias->data<float>() : nullptr, dst.data<float>(),
                 *e.stem, e.epilogue, params.sum);
  } else if (e.narrowGroups) {
    narrowGroupConv(src.data<float>(), packed.data<float>(),
                    bias ? bias->data<float>() : nullptr, dst.data<float>(),
                    *e.narrowGroups, e.epilogue);
  } else {
    const dnnl::engine &engine = ctx->engine;
    args.set(DNNL_ARG_SRC, e.srcMd, src.rawData(), engine);
    args.set(DNNL_ARG_WEIGHTS, e.weightsMd, packed.rawData(), engine);
    args.set(DNNL_ARG_DST, e.dstMd, dst.rawData(), engine);
    if (bias)
      args.set(DNNL_ARG_BIAS, e.biasMd, bias->rawData(), engine);
    args.setScratchpad(e.scratchpadMd, *ctx);
    e.primitive.execute(ctx->stream, args.get());
    ctx->stream.wait();
  }
  swishIfApart(e.swishApart, dst, e.dstMd);
}

/// An entry for one of our own kernels, from `x` in `srcTag` to `out` in
/// `dstTag`; the caller sets the kernel's shape and packs the weights.
static ConvEntry ownEntry(const Tensor &x, const Shape &out, Tag srcTag,
                          Tag dstTag, bool swishApart, ConvEpilogue epilogue) {
  ConvEntry e;
  e.srcMd = memory::desc(toDims(x.shape()), memory::data_type::f32, srcTag);
  e.dstMd = memory::desc(toDims(out), memory::data_type::f32, dstTag);
  e.outShape = out;
  e.swishApart = swishApart;
  e.epilogue = epilogue;
  return e;
}

std::optional<ConvEntry> ConvKernel::ownDepthwise(const Tensor &x,
                                                  const Tensor &w,
                                                  const ConvGeometry &geo,
                                                  bool channelsLast,
                                                  bool swishApart) {
  // One filter per channel, square, undilated, stride the same both ways.
  int64_t c = x.dim(1), k = w.dim(2);
  bool square = w.dim(3) == k && geo.strides[0] == geo.strides[1];
  bool undilated = geo.dilations[0] == 0 && geo.dilations[1] == 0;
  if (params.sum || params.group != c || w.dim(0) != c || w.dim(1) != 1 ||
      !square || !undilated || !depthwiseDirectRuns(k, geo.strides[0]))
    return std::nullopt;
  std::optional<ConvEpilogue> epilogue =
      convEpilogueOf(swishApart ? params.postOpsBeforeSwish : params.postOps);
  if (!epilogue)
    return std::nullopt;
  const Shape &out = geo.outShape;
  Tag tag = channelsLast ? Tag::nhwc : Tag::nChw16c;
  ConvEntry e = ownEntry(x, out, tag, tag, swishApart, *epilogue);
  e.depthwise = DepthwiseShape{
      x.dim(0),       c,           x.dim(2),    x.dim(3),    out[2], out[3], k,
      geo.strides[0], geo.padL[0], geo.padL[1], channelsLast};
  if (constantWeights)
    e.weights = packWeights(w, e, cache.context(), params.group);
  return e;
}

std::optional<ConvEntry> ConvKernel::ownNarrowGroups(const Tensor &x,
                                                     const Tensor &w,
                                                     const ConvGeometry &geo,
                                                     bool swishApart) {
  int64_t c = x.dim(1);
  if (params.sum || !narrowGroupConvTakes(geo, w.shape(), c, params.group))
    return std::nullopt;
  std::optional<ConvEpilogue> epilogue =
      convEpilogueOf(swishApart ? params.postOpsBeforeSwish : params.postOps);
  if (!epilogue)
    return std::nullopt;
  ConvEntry e = ownEntry(x, geo.outShape, Tag::nChw16c, Tag::nChw16c,
                         swishApart, *epilogue);
  e.narrowGroups = NarrowGroupShape{x.dim(0), c, x.dim(2), x.dim(3), w.dim(1)};
  if (constantWeights)
    e.weights = packWeights(w, e, cache.context(), params.group);
  return e;
}

std::optional<ConvEntry> ConvKernel::ownWinograd(const Tensor &x,
                                                 const Tensor &w,
                                                 const ConvGeometry &geo,
                                                 int64_t block,
                                                 bool swishApart) {
  // A NaN or infinity would spread over its whole 6x6 tile; weights
  // computed at run time would be transformed on every run.
  if (cache.context()->propagateNaN || !constantWeights)
    return std::nullopt;
  std::optional<ConvEpilogue> epilogue = convEpilogueOf(
      swishApart ? params.postOpsBeforeSwish : params.postOps, params.sum);
  // Channels per group.
  int64_t groups = params.group, c = x.dim(1) / groups, k = w.dim(0) / groups;
  if (!epilogue || !winogradConvRuns(c, k, *epilogue, block))
    return std::nullopt;
  // Below this many multiply-adds the direct algorithm's exact sums cost
  // at most some 50 us more: not worth Winograd's last-bits differences.
  constexpr int64_t kMinMultiplyAdds = 5'000'000;
  const Shape &out = geo.outShape;
  if (out[0] * out[2] * out[3] * groups * k * c * 9 < kMinMultiplyAdds)
    return std::nullopt;
  Tag tag = block == 16 ? Tag::nChw16c : Tag::nChw8c;
  ConvEntry e = ownEntry(x, out, tag, tag, swishApart, *epilogue);
  e.winograd =
      WinogradShape{x.dim(0), c,           x.dim(2),    x.dim(3), k,     out[2],
                    out[3],   geo.padL[0], geo.padL[1], block,    groups};
  e.weights = packWeights(w, e, cache.context(), params.group);
  return e;
}

std::optional<ConvEntry> ConvKernel::ownPointwise(const Tensor &x,
                                                  const Tensor &w,
                                                  const ConvGeometry &geo,
                                                  bool swishApart) {
  bool oneByOne = params.group == 1 && w.dim(2) == 1 && w.dim(3) == 1 &&
                  geo.strides[0] == 1 && geo.strides[1] == 1 &&
                  llvm::all_of(geo.padL, [](int64_t p) { return p == 0; }) &&
                  llvm::all_of(geo.padR, [](int64_t p) { return p == 0; });
  if (!oneByOne || !constantWeights)
    return std::nullopt;
  std::optional<ConvEpilogue> epilogue = convEpilogueOf(
      swishApart ? params.postOpsBeforeSwish : params.postOps, params.sum);
  int64_t c = x.dim(1), k = w.dim(0), pixels = x.dim(2) * x.dim(3);
  // Larger images than 28x28 at batch 1 ran it no faster than oneDNN's
  // kernel (benchmarks/machine/pointwise-sgemm.sh): not worth the timing.
  if (!epilogue || c % 8 || !directConvAVX2Runs(k, *epilogue) ||
      x.dim(0) * pixels > 28 * 28)
    return std::nullopt;
  ConvEntry e = ownEntry(x, geo.outShape, Tag::nChw8c, Tag::nChw8c, swishApart,
                         *epilogue);
  e.pointwise = PointwiseShape{x.dim(0), c, k, pixels};
  e.weights = packWeights(w, e, cache.context(), params.group);
  return e;
}

std::optional<ConvEntry> ConvKernel::ownStem(const Tensor &x, const Tensor &w,
                                             const ConvGeometry &geo,
                                             bool swishApart) {
  bool undilated = geo.dilations[0] == 0 && geo.dilations[1] == 0;
  if (params.group != 1 || !undilated || geo.strides[0] != geo.strides[1] ||
      !stemConvAVX2Takes(x.dim(1)) || !constantWeights)
    return std::nullopt;
  std::optional<ConvEpilogue> epilogue = convEpilogueOf(
      swishApart ? params.postOpsBeforeSwish : params.postOps, params.sum);
  if (!epilogue || !directConvAVX2Runs(w.dim(0), *epilogue))
    return std::nullopt;
  const Shape &out = geo.outShape;
  ConvEntry e = ownEntry(x, out, Tag::nchw, Tag::nChw8c, swishApart, *epilogue);
  e.stem = StemShape{x.dim(0),    x.dim(1),    x.dim(2), x.dim(3),
                     w.dim(0),    w.dim(2),    w.dim(3), geo.strides[0],
                     geo.padL[0], geo.padL[1], out[2],   out[3]};
  e.weights = packWeights(w, e, cache.context(), params.group);
  return e;
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
    Tensor packed = e.weights.isNull()
                        ? packWeights(*inputs[1], e, ctx, params.group)
                        : e.weights;
    Tensor dst;
    if (params.sum) {
      const Tensor &addend = *inputs[3];
      if (llvm::Error err = checkSummedInput(addend, e.outShape))
        return err;
      // The primitive accumulates into dst: into the addend's buffer only
      // when nothing else reads it (`src` holds a reference when it is the
      // addend).
      bool reuse = addend.ownsBufferAlone();
      dst = reorderTo(addend, e.dstMd, ctx);
      if (dst.rawData() == addend.rawData() && !reuse)
        dst = dst.clone();
    } else {
      dst = destination(outputs[0], e.dstMd, e.outShape, ctx);
    }
    Tensor bias = b ? plainOf(*b, ctx) : Tensor();
    execute(e, e.args, src, packed, b ? &bias : nullptr, dst);
    outputs[0] = std::move(dst);
    return llvm::Error::success();
  });
}

std::unique_ptr<Kernel> cpu::createConvKernel(CPUContextPtr ctx,
                                              ConvParams params,
                                              bool constantWeights) {
  return std::make_unique<ConvKernel>(std::move(ctx), std::move(params),
                                      constantWeights);
}

void cpu::registerConvKernel(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "Conv",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (info.hasInput(6))
          return createInvertedResidual(info, ctx);
        if (info.hasInput(4))
          return createDepthwiseFusedConv(info, ctx);
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
        if (llvm::Error e = appendConvActivation(info.attrs, params))
          return e;
        return createConvKernel(ctx, std::move(params),
                                info.constants[1] != nullptr);
      });
}

llvm::Error cpu::appendConvActivation(const OpAttributes &attrs,
                                      ConvParams &params,
                                      llvm::StringRef name) {
  llvm::Expected<std::string> type = attrs.getString(name, "");
  if (!type)
    return type.takeError();
  params.swishLast = *type == "Swish";
  // post_ops is a handle (a copy would share the list appended to below):
  // the list before the activation is at most the sum.
  if (params.swishLast) {
    params.postOpsBeforeSwish = dnnl::post_ops();
    if (params.sum)
      params.postOpsBeforeSwish.append_sum(1.f);
  }
  return appendFusedActivation(attrs, params.postOps, name);
}
