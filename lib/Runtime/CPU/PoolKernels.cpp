//===- PoolKernels.cpp - ONNX pooling on oneDNN pooling_v2 ----------------===//
//
// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool, in the input's
// layout. `ceil_mode` is resolved into extra end padding (a last window must
// start inside the input or its begin padding, as in ONNX Runtime).
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct PoolParams {
  dnnl::algorithm algorithm;
  bool global = false;
  std::vector<int64_t> kernel, strides, dilations, pads;
  bool ceilMode = false;
};

struct PoolEntry {
  dnnl::pooling_v2_forward primitive;
  memory::desc dstMd;
  Shape outShape;
};

class PoolKernel : public Kernel {
public:
  PoolKernel(CPUContextPtr ctx, PoolParams params)
      : cache(std::move(ctx)), params(std::move(params)) {}
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  llvm::Expected<PoolEntry> make(const Tensor &x);

  PrimitiveCache<PoolEntry> cache;
  PoolParams params;
};

} // namespace

llvm::Expected<PoolEntry> PoolKernel::make(const Tensor &x) {
  int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    return kernelError("input is " + x.typeString() +
                       "; pooling needs rank 3 to 5");
  size_t n = rank - 2;
  std::vector<int64_t> kernel = params.kernel, strides = params.strides,
                       dilations = params.dilations, pads = params.pads;
  if (params.global)
    kernel.assign(x.shape().begin() + 2, x.shape().end());
  if (strides.empty())
    strides.assign(n, 1);
  if (dilations.empty())
    dilations.assign(n, 1);
  if (pads.empty())
    pads.assign(2 * n, 0);
  if (kernel.size() != n || strides.size() != n || dilations.size() != n ||
      pads.size() != 2 * n)
    return kernelError("kernel_shape, strides, dilations or pads do not "
                       "match the " +
                       llvm::Twine(n) + " spatial axes of " + x.typeString());
  Shape out = {x.dim(0), x.dim(1)};
  memory::dims padL, padR, dnnlDilations;
  for (size_t i = 0; i < n; ++i) {
    int64_t in = x.dim(2 + i), s = strides[i];
    int64_t extent = dilations[i] * (kernel[i] - 1) + 1;
    int64_t span = in + pads[i] + pads[n + i] - extent;
    if (span < 0 || s < 1 || dilations[i] < 1)
      return kernelError("pooling window does not fit input " + x.typeString());
    int64_t o = (params.ceilMode ? (span + s - 1) / s : span / s) + 1;
    if (params.ceilMode && (o - 1) * s >= in + pads[i])
      --o;
    out.push_back(o);
    padL.push_back(pads[i]);
    // oneDNN divides with floor, so a shorter end pad still gives `o`.
    padR.push_back(std::max<int64_t>((o - 1) * s + extent - in - pads[i], 0));
    dnnlDilations.push_back(dilations[i] - 1);
  }
  memory::desc dstMd(toDims(out), memory::data_type::f32, Tag::any);
  dnnl::pooling_v2_forward::desc d(
      dnnl::prop_kind::forward_inference, params.algorithm, descOf(x), dstMd,
      toDims(strides), toDims(kernel), dnnlDilations, padL, padR);
  dnnl::pooling_v2_forward::primitive_desc pd(d, cache.context()->engine);
  return PoolEntry{dnnl::pooling_v2_forward(pd), pd.dst_desc(), out};
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
    Tensor y = allocate((*entry)->dstMd, (*entry)->outShape, ctx);
    (*entry)->primitive.execute(
        ctx->stream,
        {{DNNL_ARG_SRC, memoryOf(x, *ctx)}, {DNNL_ARG_DST, memoryOf(y, *ctx)}});
    ctx->stream.wait();
    outputs[0] = std::move(y);
    return llvm::Error::success();
  });
}

static llvm::Expected<std::unique_ptr<Kernel>>
createPool(const OpInfo &info, const CPUContextPtr &ctx) {
  if (llvm::Error e = info.checkArity(1, 1))
    return e;
  llvm::StringRef type = info.op.type();
  const OpAttributes &a = info.attrs;
  PoolParams p;
  p.global = type.starts_with("Global");
  bool isMax = type.ends_with("MaxPool");
  p.algorithm = dnnl::algorithm::pooling_max;
  if (!isMax) {
    auto includePad = a.getInt("count_include_pad", 0);
    if (!includePad)
      return includePad.takeError();
    p.algorithm = *includePad ? dnnl::algorithm::pooling_avg_include_padding
                              : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  if (p.global)
    return std::make_unique<PoolKernel>(ctx, std::move(p));
  auto kernel = a.getInts("kernel_shape");
  if (!kernel)
    return kernel.takeError();
  auto strides = a.getInts("strides", std::vector<int64_t>());
  if (!strides)
    return strides.takeError();
  auto dilations = a.getInts("dilations", std::vector<int64_t>());
  if (!dilations)
    return dilations.takeError();
  auto pads = a.getInts("pads", std::vector<int64_t>());
  if (!pads)
    return pads.takeError();
  auto ceilMode = a.getInt("ceil_mode", 0);
  if (!ceilMode)
    return ceilMode.takeError();
  p.kernel = *kernel;
  p.strides = *strides;
  p.dilations = *dilations;
  p.pads = *pads;
  p.ceilMode = *ceilMode != 0;
  return std::make_unique<PoolKernel>(ctx, std::move(p));
}

void cpu::registerPoolKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  for (const char *type :
       {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    registry.add(type,
                 [ctx](const OpInfo &info) { return createPool(info, ctx); });
}
