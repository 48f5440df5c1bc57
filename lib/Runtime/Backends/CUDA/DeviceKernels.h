//===- DeviceKernels.h - the backend's own CUDA kernels ---------*- C++ -*-===//
//
// Launchers for what cuDNN and cuBLASLt do not cover, or cover only with
// restrictions our ops break (cuDNN pooling has no asymmetric pads):
// element-wise functions, broadcasting binary ops, strided copies (one
// kernel for Transpose, Slice, Expand and padding), reductions, softmax,
// normalisations, gather and 2-D pooling. All work on plain row-major f32
// tensors (copies on any element size) and queue on the given stream.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CUDA_DEVICEKERNELS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CUDA_DEVICEKERNELS_H

#include <cstddef>
#include <cstdint>
#include <cuda_runtime.h>

namespace heterps::runtime::cuda {

/// Ranks up to this are handled by the strided kernels.
constexpr int kMaxRank = 6;

/// Dimensions or strides, by value into a kernel.
struct Dims {
  int64_t v[kMaxRank] = {};
};

enum class Unary : int32_t {
  Identity,
  Relu,
  LeakyRelu, // alpha
  Elu,       // alpha
  Clip,      // [alpha, beta]
  Sigmoid,
  Tanh,
  HardSigmoid, // max(0, min(1, alpha x + beta))
  HardSwish,
  Abs,
  Exp,
  Log,
  Sqrt,
  Neg,
  Reciprocal,
  Erf,
  Softplus,
  Softsign,
  Selu, // alpha, gamma = beta
  Floor,
  Ceil,
};

struct UnarySpec {
  Unary op = Unary::Identity;
  float alpha = 0.f, beta = 0.f;
};

enum class Binary : int32_t { Add, Sub, Mul, Div, Pow, Max, Min };
enum class Reduction : int32_t { Sum, Mean, Max, Min };
enum class Pooling : int32_t { Max, AverageWithPads, AverageWithoutPads };

/// y[i] = f(x[i]); x may be y.
void launchUnary(cudaStream_t s, UnarySpec f, const float *x, float *y,
                 int64_t n);
/// y[n, c, i] = f(y[n, c, i] + bias[c]) (bias may be null), in place.
void launchBiasActivation(cudaStream_t s, float *y, const float *bias,
                          int64_t outer, int64_t channels, int64_t inner,
                          UnarySpec f);
/// y = f(x * scale[c] + shift[c]) per channel of [outer, channels, inner].
void launchChannelAffine(cudaStream_t s, const float *x, float *y,
                         const float *scale, const float *shift, int64_t outer,
                         int64_t channels, int64_t inner, UnarySpec f);
/// scale = gamma / sqrt(var + eps), shift = beta - mean * scale.
void launchBatchNormCoefficients(cudaStream_t s, const float *gamma,
                                 const float *beta, const float *mean,
                                 const float *var, float eps, float *scale,
                                 float *shift, int64_t channels);
/// y[i] = a[offset_a(i)] op b[offset_b(i)] over `dims` (rank <= kMaxRank),
/// with per-operand strides (0 along broadcast axes).
void launchBinary(cudaStream_t s, Binary op, const float *a, const float *b,
                  float *y, int rank, Dims dims, Dims aStrides, Dims bStrides);
/// Copies the `dims` block of elements of `elementSize` bytes from x (at
/// `xStrides`) to y (at `yStrides`); strides in elements.
void launchStridedCopy(cudaStream_t s, size_t elementSize, const void *x,
                       void *y, int rank, Dims dims, Dims xStrides,
                       Dims yStrides);
/// y[o, i] = reduce over k of x[o, k, i] for x of [outer, n, inner].
void launchReduce(cudaStream_t s, Reduction r, const float *x, float *y,
                  int64_t outer, int64_t n, int64_t inner);
/// Softmax (or log-softmax) of each row of [rows, cols].
void launchSoftmax(cudaStream_t s, const float *x, float *y, int64_t rows,
                   int64_t cols, bool log);
/// Layer normalisation of each row of [rows, cols]; bias may be null.
void launchLayerNorm(cudaStream_t s, const float *x, const float *scale,
                     const float *bias, float *y, int64_t rows, int64_t cols,
                     float epsilon);
/// y[o, j, i] = data[o, idx[j], i] (negative indices count from the end);
/// an index out of [-axis, axis) sets *bad to 1 and gives 0.
void launchGather(cudaStream_t s, size_t elementSize, const void *data,
                  const int64_t *indices, void *y, int64_t outer, int64_t axis,
                  int64_t inner, int64_t count, int32_t *bad);
/// 2-D pooling of x [n, c, h, w] into y [n, c, oh, ow].
struct Pool2D {
  int64_t batch, channels, h, w, oh, ow;
  int64_t kh, kw, sh, sw, dh, dw;
  /// Pads at the start and the end of each axis.
  int64_t ph, pw, peh, pew;
};
void launchPool2D(cudaStream_t s, Pooling kind, const Pool2D &p, const float *x,
                  float *y);
/// y[i] = value.
void launchFill(cudaStream_t s, float *y, float value, int64_t n);
/// y[i] = a * x[i]; x may be y.
void launchScale(cudaStream_t s, const float *x, float *y, float a, int64_t n);

// Backward passes (training).

/// dx = dy * f'(x) (some functions' derivatives read the output y instead).
void launchUnaryBackward(cudaStream_t s, UnarySpec f, const float *x,
                         const float *y, const float *dy, float *dx, int64_t n);
/// Adds each output's gradient into the inputs it came from: the window's
/// maximum (recomputed from x) or, for averages, every counted element. dx
/// must be zeroed first.
void launchPool2DBackward(cudaStream_t s, Pooling kind, const Pool2D &p,
                          const float *x, const float *dy, float *dx);
/// dx[i] = dy[i / inner] * scale: a value spread back over what it reduced.
void launchSpread(cudaStream_t s, const float *dy, float *dx, int64_t rows,
                  int64_t inner, float scale);

} // namespace heterps::runtime::cuda

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CUDA_DEVICEKERNELS_H
