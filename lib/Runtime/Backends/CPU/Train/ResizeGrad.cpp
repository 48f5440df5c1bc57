//===- ResizeGrad.cpp - training through Resize
//----------------------------===//
//
// Resize is linear in its input: its gradient is the transpose of each of
// its passes (ResizeGeometry.h), applied to dy in the reverse order, each
// output element's gradient sent to the input elements it read with the
// weights it read them with. Scales, sizes and roi get none.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../ResizeGeometry.h"

using namespace heterps::runtime;
using namespace heterps::runtime::train;

namespace {

class ResizeGradKernel : public InferenceForward {
public:
  ResizeGradKernel(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
                   cpu::ResizeParams params)
      : InferenceForward(std::move(kernel), std::move(ctx)),
        params(std::move(params)) {}

  static llvm::Expected<std::unique_ptr<TrainKernel>>
  create(std::unique_ptr<Kernel> kernel, CPUContextPtr ctx,
         const OpInfo &info) {
    llvm::Expected<cpu::ResizeParams> params = cpu::resizeParamsOf(info);
    if (!params)
      return params.takeError();
    return std::make_unique<ResizeGradKernel>(std::move(kernel), std::move(ctx),
                                              *params);
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool>,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    Shape outShape;
    llvm::Expected<std::vector<cpu::ResizePass>> passes =
        cpu::resizePasses(params, inputs, outShape);
    if (!passes)
      return passes.takeError();
    Tensor g = cpu::plainOf(dOutput, ctx);
    if (g.shape() != outShape)
      return cpu::kernelError("Resize backward: the gradient is " +
                              g.typeString() + ", the output " +
                              shapeToString(outShape));
    // Backwards through the passes: the shape before a pass is the one
    // after the pass before it, or the input's.
    for (auto pass = passes->rbegin(); pass != passes->rend(); ++pass) {
      const Shape &before =
          pass + 1 == passes->rend() ? inputs[0]->shape() : (pass + 1)->after;
      Tensor dx(DType::F32, before);
      cpu::resampleBackward(g.data<float>(), dx.data<float>(), *pass);
      g = std::move(dx);
    }
    dInputs[0] = std::move(g);
    return llvm::Error::success();
  }

private:
  cpu::ResizeParams params;
};

} // namespace

void train::registerResizeGrad(TrainRegistry &registry) {
  registry["Resize"] = inferenceForward<ResizeGradKernel>();
}
