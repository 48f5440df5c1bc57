//===- PoolGrad.cpp - pooling forward and backward on oneDNN --------------===//
//
// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool in the input's
// layout. Max pooling keeps oneDNN's workspace (the argmax of each window)
// from the forward for the backward. The window: ../CPU/PoolGeometry.h.
// A MaxPool with `grad_mask_relu` (moveReluMasksToMaxPools, Fusion.h) first
// zeroes its output gradient where its output is not > 0: the mask of the
// Relus before it, on a tensor a quarter of their size (SqueezeNet's 7x7
// stem at batch 8: 1.8 ms of oneDNN's Relu backward -> 0.3 ms).
//
//===----------------------------------------------------------------------===//

#include "../BinaryMath.h"
#include "../PoolGeometry.h"
#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::kernelError;
using cpu::memoryOf;
using cpu::toDims;

namespace {

struct PoolEntry {
  dnnl::pooling_v2_forward forward;
  dnnl::pooling_v2_forward::primitive_desc forwardPd;
  dnnl::pooling_v2_backward backward;
  dnnl::pooling_v2_backward::primitive_desc backwardPd;
  Shape outShape;
};

class PoolGradKernel : public TrainKernel {
public:
  PoolGradKernel(CPUContextPtr ctx, PoolAttrs attrs, bool maskRelu)
      : cache(std::move(ctx)), attrs(std::move(attrs)), maskRelu(maskRelu) {}
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  llvm::Expected<PoolEntry> make(const Tensor &x);

  cpu::PrimitiveCache<PoolEntry> cache;
  PoolAttrs attrs;
  /// Mask the output gradient with output > 0 (`grad_mask_relu`).
  bool maskRelu;
  PoolEntry *entry = nullptr;
  Tensor workspace;
};

} // namespace

llvm::Expected<PoolEntry> PoolGradKernel::make(const Tensor &x) {
  llvm::Expected<cpu::PoolGeometry> g = cpu::poolGeometry(attrs, x);
  if (!g)
    return g.takeError();
  const dnnl::engine &engine = cache.context()->engine;
  memory::desc srcMd = cpu::descOf(x);
  memory::desc dstMd(toDims(g->outShape), memory::data_type::f32, Tag::any);
  dnnl::pooling_v2_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, cpu::poolAlgorithm(attrs.kind), srcMd,
       dstMd, g->strides, g->kernel, g->dilations, g->padL, g->padR},
      engine);
  dnnl::pooling_v2_backward::primitive_desc bwd(
      {cpu::poolAlgorithm(attrs.kind), srcMd, fwd.dst_desc(), g->strides,
       g->kernel, g->dilations, g->padL, g->padR},
      engine, fwd);
  return PoolEntry{dnnl::pooling_v2_forward(fwd), fwd,
                   dnnl::pooling_v2_backward(bwd), bwd, g->outShape};
}

llvm::Error PoolGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                    Tensor &output) {
  if (llvm::Error e = cpu::checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &x = *inputs[0];
    auto got = cache.get(cpu::shapeKey(inputs), [&] { return make(x); });
    if (!got)
      return got.takeError();
    entry = *got;
    const auto &pd = entry->forwardPd;
    output = cpu::allocate(pd.dst_desc(), entry->outShape, ctx);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, memoryOf(x, *ctx)},
        {DNNL_ARG_DST, memoryOf(output, *ctx)}};
    memory::desc wsMd = pd.workspace_desc();
    if (wsMd.get_size() > 0) {
      // Byte-sized argmax indices: a flat buffer of the right size.
      workspace =
          Tensor(DType::F32, {static_cast<int64_t>((wsMd.get_size() + 3) / 4)});
      args[DNNL_ARG_WORKSPACE] = memory(wsMd, ctx->engine, workspace.rawData());
    }
    entry->forward.execute(ctx->stream, args);
    ctx->stream.wait();
    return llvm::Error::success();
  });
}

llvm::Error PoolGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                     const Tensor &output,
                                     const Tensor &dOutput,
                                     llvm::ArrayRef<bool>,
                                     llvm::MutableArrayRef<Tensor> dInputs) {
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    const auto &pd = entry->backwardPd;
    // The gradient may be masked in place when nothing else holds it
    // (OpSequence hands over its only reference) or it is a reordered copy.
    bool owned = dOutput.ownsBufferAlone();
    Tensor dy = cpu::reorderTo(dOutput, pd.diff_dst_desc(), ctx);
    if (maskRelu)
      dy = cpu::maskByPositive(cpu::reorderTo(output, pd.diff_dst_desc(), ctx),
                               dy, owned || dy.rawData() != dOutput.rawData());
    Tensor dx = cpu::allocate(pd.diff_src_desc(), inputs[0]->shape(), ctx);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
        {DNNL_ARG_DIFF_SRC, memoryOf(dx, *ctx)}};
    if (!workspace.isNull())
      args[DNNL_ARG_WORKSPACE] =
          memory(pd.workspace_desc(), ctx->engine, workspace.rawData());
    entry->backward.execute(ctx->stream, args);
    ctx->stream.wait();
    dInputs[0] = std::move(dx);
    return llvm::Error::success();
  });
}

static llvm::Expected<std::unique_ptr<TrainKernel>>
createPool(const OpInfo &info, const TrainKernelEnv &env) {
  llvm::Expected<PoolAttrs> p = parsePoolAttrs(info);
  if (!p)
    return p.takeError();
  llvm::Expected<int64_t> maskRelu = info.attrs.getInt("grad_mask_relu", 0);
  if (!maskRelu)
    return maskRelu.takeError();
  return std::make_unique<PoolGradKernel>(env.ctx, std::move(*p),
                                          *maskRelu != 0);
}

void train::registerPoolGrad(TrainRegistry &registry) {
  for (const char *type :
       {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    registry[type] = createPool;
}
