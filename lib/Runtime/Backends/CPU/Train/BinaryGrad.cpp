//===- BinaryGrad.cpp - binary arithmetic forward and backward ------------===//
//
// Add, Sub, Mul, Div, Max, Min, Pow and PRelu (x, or slope * x where x <=
// 0). Same-shape operands in one layout (residual Adds between
// convolutions) run on oneDNN's binary primitive in that layout;
// broadcasting ones (and Pow and PRelu) run as plain loops. The backward
// multiplies the output gradient by the partial derivative and sums it over
// the dimensions an operand was broadcast along (BinaryMath.h: parallel,
// vectorised loops shared with the inference kernels). A fused Relu
// (fuseTrainableActivations: a ResNet block's Add and the Relu after it)
// is the primitive's post-op, or a pass over the output of the loops; its
// backward masks the gradient by the output, so the Relu's own forward
// pass over the tensor goes.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../BinaryMath.h"
#include "../CPUKernels.h"

#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::BinaryOp;
using cpu::memoryOf;

Tensor train::reduceToShape(const Tensor &dy, const Shape &shape) {
  return dy.shape() == shape ? dy.clone() : cpu::sumToShape(dy, shape);
}

namespace {

std::optional<dnnl::algorithm> dnnlAlgorithm(BinaryOp kind) {
  switch (kind) {
  case BinaryOp::Add:
    return dnnl::algorithm::binary_add;
  case BinaryOp::Sub:
    return dnnl::algorithm::binary_sub;
  case BinaryOp::Mul:
    return dnnl::algorithm::binary_mul;
  case BinaryOp::Div:
    return dnnl::algorithm::binary_div;
  case BinaryOp::Max:
    return dnnl::algorithm::binary_max;
  case BinaryOp::Min:
    return dnnl::algorithm::binary_min;
  case BinaryOp::Pow:
  case BinaryOp::PRelu:
    return std::nullopt;
  }
  return std::nullopt;
}

class BinaryGradKernel : public TrainKernel {
public:
  BinaryGradKernel(CPUContextPtr ctx, BinaryOp kind, std::string type,
                   bool relu)
      : ctx(std::move(ctx)), kind(kind), type(std::move(type)), relu(relu) {}
  bool differentiable(int) const override { return true; }
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  CPUContextPtr ctx;
  BinaryOp kind;
  std::string type;
  bool relu;
  /// Same-shape operands in the first one's layout, per shape and layouts.
  std::map<std::string, dnnl::binary> sameLayout;
};

} // namespace

llvm::Error BinaryGradKernel::forward(llvm::ArrayRef<const Tensor *> inputs,
                                      Tensor &output) {
  // Shape arithmetic at run time (no gradient reaches i64 values).
  if (kind <= BinaryOp::Min &&
      (inputs[0]->dtype() == DType::I64 || inputs[1]->dtype() == DType::I64)) {
    if (relu)
      return cpu::kernelError(type + " with a fused Relu takes f32, not i64");
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
      bool reluPass = relu && !cpu::reluAsPostOp(md, a.shape());
      auto it = sameLayout.find(key);
      if (it == sameLayout.end()) {
        dnnl::primitive_attr attr;
        attr.set_post_ops(cpu::reluPostOps(relu && !reluPass));
        dnnl::binary::primitive_desc pd({*algorithm, md, md, md}, attr,
                                        ctx->engine);
        it = sameLayout.emplace(key, dnnl::binary(pd)).first;
      }
      output = cpu::allocate(md, a.shape(), ctx);
      it->second.execute(ctx->stream, {{DNNL_ARG_SRC_0, memoryOf(a, *ctx)},
                                       {DNNL_ARG_SRC_1, memoryOf(rhs, *ctx)},
                                       {DNNL_ARG_DST, memoryOf(output, *ctx)}});
      ctx->stream.wait();
      if (reluPass)
        cpu::reluInPlace(output);
      return llvm::Error::success();
    }
    if (auto form = cpu::channelBroadcastOf(a, b)) {
      output = cpu::channelBroadcast(kind, *form, a, b, ctx);
    } else {
      auto shape = cpu::broadcastShapes(a.shape(), b.shape());
      if (!shape)
        return shape.takeError();
      output = Tensor(DType::F32, *shape);
      cpu::broadcastBinary(kind, cpu::plainOf(a, ctx), cpu::plainOf(b, ctx),
                           output);
    }
    if (relu)
      cpu::reluInPlace(output);
    return llvm::Error::success();
  });
}

llvm::Error BinaryGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                       const Tensor &output,
                                       const Tensor &dOutputOfRelu,
                                       llvm::ArrayRef<bool> needGrad,
                                       llvm::MutableArrayRef<Tensor> dInputs) {
  return cpu::guardDnnl([&]() -> llvm::Error {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    Tensor dOutput =
        relu ? cpu::reluGradient(output, dOutputOfRelu, ctx) : dOutputOfRelu;
    if (kind == BinaryOp::Add && a.shape() == b.shape()) {
      // The gradient passes through to both, layout and all.
      for (int i = 0; i < 2; ++i)
        if (needGrad[i])
          dInputs[i] = dOutput;
      return llvm::Error::success();
    }
    if (auto form = cpu::channelBroadcastOf(a, b)) {
      bool need[2] = {needGrad[0], needGrad[1]};
      Tensor grads[2];
      cpu::channelBroadcastGrad(kind, *form, dOutput, a, b, need, grads, ctx);
      for (int i = 0; i < 2; ++i)
        if (need[i])
          dInputs[i] = std::move(grads[i]);
      return llvm::Error::success();
    }
    // Same-shape operands in a channel-blocked layout (SiLU's x * sigmoid(x))
    // keep it: reorders to plain and back cost more than the product.
    if (a.shape() == b.shape() && !a.isPlain()) {
      bool blocked = true;
      for (int i = 0; i < 2 && blocked; ++i)
        if (needGrad[i]) {
          std::optional<Tensor> d =
              cpu::blockedPartial(kind, i == 0, dOutput, a, b, ctx);
          blocked = d.has_value();
          if (blocked)
            dInputs[i] = std::move(*d);
        }
      if (blocked)
        return llvm::Error::success();
    }
    Tensor dy = cpu::plainOf(dOutput, ctx);
    Tensor pa = cpu::plainOf(a, ctx), pb = cpu::plainOf(b, ctx);
    for (int i = 0; i < 2; ++i) {
      if (!needGrad[i])
        continue;
      const Shape &shape = inputs[i]->shape();
      // Add's gradient is dy itself, summed over broadcast axes.
      Tensor d = dy;
      if (kind != BinaryOp::Add) {
        d = Tensor(DType::F32, dy.shape());
        cpu::broadcastPartial(kind, i == 0, dy, pa, pb, d);
      }
      dInputs[i] =
          d.shape() == shape ? std::move(d) : cpu::sumToShape(d, shape);
    }
    return llvm::Error::success();
  });
}

void train::registerBinaryGrad(TrainRegistry &registry) {
  std::pair<const char *, BinaryOp> kinds[] = {
      {"Add", BinaryOp::Add}, {"Sub", BinaryOp::Sub},    {"Mul", BinaryOp::Mul},
      {"Div", BinaryOp::Div}, {"Max", BinaryOp::Max},    {"Min", BinaryOp::Min},
      {"Pow", BinaryOp::Pow}, {"PRelu", BinaryOp::PRelu}};
  for (auto [type, kind] : kinds)
    registry[type] = [kind = kind](const OpInfo &info,
                                   const TrainKernelEnv &env)
        -> llvm::Expected<std::unique_ptr<TrainKernel>> {
      if (llvm::Error e = info.checkArity(2, 2))
        return e;
      llvm::Expected<bool> relu =
          cpu::fusesRelu(info.attrs, "a trained " + info.op.type());
      if (!relu)
        return relu.takeError();
      return std::make_unique<BinaryGradKernel>(env.ctx, kind, info.op.type(),
                                                *relu);
    };
}
