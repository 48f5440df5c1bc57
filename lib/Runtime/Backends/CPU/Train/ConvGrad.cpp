//===- ConvGrad.cpp - Conv forward and backward on oneDNN -----------------===//
//
// Forward, backward-data and backward-weights primitives are created
// together per input shape, each with format_tag::any so oneDNN picks its
// blocked formats. Shapes that oneDNN's Winograd F(4x4, 3x3) takes
// (ConvGeometry::winogradShape) use it for all three when they have at
// least 32 output tiles (4x4) per thread: on ResNet-18's and SqueezeNet's
// 3x3 convolutions forward plus both backwards ran 1.1-2.4x faster than
// the direct algorithm with 64 tiles or more per thread, but 0.82x with 16
// (ResNet-18's 7x7 images at batch 8 on 2 threads: too little work to share
// out). A rule, not a timing, so training stays deterministic. Where
// oneDNN has no Winograd (AVX2 hosts), our own (WinogradConv.h) runs the
// forward and both backwards of those shapes when oneDNN's direct
// primitives read and write 8-channel blocks, with the weights transformed
// each step and their gradient plain: the forward and the backward-data
// from 16 tiles per thread (ResNet's 7x7x512 layers at batch 8 on 2
// threads: 2.3x the direct forward), the weight gradient from 32 (0.84x
// at 16: its sums over the transformed weights' 36 positions cost more
// than the few tiles save); an input or gradient that holds NaN
// or infinities takes the direct primitives, whose sums keep an infinity
// an infinity where Winograd's transforms would turn it into NaN over its
// tile (a diverging step then fails as before). oneDNN's weight
// gradient comes back in the forward's weights format, and the optimizer
// updates the weights in that format (Optimizer::update), so from the
// second step on the forward reads them as they are; backward-data reorders
// them only when its format differs (ResNet-18's 512-channel convolutions).
// Grouped convolutions keep plain weights and gradients; 3x3 ones with
// groups of 4 or 8 channels at stride 1 run on our own AVX-512 kernels in
// 16-channel blocks (NarrowGroupConv.h: ResNeXt-50's first two stages),
// other groups of 4 or 8 merged into groups of 16 (GroupWidening.h: its
// first stage had its weight gradient on oneDNN's gemm fallback), 3x3
// ones at stride 1 with groups of whole channel blocks on our own
// Winograd in oneDNN's blocks where it pays (wide groups, large images:
// RegNet's; oneDNN's Winograd takes no groups), the weights transformed
// each step as on AVX2 hosts; a
// depthwise one's weight gradient is our own (DepthwiseWeightGrad.h) where
// oneDNN has only its gemm fallback. A fused Relu (fuseTrainableActivations)
// is an eltwise post-op of the forward; the
// backward masks the incoming gradient with the output (oneDNN's
// relu_use_dst_for_bwd) before the two convolution backwards, so the
// forward saves the Relu's pass over the output; the MaxPool after it
// applies the mask instead when moveReluMasksToMaxPools says so (Fusion.h).
// An optional fourth input is summed into the result before the Relu
// (oneDNN's sum post-op; splitConcatConvs makes such Convs); its gradient
// is the output's.
// The input's gradient is skipped when nothing needs it (the first layer's
// image).
//
//===----------------------------------------------------------------------===//

#include "../CPUKernels.h"
#include "../ConvGeometry.h"
#include "../GroupWidening.h"
#include "../NarrowGroupConv.h"
#include "../WinogradConv.h"
#include "DepthwiseWeightGrad.h"
#include "TrainKernels.h"

#include "heterps/Runtime/NonFinite.h"

#include <omp.h>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::addScratchpad;
using cpu::allocate;
using cpu::kernelError;
using cpu::memoryOf;
using cpu::plainDesc;
using cpu::reorderTo;
using cpu::toDims;

namespace {

struct ConvGradEntry {
  dnnl::convolution_forward forward;
  dnnl::convolution_forward::primitive_desc forwardPd;
  dnnl::convolution_backward_data backwardData;
  dnnl::convolution_backward_data::primitive_desc backwardDataPd;
  dnnl::convolution_backward_weights backwardWeights;
  dnnl::convolution_backward_weights::primitive_desc backwardWeightsPd;
  /// Plain weights with the group split out (G, M/G, C/G, k...).
  memory::desc plainWeightsMd;
  Shape outShape;
  /// Groups merged into one (GroupWidening.h); 1: none.
  int64_t widening = 1;
  /// With a fused Relu: its backward, on the forward's destination format.
  std::optional<dnnl::eltwise_backward> reluBackward;
  /// A depthwise convolution whose weight gradient oneDNN would compute
  /// with its gemm fallback: computed by depthwiseWeightGrad instead, in
  /// the forward's source layout (channel block `depthwiseBlock`).
  std::optional<DepthwiseWindow> depthwise;
  int64_t depthwiseBlock = 0;
  /// Set when our own Winograd runs the forward and the backward-data in
  /// place of `forward` and `backwardData`: their shapes.
  std::optional<cpu::WinogradShape> winograd, winogradBackward;
  /// Our own Winograd runs the weight gradient too (more tiles).
  bool winogradWeights = false;
  /// Set when our own kernels (NarrowGroupConv.h) run the forward and both
  /// backwards, in 16-channel blocks.
  std::optional<cpu::NarrowGroupShape> narrowGroups;
};

class ConvGradKernel : public TrainKernel {
public:
  ConvGradKernel(CPUContextPtr ctx, ConvAttrs attrs, bool relu,
                 bool reluMaskedLater)
      : cache(std::move(ctx)), attrs(std::move(attrs)), relu(relu),
        reluMaskedLater(reluMaskedLater) {}
  bool differentiable(int i) const override { return i <= 3; }
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  llvm::Expected<ConvGradEntry> make(const Tensor &x, const Tensor &w,
                                     bool bias, bool sum);
  Tensor pack(const Tensor &w, const memory::desc &md) const;
  /// The weight gradient `dw` (backward-weights' format) in the forward's
  /// weights format, so that the optimizer updates the weights in the
  /// format the next forward reads; plain for grouped convolutions, whose
  /// blocked formats have a dimension more than the weights.
  Tensor weightGradient(const Tensor &dw, const Shape &shape) const;

  /// The forward and backward on NarrowGroupConv.h's kernels.
  void narrowForward(const Tensor &x, const Tensor &w, const Tensor *b,
                     Tensor &output);
  void narrowBackward(llvm::ArrayRef<const Tensor *> inputs,
                      const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                      llvm::MutableArrayRef<Tensor> dInputs);

  /// dOutput, masked by the fused Relu's output when there is one and the
  /// MaxPool after it did not mask it already.
  Tensor reluGradient(const Tensor &output, const Tensor &dOutput) const;

  cpu::PrimitiveCache<ConvGradEntry> cache;
  ConvAttrs attrs;
  bool relu;
  /// The gradient comes masked (attribute `relu_grad_masked`).
  bool reluMaskedLater;
  ConvGradEntry *entry = nullptr;
  /// The forward's source in the primitive's format, for backward-weights.
  Tensor src;
  /// The forward's packed weights, which backward-data reuses when it reads
  /// the same format (the weights do not change between the two).
  Tensor packedWeights;
  /// When our own Winograd ran the forward: the step's weights, plain.
  Tensor plainWeights;
};

} // namespace

/// `shape` in 16-channel blocks.
static memory::desc blocked16(const Shape &shape) {
  return memory::desc(toDims(shape), memory::data_type::f32, Tag::nChw16c);
}

/// Whether a Winograd shape has at least `perThread` 4x4 output tiles per
/// thread, to pay for its transforms (see the file comment).
static bool winogradPays(const cpu::ConvGeometry &geo, int64_t perThread = 32) {
  const Shape &out = geo.outShape;
  int64_t tiles = out[0] * ((out[2] + 3) / 4) * ((out[3] + 3) / 4);
  return tiles >= perThread * omp_get_max_threads();
}

/// Whether our own Winograd pays for a grouped convolution's forward and
/// backward-data with `c` channels a group: it runs 8 lanes a vector, as
/// many FLOPs a cycle as oneDNN's AVX-512 kernels on this AMD EPYC, and
/// its 4x fewer multiplications pay on wide groups and large images only
/// (benchmarks/machine/winograd-train.sh, batch 8: 2.2-2.5x oneDNN's speed
/// on 48-channel groups at 28x28 and 56x56, 1.3x at 14x14, 1.2x at 7x7
/// but slower in RegNet-X-3.2GF, where transforming 21 groups' weights
/// each step costs more; 16-channel groups 1.2-2.3x at 28x28 and more,
/// 0.7x at 14x14; 24-channel groups in blocks of 8 1.7x at 28x28, 1.1x at
/// 14x14).
static bool groupedWinogradPays(const cpu::ConvGeometry &geo, int64_t c) {
  const Shape &out = geo.outShape;
  int64_t side = std::min(out[2], out[3]);
  // Groups narrower than 16 channels (ResNeXt's 8 on AVX2 hosts) were not
  // measured: their transforms would outweigh the products.
  return winogradPays(geo, 16) && c >= 16 &&
         (side >= 28 || (c >= 48 && side >= 14));
}

/// Whether it pays for the weight gradient too: 1.7-1.9x on 48-channel
/// groups at 28x28 and 56x56, 0.6-1.2x at 14x14 and on narrower groups.
static bool groupedWinogradWeightsPay(const cpu::ConvGeometry &geo, int64_t c) {
  const Shape &out = geo.outShape;
  return c >= 48 && out[2] >= 28 && out[3] >= 28;
}

/// The shape our own Winograd runs a convolution in where oneDNN took its
/// direct algorithm, if it does (see the file comment): ungrouped ones in
/// blocks of 8 (oneDNN has no Winograd on AVX2 hosts), grouped ones (its
/// Winograd takes no groups) in the blocks oneDNN chose, 16 channels or,
/// for groups of 24 (RegNet-Y's), 8, each group a whole number of blocks.
static std::optional<cpu::WinogradShape>
ownWinograd(const cpu::ConvGeometry &geo, int64_t groups, const Shape &x,
            int64_t m, const dnnl::convolution_forward::primitive_desc &fwd,
            const dnnl::convolution_backward_data::primitive_desc &bwdData) {
  if (!geo.winogradWindow ||
      llvm::StringRef(fwd.impl_info_str()).contains("wino"))
    return std::nullopt;
  std::optional<int64_t> chosen = cpu::channelBlockOf(fwd.src_desc(), x);
  int64_t block = groups == 1 || !chosen ? 8 : *chosen;
  int64_t c = x[1] / groups, k = m / groups;
  const Shape &out = geo.outShape;
  auto blocked = [&](const Shape &shape) {
    return memory::desc(toDims(shape), memory::data_type::f32,
                        block == 8 ? Tag::nChw8c : Tag::nChw16c);
  };
  bool pays = groups == 1 ? winogradPays(geo, 16) : groupedWinogradPays(geo, c);
  if (!pays || !cpu::winogradConvRuns(c, k, {}, block) ||
      fwd.src_desc() != blocked(x) || fwd.dst_desc() != blocked(out) ||
      bwdData.diff_src_desc() != blocked(x) ||
      bwdData.diff_dst_desc() != blocked(out))
    return std::nullopt;
  return cpu::WinogradShape{x[0],        c,      x[2],   x[3],
                            k,           out[2], out[3], geo.padL[0],
                            geo.padL[1], block,  groups};
}

llvm::Expected<ConvGradEntry>
ConvGradKernel::make(const Tensor &x, const Tensor &w, bool bias, bool sum) {
  llvm::Expected<cpu::ConvGeometry> geometry = cpu::convGeometry(attrs, x, w);
  if (!geometry)
    return geometry.takeError();
  cpu::ConvGeometry &geo = *geometry;
  int64_t m = w.dim(0);
  int64_t widening =
      cpu::groupWidening(attrs.group, w.shape(), cpu::nativeChannelBlock());
  cpu::mergeGroupDims(geo.weightDims, widening);
  auto any = [](const memory::dims &d) {
    return memory::desc(d, memory::data_type::f32, Tag::any);
  };
  memory::desc biasMd =
      bias ? memory::desc({m}, memory::data_type::f32, Tag::a) : memory::desc();
  dnnl::primitive_attr attr, forwardAttr;
  cpu::useCallerScratchpad(attr);
  cpu::useCallerScratchpad(forwardAttr);
  dnnl::post_ops ops;
  if (sum)
    ops.append_sum(1.f);
  if (relu)
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  forwardAttr.set_post_ops(ops);
  const dnnl::engine &engine = cache.context()->engine;
  memory::desc srcMd = any(toDims(x.shape())), wMd = any(geo.weightDims),
               dstMd = any(toDims(geo.outShape));
  auto make = [&](dnnl::algorithm algorithm) {
    dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_training, algorithm, srcMd, wMd, biasMd,
            dstMd, geo.strides, geo.dilations, geo.padL, geo.padR),
        forwardAttr, engine);
    dnnl::convolution_backward_data::primitive_desc bwdData(
        dnnl::convolution_backward_data::desc(algorithm, srcMd, wMd, dstMd,
                                              geo.strides, geo.dilations,
                                              geo.padL, geo.padR),
        attr, engine, fwd);
    dnnl::convolution_backward_weights::primitive_desc bwdWeights(
        dnnl::convolution_backward_weights::desc(
            algorithm, srcMd, wMd, biasMd, dstMd, geo.strides, geo.dilations,
            geo.padL, geo.padR),
        attr, engine, fwd);
    return std::make_tuple(fwd, bwdData, bwdWeights);
  };
  auto pds = [&] {
    if (geo.winogradShape && winogradPays(geo)) {
      try {
        return make(dnnl::algorithm::convolution_winograd);
      } catch (const dnnl::error &) {
        // no Winograd implementation for this shape: the direct algorithm
      }
    }
    return make(dnnl::algorithm::convolution_direct);
  }();
  auto &[fwd, bwdData, bwdWeights] = pds;
  ConvGradEntry entry{dnnl::convolution_forward(fwd),
                      fwd,
                      dnnl::convolution_backward_data(bwdData),
                      bwdData,
                      dnnl::convolution_backward_weights(bwdWeights),
                      bwdWeights,
                      plainDesc(geo.weightDims),
                      geo.outShape,
                      widening};
  std::optional<int64_t> block = cpu::channelBlockOf(fwd.src_desc(), x.shape());
  bool depthwise = x.rank() == 4 && w.rank() == 4 && w.dim(1) == 1 &&
                   attrs.group == x.dim(1) && w.dim(0) == x.dim(1);
  if (depthwise && block &&
      std::string(bwdWeights.impl_info_str()).find("gemm") !=
          std::string::npos) {
    entry.depthwise = DepthwiseWindow{x.dim(0),
                                      x.dim(1),
                                      x.dim(2),
                                      x.dim(3),
                                      geo.outShape[2],
                                      geo.outShape[3],
                                      w.dim(2),
                                      w.dim(3),
                                      geo.strides[0],
                                      geo.strides[1],
                                      geo.padL[0],
                                      geo.padL[1],
                                      geo.dilations[0] + 1,
                                      geo.dilations[1] + 1};
    entry.depthwiseBlock = *block;
  }
  if (std::optional<cpu::WinogradShape> own =
          ownWinograd(geo, attrs.group, x.shape(), m, fwd, bwdData)) {
    const cpu::WinogradShape &s = *own;
    entry.winograd = s;
    entry.winogradBackward = cpu::WinogradShape{
        s.n, s.k,          s.oh,          s.ow,    s.c,     s.h,
        s.w, 2 - s.padTop, 2 - s.padLeft, s.block, s.groups};
    entry.winogradWeights =
        s.groups > 1 ? groupedWinogradWeightsPay(geo, s.c) : winogradPays(geo);
  }
  if (!sum && cpu::narrowGroupConvTakes(geo, w.shape(), x.dim(1), attrs.group))
    entry.narrowGroups =
        cpu::NarrowGroupShape{x.dim(0), x.dim(1), x.dim(2), x.dim(3), w.dim(1)};
  if (relu) {
    auto alg = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
    dnnl::eltwise_forward::primitive_desc hint(
        {dnnl::prop_kind::forward_training, alg, fwd.dst_desc(), 0.f}, engine);
    entry.reluBackward =
        dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(
            {alg, fwd.dst_desc(), fwd.dst_desc(), 0.f}, engine, hint));
  }
  return entry;
}

Tensor ConvGradKernel::reluGradient(const Tensor &output,
                                    const Tensor &dOutput) const {
  if (!relu || reluMaskedLater)
    return dOutput;
  const CPUContextPtr &ctx = cache.context();
  const memory::desc &md = entry->forwardPd.dst_desc();
  // In place when nothing else holds the gradient (OpSequence hands over
  // its only reference): no fresh buffer to bring into the cache.
  bool inPlace = dOutput.ownsBufferAlone() && cpu::descOf(dOutput) == md;
  Tensor y = reorderTo(output, md, ctx), dy = reorderTo(dOutput, md, ctx);
  Tensor masked = inPlace ? dy : allocate(md, output.shape(), ctx);
  entry->reluBackward->execute(ctx->stream,
                               {{DNNL_ARG_DST, memoryOf(y, *ctx)},
                                {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
                                {DNNL_ARG_DIFF_SRC, memoryOf(masked, *ctx)}});
  ctx->stream.wait();
  return masked;
}

/// Weights `w` in `md`: `w` itself when it is in `md` already (the trainer
/// keeps them in the layout of their gradient, the forward's), else a copy.
Tensor ConvGradKernel::pack(const Tensor &w, const memory::desc &md) const {
  const CPUContextPtr &ctx = cache.context();
  if (!w.isPlain() || cpu::descOf(w) == md)
    return reorderTo(w, md, ctx);
  // Plain weights, read with the group split out.
  Tensor plain = entry->widening > 1
                     ? cpu::widenGroupWeights(w, attrs.group, entry->widening)
                     : w;
  Tensor packed = allocate(md, plain.shape(), ctx);
  memory from(entry->plainWeightsMd, ctx->engine,
              const_cast<void *>(plain.rawData()));
  memory to(md, ctx->engine, packed.rawData());
  dnnl::reorder(from, to).execute(ctx->stream, from, to);
  return packed;
}

Tensor ConvGradKernel::weightGradient(const Tensor &dw,
                                      const Shape &shape) const {
  const CPUContextPtr &ctx = cache.context();
  const memory::desc &from = entry->backwardWeightsPd.diff_weights_desc();
  bool grouped = entry->plainWeightsMd.dims().size() != shape.size();
  memory::desc to =
      grouped ? entry->plainWeightsMd : entry->forwardPd.weights_desc();
  if (from == to && !grouped)
    return dw;
  int64_t widening = entry->widening;
  Shape outShape = shape;
  outShape[1] *= widening;
  Tensor out =
      grouped ? Tensor(DType::F32, outShape) : allocate(to, outShape, ctx);
  memory src(from, ctx->engine, const_cast<void *>(dw.rawData()));
  memory dst(to, ctx->engine, out.rawData());
  dnnl::reorder(src, dst).execute(ctx->stream, src, dst);
  ctx->stream.wait();
  return widening > 1 ? cpu::narrowGroupWeights(out, attrs.group, widening)
                      : out;
}

llvm::Error ConvGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                    Tensor &output) {
  if (llvm::Error e = cpu::checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor *b = inputs.size() > 2 ? inputs[2] : nullptr;
    const Tensor *addend = inputs.size() > 3 ? inputs[3] : nullptr;
    auto got = cache.get(cpu::shapeKey(inputs.take_front(2)), [&] {
      return make(*inputs[0], *inputs[1], b != nullptr, addend != nullptr);
    });
    if (!got)
      return got.takeError();
    entry = *got;
    if (entry->narrowGroups) {
      narrowForward(*inputs[0], *inputs[1], b, output);
      return llvm::Error::success();
    }
    const auto &pd = entry->forwardPd;
    src = reorderTo(*inputs[0], pd.src_desc(), ctx);
    bool own = entry->winograd && !hasNonFinite(src);
    plainWeights = own ? cpu::plainOf(*inputs[1], ctx) : Tensor();
    packedWeights = own ? Tensor() : pack(*inputs[1], pd.weights_desc());
    if (addend) {
      if (llvm::Error e = checkSummedInput(*addend, entry->outShape))
        return e;
      // The primitive accumulates into the output: a copy, as the addend
      // stays for its producer's backward.
      output = reorderTo(*addend, pd.dst_desc(), ctx);
      if (output.rawData() == addend->rawData())
        output = output.clone();
    } else {
      output = allocate(pd.dst_desc(), entry->outShape, ctx);
    }
    if (own) {
      Tensor bias = b ? cpu::plainOf(*b, ctx) : Tensor();
      cpu::winogradConv(
          src.data<float>(),
          cpu::packWinogradWeights(plainWeights, entry->winograd->groups)
              .data<float>(),
          b ? bias.data<float>() : nullptr, output.data<float>(),
          *entry->winograd,
          {relu ? cpu::ConvEpilogue::Relu : cpu::ConvEpilogue::None},
          addend != nullptr);
      return llvm::Error::success();
    }
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memoryOf(src, *ctx)},
        {DNNL_ARG_WEIGHTS,
         memory(pd.weights_desc(), ctx->engine, packedWeights.rawData())},
        {DNNL_ARG_DST, memoryOf(output, *ctx)}};
    if (b)
      args[DNNL_ARG_BIAS] = memoryOf(*b, *ctx);
    addScratchpad(pd.scratchpad_desc(), *ctx, args);
    entry->forward.execute(ctx->stream, args);
    ctx->stream.wait();
    return llvm::Error::success();
  });
}

llvm::Error ConvGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                     const Tensor &output,
                                     const Tensor &dOutputOfRelu,
                                     llvm::ArrayRef<bool> needGrad,
                                     llvm::MutableArrayRef<Tensor> dInputs) {
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    Tensor dOutput = reluGradient(output, dOutputOfRelu);
    if (entry->narrowGroups) {
      narrowBackward(inputs, dOutput, needGrad, dInputs);
      return llvm::Error::success();
    }
    // Our own Winograd's backwards read the gradient in the forward's
    // destination format; not when it (or, for the weights, the input:
    // then the forward was oneDNN's) holds NaN or infinities.
    bool own = false;
    if (entry->winograd) {
      dOutput = reorderTo(dOutput, entry->forwardPd.dst_desc(), ctx);
      own = !hasNonFinite(dOutput);
    }
    if (needGrad[0]) {
      const auto &pd = entry->backwardDataPd;
      Tensor dy = reorderTo(dOutput, pd.diff_dst_desc(), ctx);
      Tensor dx = allocate(pd.diff_src_desc(), inputs[0]->shape(), ctx);
      if (own) {
        Tensor plain = plainWeights.isNull() ? cpu::plainOf(*inputs[1], ctx)
                                             : plainWeights;
        cpu::winogradConv(
            dy.data<float>(),
            cpu::packWinogradBackwardWeights(plain, entry->winograd->groups)
                .data<float>(),
            nullptr, dx.data<float>(), *entry->winogradBackward, {}, false);
      } else {
        Tensor weights =
            !packedWeights.isNull() &&
                    pd.weights_desc() == entry->forwardPd.weights_desc()
                ? packedWeights
                : pack(*inputs[1], pd.weights_desc());
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
            {DNNL_ARG_WEIGHTS,
             memory(pd.weights_desc(), ctx->engine, weights.rawData())},
            {DNNL_ARG_DIFF_SRC, memoryOf(dx, *ctx)}};
        addScratchpad(pd.scratchpad_desc(), *ctx, args);
        entry->backwardData.execute(ctx->stream, args);
      }
      dInputs[0] = std::move(dx);
    }
    // The summed input's gradient is the output's.
    if (inputs.size() > 3 && inputs[3] && needGrad[3])
      dInputs[3] = dOutput;
    bool bias = inputs.size() > 2 && inputs[2];
    if (!needGrad[1] && !(bias && needGrad[2]))
      return llvm::Error::success();
    if (entry->depthwise) {
      // dy in the layout of the forward's source (`src`): as a rule the
      // forward's destination format already (both channel-blocked alike).
      memory::desc dyMd =
          entry->depthwiseBlock == 1
              ? plainDesc(entry->outShape)
              : memory::desc(toDims(entry->outShape), memory::data_type::f32,
                             entry->depthwiseBlock == 16 ? Tag::aBcd16b
                                                         : Tag::aBcd8b);
      Tensor dy = reorderTo(dOutput, dyMd, ctx);
      Tensor dw(DType::F32, inputs[1]->shape());
      Tensor db(DType::F32, {inputs[1]->dim(0)});
      depthwiseWeightGrad(*entry->depthwise, entry->depthwiseBlock,
                          src.data<float>(), dy.data<float>(), dw.data<float>(),
                          bias ? db.data<float>() : nullptr);
      if (needGrad[1])
        dInputs[1] = std::move(dw);
      if (bias && needGrad[2])
        dInputs[2] = std::move(db);
      return llvm::Error::success();
    }
    if (own && entry->winogradWeights && !plainWeights.isNull()) {
      Tensor dw(DType::F32, inputs[1]->shape());
      Tensor db(DType::F32, {inputs[1]->dim(0)});
      cpu::winogradWeightGradient(
          src.data<float>(), dOutput.data<float>(), dw.data<float>(),
          bias ? db.data<float>() : nullptr, *entry->winograd);
      if (needGrad[1])
        dInputs[1] = std::move(dw);
      if (bias && needGrad[2])
        dInputs[2] = std::move(db);
      return llvm::Error::success();
    }
    const auto &pd = entry->backwardWeightsPd;
    Tensor dy = reorderTo(dOutput, pd.diff_dst_desc(), ctx);
    Tensor x = reorderTo(src, pd.src_desc(), ctx);
    Shape wideShape = inputs[1]->shape();
    wideShape[1] *= entry->widening;
    Tensor dw = allocate(pd.diff_weights_desc(), wideShape, ctx);
    Tensor db(DType::F32, {inputs[1]->dim(0)});
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memoryOf(x, *ctx)},
        {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
        {DNNL_ARG_DIFF_WEIGHTS,
         memory(pd.diff_weights_desc(), ctx->engine, dw.rawData())}};
    if (bias)
      args[DNNL_ARG_DIFF_BIAS] = memoryOf(db, *ctx);
    addScratchpad(pd.scratchpad_desc(), *ctx, args);
    entry->backwardWeights.execute(ctx->stream, args);
    ctx->stream.wait();
    if (needGrad[1])
      dInputs[1] = weightGradient(dw, inputs[1]->shape());
    if (bias && needGrad[2])
      dInputs[2] = std::move(db);
    return llvm::Error::success();
  });
}

void ConvGradKernel::narrowForward(const Tensor &x, const Tensor &w,
                                   const Tensor *b, Tensor &output) {
  const CPUContextPtr &ctx = cache.context();
  const cpu::NarrowGroupShape &s = *entry->narrowGroups;
  src = reorderTo(x, blocked16(x.shape()), ctx);
  plainWeights = cpu::plainOf(w, ctx);
  output = allocate(blocked16(entry->outShape), entry->outShape, ctx);
  Tensor bias = b ? cpu::plainOf(*b, ctx) : Tensor();
  cpu::narrowGroupConv(
      src.data<float>(),
      cpu::packNarrowGroupWeights(plainWeights, s.width).data<float>(),
      b ? bias.data<float>() : nullptr, output.data<float>(), s,
      {relu ? cpu::ConvEpilogue::Relu : cpu::ConvEpilogue::None});
}

void ConvGradKernel::narrowBackward(llvm::ArrayRef<const Tensor *> inputs,
                                    const Tensor &dOutput,
                                    llvm::ArrayRef<bool> needGrad,
                                    llvm::MutableArrayRef<Tensor> dInputs) {
  const CPUContextPtr &ctx = cache.context();
  const cpu::NarrowGroupShape &s = *entry->narrowGroups;
  const Shape &shape = inputs[0]->shape();
  Tensor dy = reorderTo(dOutput, blocked16(shape), ctx);
  if (needGrad[0]) {
    Tensor dx = allocate(blocked16(shape), shape, ctx);
    cpu::narrowGroupConv(
        dy.data<float>(),
        cpu::packNarrowGroupWeights(plainWeights, s.width, /*backward=*/true)
            .data<float>(),
        nullptr, dx.data<float>(), s, {});
    dInputs[0] = std::move(dx);
  }
  bool bias = inputs.size() > 2 && inputs[2] && needGrad[2];
  if (!needGrad[1] && !bias)
    return;
  Tensor dw(DType::F32, inputs[1]->shape());
  Tensor db(DType::F32, {s.c});
  cpu::narrowGroupWeightGrad(src.data<float>(), dy.data<float>(),
                             dw.data<float>(),
                             bias ? db.data<float>() : nullptr, s);
  if (needGrad[1])
    dInputs[1] = std::move(dw);
  if (bias)
    dInputs[2] = std::move(db);
}

void train::registerConvGrad(TrainRegistry &registry) {
  registry["Conv"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    if (llvm::Error e = info.checkArity(2, 4))
      return e;
    llvm::Expected<bool> relu = cpu::fusesRelu(info.attrs, "a trained Conv");
    if (!relu)
      return relu.takeError();
    llvm::Expected<int64_t> masked = info.attrs.getInt("relu_grad_masked", 0);
    if (!masked)
      return masked.takeError();
    llvm::Expected<ConvAttrs> attrs = parseConvAttrs(info.attrs);
    if (!attrs)
      return attrs.takeError();
    return std::make_unique<ConvGradKernel>(env.ctx, std::move(*attrs), *relu,
                                            *masked != 0);
  };
}
