//===- SoftmaxKernels.cpp - Softmax and LogSoftmax on oneDNN --------------===//

#include "CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class SoftmaxKernel : public Kernel {
public:
  SoftmaxKernel(CPUContextPtr ctx, dnnl::algorithm algorithm, int64_t axis,
                bool coerce2d)
      : cache(std::move(ctx)), algorithm(algorithm), axis(axis),
        coerce2d(coerce2d) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0];
    auto a = normalizeAxis(axis, std::max<int64_t>(x.rank(), 1));
    if (!a)
      return a.takeError();
    // oneDNN needs rank >= 1; with coerce_2d the input is a matrix split
    // at the axis.
    Shape shape = x.shape();
    int64_t dnnlAxis = *a;
    if (coerce2d) {
      int64_t rows = numElements(llvm::ArrayRef(shape).take_front(*a));
      shape = {rows, x.numElements() / std::max<int64_t>(rows, 1)};
      dnnlAxis = 1;
    } else if (shape.empty()) {
      shape = {1};
    }
    if (numElements(shape) == 0) {
      outputs[0] = Tensor(DType::F32, x.shape());
      return llvm::Error::success();
    }
    const CPUContextPtr &ctx = cache.context();
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            memory::desc md = plainDesc(shape);
            dnnl::softmax_v2_forward::desc d(dnnl::prop_kind::forward_inference,
                                             algorithm, md, md, dnnlAxis);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      Tensor y(DType::F32, x.shape());
      memory::desc md = plainDesc(shape);
      (*entry)->execute(
          ctx->stream, {{DNNL_ARG_SRC, memory(md, ctx->engine,
                                              const_cast<void *>(x.rawData()))},
                        {DNNL_ARG_DST, memory(md, ctx->engine, y.rawData())}});
      ctx->stream.wait();
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  using Primitive = dnnl::softmax_v2_forward;
  PrimitiveCache<Primitive> cache;
  dnnl::algorithm algorithm;
  int64_t axis;
  bool coerce2d;
};

} // namespace

llvm::Expected<SoftmaxParams>
cpu::readSoftmaxParams(const OpAttributes &attrs) {
  auto axis = attrs.getInt("axis", -1);
  if (!axis)
    return axis.takeError();
  auto coerce = attrs.getInt("coerce_2d", 0);
  if (!coerce)
    return coerce.takeError();
  return SoftmaxParams{*axis, *coerce != 0};
}

void cpu::registerSoftmaxKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  for (const char *type : {"Softmax", "LogSoftmax"})
    registry.add(
        type,
        [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
          if (llvm::Error e = info.checkArity(1, 1))
            return e;
          auto params = readSoftmaxParams(info.attrs);
          if (!params)
            return params.takeError();
          auto algorithm = info.op.type() == "Softmax"
                               ? dnnl::algorithm::softmax_accurate
                               : dnnl::algorithm::softmax_log;
          return std::make_unique<SoftmaxKernel>(ctx, algorithm, params->axis,
                                                 params->coerce2d);
        });
}
