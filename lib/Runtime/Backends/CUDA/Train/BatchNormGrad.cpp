//===- BatchNormGrad.cpp - batch normalisation in training ----------------===//
//
// cuDNN's spatial batch norm: the forward normalises with the batch's
// statistics and updates the running ones in place,
//   running = momentum * running + (1 - momentum) * batch
// (ONNX's momentum; the variance unbiased, as the CPU backend does), and
// keeps the batch's mean and inverse deviation for the backward, which
// gives the gradients of the input, the scale and the bias.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

class BatchNormGrad : public train::TrainKernel {
public:
  BatchNormGrad(CUDAContextPtr ctx, float epsilon, float momentum)
      : ctx(std::move(ctx)), epsilon(epsilon), momentum(momentum) {}
  ~BatchNormGrad() override {
    for (cudnnTensorDescriptor_t d : {data, channels})
      if (d)
        cudnnDestroyTensorDescriptor(d);
  }

  bool differentiable(int i) const override { return i <= 2; }
  bool updatesInput(int i) const override { return i == 3 || i == 4; }

  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    const Tensor &x = *inputs[0];
    if (llvm::Error e = describe(x))
      return e;
    int64_t c = x.dim(1);
    for (int k = 1; k <= 4; ++k)
      if (inputs[k]->numElements() != c)
        return cudaFailure("BatchNormalization input " + llvm::Twine(k) + " " +
                           inputs[k]->typeString() + " does not have " +
                           llvm::Twine(c) + " channels");
    output = ctx->make(DType::F32, x.shape());
    saved = ctx->make(DType::F32, {2, c});
    float one = 1.f, zero = 0.f;
    HPS_CUDA_CHECK(cudnnBatchNormalizationForwardTraining(
        ctx->cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, data, devicePtr(x),
        data, devicePtr(output), channels, devicePtr(*inputs[1]),
        devicePtr(*inputs[2]), 1.0 - momentum, devicePtr(*inputs[3]),
        devicePtr(*inputs[4]), epsilon, devicePtr<float>(saved),
        devicePtr<float>(saved) + c));
    return llvm::Error::success();
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &x = *inputs[0];
    if (llvm::Error e = describe(x))
      return e;
    int64_t c = x.dim(1);
    Tensor dx = ctx->make(DType::F32, x.shape());
    Tensor dScale = ctx->make(DType::F32, inputs[1]->shape());
    Tensor dBias = ctx->make(DType::F32, inputs[2]->shape());
    float one = 1.f, zero = 0.f;
    // The batch statistics of the forward on the same input.
    bool have = !saved.isNull() && saved.dim(1) == c;
    HPS_CUDA_CHECK(cudnnBatchNormalizationBackward(
        ctx->cudnn(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, data,
        devicePtr(x), data, devicePtr(dOutput), data, devicePtr(dx), channels,
        devicePtr(*inputs[1]), devicePtr(dScale), devicePtr(dBias), epsilon,
        have ? devicePtr<float>(saved) : nullptr,
        have ? devicePtr<float>(saved) + c : nullptr));
    if (needGrad[0])
      dInputs[0] = std::move(dx);
    if (needGrad[1])
      dInputs[1] = std::move(dScale);
    if (needGrad[2])
      dInputs[2] = std::move(dBias);
    return llvm::Error::success();
  }

private:
  /// x as [N, C, rest, 1] and the channels as [1, C, 1, 1].
  llvm::Error describe(const Tensor &x) {
    if (x.rank() < 2)
      return cudaFailure("BatchNormalization input " + x.typeString() +
                         " has no channel axis");
    if (x.shape() == described)
      return llvm::Error::success();
    if (!data) {
      HPS_CUDA_CHECK(cudnnCreateTensorDescriptor(&data));
      HPS_CUDA_CHECK(cudnnCreateTensorDescriptor(&channels));
    }
    int n = static_cast<int>(x.dim(0)), c = static_cast<int>(x.dim(1));
    int rest = static_cast<int>(x.numElements() / std::max<int64_t>(n * c, 1));
    HPS_CUDA_CHECK(cudnnSetTensor4dDescriptor(data, CUDNN_TENSOR_NCHW,
                                              CUDNN_DATA_FLOAT, n, c, rest, 1));
    HPS_CUDA_CHECK(
        cudnnDeriveBNTensorDescriptor(channels, data, CUDNN_BATCHNORM_SPATIAL));
    described = x.shape();
    return llvm::Error::success();
  }

  CUDAContextPtr ctx;
  float epsilon, momentum;
  cudnnTensorDescriptor_t data = nullptr, channels = nullptr;
  Shape described;
  /// The last forward's batch mean and inverse deviation.
  Tensor saved;
};

} // namespace

void cuda::registerBatchNormGrad(TrainRegistry &registry) {
  registry["BatchNormalization"] = [](const OpInfo &info, const TrainEnv &env)
      -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
    if (llvm::Error e = info.checkArity(5, 5))
      return std::move(e);
    auto epsilon = info.attrs.getFloat("epsilon", 1e-5f);
    if (!epsilon)
      return epsilon.takeError();
    if (*epsilon < CUDNN_BN_MIN_EPSILON)
      return cudaFailure("BatchNormalization epsilon below cuDNN's minimum");
    auto momentum = info.attrs.getFloat("momentum", 0.9f);
    if (!momentum)
      return momentum.takeError();
    auto relu = info.attrs.getString("activation", "");
    if (!relu)
      return relu.takeError();
    if (!relu->empty())
      return cudaFailure("a BatchNormalization with a fused activation "
                         "cannot be trained on cuda");
    return std::make_unique<BatchNormGrad>(env.ctx, *epsilon, *momentum);
  };
}
