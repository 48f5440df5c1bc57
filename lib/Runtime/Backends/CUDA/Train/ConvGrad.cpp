//===- ConvGrad.cpp - Conv forward and backward on cuDNN ------------------===//
//
// The forward is the inference kernel; the backward uses its descriptors
// for the same input shape: cudnnConvolutionBackwardData for the input's
// gradient, BackwardFilter for the weight's and BackwardBias for the
// bias's, each with the algorithm cuDNN's search finds fastest for the
// shape (cached). Pads that differ at the two ends of an axis are refused.
//
//===----------------------------------------------------------------------===//

#include "../ConvKernel.h"
#include "TrainKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

struct BackwardAlgorithms {
  cudnnConvolutionBwdDataAlgo_t data;
  cudnnConvolutionBwdFilterAlgo_t filter;
  size_t dataBytes = 0, filterBytes = 0;
};

class ConvGrad : public CUDATrainKernel {
public:
  ConvGrad(std::unique_ptr<Kernel> forward, CUDAContextPtr ctx,
           cudnnTensorDescriptor_t biasDesc)
      : CUDATrainKernel(std::move(forward), std::move(ctx)),
        biasDesc(biasDesc) {}
  ~ConvGrad() override { cudnnDestroyTensorDescriptor(biasDesc); }

  bool differentiable(int i) const override { return i <= 2; }

  llvm::Error backward(llvm::ArrayRef<const Tensor *> inputs,
                       const Tensor &output, const Tensor &dOutput,
                       llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    const Tensor &x = *inputs[0], &w = *inputs[1];
    auto &conv = static_cast<ConvKernel &>(*forwardKernel);
    llvm::Expected<ConvSetup *> setup = conv.setupFor(x, w);
    if (!setup)
      return setup.takeError();
    ConvSetup &s = **setup;
    if (!s.padded.empty())
      return cudaFailure("Conv pads that differ at the two ends of an axis "
                         "cannot be trained on cuda");
    llvm::Expected<BackwardAlgorithms *> algos = algorithmsFor(x.shape(), s);
    if (!algos)
      return algos.takeError();
    float one = 1.f, zero = 0.f;
    if (needGrad[0]) {
      Tensor dx = ctx->make(DType::F32, x.shape());
      llvm::Expected<void *> work = ctx->workspace((*algos)->dataBytes);
      if (!work)
        return work.takeError();
      HPS_CUDA_CHECK(cudnnConvolutionBackwardData(
          ctx->cudnn(), &one, s.w, devicePtr(w), s.y, devicePtr(dOutput),
          s.conv, (*algos)->data, *work, (*algos)->dataBytes, &zero, s.x,
          devicePtr(dx)));
      dInputs[0] = std::move(dx);
    }
    if (needGrad.size() > 1 && needGrad[1]) {
      Tensor dw = ctx->make(DType::F32, w.shape());
      llvm::Expected<void *> work = ctx->workspace((*algos)->filterBytes);
      if (!work)
        return work.takeError();
      HPS_CUDA_CHECK(cudnnConvolutionBackwardFilter(
          ctx->cudnn(), &one, s.x, devicePtr(x), s.y, devicePtr(dOutput),
          s.conv, (*algos)->filter, *work, (*algos)->filterBytes, &zero, s.w,
          devicePtr(dw)));
      dInputs[1] = std::move(dw);
    }
    if (needGrad.size() > 2 && needGrad[2]) {
      const Tensor &b = *inputs[2];
      Tensor db = ctx->make(DType::F32, b.shape());
      int rank = static_cast<int>(std::max<int64_t>(dOutput.rank(), 4));
      std::vector<int> dims(rank, 1), strides(rank, 1);
      dims[1] = static_cast<int>(b.numElements());
      for (int k = rank - 2; k >= 0; --k)
        strides[k] = strides[k + 1] * dims[k + 1];
      HPS_CUDA_CHECK(cudnnSetTensorNdDescriptor(
          biasDesc, CUDNN_DATA_FLOAT, rank, dims.data(), strides.data()));
      HPS_CUDA_CHECK(cudnnConvolutionBackwardBias(ctx->cudnn(), &one, s.y,
                                                  devicePtr(dOutput), &zero,
                                                  biasDesc, devicePtr(db)));
      dInputs[2] = std::move(db);
    }
    return llvm::Error::success();
  }

private:
  llvm::Expected<BackwardAlgorithms *> algorithmsFor(const Shape &x,
                                                     const ConvSetup &s) {
    auto it = algorithms.find(x);
    if (it != algorithms.end())
      return &it->second;
    BackwardAlgorithms a;
    constexpr int kData = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    constexpr int kFilter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    cudnnConvolutionBwdDataAlgoPerf_t data[kData];
    cudnnConvolutionBwdFilterAlgoPerf_t filter[kFilter];
    int found = 0;
    // cuDNN's own search, on buffers it allocates (the fastest first).
    HPS_CUDA_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(
        ctx->cudnn(), s.w, s.y, s.conv, s.x, kData, &found, data));
    int k = 0;
    while (k < found && (data[k].status != CUDNN_STATUS_SUCCESS ||
                         data[k].memory > kMaxConvWorkspace))
      ++k;
    if (k == found)
      return cudaFailure("cuDNN has no backward-data algorithm for input " +
                         shapeToString(x));
    a.data = data[k].algo;
    HPS_CUDA_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
        ctx->cudnn(), s.w, s.y, s.conv, s.x, a.data, &a.dataBytes));
    HPS_CUDA_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(
        ctx->cudnn(), s.x, s.y, s.conv, s.w, kFilter, &found, filter));
    k = 0;
    while (k < found && (filter[k].status != CUDNN_STATUS_SUCCESS ||
                         filter[k].memory > kMaxConvWorkspace))
      ++k;
    if (k == found)
      return cudaFailure("cuDNN has no backward-filter algorithm for input " +
                         shapeToString(x));
    a.filter = filter[k].algo;
    HPS_CUDA_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        ctx->cudnn(), s.x, s.y, s.conv, s.w, a.filter, &a.filterBytes));
    return &(algorithms[x] = a);
  }

  cudnnTensorDescriptor_t biasDesc;
  std::map<Shape, BackwardAlgorithms> algorithms;
};

} // namespace

void cuda::registerConvGrad(TrainRegistry &registry) {
  registry["Conv"] = [](const OpInfo &info, const TrainEnv &env)
      -> llvm::Expected<std::unique_ptr<train::TrainKernel>> {
    if (info.numInputs() > 3)
      return cudaFailure("a Conv with a summed input cannot be trained");
    auto forward = forwardKernelFor(info, env);
    if (!forward)
      return forward.takeError();
    cudnnTensorDescriptor_t bias;
    HPS_CUDA_CHECK(cudnnCreateTensorDescriptor(&bias));
    return std::make_unique<ConvGrad>(std::move(*forward), env.ctx, bias);
  };
}
