//===- BinaryGrad.cpp - Add, Sub and Mul forward and backward -------------===//
//
// Same-shape operands in one layout (residual Adds between convolutions)
// run on oneDNN's binary primitive in that layout; broadcasting ones run as
// plain loops. The backward sums the output gradient over the dimensions
// an operand was broadcast along.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::memoryOf;

/// Strides of `shape` right-aligned to a rank-`rank` shape, 0 along
/// dimensions that are 1 (broadcast) or missing.
static std::vector<int64_t> broadcastStrides(const Shape &shape, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t d = shape.size() - 1 - i;
    if (shape[d] != 1)
      strides[rank - 1 - i] = stride;
    stride *= shape[d];
  }
  return strides;
}

/// Calls fn(outIndex, indexA, indexB) for every element of `out`, with the
/// flat indices of the elements of A and B numpy broadcasting pairs it with.
template <typename Fn>
static void forEachBroadcast(const Shape &out, const Shape &a, const Shape &b,
                             Fn &&fn) {
  size_t rank = out.size();
  std::vector<int64_t> sa = broadcastStrides(a, rank),
                       sb = broadcastStrides(b, rank), idx(rank, 0);
  int64_t ia = 0, ib = 0, total = numElements(out);
  for (int64_t o = 0; o < total; ++o) {
    fn(o, ia, ib);
    for (size_t d = rank; d-- > 0;) {
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < out[d])
        break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

Tensor train::reduceToShape(const Tensor &dy, const Shape &shape) {
  if (dy.shape() == shape)
    return dy.clone();
  Tensor out(DType::F32, shape);
  float *o = out.data<float>();
  std::fill(o, o + out.numElements(), 0.f);
  const float *g = dy.data<float>();
  forEachBroadcast(dy.shape(), shape, shape,
                   [&](int64_t i, int64_t j, int64_t) { o[j] += g[i]; });
  return out;
}

namespace {

enum class BinaryKind { Add, Sub, Mul };

class BinaryGradKernel : public TrainKernel {
public:
  BinaryGradKernel(CPUContextPtr ctx, BinaryKind kind)
      : ctx(std::move(ctx)), kind(kind) {}
  bool differentiable(int) const override { return true; }
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  CPUContextPtr ctx;
  BinaryKind kind;
  /// Same-shape operands in the first one's layout, per shape and layouts.
  std::map<std::string, dnnl::binary> sameLayout;
};

} // namespace

llvm::Error BinaryGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                      Tensor &output) {
  if (llvm::Error e = cpu::checkF32(inputs))
    return e;
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    if (a.shape() == b.shape()) {
      memory::desc md = cpu::descOf(a);
      Tensor rhs = cpu::reorderTo(b, md, ctx);
      std::string key = cpu::shapeKey({&a});
      auto it = sameLayout.find(key);
      if (it == sameLayout.end()) {
        auto algorithm = kind == BinaryKind::Add ? dnnl::algorithm::binary_add
                         : kind == BinaryKind::Sub
                             ? dnnl::algorithm::binary_sub
                             : dnnl::algorithm::binary_mul;
        dnnl::binary::primitive_desc pd({algorithm, md, md, md}, ctx->engine);
        it = sameLayout.emplace(key, dnnl::binary(pd)).first;
      }
      output = cpu::allocate(md, a.shape(), ctx);
      it->second.execute(ctx->stream, {{DNNL_ARG_SRC_0, memoryOf(a, *ctx)},
                                       {DNNL_ARG_SRC_1, memoryOf(rhs, *ctx)},
                                       {DNNL_ARG_DST, memoryOf(output, *ctx)}});
      ctx->stream.wait();
      return llvm::Error::success();
    }
    auto shape = cpu::broadcastShapes(a.shape(), b.shape());
    if (!shape)
      return shape.takeError();
    Tensor pa = cpu::plainOf(a, ctx), pb = cpu::plainOf(b, ctx);
    output = Tensor(DType::F32, *shape);
    const float *x = pa.data<float>(), *y = pb.data<float>();
    float *z = output.data<float>();
    forEachBroadcast(*shape, a.shape(), b.shape(),
                     [&](int64_t o, int64_t i, int64_t j) {
                       z[o] = kind == BinaryKind::Add   ? x[i] + y[j]
                              : kind == BinaryKind::Sub ? x[i] - y[j]
                                                        : x[i] * y[j];
                     });
    return llvm::Error::success();
  });
}

llvm::Error BinaryGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                       const Tensor &, const Tensor &dOutput,
                                       llvm::ArrayRef<bool> needGrad,
                                       llvm::MutableArrayRef<Tensor> dInputs) {
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    bool same = a.shape() == b.shape();
    if (kind == BinaryKind::Add && same) {
      // The gradient passes through to both, layout and all.
      for (int i = 0; i < 2; ++i)
        if (needGrad[i])
          dInputs[i] = dOutput;
      return llvm::Error::success();
    }
    Tensor dy = cpu::plainOf(dOutput, ctx);
    const float *g = dy.data<float>();
    for (int i = 0; i < 2; ++i) {
      if (!needGrad[i])
        continue;
      const Tensor &self = *inputs[i];
      Tensor other = cpu::plainOf(*inputs[1 - i], ctx);
      const float *v = other.data<float>();
      Tensor d(DType::F32, self.shape());
      float *dv = d.data<float>();
      std::fill(dv, dv + d.numElements(), 0.f);
      float sign = kind == BinaryKind::Sub && i == 1 ? -1.f : 1.f;
      forEachBroadcast(dy.shape(), self.shape(), other.shape(),
                       [&](int64_t o, int64_t si, int64_t oi) {
                         dv[si] += kind == BinaryKind::Mul ? g[o] * v[oi]
                                                           : sign * g[o];
                       });
      dInputs[i] = std::move(d);
    }
    return llvm::Error::success();
  });
}

void train::registerBinaryGrad(TrainRegistry &registry) {
  std::pair<const char *, BinaryKind> kinds[] = {{"Add", BinaryKind::Add},
                                                 {"Sub", BinaryKind::Sub},
                                                 {"Mul", BinaryKind::Mul}};
  for (auto [type, kind] : kinds)
    registry[type] = [kind = kind](const OpInfo &info,
                                   const TrainKernelEnv &env)
        -> llvm::Expected<std::unique_ptr<TrainKernel>> {
      if (llvm::Error e = info.checkArity(2, 2))
        return e;
      return std::make_unique<BinaryGradKernel>(env.ctx, kind);
    };
}
