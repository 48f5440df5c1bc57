//===- ConvKernel.cpp - ONNX Conv on cuDNN --------------------------------===//
//
// 1-D to 3-D, grouped and dilated, NCHW in f32 with FMA math (no TF32, so
// results stay within f32 rounding of the CPU's). Per input shape the
// kernel sets its descriptors once and picks the forward algorithm: by
// timing every candidate on the real buffers (cudnnFindConvolutionForward-
// AlgorithmEx) when the backend autotunes, else by cuDNN's heuristics; the
// choice is cached. Fusions the plan rewrites give it: a fourth input
// summed into the result (cuDNN's beta = 1 over a copy of it), then the
// bias and an activation in one pass. Pads that differ at the two ends of
// an axis (cuDNN takes one per axis) are made by copying the input into a
// zeroed, larger buffer.
//
//===----------------------------------------------------------------------===//

#include "ConvKernel.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cuda;

namespace {

std::vector<int> toInts(llvm::ArrayRef<int64_t> v) {
  return std::vector<int>(v.begin(), v.end());
}

/// cuDNN wants at least 4-D: a 1-D convolution becomes 2-D over [.., 1, W].
Shape atLeast4D(Shape s) {
  if (s.size() == 3)
    s.insert(s.begin() + 2, 1);
  return s;
}

llvm::Error setTensor(cudnnTensorDescriptor_t d, const Shape &shape) {
  std::vector<int> dims = toInts(shape);
  std::vector<int> strides(dims.size(), 1);
  for (int k = static_cast<int>(dims.size()) - 2; k >= 0; --k)
    strides[k] = strides[k + 1] * dims[k + 1];
  HPS_CUDA_CHECK(cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT,
                                            static_cast<int>(dims.size()),
                                            dims.data(), strides.data()));
  return llvm::Error::success();
}

} // namespace

llvm::Error ConvKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                            llvm::MutableArrayRef<Tensor> outputs) {
  if (llvm::Error e = checkInputs(inputs))
    return e;
  const Tensor &x = *inputs[0], &w = *inputs[1];
  const Tensor *bias = inputs.size() > 2 ? inputs[2] : nullptr;
  const Tensor *sum = inputs.size() > 3 ? inputs[3] : nullptr;
  llvm::Expected<ConvSetup *> setup = setupFor(x, w);
  if (!setup)
    return setup.takeError();
  ConvSetup &s = **setup;
  const Shape &outShape = s.window.outShape;
  if (sum)
    if (llvm::Error e = checkSummedInput(*sum, outShape))
      return e;
  if (bias && bias->numElements() != outShape[1])
    return cudaFailure("Conv bias " + bias->typeString() + " does not have " +
                       llvm::Twine(outShape[1]) + " channels");

  const void *src = devicePtr(x);
  Tensor padded;
  if (!s.padded.empty()) {
    padded = ctx->make(DType::F32, s.padded);
    HPS_CUDA_CHECK(
        cudaMemsetAsync(devicePtr(padded), 0, padded.bytes(), ctx->stream()));
    Shape xs = atLeast4D(x.shape());
    Dims ps = stridesOf(s.padded);
    int64_t offset = 0;
    size_t spatial = s.window.padBegin.size(), rank = s.padded.size();
    for (size_t d = 0; d < spatial; ++d)
      offset += s.window.padBegin[d] * ps.v[rank - spatial + d];
    llvm::Expected<Dims> dims = dimsOf(xs);
    if (!dims)
      return dims.takeError();
    launchStridedCopy(ctx->stream(), 4, src, devicePtr<float>(padded) + offset,
                      static_cast<int>(xs.size()), *dims, stridesOf(xs), ps);
    src = devicePtr(padded);
  }

  Tensor y = ctx->make(DType::F32, outShape);
  llvm::Expected<void *> work = ctx->workspace(s.workspace);
  if (!work)
    return work.takeError();
  if (sum)
    HPS_CUDA_CHECK(cudaMemcpyAsync(devicePtr(y), devicePtr(*sum), y.bytes(),
                                   cudaMemcpyDeviceToDevice, ctx->stream()));
  float alpha = 1.f, beta = sum ? 1.f : 0.f;
  HPS_CUDA_CHECK(cudnnConvolutionForward(
      ctx->cudnn(), &alpha, s.x, src, s.w, devicePtr(w), s.conv, s.algo, *work,
      s.workspace, &beta, s.y, devicePtr(y)));
  if (bias || f.op != Unary::Identity) {
    int64_t inner = y.numElements() / (outShape[0] * outShape[1]);
    launchBiasActivation(ctx->stream(), devicePtr<float>(y),
                         bias ? devicePtr<float>(*bias) : nullptr, outShape[0],
                         outShape[1], inner, f);
    if (llvm::Error e = ctx->launched("bias and activation kernel"))
      return e;
  }
  outputs[0] = std::move(y);
  return llvm::Error::success();
}

llvm::Expected<ConvSetup *> ConvKernel::setupFor(const Tensor &x,
                                                 const Tensor &w) {
  auto it = setups.find(x.shape());
  if (it != setups.end() && w.shape() == weightShape)
    return it->second.get();
  if (w.shape() != weightShape)
    setups.clear();
  weightShape = w.shape();
  llvm::Expected<Window> window = convWindow(attrs, x, w);
  if (!window)
    return window.takeError();
  auto s = std::make_unique<ConvSetup>();
  s->window = std::move(*window);
  size_t spatial = s->window.kernel.size();
  std::vector<int> pads(spatial), strides = toInts(s->window.strides),
                                  dilations = toInts(s->window.dilations);
  bool asymmetric = s->window.padBegin != s->window.padEnd;
  Shape xShape = atLeast4D(x.shape());
  Shape wShape = atLeast4D(w.shape());
  Shape yShape = atLeast4D(s->window.outShape);
  for (size_t d = 0; d < spatial; ++d)
    pads[d] = asymmetric ? 0 : static_cast<int>(s->window.padBegin[d]);
  if (asymmetric) {
    s->padded = xShape;
    for (size_t d = 0; d < spatial; ++d)
      s->padded[s->padded.size() - spatial + d] +=
          s->window.padBegin[d] + s->window.padEnd[d];
    xShape = s->padded;
  }
  if (spatial == 1) {
    pads.insert(pads.begin(), 0);
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
  }
  HPS_CUDA_CHECK(cudnnCreateTensorDescriptor(&s->x));
  HPS_CUDA_CHECK(cudnnCreateTensorDescriptor(&s->y));
  HPS_CUDA_CHECK(cudnnCreateFilterDescriptor(&s->w));
  HPS_CUDA_CHECK(cudnnCreateConvolutionDescriptor(&s->conv));
  if (llvm::Error e = setTensor(s->x, xShape))
    return std::move(e);
  if (llvm::Error e = setTensor(s->y, yShape))
    return std::move(e);
  std::vector<int> wDims = toInts(wShape);
  HPS_CUDA_CHECK(
      cudnnSetFilterNdDescriptor(s->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                 static_cast<int>(wDims.size()), wDims.data()));
  HPS_CUDA_CHECK(cudnnSetConvolutionNdDescriptor(
      s->conv, static_cast<int>(pads.size()), pads.data(), strides.data(),
      dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  HPS_CUDA_CHECK(
      cudnnSetConvolutionGroupCount(s->conv, static_cast<int>(attrs.group)));
  HPS_CUDA_CHECK(cudnnSetConvolutionMathType(s->conv, CUDNN_FMA_MATH));
  if (llvm::Error e = chooseAlgorithm(*s, xShape, yShape, w))
    return std::move(e);
  ConvSetup *made = s.get();
  setups[x.shape()] = std::move(s);
  return made;
}

/// Times the candidates on scratch buffers of the right sizes (the
/// search writes its output), or takes cuDNN's heuristic choice.
llvm::Error ConvKernel::chooseAlgorithm(ConvSetup &s, const Shape &xShape,
                                        const Shape &yShape, const Tensor &w) {
  constexpr int kCandidates = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  cudnnConvolutionFwdAlgoPerf_t perf[kCandidates];
  int found = 0;
  if (ctx->autotune()) {
    ++ctx->convSearches;
    Tensor xs = ctx->make(DType::F32, xShape);
    Tensor ys = ctx->make(DType::F32, yShape);
    HPS_CUDA_CHECK(
        cudaMemsetAsync(devicePtr(xs), 0, xs.bytes(), ctx->stream()));
    llvm::Expected<void *> work = ctx->workspace(kMaxConvWorkspace);
    if (!work)
      return work.takeError();
    HPS_CUDA_CHECK(cudnnFindConvolutionForwardAlgorithmEx(
        ctx->cudnn(), s.x, devicePtr(xs), s.w, devicePtr(w), s.conv, s.y,
        devicePtr(ys), kCandidates, &found, perf, *work, kMaxConvWorkspace));
  } else {
    HPS_CUDA_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        ctx->cudnn(), s.x, s.w, s.conv, s.y, kCandidates, &found, perf));
  }
  for (int k = 0; k < found; ++k) {
    if (perf[k].status != CUDNN_STATUS_SUCCESS ||
        perf[k].memory > kMaxConvWorkspace)
      continue;
    s.algo = perf[k].algo;
    // The search may report less than the algorithm asks for later.
    HPS_CUDA_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
        ctx->cudnn(), s.x, s.w, s.conv, s.y, s.algo, &s.workspace));
    return llvm::Error::success();
  }
  return cudaFailure("cuDNN has no forward algorithm for input " +
                     shapeToString(xShape) + " and weight " + w.typeString());
}

void cuda::registerConvKernel(KernelRegistry &registry, CUDAContextPtr ctx) {
  registry.add("Conv", [ctx](const OpInfo &info) -> Factory {
    if (llvm::Error e = info.checkArity(2, 4))
      return e;
    if (info.numInputs() > 4)
      return cudaFailure("a Conv with a fused depthwise Conv has no cuda "
                         "kernel");
    llvm::Expected<ConvAttrs> attrs = parseConvAttrs(info.attrs);
    if (!attrs)
      return attrs.takeError();
    llvm::Expected<UnarySpec> f = fusedActivation(info.attrs);
    if (!f)
      return f.takeError();
    return std::make_unique<ConvKernel>(ctx, std::move(*attrs), *f);
  });
}
