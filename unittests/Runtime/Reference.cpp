//===- Reference.cpp - naive reference kernels for tests ------------------===//

#include "Reference.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

Tensor testutil::randomTensor(Shape shape, std::mt19937 &rng, float lo,
                              float hi) {
  Tensor t(DType::F32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = dist(rng);
  return t;
}

::testing::AssertionResult testutil::allClose(const Tensor &actual,
                                              const Tensor &expected,
                                              float rtol, float atol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure()
           << "shape " << shapeToString(actual.shape()) << " != expected "
           << shapeToString(expected.shape());
  if (!actual.isPlain())
    return ::testing::AssertionFailure() << "result is not plain";
  for (int64_t i = 0; i < expected.numElements(); ++i) {
    float a = actual.data<float>()[i], e = expected.data<float>()[i];
    if (!(std::fabs(a - e) <= atol + rtol * std::fabs(e)))
      return ::testing::AssertionFailure()
             << "element " << i << ": " << a << " != expected " << e;
  }
  return ::testing::AssertionSuccess();
}

/// Row-major strides of `shape`.
static std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// The multi-index of flat position `k` in `shape`.
static std::vector<int64_t> unravel(int64_t k, const Shape &shape) {
  std::vector<int64_t> idx(shape.size());
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    idx[i] = k % shape[i];
    k /= shape[i];
  }
  return idx;
}

Tensor testutil::refConv(const Tensor &x, const Tensor &w, const Tensor *b,
                         const ConvParams &p) {
  // Pad to 3 spatial axes of size 1.
  size_t n = x.rank() - 2;
  Shape xs = x.shape(), ws = w.shape();
  std::vector<int64_t> st = p.strides, dl = p.dilations, pb, pe;
  for (size_t i = 0; i < n; ++i) {
    pb.push_back(p.pads[i]);
    pe.push_back(p.pads[n + i]);
  }
  while (xs.size() < 5) {
    xs.push_back(1);
    ws.push_back(1);
    st.push_back(1);
    dl.push_back(1);
    pb.push_back(0);
    pe.push_back(0);
  }
  int64_t N = xs[0], C = xs[1], M = ws[0], G = p.group, Cg = C / G, Mg = M / G;
  Shape out5 = {N, M};
  for (int i = 0; i < 3; ++i)
    out5.push_back((xs[2 + i] + pb[i] + pe[i] - (dl[i] * (ws[2 + i] - 1) + 1)) /
                       st[i] +
                   1);
  Shape out(out5.begin(), out5.begin() + 2 + n);
  Tensor y(DType::F32, out);
  const float *X = x.data<float>(), *W = w.data<float>();
  float *Y = y.data<float>();
  auto xs5 = stridesOf(xs), ws5 = stridesOf(ws), ys5 = stridesOf(out5);
  for (int64_t ni = 0; ni < N; ++ni)
    for (int64_t m = 0; m < M; ++m) {
      int64_t g = m / Mg;
      for (int64_t od = 0; od < out5[2]; ++od)
        for (int64_t oh = 0; oh < out5[3]; ++oh)
          for (int64_t ow = 0; ow < out5[4]; ++ow) {
            double acc = b ? b->data<float>()[m] : 0.0;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t kd = 0; kd < ws[2]; ++kd)
                for (int64_t kh = 0; kh < ws[3]; ++kh)
                  for (int64_t kw = 0; kw < ws[4]; ++kw) {
                    int64_t id = od * st[0] - pb[0] + kd * dl[0];
                    int64_t ih = oh * st[1] - pb[1] + kh * dl[1];
                    int64_t iw = ow * st[2] - pb[2] + kw * dl[2];
                    if (id < 0 || id >= xs[2] || ih < 0 || ih >= xs[3] ||
                        iw < 0 || iw >= xs[4])
                      continue;
                    acc += X[ni * xs5[0] + (g * Cg + c) * xs5[1] + id * xs5[2] +
                             ih * xs5[3] + iw] *
                           W[m * ws5[0] + c * ws5[1] + kd * ws5[2] +
                             kh * ws5[3] + kw];
                  }
            Y[ni * ys5[0] + m * ys5[1] + od * ys5[2] + oh * ys5[3] + ow] =
                static_cast<float>(acc);
          }
    }
  return y;
}

Tensor testutil::refPool2d(const Tensor &x, const PoolParams &p) {
  int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  int64_t out[2];
  int64_t in[2] = {H, W};
  for (int i = 0; i < 2; ++i) {
    int64_t span = in[i] + p.pads[i] + p.pads[2 + i] - p.kernel[i];
    int64_t o = (p.ceilMode ? (span + p.strides[i] - 1) / p.strides[i]
                            : span / p.strides[i]) +
                1;
    if (p.ceilMode && (o - 1) * p.strides[i] >= in[i] + p.pads[i])
      --o;
    out[i] = o;
  }
  Tensor y(DType::F32, {N, C, out[0], out[1]});
  const float *X = x.data<float>();
  float *Y = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < out[0]; ++oh)
        for (int64_t ow = 0; ow < out[1]; ++ow) {
          double acc = p.max ? -INFINITY : 0.0;
          int64_t count = 0, padded = 0;
          for (int64_t kh = 0; kh < p.kernel[0]; ++kh)
            for (int64_t kw = 0; kw < p.kernel[1]; ++kw) {
              int64_t ih = oh * p.strides[0] - p.pads[0] + kh;
              int64_t iw = ow * p.strides[1] - p.pads[1] + kw;
              bool inPadded = ih < H + p.pads[2] && iw < W + p.pads[3];
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                padded += inPadded;
                continue;
              }
              float v = X[((n * C + c) * H + ih) * W + iw];
              acc = p.max ? std::max<double>(acc, v) : acc + v;
              ++count;
            }
          if (!p.max)
            acc /= p.countIncludePad ? count + padded : count;
          Y[((n * C + c) * out[0] + oh) * out[1] + ow] =
              static_cast<float>(acc);
        }
  return y;
}

Tensor testutil::refGemm(const Tensor &a, const Tensor &b, const Tensor *c,
                         float alpha, float beta, bool transA, bool transB) {
  int64_t M = transA ? a.dim(1) : a.dim(0), K = transA ? a.dim(0) : a.dim(1);
  int64_t N = transB ? b.dim(0) : b.dim(1);
  Tensor y(DType::F32, {M, N});
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += a.data<float>()[transA ? k * M + i : i * K + k] *
               b.data<float>()[transB ? j * K + k : k * N + j];
      acc *= alpha;
      if (c) {
        Shape cs = c->shape();
        cs.insert(cs.begin(), 2 - cs.size(), 1);
        acc += beta * c->data<float>()[(cs[0] == 1 ? 0 : i) * cs[1] +
                                       (cs[1] == 1 ? 0 : j)];
      }
      y.data<float>()[i * N + j] = static_cast<float>(acc);
    }
  return y;
}

Tensor testutil::refMatMul(const Tensor &a, const Tensor &b) {
  Shape sa = a.shape(), sb = b.shape();
  bool pa = sa.size() == 1, pb = sb.size() == 1;
  if (pa)
    sa.insert(sa.begin(), 1);
  if (pb)
    sb.push_back(1);
  size_t rank = std::max(sa.size(), sb.size());
  sa.insert(sa.begin(), rank - sa.size(), 1);
  sb.insert(sb.begin(), rank - sb.size(), 1);
  int64_t M = sa[rank - 2], K = sa[rank - 1], N = sb[rank - 1];
  Shape batch;
  for (size_t i = 0; i + 2 < rank; ++i)
    batch.push_back(std::max(sa[i], sb[i]));
  Shape full = batch;
  full.push_back(M);
  full.push_back(N);
  Tensor y(DType::F32, full);
  auto stA = stridesOf(sa), stB = stridesOf(sb);
  int64_t batches = numElements(batch);
  for (int64_t bi = 0; bi < batches; ++bi) {
    auto idx = unravel(bi, batch);
    int64_t offA = 0, offB = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      offA += (sa[d] == 1 ? 0 : idx[d]) * stA[d];
      offB += (sb[d] == 1 ? 0 : idx[d]) * stB[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += a.data<float>()[offA + i * K + k] *
                 b.data<float>()[offB + k * N + j];
        y.data<float>()[(bi * M + i) * N + j] = static_cast<float>(acc);
      }
  }
  Shape out = batch;
  if (!pa)
    out.push_back(M);
  if (!pb)
    out.push_back(N);
  return y.reshaped(out);
}

Tensor testutil::refBatchNorm(const Tensor &x, const Tensor &scale,
                              const Tensor &bias, const Tensor &mean,
                              const Tensor &var, float epsilon) {
  Tensor y(DType::F32, x.shape());
  int64_t C = x.dim(1), inner = x.numElements() / (x.dim(0) * C);
  for (int64_t k = 0; k < x.numElements(); ++k) {
    int64_t c = (k / inner) % C;
    y.data<float>()[k] = (x.data<float>()[k] - mean.data<float>()[c]) /
                             std::sqrt(var.data<float>()[c] + epsilon) *
                             scale.data<float>()[c] +
                         bias.data<float>()[c];
  }
  return y;
}

Tensor testutil::refLRN(const Tensor &x, int64_t size, float alpha, float beta,
                        float bias) {
  Tensor y(DType::F32, x.shape());
  int64_t C = x.dim(1), inner = x.numElements() / (x.dim(0) * C);
  int64_t lo = (size - 1) / 2, hi = size - 1 - lo;
  for (int64_t k = 0; k < x.numElements(); ++k) {
    int64_t c = (k / inner) % C, base = k - c * inner;
    double sum = 0;
    for (int64_t j = std::max<int64_t>(0, c - lo);
         j <= std::min<int64_t>(C - 1, c + hi); ++j) {
      float v = x.data<float>()[base + j * inner];
      sum += v * v;
    }
    y.data<float>()[k] = static_cast<float>(
        x.data<float>()[k] / std::pow(bias + alpha / size * sum, beta));
  }
  return y;
}

Tensor testutil::refSoftmax(const Tensor &x, int64_t axis, bool log) {
  if (axis < 0)
    axis += x.rank();
  Tensor y(DType::F32, x.shape());
  int64_t n = x.dim(axis);
  int64_t inner = numElements(llvm::ArrayRef(x.shape()).drop_front(axis + 1));
  int64_t outer = x.numElements() / (n * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float *in = x.data<float>() + o * n * inner + i;
      float *out = y.data<float>() + o * n * inner + i;
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k)
        mx = std::max<double>(mx, in[k * inner]);
      for (int64_t k = 0; k < n; ++k)
        sum += std::exp(in[k * inner] - mx);
      for (int64_t k = 0; k < n; ++k)
        out[k * inner] =
            static_cast<float>(log ? in[k * inner] - mx - std::log(sum)
                                   : std::exp(in[k * inner] - mx) / sum);
    }
  return y;
}

Tensor testutil::refUnary(const Tensor &x,
                          const std::function<float(float)> &fn) {
  Tensor y(DType::F32, x.shape());
  for (int64_t k = 0; k < x.numElements(); ++k)
    y.data<float>()[k] = fn(x.data<float>()[k]);
  return y;
}

Tensor testutil::refBinary(const Tensor &a, const Tensor &b,
                           const std::function<float(float, float)> &fn) {
  size_t rank = std::max(a.rank(), b.rank());
  Shape sa = a.shape(), sb = b.shape();
  sa.insert(sa.begin(), rank - sa.size(), 1);
  sb.insert(sb.begin(), rank - sb.size(), 1);
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i)
    out[i] = std::max(sa[i], sb[i]);
  Tensor y(DType::F32, out);
  auto stA = stridesOf(sa), stB = stridesOf(sb);
  for (int64_t k = 0; k < y.numElements(); ++k) {
    auto idx = unravel(k, out);
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      ia += (sa[d] == 1 ? 0 : idx[d]) * stA[d];
      ib += (sb[d] == 1 ? 0 : idx[d]) * stB[d];
    }
    y.data<float>()[k] = fn(a.data<float>()[ia], b.data<float>()[ib]);
  }
  return y;
}

Tensor testutil::refConcat(const std::vector<Tensor> &inputs, int64_t axis) {
  Shape out = inputs[0].shape();
  out[axis] = 0;
  for (const Tensor &t : inputs)
    out[axis] += t.dim(axis);
  Tensor y(DType::F32, out);
  int64_t outer = numElements(llvm::ArrayRef(out).take_front(axis));
  int64_t pos = 0;
  int64_t rowOut = y.numElements() / std::max<int64_t>(outer, 1);
  for (const Tensor &t : inputs) {
    int64_t row = t.numElements() / std::max<int64_t>(outer, 1);
    for (int64_t o = 0; o < outer; ++o)
      std::copy(t.data<float>() + o * row, t.data<float>() + (o + 1) * row,
                y.data<float>() + o * rowOut + pos);
    pos += row;
  }
  return y;
}

Tensor testutil::refTranspose(const Tensor &x,
                              const std::vector<int64_t> &perm) {
  Shape out;
  for (int64_t p : perm)
    out.push_back(x.dim(p));
  Tensor y(DType::F32, out);
  auto stX = stridesOf(x.shape());
  for (int64_t k = 0; k < y.numElements(); ++k) {
    auto idx = unravel(k, out);
    int64_t src = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      src += idx[d] * stX[perm[d]];
    y.data<float>()[k] = x.data<float>()[src];
  }
  return y;
}
