//===- LayerNormKernel.cpp - ONNX LayerNormalization on oneDNN ------------===//
//
// oneDNN normalises over the last dimension: the input is viewed as
// [prod(dims[:axis]), prod(dims[axis:])], and scale and bias (shaped as
// dims[axis:]) as vectors of the second size.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class LayerNormKernel : public Kernel {
public:
  LayerNormKernel(CPUContextPtr ctx, int64_t axis, float epsilon)
      : cache(std::move(ctx)), axis(axis), epsilon(epsilon) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0], &scale = *inputs[1];
    const Tensor *bias = inputs.size() > 2 ? inputs[2] : nullptr;
    auto a = normalizeAxis(axis, x.rank());
    if (!a)
      return a.takeError();
    int64_t rows = numElements(llvm::ArrayRef(x.shape()).take_front(*a));
    int64_t cols = x.numElements() / std::max<int64_t>(rows, 1);
    if (scale.numElements() != cols || (bias && bias->numElements() != cols))
      return kernelError("LayerNormalization scale " + scale.typeString() +
                         (bias ? " and bias " + bias->typeString() : "") +
                         " do not match the normalised size " +
                         llvm::Twine(cols) + " of " + x.typeString());
    Tensor y(DType::F32, x.shape());
    if (x.numElements() == 0) {
      outputs[0] = std::move(y);
      return llvm::Error::success();
    }
    const CPUContextPtr &ctx = cache.context();
    memory::desc md = plainDesc({rows, cols});
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            auto flags = dnnl::normalization_flags::use_scale;
            if (bias)
              flags = flags | dnnl::normalization_flags::use_shift;
            Primitive::desc d(dnnl::prop_kind::forward_inference, md, epsilon,
                              flags);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      memory::desc vec = plainDesc({cols});
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC,
           memory(md, ctx->engine, const_cast<void *>(x.rawData()))},
          {DNNL_ARG_DST, memory(md, ctx->engine, y.rawData())},
          {DNNL_ARG_SCALE,
           memory(vec, ctx->engine, const_cast<void *>(scale.rawData()))}};
      if (bias)
        args.emplace(
            DNNL_ARG_SHIFT,
            memory(vec, ctx->engine, const_cast<void *>(bias->rawData())));
      (*entry)->execute(ctx->stream, args);
      ctx->stream.wait();
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  using Primitive = dnnl::layer_normalization_forward;
  PrimitiveCache<Primitive> cache;
  int64_t axis;
  float epsilon;
};

} // namespace

llvm::Expected<LayerNormParams>
cpu::readLayerNormParams(const OpAttributes &attrs) {
  auto axis = attrs.getInt("axis", -1);
  if (!axis)
    return axis.takeError();
  auto epsilon = attrs.getFloat("epsilon", 1e-5f);
  if (!epsilon)
    return epsilon.takeError();
  return LayerNormParams{*axis, *epsilon};
}

void cpu::registerLayerNormKernel(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "LayerNormalization",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 3))
          return e;
        auto params = readLayerNormParams(info.attrs);
        if (!params)
          return params.takeError();
        return std::make_unique<LayerNormKernel>(ctx, params->axis,
                                                 params->epsilon);
      });
}
