//===- ConcatKernel.cpp - ONNX Concat on oneDNN concat --------------------===//
//
// Inputs keep their layouts; oneDNN chooses the output's (blocked when the
// inputs are). Empty inputs contribute nothing and are skipped.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct ConcatEntry {
  dnnl::concat primitive;
  /// Indices of the non-empty inputs, in order.
  std::vector<int> used;
  memory::desc dstMd;
  Shape outShape;
};

class ConcatKernel : public Kernel {
public:
  ConcatKernel(CPUContextPtr ctx, int64_t axis)
      : cache(std::move(ctx)), axis(axis) {}
  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const CPUContextPtr &ctx = cache.context();
    return guardDnnl([&]() -> llvm::Error {
      auto entry = cache.get(shapeKey(inputs), [&] { return make(inputs); });
      if (!entry)
        return entry.takeError();
      ConcatEntry &e = **entry;
      Tensor y = e.used.empty() ? Tensor(DType::F32, e.outShape)
                                : allocate(e.dstMd, e.outShape, ctx);
      if (!e.used.empty()) {
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_DST, memoryOf(y, *ctx)}};
        for (size_t k = 0; k < e.used.size(); ++k)
          args[DNNL_ARG_MULTIPLE_SRC + k] = memoryOf(*inputs[e.used[k]], *ctx);
        e.primitive.execute(ctx->stream, args);
        ctx->stream.wait();
      }
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  llvm::Expected<ConcatEntry> make(llvm::ArrayRef<const Tensor *> inputs) {
    const Tensor &first = *inputs[0];
    auto a = normalizeAxis(axis, first.rank());
    if (!a)
      return a.takeError();
    ConcatEntry entry;
    entry.outShape = first.shape();
    entry.outShape[*a] = 0;
    std::vector<memory::desc> mds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor &t = *inputs[i];
      bool compatible = t.rank() == first.rank();
      for (int64_t d = 0; compatible && d < t.rank(); ++d)
        compatible = d == *a || t.dim(d) == first.dim(d);
      if (!compatible)
        return kernelError("input " + llvm::Twine(i) + " is " + t.typeString() +
                           ", which does not concatenate "
                           "with " +
                           first.typeString() + " along axis " +
                           llvm::Twine(*a));
      entry.outShape[*a] += t.dim(*a);
      if (t.numElements() == 0)
        continue;
      entry.used.push_back(static_cast<int>(i));
      mds.push_back(descOf(t));
    }
    if (!mds.empty()) {
      dnnl::concat::primitive_desc pd(static_cast<int>(*a), mds,
                                      cache.context()->engine);
      entry.primitive = dnnl::concat(pd);
      entry.dstMd = pd.dst_desc();
    }
    return entry;
  }

  PrimitiveCache<ConcatEntry> cache;
  int64_t axis;
};

} // namespace

void cpu::registerConcatKernel(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "Concat",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(1, std::max(1, info.numInputs())))
          return e;
        for (int i = 0; i < info.numInputs(); ++i)
          if (!info.hasInput(i))
            return kernelError("input " + llvm::Twine(i) + " is required");
        auto axis = info.attrs.getInt("axis");
        if (!axis)
          return axis.takeError();
        return std::make_unique<ConcatKernel>(ctx, *axis);
      });
}
