//===- ShapeGrad.cpp - views, Concat and Gather forward and backward ------===//
//
// The forwards are the inference kernels (Flatten, Reshape, Squeeze,
// Unsqueeze and Identity views; Concat in a common layout; Gather). The
// backward of a view is the output gradient viewed with the input's shape;
// Concat's cuts the output gradient into the inputs' slices along the axis;
// Gather's adds each output row into the row of the table it came from (a
// dense table gradient: large tables are trained as sparse parameter-server
// tables instead, see PipelineTrain).
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

/// Runs an inference kernel as the forward (plain inputs unless it takes
/// layouts).
class InferenceForward : public TrainKernel {
public:
  InferenceForward(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx)
      : kernel(std::move(kernel)), ctx(std::move(ctx)) {}
  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    std::vector<Tensor> plain;
    std::vector<const Tensor *> args(inputs.begin(), inputs.end());
    if (!kernel->acceptsLayouts()) {
      plain.reserve(inputs.size());
      for (const Tensor *&t : args)
        if (t && !t->isPlain())
          t = &plain.emplace_back(cpu::plainOf(*t, ctx));
    }
    return kernel->run(args, llvm::MutableArrayRef<Tensor>(output));
  }

protected:
  std::unique_ptr<Kernel> kernel;
  CPUContextPtr ctx;
};

class ViewGradKernel : public InferenceForward {
public:
  using InferenceForward::InferenceForward;
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    if (inputs[0]->shape() == dOutput.shape()) {
      dInputs[0] = dOutput; // Identity: layout and all
      return llvm::Error::success();
    }
    return cpu::guardDnnl([&]() -> llvm::Error {
      dInputs[0] = cpu::plainOf(dOutput, ctx).reshaped(inputs[0]->shape());
      return llvm::Error::success();
    });
  }
};

class ConcatGradKernel : public InferenceForward {
public:
  ConcatGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                   int64_t axis)
      : InferenceForward(std::move(kernel), std::move(ctx)), axis(axis) {}
  bool differentiable(int) const override { return true; }
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override;

private:
  int64_t axis;
};

class GatherGradKernel : public InferenceForward {
public:
  GatherGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                   int64_t axis)
      : InferenceForward(std::move(kernel), std::move(ctx)), axis(axis) {}
  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &data = *inputs[0], &indices = *inputs[1];
    if (axis != 0 && axis != -data.rank())
      return cpu::kernelError("the backward of Gather along axis " +
                              llvm::Twine(axis) +
                              " is not supported (axis 0 "
                              "only)");
    return cpu::guardDnnl([&]() -> llvm::Error {
      Tensor dy = cpu::plainOf(dOutput, ctx);
      Tensor dData(DType::F32, data.shape());
      float *out = dData.data<float>();
      std::fill_n(out, dData.numElements(), 0.f);
      int64_t rows = data.dim(0),
              row = data.numElements() / std::max<int64_t>(rows, 1);
      const float *g = dy.data<float>();
      const int64_t *ids = indices.data<int64_t>();
      for (int64_t k = 0, n = indices.numElements(); k < n; ++k) {
        float *target = out + (ids[k] < 0 ? ids[k] + rows : ids[k]) * row;
        for (int64_t j = 0; j < row; ++j)
          target[j] += g[k * row + j];
      }
      dInputs[0] = std::move(dData);
      return llvm::Error::success();
    });
  }

private:
  int64_t axis;
};

} // namespace

llvm::Error ConcatGradKernel::backward(llvm::ArrayRef<const Tensor *> inputs,
                                       const Tensor &, const Tensor &dOutput,
                                       llvm::ArrayRef<bool> needGrad,
                                       llvm::MutableArrayRef<Tensor> dInputs) {
  return cpu::guardDnnl([&]() -> llvm::Error {
    auto a = cpu::normalizeAxis(axis, dOutput.rank());
    if (!a)
      return a.takeError();
    // Each input's slice of `g`, or nothing when oneDNN cannot view one
    // (a blocked layout cut off a block boundary).
    auto slicesOf = [&](const Tensor &g) {
      std::vector<memory::desc> slices;
      memory::desc md = cpu::descOf(g);
      int64_t offset = 0;
      for (const Tensor *x : inputs) {
        memory::dims dims = cpu::toDims(x->shape()), offsets(dims.size(), 0);
        offsets[*a] = offset;
        offset += dims[*a];
        try {
          slices.push_back(md.submemory_desc(dims, offsets));
        } catch (const dnnl::error &) {
          return std::vector<memory::desc>();
        }
      }
      return slices;
    };
    Tensor dy = dOutput;
    std::vector<memory::desc> slices = slicesOf(dy);
    if (slices.empty()) {
      dy = cpu::plainOf(dOutput, ctx);
      slices = slicesOf(dy);
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!needGrad[i])
        continue;
      memory::desc target = cpu::descOf(*inputs[i]);
      Tensor d = cpu::allocate(target, inputs[i]->shape(), ctx);
      memory from(slices[i], ctx->engine, const_cast<void *>(dy.rawData()));
      memory to = cpu::memoryOf(d, *ctx);
      dnnl::reorder(from, to).execute(ctx->stream, from, to);
      dInputs[i] = std::move(d);
    }
    ctx->stream.wait();
    return llvm::Error::success();
  });
}

void train::registerShapeGrad(TrainRegistry &registry) {
  for (const char *type :
       {"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Identity"})
    registry[type] = [](const OpInfo &info, const TrainKernelEnv &env)
        -> llvm::Expected<std::unique_ptr<TrainKernel>> {
      auto kernel = env.inference->createKernel(info);
      if (!kernel)
        return kernel.takeError();
      return std::make_unique<ViewGradKernel>(std::move(*kernel), env.ctx);
    };
  registry["Concat"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    auto axis = info.attrs.getInt("axis");
    if (!axis)
      return axis.takeError();
    auto kernel = env.inference->createKernel(info);
    if (!kernel)
      return kernel.takeError();
    return std::make_unique<ConcatGradKernel>(std::move(*kernel), env.ctx,
                                              *axis);
  };
  registry["Gather"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    auto axis = info.attrs.getInt("axis", 0);
    if (!axis)
      return axis.takeError();
    auto kernel = env.inference->createKernel(info);
    if (!kernel)
      return kernel.takeError();
    return std::make_unique<GatherGradKernel>(std::move(*kernel), env.ctx,
                                              *axis);
  };
}
