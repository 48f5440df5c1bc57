//===- BinaryGrad.cpp - binary arithmetic forward and backward ------------===//
//
// Add, Sub, Mul, Div, Max, Min, Pow and PRelu (x, or slope * x where x <=
// 0). Same-shape operands in one layout (residual Adds between
// convolutions) run on oneDNN's binary primitive in that layout;
// broadcasting ones (and Pow and PRelu) run as plain loops. The backward
// sums the output gradient over the dimensions an operand was broadcast along.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../CPUKernels.h"

#include <cmath>
#include <optional>

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

enum class BinaryKind { Add, Sub, Mul, Div, Max, Min, Pow, PRelu };

float apply(BinaryKind kind, float x, float y) {
  switch (kind) {
  case BinaryKind::Add:
    return x + y;
  case BinaryKind::Sub:
    return x - y;
  case BinaryKind::Mul:
    return x * y;
  case BinaryKind::Div:
    return x / y;
  case BinaryKind::Max:
    return std::max(x, y);
  case BinaryKind::Min:
    return std::min(x, y);
  case BinaryKind::Pow:
    return std::pow(x, y);
  case BinaryKind::PRelu:
    return x > 0 ? x : x * y;
  }
  return 0;
}

/// d(x op y)/dx (`wrtFirst`) or d(x op y)/dy. Max and Min split a tie
/// evenly, as PyTorch does; Pow's exponent gradient is 0 where x <= 0.
float partial(BinaryKind kind, bool wrtFirst, float x, float y) {
  switch (kind) {
  case BinaryKind::Add:
    return 1;
  case BinaryKind::Sub:
    return wrtFirst ? 1 : -1;
  case BinaryKind::Mul:
    return wrtFirst ? y : x;
  case BinaryKind::Div:
    return wrtFirst ? 1 / y : -x / (y * y);
  case BinaryKind::Max:
  case BinaryKind::Min: {
    if (x == y)
      return 0.5f;
    bool firstWins = kind == BinaryKind::Max ? x > y : x < y;
    return firstWins == wrtFirst ? 1 : 0;
  }
  case BinaryKind::Pow:
    if (wrtFirst)
      return y * std::pow(x, y - 1);
    return x > 0 ? std::pow(x, y) * std::log(x) : 0;
  case BinaryKind::PRelu:
    if (wrtFirst)
      return x > 0 ? 1 : y;
    return x > 0 ? 0 : x;
  }
  return 0;
}

std::optional<dnnl::algorithm> dnnlAlgorithm(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return dnnl::algorithm::binary_add;
  case BinaryKind::Sub:
    return dnnl::algorithm::binary_sub;
  case BinaryKind::Mul:
    return dnnl::algorithm::binary_mul;
  case BinaryKind::Div:
    return dnnl::algorithm::binary_div;
  case BinaryKind::Max:
    return dnnl::algorithm::binary_max;
  case BinaryKind::Min:
    return dnnl::algorithm::binary_min;
  case BinaryKind::Pow:
  case BinaryKind::PRelu:
    return std::nullopt;
  }
  return std::nullopt;
}

class BinaryGradKernel : public TrainKernel {
public:
  BinaryGradKernel(CPUContextPtr ctx, BinaryKind kind, std::string type)
      : ctx(std::move(ctx)), kind(kind), type(std::move(type)) {}
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
  std::string type;
  /// Same-shape operands in the first one's layout, per shape and layouts.
  std::map<std::string, dnnl::binary> sameLayout;
};

} // namespace

llvm::Error BinaryGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                      Tensor &output) {
  // Shape arithmetic at run time (no gradient reaches i64 values).
  if (kind <= BinaryKind::Min &&
      (inputs[0]->dtype() == DType::I64 || inputs[1]->dtype() == DType::I64)) {
    llvm::Expected<Tensor> out =
        cpu::integerArithmetic(type, *inputs[0], *inputs[1]);
    if (!out)
      return out.takeError();
    output = std::move(*out);
    return llvm::Error::success();
  }
  if (llvm::Error e = cpu::checkF32(inputs))
    return e;
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    std::optional<dnnl::algorithm> algorithm = dnnlAlgorithm(kind);
    if (a.shape() == b.shape() && algorithm) {
      memory::desc md = cpu::descOf(a);
      Tensor rhs = cpu::reorderTo(b, md, ctx);
      std::string key = cpu::shapeKey({&a});
      auto it = sameLayout.find(key);
      if (it == sameLayout.end()) {
        dnnl::binary::primitive_desc pd({*algorithm, md, md, md}, ctx->engine);
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
                       z[o] = apply(kind, x[i], y[j]);
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
    if (kind == BinaryKind::Add && a.shape() == b.shape()) {
      // The gradient passes through to both, layout and all.
      for (int i = 0; i < 2; ++i)
        if (needGrad[i])
          dInputs[i] = dOutput;
      return llvm::Error::success();
    }
    Tensor dy = cpu::plainOf(dOutput, ctx);
    Tensor pa = cpu::plainOf(a, ctx), pb = cpu::plainOf(b, ctx);
    const float *g = dy.data<float>(), *x = pa.data<float>(),
                *y = pb.data<float>();
    for (int i = 0; i < 2; ++i) {
      if (!needGrad[i])
        continue;
      Tensor d(DType::F32, inputs[i]->shape());
      float *dv = d.data<float>();
      std::fill(dv, dv + d.numElements(), 0.f);
      bool first = i == 0;
      forEachBroadcast(dy.shape(), a.shape(), b.shape(),
                       [&](int64_t o, int64_t ia, int64_t ib) {
                         dv[first ? ia : ib] +=
                             g[o] * partial(kind, first, x[ia], y[ib]);
                       });
      dInputs[i] = std::move(d);
    }
    return llvm::Error::success();
  });
}

void train::registerBinaryGrad(TrainRegistry &registry) {
  std::pair<const char *, BinaryKind> kinds[] = {
      {"Add", BinaryKind::Add}, {"Sub", BinaryKind::Sub},
      {"Mul", BinaryKind::Mul}, {"Div", BinaryKind::Div},
      {"Max", BinaryKind::Max}, {"Min", BinaryKind::Min},
      {"Pow", BinaryKind::Pow}, {"PRelu", BinaryKind::PRelu}};
  for (auto [type, kind] : kinds)
    registry[type] = [kind = kind](const OpInfo &info,
                                   const TrainKernelEnv &env)
        -> llvm::Expected<std::unique_ptr<TrainKernel>> {
      if (llvm::Error e = info.checkArity(2, 2))
        return e;
      return std::make_unique<BinaryGradKernel>(env.ctx, kind, info.op.type());
    };
}
