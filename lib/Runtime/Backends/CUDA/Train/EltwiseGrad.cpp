//===- EltwiseGrad.cpp - activations and broadcasting binary ops ----------===//
//
// Activations: dx = dy f'(x), one kernel (some derivatives read the
// output instead of the input). Add, Sub, Mul and Div: the gradient of
// each operand is summed back over the axes it was broadcast along.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

class UnaryGrad : public CUDATrainKernel {
public:
  UnaryGrad(std::unique_ptr<Kernel> forward, CUDAContextPtr ctx, UnarySpec f)
      : CUDATrainKernel(std::move(forward), std::move(ctx)), f(f) {}

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &x = *inputs[0];
    Tensor dx = ctx->make(DType::F32, x.shape());
    launchUnaryBackward(ctx->stream(), f, devicePtr<float>(x),
                        devicePtr<float>(output), devicePtr<float>(dOutput),
                        devicePtr<float>(dx), x.numElements());
    dInputs[0] = std::move(dx);
    return ctx->launched("activation backward kernel");
  }

private:
  UnarySpec f;
};

/// Broadcasting `a op b` over `shape` into a new tensor.
llvm::Expected<Tensor> combine(CUDAContext &ctx, Binary op, const Tensor &a,
                               const Tensor &b, const Shape &shape) {
  llvm::Expected<Dims> dims = dimsOf(shape);
  if (!dims)
    return dims.takeError();
  auto stridesIn = [&](const Shape &s) {
    Shape padded(shape.size() - s.size(), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    Dims strides = stridesOf(padded);
    for (size_t d = 0; d < shape.size(); ++d)
      if (padded[d] == 1 && shape[d] != 1)
        strides.v[d] = 0;
    return strides;
  };
  Tensor y = ctx.make(DType::F32, shape);
  launchBinary(ctx.stream(), op, devicePtr<float>(a), devicePtr<float>(b),
               devicePtr<float>(y), static_cast<int>(shape.size()), *dims,
               stridesIn(a.shape()), stridesIn(b.shape()));
  if (llvm::Error e = ctx.launched("binary kernel"))
    return std::move(e);
  return y;
}

class BinaryGrad : public CUDATrainKernel {
public:
  BinaryGrad(std::unique_ptr<Kernel> forward, CUDAContextPtr ctx, Binary op)
      : CUDATrainKernel(std::move(forward), std::move(ctx)), op(op) {}

  bool differentiable(int i) const override { return i <= 1; }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    const Shape &shape = dOutput.shape();
    for (int k : {0, 1}) {
      if (!needGrad[k])
        continue;
      // The gradient over the whole output, then summed to the operand.
      llvm::Expected<Tensor> full = dOutput;
      switch (op) {
      case Binary::Add:
        break;
      case Binary::Sub:
        if (k == 1)
          full = scaled(dOutput, -1.f);
        break;
      case Binary::Mul:
        full = combine(*ctx, Binary::Mul, dOutput, k == 0 ? b : a, shape);
        break;
      case Binary::Div:
        // d/da = dy / b; d/db = -dy a / b^2 = -(dy y) / b.
        if (k == 0) {
          full = combine(*ctx, Binary::Div, dOutput, b, shape);
        } else {
          full = combine(*ctx, Binary::Mul, dOutput, output, shape);
          if (full)
            full = combine(*ctx, Binary::Div, *full, b, shape);
          if (full)
            full = scaled(*full, -1.f);
        }
        break;
      default:
        return cudaFailure("no cuda backward for this binary op");
      }
      if (!full)
        return full.takeError();
      llvm::Expected<Tensor> g =
          sumToShape(*ctx, *full, (k == 0 ? a : b).shape());
      if (!g)
        return g.takeError();
      dInputs[k] = std::move(*g);
    }
    return llvm::Error::success();
  }

private:
  llvm::Expected<Tensor> scaled(const Tensor &t, float by) {
    Tensor y = ctx->make(DType::F32, t.shape());
    launchScale(ctx->stream(), devicePtr<float>(t), devicePtr<float>(y), by,
                t.numElements());
    if (llvm::Error e = ctx->launched("scale kernel"))
      return std::move(e);
    return y;
  }

  Binary op;
};

} // namespace

void cuda::registerEltwiseGrad(TrainRegistry &registry) {
  for (const char *type :
       {"Relu", "LeakyRelu", "Elu", "Clip", "Sigmoid", "Tanh", "HardSigmoid",
        "HardSwish", "Abs", "Exp", "Log", "Sqrt", "Neg", "Reciprocal", "Erf",
        "Softplus", "Softsign", "Selu"})
    registry[type] = [](const OpInfo &info, const TrainEnv &env)
        -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
      auto forward = forwardKernelFor(info, env);
      if (!forward)
        return forward.takeError();
      llvm::Expected<UnarySpec> f = unarySpecFor(info.op.type(), info.attrs);
      if (!f)
        return f.takeError();
      return std::make_unique<UnaryGrad>(std::move(*forward), env.ctx, *f);
    };
  for (auto [type, op] :
       {std::pair("Add", Binary::Add), std::pair("Sub", Binary::Sub),
        std::pair("Mul", Binary::Mul), std::pair("Div", Binary::Div)})
    registry[type] = [op = op](const OpInfo &info, const TrainEnv &env)
        -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
      auto forward = forwardKernelFor(info, env);
      if (!forward)
        return forward.takeError();
      return std::make_unique<BinaryGrad>(std::move(*forward), env.ctx, op);
    };
}
