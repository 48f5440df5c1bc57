//===- PoolGrad.cpp - pooling forward and backward on oneDNN --------------===//
//
// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool in the input's
// layout. Max pooling keeps oneDNN's workspace (the argmax of each window)
// from the forward for the backward. `ceil_mode` becomes extra end padding,
// as in the inference kernel.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::kernelError;
using cpu::memoryOf;
using cpu::toDims;

namespace {

struct PoolAttrs {
  dnnl::algorithm algorithm;
  bool global = false;
  std::vector<int64_t> kernel, strides, dilations, pads;
  bool ceilMode = false;
};

struct PoolEntry {
  dnnl::pooling_v2_forward forward;
  dnnl::pooling_v2_forward::primitive_desc forwardPd;
  dnnl::pooling_v2_backward backward;
  dnnl::pooling_v2_backward::primitive_desc backwardPd;
  Shape outShape;
};

class PoolGradKernel : public TrainKernel {
public:
  PoolGradKernel(CPUContextPtr ctx, PoolAttrs attrs)
      : cache(std::move(ctx)), attrs(std::move(attrs)) {}
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
  PoolEntry *entry = nullptr;
  Tensor workspace;
};

} // namespace

llvm::Expected<PoolEntry> PoolGradKernel::make(const Tensor &x) {
  int64_t rank = x.rank();
  if (rank < 3 || rank > 5)
    return kernelError("input is " + x.typeString() +
                       "; pooling needs rank 3 to 5");
  size_t n = rank - 2;
  std::vector<int64_t> kernel = attrs.kernel, strides = attrs.strides,
                       dilations = attrs.dilations, pads = attrs.pads;
  if (attrs.global)
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
    int64_t o = (attrs.ceilMode ? (span + s - 1) / s : span / s) + 1;
    if (attrs.ceilMode && (o - 1) * s >= in + pads[i])
      --o;
    out.push_back(o);
    padL.push_back(pads[i]);
    padR.push_back(std::max<int64_t>((o - 1) * s + extent - in - pads[i], 0));
    dnnlDilations.push_back(dilations[i] - 1);
  }
  const dnnl::engine &engine = cache.context()->engine;
  memory::desc srcMd = cpu::descOf(x);
  memory::desc dstMd(toDims(out), memory::data_type::f32, Tag::any);
  dnnl::pooling_v2_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, attrs.algorithm, srcMd, dstMd,
       toDims(strides), toDims(kernel), dnnlDilations, padL, padR},
      engine);
  dnnl::pooling_v2_backward::primitive_desc bwd(
      {attrs.algorithm, srcMd, fwd.dst_desc(), toDims(strides),
       toDims(kernel), dnnlDilations, padL, padR},
      engine, fwd);
  return PoolEntry{dnnl::pooling_v2_forward(fwd), fwd,
                   dnnl::pooling_v2_backward(bwd), bwd, out};
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
      workspace = Tensor(DType::F32, {static_cast<int64_t>(
                                         (wsMd.get_size() + 3) / 4)});
      args[DNNL_ARG_WORKSPACE] = memory(wsMd, ctx->engine, workspace.rawData());
    }
    entry->forward.execute(ctx->stream, args);
    ctx->stream.wait();
    return llvm::Error::success();
  });
}

llvm::Error PoolGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                     const Tensor &, const Tensor &dOutput,
                                     llvm::ArrayRef<bool>,
                                     llvm::MutableArrayRef<Tensor> dInputs) {
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    const auto &pd = entry->backwardPd;
    Tensor dy = cpu::reorderTo(dOutput, pd.diff_dst_desc(), ctx);
    Tensor dx = cpu::allocate(pd.diff_src_desc(), inputs[0]->shape(), ctx);
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
        {DNNL_ARG_DIFF_SRC, memoryOf(dx, *ctx)}};
    if (!workspace.isNull())
      args[DNNL_ARG_WORKSPACE] = memory(pd.workspace_desc(), ctx->engine,
                                        workspace.rawData());
    entry->backward.execute(ctx->stream, args);
    ctx->stream.wait();
    dInputs[0] = std::move(dx);
    return llvm::Error::success();
  });
}

static llvm::Expected<std::unique_ptr<TrainKernel>>
createPool(const OpInfo &info, const TrainKernelEnv &env) {
  if (llvm::Error e = info.checkArity(1, 1))
    return e;
  llvm::StringRef type = info.op.type();
  const OpAttributes &a = info.attrs;
  PoolAttrs p;
  p.global = type.starts_with("Global");
  p.algorithm = dnnl::algorithm::pooling_max;
  if (!type.ends_with("MaxPool")) {
    auto includePad = a.getInt("count_include_pad", 0);
    if (!includePad)
      return includePad.takeError();
    p.algorithm = *includePad ? dnnl::algorithm::pooling_avg_include_padding
                              : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  if (!p.global) {
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
  }
  return std::make_unique<PoolGradKernel>(env.ctx, std::move(p));
}

void train::registerPoolGrad(TrainRegistry &registry) {
  for (const char *type :
       {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
    registry[type] = createPool;
}
