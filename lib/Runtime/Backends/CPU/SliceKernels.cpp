//===- SliceKernels.cpp - Split and Slice ---------------------------------===//
//
// Plain copies of any element type. Split cuts its input along `axis` into
// consecutive pieces of the `split` sizes (equal pieces when empty); Slice
// takes every `steps`-th index from `starts` towards `ends` on each of its
// `axes` (ONNX's clamping rules; a negative step walks backwards), bounds
// from its attributes or, computed at run time, from inputs 1 to 4. A
// Slice of a channel range of a channels-last tensor stays channels-last
// (ShuffleNet's halves, between channels-last convolutions); one that is a
// single run of consecutive elements is a view.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ParallelSums.h"
#include "heterps/Runtime/SliceGeometry.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// Elements before `axis`, and bytes of one index of `axis` onwards.
std::pair<int64_t, int64_t> outerAndRow(const Tensor &x, int64_t axis) {
  int64_t outer = 1, row = dtypeSize(x.dtype());
  for (int64_t i = 0; i < axis; ++i)
    outer *= x.dim(i);
  for (int64_t i = axis + 1; i < x.rank(); ++i)
    row *= x.dim(i);
  return {outer, row};
}

class SplitKernel : public Kernel {
public:
  SplitKernel(int64_t axis, std::vector<int64_t> sizes)
      : axis(axis), sizes(std::move(sizes)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    auto a = normalizeAxis(axis, x.rank());
    if (!a)
      return a.takeError();
    int64_t n = x.dim(*a), pieces = static_cast<int64_t>(outputs.size());
    std::vector<int64_t> size = sizes;
    if (size.empty()) {
      if (n % pieces != 0)
        return kernelError("Split of " + x.typeString() + " along axis " +
                           llvm::Twine(*a) + " into " + llvm::Twine(pieces) +
                           " equal pieces");
      size.assign(pieces, n / pieces);
    }
    int64_t total = 0;
    for (int64_t s : size)
      total += s;
    if (static_cast<int64_t>(size.size()) != pieces || total != n)
      return kernelError("Split sizes do not add up to axis " +
                         llvm::Twine(*a) + " of " + x.typeString());
    auto [outer, row] = outerAndRow(x, *a);
    const auto *src = static_cast<const uint8_t *>(x.rawData());
    int64_t offset = 0;
    for (int64_t p = 0; p < pieces; ++p) {
      Shape shape = x.shape();
      shape[*a] = size[p];
      Tensor y(x.dtype(), shape);
      auto *dst = static_cast<uint8_t *>(y.rawData());
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * size[p] * row, src + (o * n + offset) * row,
                    size[p] * row);
      offset += size[p];
      outputs[p] = std::move(y);
    }
    return llvm::Error::success();
  }

private:
  int64_t axis;
  std::vector<int64_t> sizes;
};

class SliceKernel : public Kernel {
public:
  SliceKernel(CPUContextPtr ctx, SliceParams params)
      : ctx(std::move(ctx)), params(std::move(params)) {}
  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    auto computed = sliceParamsOfInputs(inputs);
    if (!computed)
      return computed.takeError();
    auto g = sliceGeometry(inputs[0]->shape(), *computed ? **computed : params);
    if (!g)
      return g.takeError();
    if (numElements(g->count) > 0 && isChannelsLast(*inputs[0]) &&
        g->takesChannelRange(inputs[0]->shape())) {
      outputs[0] = channelsLastRange(*inputs[0], g->first[1], g->count[1]);
      return llvm::Error::success();
    }
    Tensor x = inputs[0]->isPlain() ? *inputs[0] : plainOf(*inputs[0], ctx);
    int64_t bytes = dtypeSize(x.dtype());
    // One run of consecutive elements (rows of a batch of one, Swin's
    // rolls) is a view into the input, not a copy.
    if (std::optional<int64_t> offset = g->singleRun(x.shape())) {
      outputs[0] = x.part(*offset * bytes, g->count, nullptr);
      return llvm::Error::success();
    }
    Tensor y(x.dtype(), g->count);
    const auto *src = static_cast<const uint8_t *>(x.rawData());
    auto *dst = static_cast<uint8_t *>(y.rawData());
    g->forEachRun(x.shape(), [&](int64_t k, int64_t offset, int64_t n) {
      std::memcpy(dst + k * bytes, src + offset * bytes, n * bytes);
    });
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  /// Channels [first, first + count) of channels-last `x`, channels-last.
  Tensor channelsLastRange(const Tensor &x, int64_t first,
                           int64_t count) const {
    Shape shape = x.shape();
    shape[1] = count;
    Tensor y = allocate(channelsLastDesc(shape), shape, ctx);
    int64_t channels = x.dim(1), positions = x.numElements() / channels;
    const float *src = x.data<float>() + first;
    float *dst = y.data<float>();
#pragma omp parallel for schedule(static)                                      \
    num_threads(threadsFor(y.numElements()))
    for (int64_t p = 0; p < positions; ++p)
      std::memcpy(dst + p * count, src + p * channels, count * sizeof(float));
    return y;
  }

  CPUContextPtr ctx;
  SliceParams params;
};

} // namespace

void cpu::registerSliceKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "Split",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (info.numInputs() != 1 || info.numOutputs() < 1)
          return kernelError("Split takes one input and gives at least one "
                             "output");
        auto axis = info.attrs.getInt("axis", 0);
        if (!axis)
          return axis.takeError();
        auto sizes = info.attrs.getInts("split", std::vector<int64_t>());
        if (!sizes)
          return sizes.takeError();
        return std::make_unique<SplitKernel>(*axis, std::move(*sizes));
      });
  registry.add(
      "Slice",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(1, 5))
          return e;
        auto params = readSliceParams(info.attrs);
        if (!params)
          return params.takeError();
        return std::make_unique<SliceKernel>(ctx, std::move(*params));
      });
}
