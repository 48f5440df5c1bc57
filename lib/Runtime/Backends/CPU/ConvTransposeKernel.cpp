//===- ConvTransposeKernel.cpp - ONNX ConvTranspose on oneDNN -------------===//
//
// oneDNN's deconvolution on plain layouts, the weights used in place
// (ConvTransposeGeometry.h says how).
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ConvTransposeGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class ConvTransposeKernel : public Kernel {
public:
  ConvTransposeKernel(CPUContextPtr ctx, ConvTransposeAttrs attrs)
      : cache(std::move(ctx)), attrs(std::move(attrs)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0], &w = *inputs[1];
    const Tensor *b = inputs.size() > 2 ? inputs[2] : nullptr;
    auto g = convTransposeGeometry(attrs, x, w);
    if (!g)
      return g.takeError();
    const CPUContextPtr &ctx = cache.context();
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            memory::desc biasMd = b ? plainDesc(b->shape()) : memory::desc();
            Primitive::desc d(dnnl::prop_kind::forward_inference,
                              dnnl::algorithm::deconvolution_direct,
                              plainDesc(x.shape()), g->weights, biasMd,
                              plainDesc(g->outShape), g->strides, g->dilates,
                              g->padL, g->padR);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      Tensor y(DType::F32, g->outShape);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memoryOf(x, *ctx)},
          {DNNL_ARG_WEIGHTS,
           memory(g->weights, ctx->engine, const_cast<void *>(w.rawData()))},
          {DNNL_ARG_DST, memoryOf(y, *ctx)}};
      if (b)
        args.emplace(DNNL_ARG_BIAS, memoryOf(*b, *ctx));
      (*entry)->execute(ctx->stream, args);
      ctx->stream.wait();
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  using Primitive = dnnl::deconvolution_forward;
  PrimitiveCache<Primitive> cache;
  ConvTransposeAttrs attrs;
};

} // namespace

void cpu::registerConvTransposeKernel(KernelRegistry &registry,
                                      CPUContextPtr ctx) {
  registry.add(
      "ConvTranspose",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 3))
          return e;
        ConvTransposeAttrs attrs;
        if (llvm::Error e = readConvTransposeAttrs(info.attrs, attrs))
          return e;
        return std::make_unique<ConvTransposeKernel>(ctx, std::move(attrs));
      });
}
