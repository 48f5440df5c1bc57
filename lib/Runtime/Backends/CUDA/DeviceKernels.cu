//===- DeviceKernels.cu - the backend's own CUDA kernels ------------------===//
//
// Memory-bound kernels: grid-stride loops over the output, one thread per
// element, except row-wise ones (softmax, layer norm, reductions over the
// last axis), which give a warp or a block to each row and reduce with
// warp shuffles. Accumulation is in f32 as in the CPU kernels.
//
//===----------------------------------------------------------------------===//

#include "DeviceKernels.h"

#include <cfloat>
#include <cmath>

using namespace heterps::runtime::cuda;

namespace {

constexpr int kThreads = 256;

unsigned blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (1 << 20) ? (1 << 20) : b));
}

#define GRID_STRIDE(i, n)                                                      \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);    \
       i += int64_t(blockDim.x) * gridDim.x)

__device__ __forceinline__ float apply(UnarySpec f, float x) {
  switch (f.op) {
  case Unary::Identity:
    return x;
  case Unary::Relu:
    return x > 0.f ? x : 0.f;
  case Unary::LeakyRelu:
    return x >= 0.f ? x : f.alpha * x;
  case Unary::Elu:
    return x >= 0.f ? x : f.alpha * expm1f(x);
  case Unary::Clip:
    return fminf(fmaxf(x, f.alpha), f.beta);
  case Unary::Sigmoid:
    return 1.f / (1.f + expf(-x));
  case Unary::Tanh:
    return tanhf(x);
  case Unary::HardSigmoid:
    return fmaxf(0.f, fminf(1.f, f.alpha * x + f.beta));
  case Unary::HardSwish:
    return x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f));
  case Unary::Abs:
    return fabsf(x);
  case Unary::Exp:
    return expf(x);
  case Unary::Log:
    return logf(x);
  case Unary::Sqrt:
    return sqrtf(x);
  case Unary::Neg:
    return -x;
  case Unary::Reciprocal:
    return 1.f / x;
  case Unary::Erf:
    return erff(x);
  case Unary::Softplus:
    return x > 20.f ? x : log1pf(expf(x));
  case Unary::Softsign:
    return x / (1.f + fabsf(x));
  case Unary::Selu:
    return f.beta * (x > 0.f ? x : f.alpha * expm1f(x));
  case Unary::Floor:
    return floorf(x);
  case Unary::Ceil:
    return ceilf(x);
  }
  return x;
}

__global__ void unaryKernel(UnarySpec f, const float *x, float *y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = apply(f, x[i]);
}

__global__ void biasActivationKernel(float *y, const float *bias,
                                     int64_t channels, int64_t inner, int64_t n,
                                     UnarySpec f) {
  GRID_STRIDE(i, n) {
    float v = y[i];
    if (bias)
      v += bias[(i / inner) % channels];
    y[i] = apply(f, v);
  }
}

__global__ void channelAffineKernel(const float *x, float *y,
                                    const float *scale, const float *shift,
                                    int64_t channels, int64_t inner, int64_t n,
                                    UnarySpec f) {
  GRID_STRIDE(i, n) {
    int64_t c = (i / inner) % channels;
    y[i] = apply(f, x[i] * scale[c] + shift[c]);
  }
}

__global__ void batchNormCoefficientsKernel(const float *gamma,
                                            const float *beta,
                                            const float *mean, const float *var,
                                            float eps, float *scale,
                                            float *shift, int64_t channels) {
  GRID_STRIDE(c, channels) {
    float s = gamma[c] * rsqrtf(var[c] + eps);
    scale[c] = s;
    shift[c] = beta[c] - mean[c] * s;
  }
}

__device__ __forceinline__ float combine(Binary op, float a, float b) {
  switch (op) {
  case Binary::Add:
    return a + b;
  case Binary::Sub:
    return a - b;
  case Binary::Mul:
    return a * b;
  case Binary::Div:
    return a / b;
  case Binary::Pow:
    return powf(a, b);
  case Binary::Max:
    return fmaxf(a, b);
  case Binary::Min:
    return fminf(a, b);
  }
  return a;
}

__global__ void binaryKernel(Binary op, const float *a, const float *b,
                             float *y, int rank, Dims dims, Dims as, Dims bs,
                             int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t rest = i, ao = 0, bo = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t k = rest % dims.v[d];
      rest /= dims.v[d];
      ao += k * as.v[d];
      bo += k * bs.v[d];
    }
    y[i] = combine(op, a[ao], b[bo]);
  }
}

/// Same-shape operands: no index arithmetic.
__global__ void binaryFlatKernel(Binary op, const float *a, const float *b,
                                 float *y, int64_t n) {
  GRID_STRIDE(i, n) y[i] = combine(op, a[i], b[i]);
}

/// Where an operand is element (i / inner) % period of its buffer.
struct Periodic {
  int64_t inner, period;
};

/// Operands each broadcast along the axes before and after one block of
/// axes (a bias over the last axis, a scale per channel, a scalar): two
/// divisions per operand instead of one per axis.
__global__ void binaryPeriodicKernel(Binary op, const float *a, Periodic pa,
                                     const float *b, Periodic pb, float *y,
                                     int64_t n) {
  GRID_STRIDE(i, n) {
    y[i] = combine(op, a[(i / pa.inner) % pa.period],
                   b[(i / pb.inner) % pb.period]);
  }
}

/// Whether `strides` over `dims` read one contiguous block of axes (and
/// repeat it along the others); its period and inner size if so.
bool periodic(int rank, const Dims &dims, const Dims &strides, Periodic &p) {
  int first = -1, last = -1;
  for (int d = 0; d < rank; ++d)
    if (strides.v[d] != 0 && dims.v[d] != 1) {
      if (first < 0)
        first = d;
      last = d;
    }
  p = {1, 1};
  if (first < 0)
    return true;
  int64_t expected = 1;
  for (int d = last; d >= first; --d) {
    if (dims.v[d] != 1 && strides.v[d] != expected)
      return false;
    expected *= dims.v[d];
  }
  p.period = expected;
  for (int d = last + 1; d < rank; ++d)
    p.inner *= dims.v[d];
  return true;
}

template <typename T>
__global__ void stridedCopyKernel(const T *x, T *y, int rank, Dims dims,
                                  Dims xs, Dims ys, int64_t n) {
  GRID_STRIDE(i, n) {
    int64_t rest = i, xo = 0, yo = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t k = rest % dims.v[d];
      rest /= dims.v[d];
      xo += k * xs.v[d];
      yo += k * ys.v[d];
    }
    y[yo] = x[xo];
  }
}

__device__ __forceinline__ float reduceInit(Reduction r) {
  return r == Reduction::Max ? -FLT_MAX : r == Reduction::Min ? FLT_MAX : 0.f;
}

__device__ __forceinline__ float reduceStep(Reduction r, float acc, float v) {
  switch (r) {
  case Reduction::Max:
    return fmaxf(acc, v);
  case Reduction::Min:
    return fminf(acc, v);
  default:
    return acc + v;
  }
}

__device__ __forceinline__ float warpReduce(Reduction r, float v) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = reduceStep(r, v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// A warp per output row of contiguous values (inner == 1).
__global__ void reduceRowsKernel(Reduction r, const float *x, float *y,
                                 int64_t rows, int64_t n) {
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= rows)
    return;
  const float *row = x + warp * n;
  float acc = reduceInit(r);
  for (int64_t k = lane; k < n; k += 32)
    acc = reduceStep(r, acc, row[k]);
  acc = warpReduce(r, acc);
  if (lane == 0)
    y[warp] = r == Reduction::Mean ? acc / float(n) : acc;
}

/// A thread per output; neighbouring threads read neighbouring inner values.
__global__ void reduceStridedKernel(Reduction r, const float *x, float *y,
                                    int64_t outer, int64_t n, int64_t inner) {
  GRID_STRIDE(i, outer * inner) {
    int64_t o = i / inner, in = i % inner;
    const float *p = x + o * n * inner + in;
    float acc = reduceInit(r);
    for (int64_t k = 0; k < n; ++k)
      acc = reduceStep(r, acc, p[k * inner]);
    y[i] = r == Reduction::Mean ? acc / float(n) : acc;
  }
}

/// Reduces `v` over the block (blockDim.x a multiple of 32, at most 1024);
/// every thread gets the result.
__device__ float blockReduce(Reduction r, float v) {
  __shared__ float partial[32];
  __shared__ float result;
  v = warpReduce(r, v);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int warps = blockDim.x / 32;
    float w = lane < warps ? partial[lane] : reduceInit(r);
    w = warpReduce(r, w);
    if (lane == 0)
      result = w;
  }
  __syncthreads();
  float out = result;
  __syncthreads();
  return out;
}

__global__ void softmaxKernel(const float *x, float *y, int64_t cols,
                              bool log) {
  const float *row = x + blockIdx.x * cols;
  float *out = y + blockIdx.x * cols;
  float m = -FLT_MAX;
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x)
    m = fmaxf(m, row[k]);
  m = blockReduce(Reduction::Max, m);
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x)
    sum += expf(row[k] - m);
  sum = blockReduce(Reduction::Sum, sum);
  if (log) {
    float logSum = logf(sum);
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x)
      out[k] = row[k] - m - logSum;
  } else {
    float inv = 1.f / sum;
    for (int64_t k = threadIdx.x; k < cols; k += blockDim.x)
      out[k] = expf(row[k] - m) * inv;
  }
}

__global__ void layerNormKernel(const float *x, const float *scale,
                                const float *bias, float *y, int64_t cols,
                                float eps) {
  const float *row = x + blockIdx.x * cols;
  float *out = y + blockIdx.x * cols;
  float sum = 0.f;
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x)
    sum += row[k];
  float mean = blockReduce(Reduction::Sum, sum) / float(cols);
  float sq = 0.f;
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
    float d = row[k] - mean;
    sq += d * d;
  }
  float inv = rsqrtf(blockReduce(Reduction::Sum, sq) / float(cols) + eps);
  for (int64_t k = threadIdx.x; k < cols; k += blockDim.x) {
    float v = (row[k] - mean) * inv * scale[k];
    out[k] = bias ? v + bias[k] : v;
  }
}

template <typename T>
__global__ void gatherKernel(const T *data, const int64_t *indices, T *y,
                             int64_t axis, int64_t inner, int64_t count,
                             int64_t n, int32_t *bad) {
  GRID_STRIDE(i, n) {
    int64_t in = i % inner;
    int64_t j = (i / inner) % count;
    int64_t o = i / (inner * count);
    int64_t k = indices[j];
    if (k < 0)
      k += axis;
    if (k < 0 || k >= axis) {
      *bad = 1;
      y[i] = T(0);
      continue;
    }
    y[i] = data[(o * axis + k) * inner + in];
  }
}

__global__ void pool2dKernel(Pooling kind, Pool2D p, const float *x, float *y) {
  int64_t n = p.batch * p.channels * p.oh * p.ow;
  GRID_STRIDE(i, n) {
    int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
    const float *plane = x + nc * p.h * p.w;
    float acc = kind == Pooling::Max ? -FLT_MAX : 0.f;
    int64_t inside = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      int64_t iy = oy * p.sh - p.ph + ky * p.dh;
      if (iy < 0 || iy >= p.h)
        continue;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        int64_t ix = ox * p.sw - p.pw + kx * p.dw;
        if (ix < 0 || ix >= p.w)
          continue;
        float v = plane[iy * p.w + ix];
        acc = kind == Pooling::Max ? fmaxf(acc, v) : acc + v;
        ++inside;
      }
    }
    if (kind == Pooling::AverageWithoutPads)
      acc = inside ? acc / float(inside) : 0.f;
    else if (kind == Pooling::AverageWithPads) {
      // Pads count, the part of the window beyond them does not (ONNX).
      int64_t y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
      int64_t y1 = y0 + (p.kh - 1) * p.dh + 1, x1 = x0 + (p.kw - 1) * p.dw + 1;
      int64_t ylim = p.h + p.peh, xlim = p.w + p.pew;
      int64_t rows = (min(y1, ylim) - y0 + p.dh - 1) / p.dh;
      int64_t cols = (min(x1, xlim) - x0 + p.dw - 1) / p.dw;
      int64_t cells = rows * cols;
      acc /= float(cells > 0 ? cells : 1);
    }
    y[i] = acc;
  }
}

__global__ void fillKernel(float *y, float value, int64_t n) {
  GRID_STRIDE(i, n) y[i] = value;
}

__global__ void scaleKernel(const float *x, float *y, float a, int64_t n) {
  GRID_STRIDE(i, n) y[i] = a * x[i];
}

__device__ __forceinline__ float derivative(UnarySpec f, float x, float y) {
  switch (f.op) {
  case Unary::Identity:
    return 1.f;
  case Unary::Relu:
    return x > 0.f ? 1.f : 0.f;
  case Unary::LeakyRelu:
    return x > 0.f ? 1.f : f.alpha;
  case Unary::Elu:
    return x > 0.f ? 1.f : y + f.alpha;
  case Unary::Clip:
    return x > f.alpha && x < f.beta ? 1.f : 0.f;
  case Unary::Sigmoid:
    return y * (1.f - y);
  case Unary::Tanh:
    return 1.f - y * y;
  case Unary::HardSigmoid: {
    float v = f.alpha * x + f.beta;
    return v > 0.f && v < 1.f ? f.alpha : 0.f;
  }
  case Unary::HardSwish:
    return x < -3.f ? 0.f : x > 3.f ? 1.f : x / 3.f + 0.5f;
  case Unary::Abs:
    return x > 0.f ? 1.f : x < 0.f ? -1.f : 0.f;
  case Unary::Exp:
    return y;
  case Unary::Log:
    return 1.f / x;
  case Unary::Sqrt:
    return 0.5f / y;
  case Unary::Neg:
    return -1.f;
  case Unary::Reciprocal:
    return -y * y;
  case Unary::Erf:
    return 1.1283791670955126f * expf(-x * x);
  case Unary::Softplus:
    return 1.f / (1.f + expf(-x));
  case Unary::Softsign: {
    float d = 1.f + fabsf(x);
    return 1.f / (d * d);
  }
  case Unary::Selu:
    return x > 0.f ? f.beta : y + f.beta * f.alpha;
  case Unary::Floor:
  case Unary::Ceil:
    return 0.f;
  }
  return 1.f;
}

__global__ void unaryBackwardKernel(UnarySpec f, const float *x, const float *y,
                                    const float *dy, float *dx, int64_t n) {
  GRID_STRIDE(i, n) dx[i] = dy[i] * derivative(f, x[i], y ? y[i] : 0.f);
}

__global__ void pool2dBackwardKernel(Pooling kind, Pool2D p, const float *x,
                                     const float *dy, float *dx) {
  int64_t n = p.batch * p.channels * p.oh * p.ow;
  GRID_STRIDE(i, n) {
    int64_t ox = i % p.ow, oy = (i / p.ow) % p.oh, nc = i / (p.ow * p.oh);
    const float *plane = x + nc * p.h * p.w;
    float *grad = dx + nc * p.h * p.w;
    if (kind == Pooling::Max) {
      float best = -FLT_MAX;
      int64_t at = -1;
      for (int64_t ky = 0; ky < p.kh; ++ky) {
        int64_t iy = oy * p.sh - p.ph + ky * p.dh;
        if (iy < 0 || iy >= p.h)
          continue;
        for (int64_t kx = 0; kx < p.kw; ++kx) {
          int64_t ix = ox * p.sw - p.pw + kx * p.dw;
          if (ix < 0 || ix >= p.w)
            continue;
          float v = plane[iy * p.w + ix];
          if (at < 0 || v > best) {
            best = v;
            at = iy * p.w + ix;
          }
        }
      }
      if (at >= 0)
        atomicAdd(grad + at, dy[i]);
      continue;
    }
    // The divisor the forward pass used.
    int64_t inside = 0;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      int64_t iy = oy * p.sh - p.ph + ky * p.dh;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        int64_t ix = ox * p.sw - p.pw + kx * p.dw;
        inside += iy >= 0 && iy < p.h && ix >= 0 && ix < p.w;
      }
    }
    float divisor = float(inside);
    if (kind == Pooling::AverageWithPads) {
      int64_t y0 = oy * p.sh - p.ph, x0 = ox * p.sw - p.pw;
      int64_t y1 = y0 + (p.kh - 1) * p.dh + 1, x1 = x0 + (p.kw - 1) * p.dw + 1;
      int64_t rows = (min(y1, p.h + p.peh) - y0 + p.dh - 1) / p.dh;
      int64_t cols = (min(x1, p.w + p.pew) - x0 + p.dw - 1) / p.dw;
      divisor = float(rows * cols);
    }
    if (divisor <= 0.f)
      continue;
    float g = dy[i] / divisor;
    for (int64_t ky = 0; ky < p.kh; ++ky) {
      int64_t iy = oy * p.sh - p.ph + ky * p.dh;
      if (iy < 0 || iy >= p.h)
        continue;
      for (int64_t kx = 0; kx < p.kw; ++kx) {
        int64_t ix = ox * p.sw - p.pw + kx * p.dw;
        if (ix >= 0 && ix < p.w)
          atomicAdd(grad + iy * p.w + ix, g);
      }
    }
  }
}

__global__ void spreadKernel(const float *dy, float *dx, int64_t inner,
                             float scale, int64_t n) {
  GRID_STRIDE(i, n) dx[i] = dy[i / inner] * scale;
}

} // namespace

namespace heterps::runtime::cuda {

void launchUnary(cudaStream_t s, UnarySpec f, const float *x, float *y,
                 int64_t n) {
  unaryKernel<<<blocksFor(n), kThreads, 0, s>>>(f, x, y, n);
}

void launchBiasActivation(cudaStream_t s, float *y, const float *bias,
                          int64_t outer, int64_t channels, int64_t inner,
                          UnarySpec f) {
  int64_t n = outer * channels * inner;
  biasActivationKernel<<<blocksFor(n), kThreads, 0, s>>>(y, bias, channels,
                                                         inner, n, f);
}

void launchChannelAffine(cudaStream_t s, const float *x, float *y,
                         const float *scale, const float *shift, int64_t outer,
                         int64_t channels, int64_t inner, UnarySpec f) {
  int64_t n = outer * channels * inner;
  channelAffineKernel<<<blocksFor(n), kThreads, 0, s>>>(x, y, scale, shift,
                                                        channels, inner, n, f);
}

void launchBatchNormCoefficients(cudaStream_t s, const float *gamma,
                                 const float *beta, const float *mean,
                                 const float *var, float eps, float *scale,
                                 float *shift, int64_t channels) {
  batchNormCoefficientsKernel<<<blocksFor(channels), kThreads, 0, s>>>(
      gamma, beta, mean, var, eps, scale, shift, channels);
}

void launchBinary(cudaStream_t s, Binary op, const float *a, const float *b,
                  float *y, int rank, Dims dims, Dims aStrides, Dims bStrides) {
  int64_t n = 1;
  bool flat = true;
  for (int d = rank - 1; d >= 0; --d) {
    flat = flat && aStrides.v[d] == n && bStrides.v[d] == n;
    n *= dims.v[d];
  }
  Periodic pa, pb;
  if (flat)
    binaryFlatKernel<<<blocksFor(n), kThreads, 0, s>>>(op, a, b, y, n);
  else if (periodic(rank, dims, aStrides, pa) &&
           periodic(rank, dims, bStrides, pb))
    binaryPeriodicKernel<<<blocksFor(n), kThreads, 0, s>>>(op, a, pa, b, pb, y,
                                                           n);
  else
    binaryKernel<<<blocksFor(n), kThreads, 0, s>>>(op, a, b, y, rank, dims,
                                                   aStrides, bStrides, n);
}

void launchStridedCopy(cudaStream_t s, size_t elementSize, const void *x,
                       void *y, int rank, Dims dims, Dims xStrides,
                       Dims yStrides) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d)
    n *= dims.v[d];
  if (elementSize == 8)
    stridedCopyKernel<<<blocksFor(n), kThreads, 0, s>>>(
        static_cast<const int64_t *>(x), static_cast<int64_t *>(y), rank, dims,
        xStrides, yStrides, n);
  else
    stridedCopyKernel<<<blocksFor(n), kThreads, 0, s>>>(
        static_cast<const float *>(x), static_cast<float *>(y), rank, dims,
        xStrides, yStrides, n);
}

void launchReduce(cudaStream_t s, Reduction r, const float *x, float *y,
                  int64_t outer, int64_t n, int64_t inner) {
  if (inner == 1 && n >= 32) {
    int64_t threads = outer * 32;
    reduceRowsKernel<<<blocksFor(threads), kThreads, 0, s>>>(r, x, y, outer, n);
    return;
  }
  reduceStridedKernel<<<blocksFor(outer * inner), kThreads, 0, s>>>(
      r, x, y, outer, n, inner);
}

static unsigned rowThreads(int64_t cols) {
  return cols >= 1024 ? 1024 : cols >= 256 ? 256 : 64;
}

void launchSoftmax(cudaStream_t s, const float *x, float *y, int64_t rows,
                   int64_t cols, bool log) {
  if (rows > 0)
    softmaxKernel<<<static_cast<unsigned>(rows), rowThreads(cols), 0, s>>>(
        x, y, cols, log);
}

void launchLayerNorm(cudaStream_t s, const float *x, const float *scale,
                     const float *bias, float *y, int64_t rows, int64_t cols,
                     float epsilon) {
  if (rows > 0)
    layerNormKernel<<<static_cast<unsigned>(rows), rowThreads(cols), 0, s>>>(
        x, scale, bias, y, cols, epsilon);
}

void launchGather(cudaStream_t s, size_t elementSize, const void *data,
                  const int64_t *indices, void *y, int64_t outer, int64_t axis,
                  int64_t inner, int64_t count, int32_t *bad) {
  int64_t n = outer * count * inner;
  if (elementSize == 8)
    gatherKernel<<<blocksFor(n), kThreads, 0, s>>>(
        static_cast<const int64_t *>(data), indices, static_cast<int64_t *>(y),
        axis, inner, count, n, bad);
  else
    gatherKernel<<<blocksFor(n), kThreads, 0, s>>>(
        static_cast<const float *>(data), indices, static_cast<float *>(y),
        axis, inner, count, n, bad);
}

void launchPool2D(cudaStream_t s, Pooling kind, const Pool2D &p, const float *x,
                  float *y) {
  int64_t n = p.batch * p.channels * p.oh * p.ow;
  pool2dKernel<<<blocksFor(n), kThreads, 0, s>>>(kind, p, x, y);
}

void launchFill(cudaStream_t s, float *y, float value, int64_t n) {
  fillKernel<<<blocksFor(n), kThreads, 0, s>>>(y, value, n);
}

void launchScale(cudaStream_t s, const float *x, float *y, float a, int64_t n) {
  scaleKernel<<<blocksFor(n), kThreads, 0, s>>>(x, y, a, n);
}

void launchUnaryBackward(cudaStream_t s, UnarySpec f, const float *x,
                         const float *y, const float *dy, float *dx,
                         int64_t n) {
  unaryBackwardKernel<<<blocksFor(n), kThreads, 0, s>>>(f, x, y, dy, dx, n);
}

void launchPool2DBackward(cudaStream_t s, Pooling kind, const Pool2D &p,
                          const float *x, const float *dy, float *dx) {
  int64_t n = p.batch * p.channels * p.oh * p.ow;
  pool2dBackwardKernel<<<blocksFor(n), kThreads, 0, s>>>(kind, p, x, dy, dx);
}

void launchSpread(cudaStream_t s, const float *dy, float *dx, int64_t rows,
                  int64_t inner, float scale) {
  int64_t n = rows * inner;
  spreadKernel<<<blocksFor(n), kThreads, 0, s>>>(dy, dx, inner, scale, n);
}

} // namespace heterps::runtime::cuda
