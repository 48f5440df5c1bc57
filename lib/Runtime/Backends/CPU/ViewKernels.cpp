//===- ViewKernels.cpp - ops that only change the shape -------------------===//
//
// Identity and Dropout (inference) pass their input through, layout and all.
// Flatten, Reshape, Squeeze and Unsqueeze are views of the plain input: no
// copy. Transpose is a oneDNN reorder from a permuted-strides view, except
// between channels-last [N, C, S...] and plain [N, S..., C], which hold the
// same bytes: those are views too (ConvNeXt's permutes around each block's
// LayerNorm and MLP, between channels-last convolutions).
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

llvm::Expected<Tensor> cpu::transposePlain(const Tensor &x,
                                           llvm::ArrayRef<int64_t> perm,
                                           const CPUContextPtr &ctx) {
  int64_t rank = x.rank();
  std::vector<int64_t> p(perm.begin(), perm.end());
  if (p.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      p.push_back(i);
  std::vector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(p.size()) == rank;
  for (int64_t i = 0; valid && i < rank; ++i) {
    valid = p[i] >= 0 && p[i] < rank && !seen[p[i]];
    if (valid)
      seen[p[i]] = true;
  }
  if (!valid)
    return kernelError("'perm' is not a permutation of the axes of " +
                       x.typeString());
  Shape outShape;
  for (int64_t i = 0; i < rank; ++i)
    outShape.push_back(x.dim(p[i]));
  Tensor y(DType::F32, outShape);
  if (rank == 0 || x.numElements() == 0) {
    if (rank == 0)
      y.data<float>()[0] = x.data<float>()[0];
    return y;
  }
  llvm::Error e = guardDnnl([&]() -> llvm::Error {
    // Row-major strides of x, permuted: reading y's index space from x.
    memory::dims inStrides(rank), strides(rank);
    int64_t stride = 1;
    for (int64_t i = rank - 1; i >= 0; --i) {
      inStrides[i] = stride;
      stride *= x.dim(i);
    }
    for (int64_t i = 0; i < rank; ++i)
      strides[i] = inStrides[p[i]];
    memory::desc view(toDims(outShape), memory::data_type::f32, strides);
    memory from(view, ctx->engine, const_cast<void *>(x.rawData()));
    memory to = memoryOf(y, *ctx);
    dnnl::reorder(from, to).execute(ctx->stream, from, to);
    ctx->stream.wait();
    return llvm::Error::success();
  });
  if (e)
    return std::move(e);
  return y;
}

/// Whether `p` is [0, 2, ..., rank - 1, 1] (rank 3 to 5): [N, C, S...] to
/// [N, S..., C].
static bool isChannelsToLast(llvm::ArrayRef<int64_t> p) {
  int64_t rank = static_cast<int64_t>(p.size());
  if (rank < 3 || rank > 5 || p[0] != 0 || p[rank - 1] != 1)
    return false;
  for (int64_t i = 1; i < rank - 1; ++i)
    if (p[i] != i + 1)
      return false;
  return true;
}

/// Whether `p` is [0, rank - 1, 1, ..., rank - 2] (rank 3 to 5):
/// [N, S..., C] to [N, C, S...].
static bool isChannelsToFront(llvm::ArrayRef<int64_t> p) {
  int64_t rank = static_cast<int64_t>(p.size());
  if (rank < 3 || rank > 5 || p[0] != 0 || p[1] != rank - 1)
    return false;
  for (int64_t i = 2; i < rank; ++i)
    if (p[i] != i - 1)
      return false;
  return true;
}

llvm::Expected<Tensor> cpu::transposeOf(const Tensor &x,
                                        llvm::ArrayRef<int64_t> perm,
                                        const CPUContextPtr &ctx) {
  bool ranked = x.rank() == static_cast<int64_t>(perm.size());
  bool toLast = ranked && isChannelsToLast(perm) && isChannelsLast(x);
  bool toFront =
      ranked && isChannelsToFront(perm) && x.isPlain() && x.numElements() > 0;
  if (!toLast && !toFront)
    return transposePlain(plainOf(x, ctx), perm, ctx);
  Shape shape;
  for (int64_t axis : perm)
    shape.push_back(x.dim(axis));
  return x.part(0, shape,
                toLast ? nullptr
                       : layoutOf(channelsLastDesc(shape), shape, ctx));
}

namespace {

class PassThroughKernel : public Kernel {
public:
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    outputs[0] = *inputs[0];
    return llvm::Error::success();
  }
};

/// A view with the shape `shapeFor` computes from the input's.
class ReshapeKernel : public Kernel {
public:
  using ShapeFn = std::function<llvm::Expected<Shape>(const Shape &)>;
  explicit ReshapeKernel(ShapeFn shapeFor) : shapeFor(std::move(shapeFor)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0];
    llvm::Expected<Shape> shape = shapeFor(x.shape());
    if (!shape)
      return shape.takeError();
    if (numElements(*shape) != x.numElements())
      return kernelError("cannot view " + x.typeString() + " as " +
                         shapeToString(*shape));
    outputs[0] = x.reshaped(std::move(*shape));
    return llvm::Error::success();
  }

private:
  ShapeFn shapeFor;
};

llvm::Expected<Shape>
reshapeTo(const Shape &in, const std::vector<int64_t> &target, bool allowZero);

/// Reshape to a shape computed at run time (its second input).
class ComputedReshapeKernel : public Kernel {
public:
  explicit ComputedReshapeKernel(bool allowZero) : allowZero(allowZero) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    const Tensor &x = *inputs[0], &s = *inputs[1];
    if (s.dtype() != DType::I64 || s.rank() != 1)
      return kernelError("Reshape's shape must be a 1-D i64 tensor, not " +
                         s.typeString());
    std::vector<int64_t> target(s.data<int64_t>(),
                                s.data<int64_t>() + s.numElements());
    llvm::Expected<Shape> shape = reshapeTo(x.shape(), target, allowZero);
    if (!shape)
      return shape.takeError();
    if (numElements(*shape) != x.numElements())
      return kernelError("cannot reshape " + x.typeString() + " to " +
                         shapeToString(target) + " (computed at run time)");
    outputs[0] = x.reshaped(std::move(*shape));
    return llvm::Error::success();
  }

private:
  bool allowZero;
};

class TransposeKernel : public Kernel {
public:
  TransposeKernel(CPUContextPtr ctx, std::vector<int64_t> perm)
      : ctx(std::move(ctx)), perm(std::move(perm)) {}
  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    llvm::Expected<Tensor> y = transposeOf(*inputs[0], perm, ctx);
    if (!y)
      return y.takeError();
    outputs[0] = std::move(*y);
    return llvm::Error::success();
  }

private:
  CPUContextPtr ctx;
  std::vector<int64_t> perm;
};

llvm::Expected<Shape>
reshapeTo(const Shape &in, const std::vector<int64_t> &target, bool allowZero) {
  Shape out;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return kernelError("'shape' copies dimension " + llvm::Twine(i) +
                           " of an input of rank " + llvm::Twine(in.size()));
      d = in[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        return kernelError("'shape' has more than one -1");
      inferred = static_cast<int64_t>(i);
    } else if (d < 0) {
      return kernelError("'shape' has invalid dimension " + llvm::Twine(d));
    } else {
      known *= d;
    }
    out.push_back(d);
  }
  if (inferred >= 0) {
    int64_t n = numElements(in);
    if (known == 0 || n % known != 0)
      return kernelError("cannot infer the -1 of 'shape' " +
                         shapeToString(target) + " for input " +
                         shapeToString(in));
    out[inferred] = n / known;
  }
  return out;
}

} // namespace

using Factory = llvm::Expected<std::unique_ptr<Kernel>>;

void cpu::registerViewKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  for (const char *type : {"Identity", "Dropout"})
    registry.add(type, [](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(1, 3))
        return e;
      return std::make_unique<PassThroughKernel>();
    });
  registry.add("Flatten", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto axis = info.attrs.getInt("axis", 1);
    if (!axis)
      return axis.takeError();
    int64_t a = *axis;
    return std::make_unique<ReshapeKernel>(
        [a](const Shape &in) -> llvm::Expected<Shape> {
          int64_t rank = in.size();
          if (a < -rank || a > rank)
            return kernelError("axis " + llvm::Twine(a) +
                               " is out of range for rank " +
                               llvm::Twine(rank));
          int64_t split = a < 0 ? a + rank : a;
          int64_t rows = numElements(llvm::ArrayRef(in).take_front(split));
          return Shape{rows, numElements(llvm::ArrayRef(in).drop_front(split))};
        });
  });
  registry.add("Reshape", [](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 2))
      return e;
    auto allowZero = info.attrs.getInt("allowzero", 0);
    if (!allowZero)
      return allowZero.takeError();
    if (info.hasInput(1))
      return std::make_unique<ComputedReshapeKernel>(*allowZero != 0);
    auto shape = info.attrs.getInts("shape");
    if (!shape)
      return shape.takeError();
    std::vector<int64_t> target = *shape;
    bool zero = *allowZero != 0;
    return std::make_unique<ReshapeKernel>([target, zero](const Shape &in) {
      return reshapeTo(in, target, zero);
    });
  });
  for (const char *type : {"Squeeze", "Unsqueeze"})
    registry.add(type, [](const OpInfo &info) -> Factory {
      if (llvm::Error e = info.checkArity(1, 1))
        return e;
      auto axes = info.attrs.getInts("axes", std::vector<int64_t>());
      if (!axes)
        return axes.takeError();
      std::vector<int64_t> ax = *axes;
      bool squeeze = info.op.type() == "Squeeze";
      return std::make_unique<ReshapeKernel>(
          [ax, squeeze](const Shape &in) -> llvm::Expected<Shape> {
            int64_t rank = in.size() + (squeeze ? 0 : ax.size());
            std::vector<bool> marked(rank, false);
            for (int64_t a : ax) {
              auto n = normalizeAxis(a, rank);
              if (!n)
                return n.takeError();
              marked[*n] = true;
            }
            Shape out;
            for (int64_t i = 0, j = 0; i < rank; ++i) {
              if (!squeeze) {
                out.push_back(marked[i] ? 1 : in[j++]);
                continue;
              }
              bool drop = ax.empty() ? in[i] == 1 : marked[i];
              if (drop && in[i] != 1)
                return kernelError("cannot squeeze axis " + llvm::Twine(i) +
                                   " of size " + llvm::Twine(in[i]));
              if (!drop)
                out.push_back(in[i]);
            }
            return out;
          });
    });
  registry.add("Transpose", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(1, 1))
      return e;
    auto perm = info.attrs.getInts("perm", std::vector<int64_t>());
    if (!perm)
      return perm.takeError();
    return std::make_unique<TransposeKernel>(ctx, *perm);
  });
}
