//===- RecurrentGrad.cpp - LSTM, GRU and RNN backward ---------------------===//
//
// Backpropagation through time (RecurrentCells.h). The backward runs the
// forward again for what it keeps (the gates, LSTM's cells, GRU's state
// products) instead of holding them from the forward call, so that
// several micro-batches in flight (pipelined training) each get their
// own: one forward more per step, the price of a kernel without state.
//
//===----------------------------------------------------------------------===//

#include "../RecurrentCells.h"
#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using namespace heterps::runtime::train;

namespace {

class RecurrentGradKernel : public TrainKernel {
public:
  RecurrentGradKernel(RecurrentDims attrs, CPUContextPtr ctx)
      : attrs(attrs), ctx(std::move(ctx)) {}

  /// The input, W, R, B and the initial state.
  bool differentiable(int i) const override { return i <= 4; }

  llvm::Error forward(llvm::ArrayRef<const Tensor *> given,
                      Tensor &output) override {
    Plain inputs(given, ctx);
    llvm::Expected<RecurrentDims> d = dims(inputs);
    if (!d)
      return d.takeError();
    output = Tensor(DType::F32, {d->steps, d->directions, d->batch, d->hidden});
    recurrentForward(*d, data(inputs, 0), data(inputs, 1), data(inputs, 2),
                     data(inputs, 3), data(inputs, 4), output.data<float>(),
                     nullptr);
    return llvm::Error::success();
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> given,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    Plain inputs(given, ctx);
    llvm::Expected<RecurrentDims> d = dims(inputs);
    if (!d)
      return d.takeError();
    std::vector<RecurrentTape> tapes;
    Tensor y(DType::F32, output.shape());
    recurrentForward(*d, data(inputs, 0), data(inputs, 1), data(inputs, 2),
                     data(inputs, 3), data(inputs, 4), y.data<float>(), &tapes);
    Tensor dy = cpu::plainOf(dOutput, ctx);
    std::vector<Tensor> grads;
    for (size_t i = 0; i < 5; ++i)
      grads.push_back(i < inputs.size() && inputs[i]
                          ? Tensor(DType::F32, inputs[i]->shape())
                          : Tensor());
    recurrentBackward(*d, data(inputs, 0), data(inputs, 1), data(inputs, 2),
                      data(inputs, 4), y.data<float>(), tapes, dy.data<float>(),
                      grads[0].data<float>(), grads[1].data<float>(),
                      grads[2].data<float>(), grads[3].data<float>(),
                      grads[4].isNull() ? nullptr : grads[4].data<float>());
    for (size_t i = 0; i < dInputs.size() && i < grads.size(); ++i)
      if (needGrad[i])
        dInputs[i] = std::move(grads[i]);
    return llvm::Error::success();
  }

private:
  /// The inputs, those in a backend layout (a Conv's output before an LSTM)
  /// as plain copies.
  struct Plain : std::vector<const Tensor *> {
    Plain(llvm::ArrayRef<const Tensor *> given, const CPUContextPtr &ctx)
        : std::vector<const Tensor *>(given.begin(), given.end()) {
      copies.reserve(size());
      for (const Tensor *&t : *this)
        if (t && !t->isPlain())
          t = &copies.emplace_back(cpu::plainOf(*t, ctx));
    }
    std::vector<Tensor> copies;
  };

  llvm::Expected<RecurrentDims> dims(llvm::ArrayRef<const Tensor *> inputs) {
    if (llvm::Error e = checkF32(inputs))
      return std::move(e);
    RecurrentDims d = attrs;
    if (llvm::Error e =
            fitRecurrentDims(d, *inputs[0], *inputs[1], *inputs[2], *inputs[3],
                             inputs.size() > 4 ? inputs[4] : nullptr))
      return std::move(e);
    return d;
  }
  static const float *data(llvm::ArrayRef<const Tensor *> inputs, size_t i) {
    return i < inputs.size() && inputs[i] ? inputs[i]->data<float>() : nullptr;
  }

  RecurrentDims attrs;
  CPUContextPtr ctx;
};

} // namespace

void train::registerRecurrentGrad(TrainRegistry &registry) {
  for (const char *type : {"LSTM", "GRU", "RNN"})
    registry[type] = [type](const OpInfo &info, const TrainKernelEnv &env)
        -> llvm::Expected<std::unique_ptr<TrainKernel>> {
      if (llvm::Error e = info.checkArity(4, 5))
        return std::move(e);
      auto attrs = recurrentAttrs(type, info.attrs);
      if (!attrs)
        return attrs.takeError();
      return std::make_unique<RecurrentGradKernel>(*attrs, env.ctx);
    };
}
