//===- InvertedResidualKernel.cpp - 1x1, depthwise and 1x1 Conv as one ---===//
//
// The whole inverted-residual block of the MobileNets, MnasNet and the
// EfficientNets, as fuseProjections (Fusion.h) leaves it: the widening 1x1
// Conv and its depthwise Conv (fuseDepthwiseConvs), then the 1x1 Conv that
// projects back to the narrow width, with the block's residual summed in.
// Our own kernel (PointwiseDepthwise.h) runs all three a few rows at a
// time, so that neither wide tensor goes to memory. Autotuning times it
// against the pair's kernel (DepthwiseFusedConvKernel.cpp) followed by the
// projection's Conv kernel, and keeps the faster; without autotuning, or
// where our kernel does not run, the two run one after the other.
//
//===----------------------------------------------------------------------===//

#include "ConvKernels.h"
#include "DepthwiseDirect.h"
#include "PointwiseDepthwise.h"

#include <optional>
#include <vector>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// Our own kernel's shapes and packed weights, or `own` empty: run apart.
struct BlockEntry {
  std::optional<PointwiseDepthwiseShape> own;
  int64_t projected = 0;
  Tensor pw, pwBias, dw, dwBias, proj, projBias;
  memory::desc srcMd, dstMd;
  Shape outShape;
};

/// The three activations as our own kernel applies them.
struct BlockEpilogues {
  ConvEpilogue pointwise, depthwise, projection;
};

class InvertedResidualKernel : public Kernel {
public:
  InvertedResidualKernel(CPUContextPtr ctx, std::unique_ptr<Kernel> pair,
                         std::unique_ptr<Kernel> projection,
                         std::optional<BlockEpilogues> epilogues,
                         int64_t stride)
      : cache(std::move(ctx)), pair(std::move(pair)),
        projection(std::move(projection)), epilogues(epilogues),
        stride(stride) {}
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  llvm::Expected<BlockEntry> make(llvm::ArrayRef<const Tensor *> inputs);
  /// Our own kernel for these shapes, if it runs them.
  std::optional<BlockEntry> makeOwn(llvm::ArrayRef<const Tensor *> inputs);
  void runOwn(const BlockEntry &e, llvm::ArrayRef<const Tensor *> inputs,
              Tensor &out);
  llvm::Error runApart(llvm::ArrayRef<const Tensor *> inputs, Tensor &out);

  PrimitiveCache<BlockEntry> cache;
  std::unique_ptr<Kernel> pair, projection;
  std::optional<BlockEpilogues> epilogues;
  int64_t stride;
};

} // namespace

std::optional<BlockEntry>
InvertedResidualKernel::makeOwn(llvm::ArrayRef<const Tensor *> inputs) {
  const Tensor &x = *inputs[0], &w = *inputs[1], &dwW = *inputs[4],
               &projW = *inputs[6];
  int64_t k = dwW.dim(2);
  if (!epilogues || x.rank() != 4 || !depthwiseDirectRuns(k, stride))
    return std::nullopt;
  const CPUContextPtr &ctx = cache.context();
  int64_t m = w.dim(0), projected = projW.dim(0);
  BlockEntry e;
  e.own = pointwiseDepthwiseShapeOf(x.shape(), m, k, stride);
  e.projected = projected;
  e.outShape = {x.dim(0), projected, e.own->oh, e.own->ow};
  e.srcMd =
      memory::desc(toDims(x.shape()), memory::data_type::f32, Tag::nChw16c);
  e.dstMd =
      memory::desc(toDims(e.outShape), memory::data_type::f32, Tag::nChw16c);
  auto bias = [&](const Tensor *b, int64_t n) {
    if (!b)
      return packPointwiseBias(nullptr, n);
    Tensor plain = plainOf(*b, ctx);
    return packPointwiseBias(&plain, n);
  };
  e.pw = packPointwiseWeights(plainOf(w, ctx));
  e.pwBias = bias(inputs[2], m);
  e.dw = packDepthwiseWeights(plainOf(dwW, ctx));
  e.dwBias = bias(inputs[5], m);
  e.proj = packPointwiseWeights(plainOf(projW, ctx));
  e.projBias = bias(inputs[7], projected);
  return e;
}

void InvertedResidualKernel::runOwn(const BlockEntry &e,
                                    llvm::ArrayRef<const Tensor *> inputs,
                                    Tensor &out) {
  const CPUContextPtr &ctx = cache.context();
  Tensor src = reorderTo(*inputs[0], e.srcMd, ctx);
  Tensor addend = inputs[8] ? reorderTo(*inputs[8], e.dstMd, ctx) : Tensor();
  out = allocate(e.dstMd, e.outShape, ctx);
  Projection projection{
      e.projected, e.proj.data<float>(), e.projBias.data<float>(),
      inputs[8] ? addend.data<float>() : nullptr, epilogues->projection};
  pointwiseDepthwise(
      src.data<float>(), e.pw.data<float>(), e.pwBias.data<float>(),
      epilogues->pointwise, e.dw.data<float>(), e.dwBias.data<float>(),
      epilogues->depthwise, out.data<float>(), *e.own, &projection);
}

llvm::Error
InvertedResidualKernel::runApart(llvm::ArrayRef<const Tensor *> inputs,
                                 Tensor &out) {
  Tensor mid;
  if (llvm::Error e =
          pair->run(inputs.take_front(6), llvm::MutableArrayRef<Tensor>(mid)))
    return e;
  const Tensor *projInputs[] = {&mid, inputs[6], inputs[7], inputs[8]};
  return projection->run(
      llvm::ArrayRef<const Tensor *>(projInputs, inputs[8] ? 4 : 3),
      llvm::MutableArrayRef<Tensor>(out));
}

llvm::Expected<BlockEntry>
InvertedResidualKernel::make(llvm::ArrayRef<const Tensor *> inputs) {
  const CPUContextPtr &ctx = cache.context();
  auto accepts = [&](llvm::StringRef name) {
    return !ctx->acceptConvCandidate || ctx->acceptConvCandidate(name);
  };
  std::optional<BlockEntry> own = makeOwn(inputs);
  if (!ctx->autotune || !own || !accepts("own inverted residual"))
    return BlockEntry();
  if (!accepts("apart"))
    return std::move(*own);
  // Timed on the inputs themselves, both charged the reorders into their
  // formats. The projection's Conv kernel may sum into the residual's
  // buffer, which would change it between runs: each run gets a copy.
  std::vector<const Tensor *> args(inputs.begin(), inputs.end());
  Tensor residual;
  auto copyResidual = [&] {
    if (inputs[8]) {
      residual = inputs[8]->clone();
      args[8] = &residual;
    }
  };
  Tensor out;
  copyResidual();
  if (llvm::Error err = runApart(args, out))
    return std::move(err);
  double apart = bestSeconds([&] {
    copyResidual();
    llvm::consumeError(runApart(args, out));
  });
  double fused = bestSeconds([&] {
    copyResidual();
    runOwn(*own, args, out);
  });
  if (apart < fused)
    return BlockEntry();
  return std::move(*own);
}

llvm::Error InvertedResidualKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                                        llvm::MutableArrayRef<Tensor> outputs) {
  if (llvm::Error e = checkF32(inputs))
    return e;
  return guardDnnl([&]() -> llvm::Error {
    auto entry =
        cache.get(shapeKey(inputs.take_front(8)), [&] { return make(inputs); });
    if (!entry)
      return entry.takeError();
    const BlockEntry &e = **entry;
    if (!e.own)
      return runApart(inputs, outputs[0]);
    if (inputs[8])
      if (llvm::Error err = checkSummedInput(*inputs[8], e.outShape))
        return err;
    runOwn(e, inputs, outputs[0]);
    return llvm::Error::success();
  });
}

llvm::Expected<std::unique_ptr<Kernel>>
cpu::createInvertedResidual(const OpInfo &info, CPUContextPtr ctx) {
  if (llvm::Error e = info.checkArity(2, 9))
    return e;
  const Tensor *projW = info.constants[6], *w = info.constants[1];
  if (!projW || !w || projW->rank() != 4 || projW->dim(1) != w->dim(0) ||
      projW->dim(2) != 1 || projW->dim(3) != 1 ||
      (info.hasInput(7) && !info.constants[7]))
    return kernelError("a Conv with a fused projection needs a constant 1x1 "
                       "projection weight of its width and a constant bias");
  // The pair: the same op less the projection's inputs.
  plan::Op pairOp = info.op;
  pairOp.mutable_inputs()->Truncate(6);
  std::vector<const Tensor *> pairConstants(info.constants.begin(),
                                            info.constants.begin() + 6);
  llvm::Expected<std::unique_ptr<Kernel>> pair =
      createDepthwiseFusedConv(OpInfo(pairOp, pairConstants), ctx);
  if (!pair)
    return pair.takeError();
  llvm::Expected<ConvAttrs> attrs = parseConvAttrs(info.attrs);
  if (!attrs)
    return attrs.takeError();
  auto stride = info.attrs.getInt("dw_stride", 1);
  if (!stride)
    return stride.takeError();
  // The projection is 1x1, stride 1, unpadded, ungrouped, as the pair's
  // first Conv (fuseProjections checks both).
  ConvParams proj, activationOnly;
  static_cast<ConvAttrs &>(proj) = *attrs;
  proj.sum = info.hasInput(8);
  if (proj.sum)
    proj.postOps.append_sum(1.f);
  for (ConvParams *p : {&proj, &activationOnly})
    if (llvm::Error e = appendConvActivation(info.attrs, *p, "proj_activation"))
      return e;
  // Our own kernel's epilogues, where it has all three activations.
  ConvParams pwActivation, dwActivation;
  if (llvm::Error e = appendConvActivation(info.attrs, pwActivation))
    return e;
  if (llvm::Error e =
          appendConvActivation(info.attrs, dwActivation, "dw_activation"))
    return e;
  std::optional<BlockEpilogues> epilogues;
  auto p = convEpilogueOf(pwActivation.postOps),
       d = convEpilogueOf(dwActivation.postOps),
       q = convEpilogueOf(activationOnly.postOps);
  if (p && d && q)
    epilogues = BlockEpilogues{*p, *d, *q};
  return std::make_unique<InvertedResidualKernel>(
      ctx, std::move(*pair),
      createConvKernel(ctx, std::move(proj), /*constantWeights=*/true),
      epilogues, *stride);
}
