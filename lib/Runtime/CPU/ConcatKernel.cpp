//===- ConcatKernel.cpp - ONNX Concat on oneDNN concat --------------------===//
//
// Inputs that share a layout keep it, and oneDNN chooses the output's
// (blocked when the inputs are). When their layouts differ (say a Winograd
// convolution's blocked output beside a 1x1 convolution's channels-last
// one), oneDNN falls back to a slow reference concat; so every input is then
// reordered to the layout of the largest one first. Empty inputs contribute
// nothing and are skipped.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct ConcatEntry {
  dnnl::concat primitive;
  /// Indices of the non-empty inputs, in order, and the layout each is
  /// concatenated in.
  std::vector<int> used;
  std::vector<memory::desc> srcMds;
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
        std::vector<Tensor> srcs;
        for (size_t k = 0; k < e.used.size(); ++k)
          srcs.push_back(reorderTo(*inputs[e.used[k]], e.srcMds[k], ctx));
        for (size_t k = 0; k < srcs.size(); ++k)
          args[DNNL_ARG_MULTIPLE_SRC + k] = memoryOf(srcs[k], *ctx);
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
      unifyLayouts(inputs, entry.used, mds);
      entry.srcMds = mds;
      dnnl::concat::primitive_desc pd(static_cast<int>(*a), mds,
                                      cache.context()->engine);
      entry.primitive = dnnl::concat(pd);
      entry.dstMd = pd.dst_desc();
    }
    return entry;
  }

  /// When the layouts in `mds` differ, gives every input the layout of the
  /// largest one, if it is a format tag that applies to all.
  static void unifyLayouts(llvm::ArrayRef<const Tensor *> inputs,
                           const std::vector<int> &used,
                           std::vector<memory::desc> &mds) {
    size_t largest = 0;
    bool same = true;
    for (size_t k = 1; k < mds.size(); ++k) {
      same &=
          tagOf(mds[k], *inputs[used[k]]) == tagOf(mds[0], *inputs[used[0]]);
      if (inputs[used[k]]->numElements() > inputs[used[largest]]->numElements())
        largest = k;
    }
    std::optional<Tag> tag = tagOf(mds[largest], *inputs[used[largest]]);
    if (same || !tag)
      return;
    for (size_t k = 0; k < mds.size(); ++k)
      mds[k] = memory::desc(toDims(inputs[used[k]]->shape()),
                            memory::data_type::f32, *tag);
  }

  /// The format tag that gives `md` for `t`'s dimensions, among the plain,
  /// channels-last and channel-blocked ones.
  static std::optional<Tag> tagOf(const memory::desc &md, const Tensor &t) {
    static const std::vector<Tag> byRank[] = {
        {},
        {Tag::a},
        {Tag::ab, Tag::ba},
        {Tag::abc, Tag::acb, Tag::aBc16b, Tag::aBc8b},
        {Tag::abcd, Tag::acdb, Tag::aBcd16b, Tag::aBcd8b},
        {Tag::abcde, Tag::acdeb, Tag::aBcde16b, Tag::aBcde8b}};
    if (t.rank() < 1 || t.rank() > 5)
      return std::nullopt;
    for (Tag tag : byRank[t.rank()])
      if (memory::desc(toDims(t.shape()), memory::data_type::f32, tag) == md)
        return tag;
    return std::nullopt;
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
