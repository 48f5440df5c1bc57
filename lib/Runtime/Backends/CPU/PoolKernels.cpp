//===- PoolKernels.cpp - ONNX pooling on oneDNN pooling_v2 ----------------===//
//
// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool, in the input's
// layout (the window: PoolGeometry.h), except a plain NCHW input of 8 or
// more channels, pooled in the host's channel blocks. oneDNN's kernel for
// plain NCHW is scalar and single-threaded: AlexNet's first MaxPool
// (64x55x55, after a convolution that writes plain) took 2.2 ms on an AVX2
// host, reordered and blocked well under 0.1 ms.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "NaNPassing.h"
#include "PoolGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct PoolEntry {
  dnnl::pooling_v2_forward primitive;
  memory::desc srcMd, dstMd;
  PoolGeometry geometry;
  PrimitiveArgs args;
};

class PoolKernel : public Kernel {
public:
  PoolKernel(CPUContextPtr ctx, PoolAttrs params)
      : cache(std::move(ctx)), params(std::move(params)) {}
  bool acceptsLayouts() const override { return true; }
  bool fillsOfferedOutputs() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  llvm::Expected<PoolEntry> make(const Tensor &x);

  PrimitiveCache<PoolEntry> cache;
  PoolAttrs params;
};

} // namespace

llvm::Expected<PoolEntry> PoolKernel::make(const Tensor &x) {
  llvm::Expected<PoolGeometry> g = poolGeometry(params, x);
  if (!g)
    return g.takeError();
  memory::desc dstMd(toDims(g->outShape), memory::data_type::f32, Tag::any);
  memory::desc srcMd = descOf(x);
  if (x.isPlain() && x.rank() == 4 && x.dim(1) >= 8)
    srcMd =
        memory::desc(toDims(x.shape()), memory::data_type::f32,
                     nativeChannelBlock() == 16 ? Tag::nChw16c : Tag::nChw8c);
  dnnl::pooling_v2_forward::desc d(
      dnnl::prop_kind::forward_inference, poolAlgorithm(params.kind), srcMd,
      dstMd, g->strides, g->kernel, g->dilations, g->padL, g->padR);
  dnnl::pooling_v2_forward::primitive_desc pd(d, cache.context()->engine);
  return PoolEntry{dnnl::pooling_v2_forward(pd), pd.src_desc(), pd.dst_desc(),
                   *g};
}

llvm::Error PoolKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                            llvm::MutableArrayRef<Tensor> outputs) {
  if (llvm::Error e = checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return guardDnnl([&]() -> llvm::Error {
    const Tensor &x = *inputs[0];
    auto entry = cache.get(shapeKey(inputs), [&] { return make(x); });
    if (!entry)
      return entry.takeError();
    PoolEntry &e = **entry;
    Tensor y = destination(outputs[0], e.dstMd, e.geometry.outShape, ctx);
    // The entry's key has x's layout: its source format, or plain.
    Tensor src = reorderTo(x, e.srcMd, ctx);
    e.args.set(DNNL_ARG_SRC, e.srcMd, src.rawData(), ctx->engine);
    e.args.set(DNNL_ARG_DST, e.dstMd, y.rawData(), ctx->engine);
    e.primitive.execute(ctx->stream, e.args.get());
    ctx->stream.wait();
    if (ctx->propagateNaN && params.kind == PoolKind::Max)
      if (llvm::Error err = poolNaNs(x, y, e.geometry))
        return err;
    outputs[0] = std::move(y);
    return llvm::Error::success();
  });
}

static llvm::Expected<std::unique_ptr<Kernel>>
createPool(const OpInfo &info, const CPUContextPtr &ctx) {
  llvm::Expected<PoolAttrs> p = parsePoolAttrs(info);
  if (!p)
    return p.takeError();
  return std::make_unique<PoolKernel>(ctx, std::move(*p));
}

void cpu::registerPoolKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  for (const char *type :
       {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    registry.add(type,
                 [ctx](const OpInfo &info) { return createPool(info, ctx); });
}
