//===- CUDAStatus.cpp - CUDA, cuDNN and cuBLAS errors ---------------------===//

#include "CUDAStatus.h"

using namespace heterps::runtime;

/// "cudnnConvolutionForward(handle, ...)" -> "cudnnConvolutionForward".
static llvm::StringRef callName(llvm::StringRef call) {
  return call.take_until([](char c) { return c == '('; }).trim();
}

llvm::Error cuda::cudaFailure(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Error cuda::statusError(cudaError_t s, llvm::StringRef call) {
  return cudaFailure(llvm::Twine("CUDA: ") + cudaGetErrorName(s) + " (" +
                     cudaGetErrorString(s) + ") in " + callName(call));
}

llvm::Error cuda::statusError(cudnnStatus_t s, llvm::StringRef call) {
  return cudaFailure(llvm::Twine("cuDNN: ") + cudnnGetErrorString(s) + " in " +
                     callName(call));
}

llvm::Error cuda::statusError(cublasStatus_t s, llvm::StringRef call) {
  return cudaFailure(llvm::Twine("cuBLAS: ") + cublasLtGetStatusString(s) +
                     " in " + callName(call));
}
