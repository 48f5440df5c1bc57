//===- IndexGrad.cpp - training through index tensors and masks -----------===//
//
// The ops around attention in training: those that compute shapes, index
// tensors and masks (Shape, Range, ConstantOfShape, comparisons, logic,
// Cast) run forward only; no gradient flows through them. Where passes the
// gradient to the side each element came from, Expand sums it back over
// the broadcast dimensions, Trilu masks it as it masked the input, and
// CumSum's gradient is the running sum of the gradient the other way.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../Broadcast.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

class ForwardOnlyKernel : public InferenceForward {
public:
  using InferenceForward::InferenceForward;
  bool differentiable(int) const override { return false; }
  llvm::Error backward(llvm::ArrayRef<const Tensor *>, const Tensor &,
                       const Tensor &, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor>) override {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "has no gradient");
  }
};

class WhereGradKernel : public InferenceForward {
public:
  using InferenceForward::InferenceForward;
  bool differentiable(int i) const override { return i > 0; }
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &c = *inputs[0];
    Tensor dy = cpu::plainOf(dOutput, ctx);
    for (int side = 1; side <= 2; ++side) {
      if (!needGrad[side])
        continue;
      // dy where the condition picked this side, 0 elsewhere, then summed
      // back to the side's shape.
      Tensor masked(DType::F32, dy.shape());
      const uint8_t *pc = c.data<uint8_t>();
      const float *pd = dy.data<float>();
      float *pm = masked.data<float>();
      bool pickTrue = side == 1;
      cpu::forEachRow<1>(dy.shape(), {c.shape()},
                         [&](int64_t o, const std::array<int64_t, 1> &off,
                             int64_t n, const std::array<int64_t, 1> &step) {
                           for (int64_t j = 0; j < n; ++j)
                             pm[o + j] =
                                 (pc[off[0] + j * step[0]] != 0) == pickTrue
                                     ? pd[o + j]
                                     : 0.f;
                         });
      dInputs[side] = reduceToShape(masked, inputs[side]->shape());
    }
    return llvm::Error::success();
  }
};

class ExpandGradKernel : public InferenceForward {
public:
  using InferenceForward::InferenceForward;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    dInputs[0] = reduceToShape(cpu::plainOf(dOutput, ctx), inputs[0]->shape());
    return llvm::Error::success();
  }
};

/// Trilu's and CumSum's gradients are another run of an inference kernel
/// (the same Trilu; CumSum reversed) on the output's gradient.
class GradByKernel : public InferenceForward {
public:
  GradByKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
               std::unique_ptr<Kernel> grad)
      : InferenceForward(std::move(kernel), std::move(ctx)),
        grad(std::move(grad)) {}
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    // dy in place of the input; Trilu's k, CumSum's axis as they were.
    Tensor dy = cpu::plainOf(dOutput, ctx);
    std::vector<const Tensor *> args(inputs.begin(), inputs.end());
    args[0] = &dy;
    return grad->run(args, dInputs.take_front(1));
  }

private:
  std::unique_ptr<Kernel> grad;
};

template <typename K> TrainKernelFactory plainForward() {
  return [](const OpInfo &info, const TrainKernelEnv &env)
             -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    auto kernel = env.inference->createKernel(info);
    if (!kernel)
      return kernel.takeError();
    return std::make_unique<K>(std::move(*kernel), env.ctx);
  };
}

/// Trilu (gradient: the same kernel) or CumSum (the kernel with `reverse`
/// flipped).
llvm::Expected<std::unique_ptr<TrainKernel>>
gradByKernel(const OpInfo &info, const TrainKernelEnv &env) {
  auto kernel = env.inference->createKernel(info);
  if (!kernel)
    return kernel.takeError();
  plan::Op flipped = info.op;
  if (flipped.type() == "CumSum") {
    plan::Attribute *reverse = nullptr;
    for (plan::Attribute &a : *flipped.mutable_attributes())
      if (a.name() == "reverse")
        reverse = &a;
    if (!reverse) {
      reverse = flipped.add_attributes();
      reverse->set_name("reverse");
    }
    reverse->set_i(reverse->i() == 0);
  }
  auto grad = env.inference->createKernel(OpInfo(flipped, info.constants));
  if (!grad)
    return grad.takeError();
  return std::make_unique<GradByKernel>(std::move(*kernel), env.ctx,
                                        std::move(*grad));
}

} // namespace

void train::registerIndexGrad(TrainRegistry &registry) {
  for (const char *type :
       {"Shape", "Range", "ConstantOfShape", "Equal", "Less", "Greater",
        "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor", "Cast"})
    registry[type] = plainForward<ForwardOnlyKernel>();
  registry["Where"] = plainForward<WhereGradKernel>();
  registry["Expand"] = plainForward<ExpandGradKernel>();
  registry["Trilu"] = gradByKernel;
  registry["CumSum"] = gradByKernel;
}
