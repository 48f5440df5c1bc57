//===- BatchNormGrad.cpp - batch normalization in training mode -----------===//
//
// Normalizes with the batch's statistics (oneDNN's training forward) and
// updates the running statistics in place:
//   running = momentum * running + (1 - momentum) * batch
// (ONNX's momentum; PyTorch's is 1 - it). The running variance takes the
// unbiased batch variance (n / (n - 1) times the one normalized with), as
// PyTorch does, so a model trained here matches one trained there. A fused
// Relu (fuseTrainableActivations) is oneDNN's fuse_norm_relu: the forward
// keeps a bit mask of the positive outputs and the backward applies it,
// saving the Relu's two passes over the tensor each way. An input of 8
// channels or more in a layout without a jit kernel is normalized in the
// 16-channel-blocked one: oneDNN 2.6's kernel for plain tensors
// (ncsp_bnorm) took 5-7 ms a pass on DenseNet-121's concatenated features
// at batch 8, 45% of the step, and its reference kernel, which takes the
// 4-channel blocks a grouped Conv leaves (ResNeXt's), 55 ms; the jit one
// and the reorder to it, about 1.
//
//===----------------------------------------------------------------------===//

#include "../CPUKernels.h"
#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::memoryOf;

namespace {

struct BatchNormEntry {
  dnnl::batch_normalization_forward forward;
  dnnl::batch_normalization_backward backward;
  /// The tensors' layout, and the primitives' view of it: a rank-3 input
  /// [N, C, W] as [N, C, 1, W], the same bytes (oneDNN 2.6 has jit batch
  /// norms for 4-D and 5-D tensors only; 1-D ones ran on its reference
  /// kernel, 36 ms a pass for [16, 64, 995]).
  memory::desc md, runMd, workspaceMd;
};

class BatchNormGradKernel : public TrainKernel {
public:
  BatchNormGradKernel(CPUContextPtr ctx, float epsilon, float momentum,
                      bool relu)
      : cache(std::move(ctx)), epsilon(epsilon), momentum(momentum),
        flags(dnnl::normalization_flags::use_scale |
              dnnl::normalization_flags::use_shift |
              (relu ? dnnl::normalization_flags::fuse_norm_relu
                    : dnnl::normalization_flags::none)) {}
  bool differentiable(int i) const override { return i <= 2; }
  bool updatesInput(int i) const override { return i == 3 || i == 4; }
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  /// The Relu mask, when there is one: written by the forward, read by the
  /// backward.
  void addWorkspace(std::unordered_map<int, memory> &args) {
    if (entry->workspaceMd.is_zero())
      return;
    size_t bytes = entry->workspaceMd.get_size();
    if (workspace.bytes() < bytes) // never between a forward and its backward
      workspace = Tensor(DType::F32, {static_cast<int64_t>((bytes + 3) / 4)});
    args[DNNL_ARG_WORKSPACE] = memory(
        entry->workspaceMd, cache.context()->engine, workspace.rawData());
  }

  /// `t` (in entry->md) as the primitives see it (entry->runMd).
  memory viewOf(const Tensor &t) {
    return memory(entry->runMd, cache.context()->engine,
                  const_cast<void *>(t.rawData()));
  }

  cpu::PrimitiveCache<BatchNormEntry> cache;
  float epsilon, momentum;
  const dnnl::normalization_flags flags;
  BatchNormEntry *entry = nullptr;
  /// The batch's mean and (biased) variance; with a fused Relu, its mask.
  Tensor mean, variance, workspace;
  /// The forward's input in the primitive's layout, for the backward.
  Tensor src;
};

/// Per rank 3-5: the layouts oneDNN 2.6's batch norm has jit kernels for
/// besides the 8-blocked one.
struct LayoutTags {
  Tag blocked16, channelsLast;
};
const LayoutTags layoutTags[] = {{Tag::aBc16b, Tag::acb},
                                 {Tag::aBcd16b, Tag::acdb},
                                 {Tag::aBcde16b, Tag::acdeb}};

/// Whether `md`, the layout of x (rank 3-5), is one of them.
bool hasJitKernel(const memory::desc &md, const Tensor &x) {
  std::optional<int64_t> block = cpu::channelBlockOf(md, x.shape());
  return (block && *block > 1) ||
         md == memory::desc(cpu::toDims(x.shape()), memory::data_type::f32,
                            layoutTags[x.rank() - 3].channelsLast);
}

} // namespace

llvm::Error BatchNormGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                         Tensor &output) {
  if (llvm::Error e = cpu::checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &x = *inputs[0];
    int64_t c = x.rank() >= 2 ? x.dim(1) : 0;
    for (int i = 1; i < 5; ++i)
      if (inputs[i]->numElements() != c || !inputs[i]->isPlain())
        return cpu::kernelError("BatchNormalization parameter " +
                                inputs[i]->typeString() + " does not match " +
                                x.typeString());
    auto got = cache.get(cpu::shapeKey({&x}), [&] {
      memory::desc md = cpu::descOf(x);
      if (x.rank() >= 3 && x.rank() <= 5 && c >= 8 && !hasJitKernel(md, x))
        md = memory::desc(cpu::toDims(x.shape()), memory::data_type::f32,
                          layoutTags[x.rank() - 3].blocked16);
      memory::desc run =
          x.rank() == 3 ? md.reshape({x.dim(0), c, 1, x.dim(2)}) : md;
      dnnl::batch_normalization_forward::primitive_desc fwd(
          {dnnl::prop_kind::forward_training, run, epsilon, flags},
          ctx->engine);
      dnnl::batch_normalization_backward::primitive_desc bwd(
          {dnnl::prop_kind::backward, run, run, epsilon, flags}, ctx->engine,
          fwd);
      return llvm::Expected<BatchNormEntry>(
          BatchNormEntry{dnnl::batch_normalization_forward(fwd),
                         dnnl::batch_normalization_backward(bwd), md, run,
                         fwd.workspace_desc()});
    });
    if (!got)
      return got.takeError();
    entry = *got;
    src = cpu::reorderTo(x, entry->md, ctx);
    output = cpu::allocate(entry->md, x.shape(), ctx);
    mean = Tensor(DType::F32, {c});
    variance = Tensor(DType::F32, {c});
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, viewOf(src)},
        {DNNL_ARG_SCALE, memoryOf(*inputs[1], *ctx)},
        {DNNL_ARG_SHIFT, memoryOf(*inputs[2], *ctx)},
        {DNNL_ARG_MEAN, memoryOf(mean, *ctx)},
        {DNNL_ARG_VARIANCE, memoryOf(variance, *ctx)},
        {DNNL_ARG_DST, viewOf(output)}};
    addWorkspace(args);
    entry->forward.execute(ctx->stream, args);
    ctx->stream.wait();
    // The running statistics are the plan's weights, updated in place.
    float *runMean = const_cast<float *>(inputs[3]->data<float>());
    float *runVar = const_cast<float *>(inputs[4]->data<float>());
    int64_t n = x.numElements() / std::max<int64_t>(c, 1);
    float unbias = n > 1 ? static_cast<float>(n) / (n - 1) : 1.f;
    for (int64_t i = 0; i < c; ++i) {
      runMean[i] =
          momentum * runMean[i] + (1 - momentum) * mean.data<float>()[i];
      runVar[i] = momentum * runVar[i] +
                  (1 - momentum) * unbias * variance.data<float>()[i];
    }
    return llvm::Error::success();
  });
}

llvm::Error
BatchNormGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                              const Tensor &, const Tensor &dOutput,
                              llvm::ArrayRef<bool> needGrad,
                              llvm::MutableArrayRef<Tensor> dInputs) {
  const CPUContextPtr &ctx = cache.context();
  return cpu::guardDnnl([&]() -> llvm::Error {
    Tensor dy = cpu::reorderTo(dOutput, entry->md, ctx);
    Tensor dx = cpu::allocate(entry->md, inputs[0]->shape(), ctx);
    Tensor dScale(DType::F32, {mean.dim(0)}), dShift(DType::F32, {mean.dim(0)});
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, viewOf(src)},
        {DNNL_ARG_MEAN, memoryOf(mean, *ctx)},
        {DNNL_ARG_VARIANCE, memoryOf(variance, *ctx)},
        {DNNL_ARG_SCALE, memoryOf(*inputs[1], *ctx)},
        {DNNL_ARG_SHIFT, memoryOf(*inputs[2], *ctx)},
        {DNNL_ARG_DIFF_DST, viewOf(dy)},
        {DNNL_ARG_DIFF_SRC, viewOf(dx)},
        {DNNL_ARG_DIFF_SCALE, memoryOf(dScale, *ctx)},
        {DNNL_ARG_DIFF_SHIFT, memoryOf(dShift, *ctx)}};
    addWorkspace(args);
    entry->backward.execute(ctx->stream, args);
    ctx->stream.wait();
    if (needGrad[0])
      dInputs[0] = std::move(dx);
    if (needGrad[1])
      dInputs[1] = std::move(dScale);
    if (needGrad[2])
      dInputs[2] = std::move(dShift);
    return llvm::Error::success();
  });
}

void train::registerBatchNormGrad(TrainRegistry &registry) {
  registry["BatchNormalization"] = [](const OpInfo &info,
                                      const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    if (llvm::Error e = info.checkArity(5, 5))
      return e;
    auto epsilon = info.attrs.getFloat("epsilon", 1e-5f);
    if (!epsilon)
      return epsilon.takeError();
    auto momentum = info.attrs.getFloat("momentum", 0.9f);
    if (!momentum)
      return momentum.takeError();
    auto relu = cpu::fusesRelu(info.attrs, "BatchNormalization");
    if (!relu)
      return relu.takeError();
    return std::make_unique<BatchNormGradKernel>(env.ctx, *epsilon, *momentum,
                                                 *relu);
  };
}
