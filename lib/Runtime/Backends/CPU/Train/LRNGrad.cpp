//===- LRNGrad.cpp - LRN forward and backward on oneDNN -------------------===//
//
// Across-channel LRN in training mode: oneDNN's forward keeps a workspace
// that its backward reads. Plain layouts.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::memoryOf;

namespace {

struct LRNEntry {
  dnnl::lrn_forward forward;
  dnnl::lrn_backward backward;
  memory::desc md, workspace;
};

class LRNGradKernel : public TrainKernel {
public:
  LRNGradKernel(CPUContextPtr ctx, cpu::LRNParams params)
      : cache(std::move(ctx)), params(params) {}

  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    if (llvm::Error e = cpu::checkF32(inputs))
      return e;
    const CPUContextPtr &ctx = cache.context();
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor x = cpu::plainOf(*inputs[0], ctx);
      auto got = cache.get(cpu::shapeKey({&x}), [&] {
        memory::desc md = cpu::plainDesc(x.shape());
        dnnl::lrn_forward::primitive_desc fwd(
            {dnnl::prop_kind::forward_training,
             dnnl::algorithm::lrn_across_channels, md, params.size,
             params.alpha, params.beta, params.bias},
            ctx->engine);
        dnnl::lrn_backward::primitive_desc bwd(
            {dnnl::algorithm::lrn_across_channels, md, md, params.size,
             params.alpha, params.beta, params.bias},
            ctx->engine, fwd);
        return llvm::Expected<LRNEntry>(LRNEntry{dnnl::lrn_forward(fwd),
                                                 dnnl::lrn_backward(bwd), md,
                                                 fwd.workspace_desc()});
      });
      if (!got)
        return got.takeError();
      entry = *got;
      workspace.resize(entry->workspace.get_size());
      output = Tensor(DType::F32, x.shape());
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memoryOf(x, *ctx)},
          {DNNL_ARG_DST, memoryOf(output, *ctx)}};
      if (!workspace.empty())
        args.emplace(DNNL_ARG_WORKSPACE,
                     memory(entry->workspace, ctx->engine, workspace.data()));
      entry->forward.execute(ctx->stream, args);
      ctx->stream.wait();
      return llvm::Error::success();
    });
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const CPUContextPtr &ctx = cache.context();
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor x = cpu::plainOf(*inputs[0], ctx);
      Tensor dy = cpu::plainOf(dOutput, ctx), dx(DType::F32, x.shape());
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memoryOf(x, *ctx)},
          {DNNL_ARG_DIFF_DST, memoryOf(dy, *ctx)},
          {DNNL_ARG_DIFF_SRC, memoryOf(dx, *ctx)}};
      if (!workspace.empty())
        args.emplace(DNNL_ARG_WORKSPACE,
                     memory(entry->workspace, ctx->engine, workspace.data()));
      entry->backward.execute(ctx->stream, args);
      ctx->stream.wait();
      dInputs[0] = std::move(dx);
      return llvm::Error::success();
    });
  }

private:
  cpu::PrimitiveCache<LRNEntry> cache;
  cpu::LRNParams params;
  LRNEntry *entry = nullptr;
  std::vector<uint8_t> workspace;
};

} // namespace

void train::registerLRNGrad(TrainRegistry &registry) {
  registry["LRN"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto params = cpu::readLRNParams(info.attrs);
    if (!params)
      return params.takeError();
    return std::make_unique<LRNGradKernel>(env.ctx, *params);
  };
}
