//===- CUDAStatus.h - CUDA, cuDNN and cuBLAS errors as llvm::Error -*- C++
//-*-===//
//
// Every call into CUDA, cuDNN or cuBLASLt is checked; a failure becomes one
// line naming the library's status and the call ("cuDNN:
// CUDNN_STATUS_BAD_PARAM in cudnnConvolutionForward"), which the executor
// prefixes with the op's name.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDASTATUS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDASTATUS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace heterps::runtime::cuda {

inline bool failed(cudaError_t s) { return s != cudaSuccess; }
inline bool failed(cudnnStatus_t s) { return s != CUDNN_STATUS_SUCCESS; }
inline bool failed(cublasStatus_t s) { return s != CUBLAS_STATUS_SUCCESS; }

llvm::Error statusError(cudaError_t s, llvm::StringRef call);
llvm::Error statusError(cudnnStatus_t s, llvm::StringRef call);
llvm::Error statusError(cublasStatus_t s, llvm::StringRef call);

/// An error with `what` as its message.
llvm::Error cudaFailure(const llvm::Twine &what);

} // namespace heterps::runtime::cuda

/// Returns the error of a failed CUDA, cuDNN or cuBLASLt call from the
/// enclosing function (which returns llvm::Error or llvm::Expected).
#define HPS_CUDA_CHECK(call)                                                   \
  do {                                                                         \
    auto status_ = (call);                                                     \
    if (::heterps::runtime::cuda::failed(status_))                             \
      return ::heterps::runtime::cuda::statusError(status_, #call);            \
  } while (0)

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_CUDASTATUS_H
