//===- IndexGrad.cpp - training through index tensors and masks -----------===//
//
// The ops around attention in training: those that compute shapes, index
// tensors and masks (Shape, Range, ConstantOfShape, comparisons, logic,
// Cast, integer Mod) run forward only; no gradient flows through them.
// Where passes the gradient to the side each element came from, Expand sums
// it back over the broadcast dimensions, Trilu masks it as it masked the
// input, CumSum's gradient is the running sum of the gradient the other
// way, and ScatterND's goes to the updates at the slices they wrote and to
// the data elsewhere (everywhere with reduction "add").
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../Broadcast.h"
#include "../CPUKernels.h"

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

/// Mod of integers (shape arithmetic, Swin's window pads) runs forward only;
/// a float Mod is refused rather than trained without its gradient.
class IntegerModKernel : public ForwardOnlyKernel {
public:
  using ForwardOnlyKernel::ForwardOnlyKernel;
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    if (inputs[0]->dtype() == DType::F32)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "Mod of floats cannot be trained yet "
                                     "(no gradient)");
    return ForwardOnlyKernel::forward(inputs, output);
  }
};

/// ScatterND with reduction "none" or "add": the updates' gradient is the
/// output's at the slices they went to; the data's is the output's, zeroed
/// where an update replaced it. With "none", rows that name one slice twice
/// (whose order ONNX leaves undefined) each get its gradient.
class ScatterNDGradKernel : public InferenceForward {
public:
  ScatterNDGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                      bool replaces)
      : InferenceForward(std::move(kernel), std::move(ctx)),
        replaces(replaces) {}
  bool differentiable(int i) const override { return i != 1; }
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    Tensor dy = cpu::plainOf(dOutput, ctx);
    const Tensor &indices = *inputs[1], &updates = *inputs[2];
    if (needGrad[0]) {
      // The forward kernel itself, writing zeros where it wrote updates.
      Tensor zeros(DType::F32, updates.shape());
      std::fill_n(zeros.data<float>(), zeros.numElements(), 0.f);
      const Tensor *args[] = {&dy, &indices, &zeros};
      if (!replaces)
        dInputs[0] = dy.clone();
      else if (llvm::Error e = kernel->run(args, dInputs.take_front(1)))
        return e;
    }
    if (needGrad[2]) {
      int64_t k = indices.dim(indices.rank() - 1), slice = 1;
      for (int64_t d = k; d < dy.rank(); ++d)
        slice *= dy.dim(d);
      Tensor du(DType::F32, updates.shape());
      const int64_t *index = indices.data<int64_t>();
      for (int64_t row = 0, rows = indices.numElements() / k; row < rows;
           ++row) {
        llvm::Expected<int64_t> offset =
            cpu::scatterSliceOffset(index + row * k, k, dy);
        if (!offset)
          return offset.takeError();
        std::copy_n(dy.data<float>() + *offset, slice,
                    du.data<float>() + row * slice);
      }
      dInputs[2] = std::move(du);
    }
    return llvm::Error::success();
  }

private:
  bool replaces;
};

llvm::Expected<std::unique_ptr<TrainKernel>>
scatterNDGrad(const OpInfo &info, const TrainKernelEnv &env) {
  auto reduction = info.attrs.getString("reduction", std::string("none"));
  if (!reduction)
    return reduction.takeError();
  if (*reduction != "none" && *reduction != "add")
    return cpu::kernelError("ScatterND with reduction '" + *reduction +
                            "' cannot be trained yet (no backward kernel)");
  auto kernel = env.inference->createKernel(info);
  if (!kernel)
    return kernel.takeError();
  return std::make_unique<ScatterNDGradKernel>(std::move(*kernel), env.ctx,
                                               *reduction == "none");
}

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
  registry["Mod"] = plainForward<IntegerModKernel>();
  registry["ScatterND"] = scatterNDGrad;
  registry["Where"] = plainForward<WhereGradKernel>();
  registry["Expand"] = plainForward<ExpandGradKernel>();
  registry["Trilu"] = gradByKernel;
  registry["CumSum"] = gradByKernel;
}
