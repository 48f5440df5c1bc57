//===- ConvTransposeKernel.cpp - ONNX ConvTranspose on oneDNN -------------===//
//
// oneDNN's deconvolution. ONNX weights are [C, M/group, k...] (input
// channels first); oneDNN's logical weights are [M, C, k...] (grouped:
// [group, M/group, C/group, k...]), so the ONNX buffer is passed as is under
// a format tag that swaps the first two logical axes. `output_padding`
// grows the output at the end: the end padding shrinks by as much (oneDNN
// accepts negative end padding), so the added positions get the bias only.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "WindowAttrs.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// The plain tag of weights whose stored order swaps the logical axes
/// `first` and `first + 1` (of `rank` axes).
memory::format_tag swappedTag(int rank, bool grouped) {
  using tag = memory::format_tag;
  switch (rank) {
  case 3:
    return tag::bac;
  case 4:
    return grouped ? tag::acbd : tag::bacd;
  case 5:
    return grouped ? tag::acbde : tag::bacde;
  case 6:
    return tag::acbdef;
  default:
    return tag::undef;
  }
}

class ConvTransposeKernel : public Kernel {
public:
  ConvTransposeKernel(CPUContextPtr ctx, WindowAttrs window,
                      std::vector<int64_t> outputPadding, int64_t group)
      : cache(std::move(ctx)), window(std::move(window)),
        outputPadding(std::move(outputPadding)), group(group) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0], &w = *inputs[1];
    const Tensor *b = inputs.size() > 2 ? inputs[2] : nullptr;
    int64_t spatial = x.rank() - 2;
    if (spatial < 1 || spatial > 3 || w.rank() != x.rank() ||
        w.dim(0) != x.dim(1) || x.dim(1) % group != 0)
      return kernelError("ConvTranspose of input " + x.typeString() +
                         " with weights " + w.typeString() + " and group " +
                         llvm::Twine(group) + " is not supported");
    auto attr = [&](const std::vector<int64_t> &v, size_t i, int64_t def) {
      return v.empty() ? def : v[i];
    };
    memory::dims strides, dilates, padL, padR;
    Shape out = {x.dim(0), w.dim(1) * group};
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t stride = attr(window.strides, i, 1),
              dilation = attr(window.dilations, i, 1),
              begin = attr(window.pads, i, 0),
              end = attr(window.pads, i + spatial, 0),
              extra = attr(outputPadding, i, 0), k = w.dim(2 + i);
      strides.push_back(stride);
      dilates.push_back(dilation - 1);
      padL.push_back(begin);
      padR.push_back(end - extra);
      out.push_back(stride * (x.dim(2 + i) - 1) + extra + (k - 1) * dilation +
                    1 - begin - end);
    }
    const CPUContextPtr &ctx = cache.context();
    bool grouped = group > 1;
    memory::dims weightDims;
    if (grouped)
      weightDims.push_back(group);
    weightDims.push_back(w.dim(1));
    weightDims.push_back(w.dim(0) / group);
    for (int64_t i = 0; i < spatial; ++i)
      weightDims.push_back(w.dim(2 + i));
    memory::desc weightMd(
        weightDims, memory::data_type::f32,
        swappedTag(static_cast<int>(weightDims.size()), grouped));
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            memory::desc biasMd = b ? plainDesc(b->shape()) : memory::desc();
            Primitive::desc d(dnnl::prop_kind::forward_inference,
                              dnnl::algorithm::deconvolution_direct,
                              plainDesc(x.shape()), weightMd, biasMd,
                              plainDesc(out), strides, dilates, padL, padR);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      Tensor y(DType::F32, out);
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, memoryOf(x, *ctx)},
          {DNNL_ARG_WEIGHTS,
           memory(weightMd, ctx->engine, const_cast<void *>(w.rawData()))},
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
  WindowAttrs window;
  std::vector<int64_t> outputPadding;
  int64_t group;
};

} // namespace

void cpu::registerConvTransposeKernel(KernelRegistry &registry,
                                      CPUContextPtr ctx) {
  registry.add(
      "ConvTranspose",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 3))
          return e;
        WindowAttrs window;
        if (llvm::Error e = readWindowAttrs(info.attrs, window))
          return e;
        auto outputPadding =
            info.attrs.getInts("output_padding", std::vector<int64_t>());
        if (!outputPadding)
          return outputPadding.takeError();
        auto group = info.attrs.getInt("group", 1);
        if (!group)
          return group.takeError();
        return std::make_unique<ConvTransposeKernel>(
            ctx, std::move(window), std::move(*outputPadding), *group);
      });
}
