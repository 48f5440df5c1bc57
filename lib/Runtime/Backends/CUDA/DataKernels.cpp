//===- DataKernels.cpp - ops that move data: joins, views, reductions -----===//
//
// Concat and Split as 2-D copies (cudaMemcpy2DAsync: one per input or
// output), Transpose and Slice as one strided copy, Gather, and the
// reductions (ReduceMean/Sum/Max/Min; reduced axes that are not next to
// each other are first moved to the end by a strided copy).
//
//===----------------------------------------------------------------------===//

#include "CUDAKernels.h"

#include "heterps/Runtime/SliceGeometry.h"

#include "llvm/ADT/StringSwitch.h"

#include <numeric>

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

std::pair<int64_t, int64_t> cuda::aroundAxis(const Shape &shape, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    if (d != axis)
      (d < axis ? outer : inner) *= shape[d];
  return {outer, inner};
}

namespace {

class ConcatKernel : public CUDAKernel {
public:
  ConcatKernel(CUDAContextPtr ctx, int64_t axis)
      : CUDAKernel(std::move(ctx)), axis(axis) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs, /*allowI64=*/true))
      return e;
    const Tensor &first = *inputs[0];
    llvm::Expected<int64_t> a = normalizeAxis(axis, first.rank());
    if (!a)
      return a.takeError();
    Shape shape = first.shape();
    shape[*a] = 0;
    for (const Tensor *t : inputs) {
      Shape s = t->shape();
      if (s.size() != shape.size() || t->dtype() != first.dtype())
        return cudaFailure("Concat inputs " + first.typeString() + " and " +
                           t->typeString() + " differ");
      shape[*a] += s[*a];
      s[*a] = shape[*a];
      if (s != shape)
        return cudaFailure("Concat inputs " + first.typeString() + " and " +
                           t->typeString() + " differ off axis " +
                           llvm::Twine(*a));
    }
    auto [outer, inner] = aroundAxis(shape, *a);
    size_t element = dtypeSize(first.dtype());
    Tensor y = ctx->make(first.dtype(), shape);
    size_t rowBytes = shape[*a] * inner * element, offset = 0;
    for (const Tensor *t : inputs) {
      size_t part = t->dim(*a) * inner * element;
      if (part && outer)
        HPS_CUDA_CHECK(cudaMemcpy2DAsync(
            devicePtr<uint8_t>(y) + offset, rowBytes, devicePtr(*t), part, part,
            outer, cudaMemcpyDeviceToDevice, ctx->stream()));
      offset += part;
    }
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  int64_t axis;
};

class SplitKernel : public CUDAKernel {
public:
  SplitKernel(CUDAContextPtr ctx, int64_t axis, std::vector<int64_t> sizes)
      : CUDAKernel(std::move(ctx)), axis(axis), sizes(std::move(sizes)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs, /*allowI64=*/true))
      return e;
    const Tensor &x = *inputs[0];
    llvm::Expected<int64_t> a = normalizeAxis(axis, x.rank());
    if (!a)
      return a.takeError();
    int64_t n = static_cast<int64_t>(outputs.size());
    std::vector<int64_t> parts = sizes;
    if (parts.empty()) {
      if (x.dim(*a) % n)
        return cudaFailure("Split of " + x.typeString() + " into " +
                           llvm::Twine(n) + " equal parts along axis " +
                           llvm::Twine(*a));
      parts.assign(n, x.dim(*a) / n);
    }
    if (static_cast<int64_t>(parts.size()) != n ||
        std::accumulate(parts.begin(), parts.end(), int64_t(0)) != x.dim(*a))
      return cudaFailure("Split sizes do not add up to axis " +
                         llvm::Twine(*a) + " of " + x.typeString());
    auto [outer, inner] = aroundAxis(x.shape(), *a);
    size_t element = dtypeSize(x.dtype());
    size_t rowBytes = x.dim(*a) * inner * element, offset = 0;
    for (int64_t k = 0; k < n; ++k) {
      Shape shape = x.shape();
      shape[*a] = parts[k];
      Tensor y = ctx->make(x.dtype(), shape);
      size_t part = parts[k] * inner * element;
      if (part && outer)
        HPS_CUDA_CHECK(cudaMemcpy2DAsync(
            devicePtr(y), part, devicePtr<uint8_t>(x) + offset, rowBytes, part,
            outer, cudaMemcpyDeviceToDevice, ctx->stream()));
      offset += part;
      outputs[k] = std::move(y);
    }
    return llvm::Error::success();
  }

private:
  int64_t axis;
  std::vector<int64_t> sizes;
};

class TransposeKernel : public CUDAKernel {
public:
  TransposeKernel(CUDAContextPtr ctx, std::vector<int64_t> perm)
      : CUDAKernel(std::move(ctx)), perm(std::move(perm)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs, /*allowI64=*/true))
      return e;
    const Tensor &x = *inputs[0];
    int64_t rank = x.rank();
    std::vector<int64_t> p = perm;
    if (p.empty())
      for (int64_t d = rank - 1; d >= 0; --d)
        p.push_back(d);
    std::vector<bool> seen(rank, false);
    if (static_cast<int64_t>(p.size()) != rank ||
        llvm::any_of(p, [&](int64_t d) {
          if (d < 0 || d >= rank || seen[d])
            return true;
          seen[d] = true;
          return false;
        }))
      return cudaFailure("perm is not a permutation of " + llvm::Twine(rank) +
                         " axes");
    Shape shape(rank);
    Dims xs = stridesOf(x.shape()), permuted;
    for (int64_t d = 0; d < rank; ++d) {
      shape[d] = x.dim(p[d]);
      permuted.v[d] = xs.v[p[d]];
    }
    llvm::Expected<Dims> dims = dimsOf(shape);
    if (!dims)
      return dims.takeError();
    Tensor y = ctx->make(x.dtype(), shape);
    launchStridedCopy(ctx->stream(), dtypeSize(x.dtype()), devicePtr(x),
                      devicePtr(y), static_cast<int>(rank), *dims, permuted,
                      stridesOf(shape));
    outputs[0] = std::move(y);
    return ctx->launched("transpose kernel");
  }

private:
  std::vector<int64_t> perm;
};

class SliceKernel : public CUDAKernel {
public:
  SliceKernel(CUDAContextPtr ctx, SliceParams params)
      : CUDAKernel(std::move(ctx)), params(std::move(params)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs, /*allowI64=*/true))
      return e;
    const Tensor &x = *inputs[0];
    llvm::Expected<SliceGeometry> g = sliceGeometry(x.shape(), params);
    if (!g)
      return g.takeError();
    llvm::Expected<Dims> dims = dimsOf(g->count);
    if (!dims)
      return dims.takeError();
    Dims xs = stridesOf(x.shape()), steps;
    int64_t base = 0;
    for (size_t d = 0; d < g->count.size(); ++d) {
      base += g->first[d] * xs.v[d];
      steps.v[d] = g->step[d] * xs.v[d];
    }
    Tensor y = ctx->make(x.dtype(), g->count);
    size_t element = dtypeSize(x.dtype());
    if (y.numElements())
      launchStridedCopy(ctx->stream(), element,
                        devicePtr<uint8_t>(x) + base * element, devicePtr(y),
                        static_cast<int>(g->count.size()), *dims, steps,
                        stridesOf(g->count));
    outputs[0] = std::move(y);
    return ctx->launched("slice kernel");
  }

private:
  SliceParams params;
};

class GatherKernel : public CUDAKernel {
public:
  GatherKernel(CUDAContextPtr ctx, int64_t axis)
      : CUDAKernel(std::move(ctx)), axis(axis) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs, /*allowI64=*/true))
      return e;
    const Tensor &data = *inputs[0], &indices = *inputs[1];
    if (indices.dtype() != DType::I64)
      return cudaFailure("Gather indices are " + indices.typeString() +
                         ", not i64");
    llvm::Expected<int64_t> a = normalizeAxis(axis, data.rank());
    if (!a)
      return a.takeError();
    Shape shape(data.shape().begin(), data.shape().begin() + *a);
    shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
    shape.insert(shape.end(), data.shape().begin() + *a + 1,
                 data.shape().end());
    auto [outer, inner] = aroundAxis(data.shape(), *a);
    Tensor y = ctx->make(data.dtype(), shape);
    Tensor bad = ctx->make(DType::F32, {1});
    HPS_CUDA_CHECK(cudaMemsetAsync(devicePtr(bad), 0, 4, ctx->stream()));
    launchGather(ctx->stream(), dtypeSize(data.dtype()), devicePtr(data),
                 devicePtr<int64_t>(indices), devicePtr(y), outer, data.dim(*a),
                 inner, indices.numElements(), devicePtr<int32_t>(bad));
    if (llvm::Error e = ctx->launched("gather kernel"))
      return e;
    // An index out of range is an error, not a zero: wait for the flag.
    int32_t flag = 0;
    if (llvm::Error e = ctx->toHost(devicePtr(bad), &flag, sizeof flag))
      return e;
    if (flag)
      return cudaFailure("Gather index out of range for axis " +
                         llvm::Twine(*a) + " of " + data.typeString());
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  int64_t axis;
};

class ReduceKernel : public CUDAKernel {
public:
  ReduceKernel(CUDAContextPtr ctx, Reduction r, std::vector<int64_t> axes,
               bool keepDims)
      : CUDAKernel(std::move(ctx)), r(r), axes(std::move(axes)),
        keepDims(keepDims) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs))
      return e;
    const Tensor &x = *inputs[0];
    std::vector<bool> reduced(x.rank(), axes.empty());
    for (int64_t a : axes) {
      llvm::Expected<int64_t> n = normalizeAxis(a, x.rank());
      if (!n)
        return n.takeError();
      reduced[*n] = true;
    }
    llvm::Expected<Tensor> y = reduceAxes(*ctx, r, x, reduced, keepDims);
    if (!y)
      return y.takeError();
    outputs[0] = std::move(*y);
    return llvm::Error::success();
  }

private:
  Reduction r;
  std::vector<int64_t> axes;
  bool keepDims;
};

/// Pad in constant mode (CUDABackend::supports sends the other modes to
/// the CPU): a fill, then the kept block of the input as one strided copy.
/// Negative pads crop.
class PadKernel : public CUDAKernel {
public:
  PadKernel(CUDAContextPtr ctx, std::vector<int64_t> pads, float value)
      : CUDAKernel(std::move(ctx)), pads(std::move(pads)), value(value) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkInputs(inputs, /*allowI64=*/true))
      return e;
    const Tensor &x = *inputs[0];
    if (x.dtype() != DType::F32)
      return cudaFailure("Pad input " + x.typeString() + " is not f32");
    std::vector<int64_t> p = pads;
    if (inputs.size() > 1 && inputs[1] && p.empty()) {
      llvm::Expected<std::vector<int64_t>> given = readInts(*ctx, *inputs[1]);
      if (!given)
        return given.takeError();
      p = std::move(*given);
    }
    int64_t rank = x.rank();
    if (static_cast<int64_t>(p.size()) != 2 * rank)
      return cudaFailure("Pad has " + llvm::Twine(p.size()) + " pads for " +
                         x.typeString());
    Shape out(rank), kept(rank);
    for (int64_t d = 0; d < rank; ++d) {
      out[d] = x.dim(d) + p[d] + p[rank + d];
      kept[d] = x.dim(d) - std::max<int64_t>(0, -p[d]) -
                std::max<int64_t>(0, -p[rank + d]);
      if (out[d] < 0 || kept[d] < 0)
        return cudaFailure("pads " + shapeToString(p) + " crop more than " +
                           x.typeString() + " holds");
    }
    Dims xs = stridesOf(x.shape()), ys = stridesOf(out);
    int64_t from = 0, to = 0;
    for (int64_t d = 0; d < rank; ++d) {
      from += std::max<int64_t>(0, -p[d]) * xs.v[d];
      to += std::max<int64_t>(0, p[d]) * ys.v[d];
    }
    llvm::Expected<Dims> dims = dimsOf(kept);
    if (!dims)
      return dims.takeError();
    Tensor y = ctx->make(DType::F32, out);
    launchFill(ctx->stream(), devicePtr<float>(y), value, y.numElements());
    if (numElements(kept) > 0)
      launchStridedCopy(ctx->stream(), 4, devicePtr<float>(x) + from,
                        devicePtr<float>(y) + to, static_cast<int>(rank), *dims,
                        xs, ys);
    outputs[0] = std::move(y);
    return ctx->launched("pad kernel");
  }

private:
  /// Empty: from input 1 on every run.
  std::vector<int64_t> pads;
  float value;
};

} // namespace

llvm::Expected<Tensor> cuda::reduceAxes(CUDAContext &ctx, Reduction r,
                                        const Tensor &x,
                                        const std::vector<bool> &reduced,
                                        bool keepDims) {
  int64_t rank = x.rank();
  Shape shape, kept, gone;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d] ? keepDims : true)
      shape.push_back(reduced[d] ? 1 : x.dim(d));
    (reduced[d] ? gone : kept).push_back(d);
  }
  int64_t n = 1;
  for (int64_t d : gone)
    n *= x.dim(d);
  Tensor y = ctx.make(DType::F32, shape);
  // Contiguous reduced axes: [outer, n, inner] as it is.
  bool contiguous = gone.empty() || gone.back() - gone.front() + 1 ==
                                        static_cast<int64_t>(gone.size());
  if (contiguous) {
    int64_t outer = 1, inner = 1;
    for (int64_t d : kept)
      (gone.empty() || d < gone.front() ? outer : inner) *= x.dim(d);
    launchReduce(ctx.stream(), r, devicePtr<float>(x), devicePtr<float>(y),
                 outer, n, inner);
    if (llvm::Error e = ctx.launched("reduce kernel"))
      return std::move(e);
    return y;
  }
  // Else the reduced axes move to the end first.
  std::vector<int64_t> order = kept;
  order.insert(order.end(), gone.begin(), gone.end());
  Shape moved;
  Dims xs = stridesOf(x.shape()), permuted;
  for (size_t d = 0; d < order.size(); ++d) {
    moved.push_back(x.dim(order[d]));
    permuted.v[d] = xs.v[order[d]];
  }
  llvm::Expected<Dims> dims = dimsOf(moved);
  if (!dims)
    return dims.takeError();
  Tensor t = ctx.make(DType::F32, moved);
  launchStridedCopy(ctx.stream(), 4, devicePtr(x), devicePtr(t),
                    static_cast<int>(rank), *dims, permuted, stridesOf(moved));
  launchReduce(ctx.stream(), r, devicePtr<float>(t), devicePtr<float>(y),
               x.numElements() / std::max<int64_t>(n, 1), n, 1);
  if (llvm::Error e = ctx.launched("reduce kernel"))
    return std::move(e);
  return y;
}

void cuda::registerDataKernels(KernelRegistry &registry, CUDAContextPtr ctx) {
  registry.add("Pad", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 3))
      return e;
    auto pads = info.attrs.getInts("pads", std::vector<int64_t>());
    if (!pads)
      return pads.takeError();
    auto value = info.attrs.getFloat("value", 0.f);
    if (!value)
      return value.takeError();
    float v = *value;
    // Constant pads and value are read back once.
    if (info.hasInput(1) && info.constants[1]) {
      auto given = readInts(*ctx, *info.constants[1]);
      if (!given)
        return given.takeError();
      *pads = std::move(*given);
    }
    if (info.hasInput(2) && info.constants[2]) {
      const Tensor &c = *info.constants[2];
      if (c.dtype() != DType::F32 || c.numElements() != 1)
        return cudaFailure("Pad constant_value is " + c.typeString() +
                           ", expected one f32");
      if (llvm::Error e = ctx->toHost(devicePtr(c), &v, sizeof v))
        return std::move(e);
    } else if (info.hasInput(2)) {
      return cudaFailure("a Pad value computed at run time has no cuda "
                         "kernel");
    }
    return std::make_unique<PadKernel>(ctx, std::move(*pads), v);
  });
  registry.add("Concat", [ctx](const OpInfo &info) -> Factory {
    if (info.numInputs() < 1 || info.numOutputs() != 1)
      return cudaFailure("Concat takes inputs and gives one output");
    auto axis = info.attrs.getInt("axis");
    if (!axis)
      return axis.takeError();
    return std::make_unique<ConcatKernel>(ctx, *axis);
  });
  registry.add("Split", [ctx](const OpInfo &info) -> Factory {
    if (info.numInputs() != 1 || info.numOutputs() < 1)
      return cudaFailure("Split takes one input and gives at least one "
                         "output");
    auto axis = info.attrs.getInt("axis", 0);
    if (!axis)
      return axis.takeError();
    auto sizes = info.attrs.getInts("split", std::vector<int64_t>());
    if (!sizes)
      return sizes.takeError();
    return std::make_unique<SplitKernel>(ctx, *axis, std::move(*sizes));
  });
  registry.add("Transpose", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto perm = info.attrs.getInts("perm", std::vector<int64_t>());
    if (!perm)
      return perm.takeError();
    return std::make_unique<TransposeKernel>(ctx, std::move(*perm));
  });
  registry.add("Slice", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto params = readSliceParams(info.attrs);
    if (!params)
      return params.takeError();
    return std::make_unique<SliceKernel>(ctx, std::move(*params));
  });
  registry.add("Gather", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 2))
      return e;
    auto axis = info.attrs.getInt("axis", 0);
    if (!axis)
      return axis.takeError();
    return std::make_unique<GatherKernel>(ctx, *axis);
  });
  for (auto [type, r] : {std::pair("ReduceSum", Reduction::Sum),
                         std::pair("ReduceMean", Reduction::Mean),
                         std::pair("ReduceMax", Reduction::Max),
                         std::pair("ReduceMin", Reduction::Min)})
    registry.add(type, [ctx, r = r](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(1, 1))
        return e;
      auto axes = info.attrs.getInts("axes", std::vector<int64_t>());
      if (!axes)
        return axes.takeError();
      auto keep = info.attrs.getInt("keepdims", 1);
      if (!keep)
        return keep.takeError();
      return std::make_unique<ReduceKernel>(ctx, r, std::move(*axes),
                                            *keep != 0);
    });
}
