//===- PoolKernels.cpp - ONNX pooling on oneDNN pooling_v2 ----------------===//
//
// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool, in the input's
// layout (the window: PoolGeometry.h).
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
  dnnl::pooling_v2_forward::desc d(
      dnnl::prop_kind::forward_inference, poolAlgorithm(params.kind), descOf(x),
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
    // The entry's key has x's layout, which its source format is.
    e.args.set(DNNL_ARG_SRC, e.srcMd, x.rawData(), ctx->engine);
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
