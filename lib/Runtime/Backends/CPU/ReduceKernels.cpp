//===- ReduceKernels.cpp - ReduceMean, ReduceSum, ReduceMax, ReduceMin ----===//
//
// oneDNN's reduction primitive over the plan's `axes` (all axes when
// empty): its destination keeps the reduced axes as size 1, which is the
// result with keepdims; without, the same buffer is viewed without them.
// An empty source never reaches oneDNN (which needs one element): each
// output element reduces an empty set and is the reduction's identity, as
// in ONNX (sum 0, max -inf, min +inf) or NaN for the mean (0 / 0).
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include <algorithm>
#include <limits>
#include <set>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class ReduceKernel : public Kernel {
public:
  ReduceKernel(CPUContextPtr ctx, dnnl::algorithm algorithm,
               std::vector<int64_t> axes, bool keepdims)
      : cache(std::move(ctx)), algorithm(algorithm), axes(std::move(axes)),
        keepdims(keepdims) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &x = *inputs[0];
    std::set<int64_t> reduced;
    for (int64_t axis : axes) {
      auto a = normalizeAxis(axis, x.rank());
      if (!a)
        return a.takeError();
      reduced.insert(*a);
    }
    if (axes.empty())
      for (int64_t a = 0; a < x.rank(); ++a)
        reduced.insert(a);
    Shape kept = x.shape(), out;
    for (int64_t a = 0; a < x.rank(); ++a) {
      if (reduced.count(a))
        kept[a] = 1;
      if (!reduced.count(a) || keepdims)
        out.push_back(kept[a]);
    }
    Tensor y(DType::F32, kept);
    if (x.numElements() == 0) {
      std::fill_n(y.data<float>(), y.numElements(), emptySetValue());
      outputs[0] = y.reshaped(out);
      return llvm::Error::success();
    }
    // oneDNN needs at least one dimension, and refuses a reduction that
    // reduces nothing (every reduced axis of size 1: S3D's mean over its
    // 1x1x1 classifier output).
    if (x.rank() == 0 || kept == x.shape()) {
      std::memcpy(y.rawData(), x.rawData(), x.bytes());
      outputs[0] = y.reshaped(out);
      return llvm::Error::success();
    }
    const CPUContextPtr &ctx = cache.context();
    return guardDnnl([&]() -> llvm::Error {
      auto entry =
          cache.get(shapeKey(inputs), [&]() -> llvm::Expected<Primitive> {
            dnnl::reduction::desc d(algorithm, plainDesc(x.shape()),
                                    plainDesc(kept), 0.f, 0.f);
            return Primitive(Primitive::primitive_desc(d, ctx->engine));
          });
      if (!entry)
        return entry.takeError();
      (*entry)->execute(ctx->stream, {{DNNL_ARG_SRC, memoryOf(x, *ctx)},
                                      {DNNL_ARG_DST, memoryOf(y, *ctx)}});
      ctx->stream.wait();
      outputs[0] = y.reshaped(out);
      return llvm::Error::success();
    });
  }

private:
  /// The reduction of an empty set.
  float emptySetValue() const {
    switch (algorithm) {
    case dnnl::algorithm::reduction_sum:
      return 0.f;
    case dnnl::algorithm::reduction_max:
      return -std::numeric_limits<float>::infinity();
    case dnnl::algorithm::reduction_min:
      return std::numeric_limits<float>::infinity();
    default:
      return std::numeric_limits<float>::quiet_NaN();
    }
  }

  using Primitive = dnnl::reduction;
  PrimitiveCache<Primitive> cache;
  dnnl::algorithm algorithm;
  std::vector<int64_t> axes;
  bool keepdims;
};

} // namespace

llvm::Expected<ReduceParams> cpu::readReduceParams(const OpAttributes &attrs) {
  auto axes = attrs.getInts("axes", std::vector<int64_t>{});
  if (!axes)
    return axes.takeError();
  auto keepdims = attrs.getInt("keepdims", 1);
  if (!keepdims)
    return keepdims.takeError();
  return ReduceParams{std::move(*axes), *keepdims != 0};
}

void cpu::registerReduceKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  const std::pair<const char *, dnnl::algorithm> kinds[] = {
      {"ReduceMean", dnnl::algorithm::reduction_mean},
      {"ReduceSum", dnnl::algorithm::reduction_sum},
      {"ReduceMax", dnnl::algorithm::reduction_max},
      {"ReduceMin", dnnl::algorithm::reduction_min}};
  for (auto [type, algorithm] : kinds)
    registry.add(type,
                 [ctx, algorithm = algorithm](const OpInfo &info)
                     -> llvm::Expected<std::unique_ptr<Kernel>> {
                   if (llvm::Error e = info.checkArity(1, 1))
                     return e;
                   auto params = readReduceParams(info.attrs);
                   if (!params)
                     return params.takeError();
                   return std::make_unique<ReduceKernel>(
                       ctx, algorithm, params->axes, params->keepdims);
                 });
}
