//===- RecurrentKernel.cpp - LSTM, GRU and RNN inference ------------------===//
//
// The hps.lstm, hps.gru and hps.rnn ops (their Y output) on
// RecurrentCells.h's forward.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "RecurrentCells.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

class RecurrentKernel : public Kernel {
public:
  explicit RecurrentKernel(RecurrentDims dims) : dims(dims) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor *state = inputs.size() > 4 ? inputs[4] : nullptr;
    RecurrentDims d = dims;
    if (llvm::Error e = fitRecurrentDims(d, *inputs[0], *inputs[1], *inputs[2],
                                         *inputs[3], state))
      return e;
    Tensor y(DType::F32, {d.steps, d.directions, d.batch, d.hidden});
    recurrentForward(d, inputs[0]->data<float>(), inputs[1]->data<float>(),
                     inputs[2]->data<float>(), inputs[3]->data<float>(),
                     state ? state->data<float>() : nullptr, y.data<float>(),
                     nullptr);
    outputs[0] = std::move(y);
    return llvm::Error::success();
  }

private:
  RecurrentDims dims;
};

} // namespace

void cpu::registerRecurrentKernels(KernelRegistry &registry,
                                   CPUContextPtr ctx) {
  for (const char *type : {"LSTM", "GRU", "RNN"})
    registry.add(
        type,
        [type](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
          if (llvm::Error e = info.checkArity(4, 5))
            return e;
          auto dims = recurrentAttrs(type, info.attrs);
          if (!dims)
            return dims.takeError();
          return std::make_unique<RecurrentKernel>(*dims);
        });
}
