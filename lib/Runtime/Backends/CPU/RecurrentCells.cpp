//===- RecurrentCells.cpp - LSTM, GRU and RNN over a sequence -------------===//
//
// Per step and direction, with h the previous state (and c LSTM's cell):
//   LSTM  g = x W^T + h R^T + Wb + Rb;  i, o, f = sigmoid, c~ = tanh;
//         c' = f c + i c~;  h' = o tanh(c')
//   GRU   z, r = sigmoid(x W^T + Wb + h R^T + Rb);
//         h~ = tanh(x Wh^T + Wbh + r (h Rh^T + Rbh))  (linear_before_reset)
//         h~ = tanh(x Wh^T + Wbh + (r h) Rh^T + Rbh)  (otherwise);
//         h' = (1 - z) h~ + z h
//   RNN   h' = tanh(x W^T + h R^T + Wb + Rb)
//
//===----------------------------------------------------------------------===//

#include "RecurrentCells.h"
#include "CPUKernels.h"
#include "DnnlUtils.h"
#include "ExpPolynomial.h"

#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// Sigmoid and tanh from e^-|v| (ExpPolynomial.h), in loops the compiler
/// vectorises (std::exp and std::tanh it does not: at batch 16 they were
/// most of an LSTM step); tanh near 0 by its series, where 1 - e^-2|v|
/// would cancel.
inline float fastSigmoid(float v) {
  float e = expNonPositive(-std::fabs(v)), s = 1.f / (1.f + e);
  return v >= 0.f ? s : e * s;
}
inline float fastTanh(float v) {
  float a = std::fabs(v), e = expNonPositive(-2.f * a);
  float t = a < 0.0625f ? a * (1.f - a * a * (1.f / 3.f - a * a * (2.f / 15.f)))
                        : (1.f - e) / (1.f + e);
  return v < 0.f ? -t : t;
}
HETERPS_VECTOR_CLONES void sigmoidSpan(float *v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    v[i] = fastSigmoid(v[i]);
}
HETERPS_VECTOR_CLONES void tanhSpan(float *v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    v[i] = fastTanh(v[i]);
}

/// C = alpha * op(A) op(B) + beta * C, row-major (dnnl_sgemm cannot fail
/// on these arguments; its status is checked where the sizes come from).
void gemm(char ta, char tb, int64_t m, int64_t n, int64_t k, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c,
          int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] *= beta;
    return;
  }
  dnnl_sgemm(ta, tb, m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc);
}

/// The step run at position s of a direction's order.
int64_t stepAt(const RecurrentDims &d, int64_t dir, int64_t s) {
  return d.reverse || dir == 1 ? d.steps - 1 - s : s;
}

} // namespace

llvm::Expected<RecurrentDims> cpu::recurrentAttrs(llvm::StringRef type,
                                                  const OpAttributes &attrs) {
  RecurrentDims d;
  d.cell = type == "LSTM"  ? RecurrentCell::LSTM
           : type == "GRU" ? RecurrentCell::GRU
                           : RecurrentCell::RNN;
  auto hidden = attrs.getInt("hidden_size");
  auto direction = attrs.getString("direction", std::string("forward"));
  auto lbr = attrs.getInt("linear_before_reset", 0);
  if (!hidden)
    return hidden.takeError();
  if (!direction)
    return direction.takeError();
  if (!lbr)
    return lbr.takeError();
  d.hidden = *hidden;
  d.directions = *direction == "bidirectional" ? 2 : 1;
  d.reverse = *direction == "reverse";
  d.linearBeforeReset = *lbr != 0;
  return d;
}

llvm::Error cpu::fitRecurrentDims(RecurrentDims &d, const Tensor &x,
                                  const Tensor &w, const Tensor &r,
                                  const Tensor &b, const Tensor *state) {
  if (x.rank() == 3) {
    d.steps = x.dim(0);
    d.batch = x.dim(1);
    d.input = x.dim(2);
  }
  int64_t gh = d.gates() * d.hidden, dirs = d.directions;
  auto is = [](const Tensor &t, Shape s) { return t.shape() == s; };
  if (x.rank() == 3 && d.hidden > 0 && is(w, {dirs, gh, d.input}) &&
      is(r, {dirs, gh, d.hidden}) && is(b, {dirs, 2 * gh}) &&
      (!state || is(*state, {d.stateRows(), d.batch, d.hidden})))
    return llvm::Error::success();
  const char *names[] = {"LSTM", "GRU", "RNN"};
  return kernelError(
      llvm::Twine(names[static_cast<int>(d.cell)]) + " of input " +
      x.typeString() + " with W " + w.typeString() + ", R " + r.typeString() +
      ", B " + b.typeString() +
      (state ? ", state " + state->typeString() : "") + " and hidden_size " +
      llvm::Twine(d.hidden) + ": the shapes do not fit");
}

void cpu::recurrentForward(const RecurrentDims &d, const float *x,
                           const float *w, const float *r, const float *b,
                           const float *state, float *y,
                           std::vector<RecurrentTape> *tapes) {
  const int64_t T = d.steps, N = d.batch, I = d.input, H = d.hidden,
                G = d.gates(), GH = G * H, D = d.directions;
  std::vector<float> zeros(N * H, 0.f);
  if (tapes)
    tapes->assign(D, RecurrentTape());
  for (int64_t dir = 0; dir < D; ++dir) {
    RecurrentTape own;
    RecurrentTape &tape = tapes ? (*tapes)[dir] : own;
    const float *wd = w + dir * GH * I, *rd = r + dir * GH * H,
                *bd = b + dir * 2 * GH;
    tape.gates.assign(T * N * GH, 0.f);
    float *proj = tape.gates.data();
    // Every step's input projection, with W's bias (and R's but for GRU,
    // whose R bias joins the state's product).
    gemm('N', 'T', T * N, GH, I, x, I, wd, I, 0.f, proj, GH);
    for (int64_t row = 0; row < T * N; ++row)
      for (int64_t j = 0; j < GH; ++j)
        proj[row * GH + j] +=
            bd[j] + (d.cell == RecurrentCell::GRU ? 0.f : bd[GH + j]);
    if (d.cell == RecurrentCell::LSTM)
      tape.cells.assign(T * N * H, 0.f);
    if (d.cell == RecurrentCell::GRU)
      tape.extra.assign(T * N * (d.linearBeforeReset ? GH : H), 0.f);
    // Rows of the batch are independent through the steps: each thread
    // runs all steps for its rows, its products single-threaded (dnnl_sgemm
    // inside a parallel region): a barrier per step cost more than these
    // products (LSTM/GRU model at batch 16, 2 threads: 0.30 ms against
    // 0.43 with every product over both threads).
    auto rows = [&](int64_t n0, int64_t M) {
      std::vector<float> scratch;
      const float *h = (state ? state + dir * N * H : zeros.data()) + n0 * H;
      const float *c =
          (state && d.cell == RecurrentCell::LSTM ? state + (D + dir) * N * H
                                                  : zeros.data()) +
          n0 * H;
      for (int64_t s = 0; s < T; ++s) {
        int64_t t = stepAt(d, dir, s);
        float *g = proj + (t * N + n0) * GH,
              *out = y + ((t * D + dir) * N + n0) * H;
        switch (d.cell) {
        case RecurrentCell::RNN:
          gemm('N', 'T', M, GH, H, h, H, rd, H, 1.f, g, GH);
          tanhSpan(g, M * H);
          std::copy_n(g, M * H, out);
          break;
        case RecurrentCell::LSTM: {
          gemm('N', 'T', M, GH, H, h, H, rd, H, 1.f, g, GH);
          float *cell = tape.cells.data() + (t * N + n0) * H;
          for (int64_t n = 0; n < M; ++n) {
            float *gn = g + n * GH, *cn = cell + n * H, *hn = out + n * H;
            const float *cp = c + n * H;
            sigmoidSpan(gn, 3 * H); // i, o, f
            tanhSpan(gn + 3 * H, H);
            for (int64_t j = 0; j < H; ++j)
              hn[j] = cn[j] = gn[2 * H + j] * cp[j] + gn[j] * gn[3 * H + j];
            tanhSpan(hn, H);
            for (int64_t j = 0; j < H; ++j)
              hn[j] *= gn[H + j];
          }
          c = cell;
          break;
        }
        case RecurrentCell::GRU: {
          const float *rb = bd + GH;
          float *extra =
              tape.extra.data() + (t * N + n0) * (d.linearBeforeReset ? GH : H);
          if (d.linearBeforeReset) {
            // hr = h R^T + Rb, all three gates.
            gemm('N', 'T', M, GH, H, h, H, rd, H, 0.f, extra, GH);
            for (int64_t n = 0; n < M; ++n)
              for (int64_t j = 0; j < GH; ++j)
                extra[n * GH + j] += rb[j];
          } else {
            // z and r's rows of R; h's come after r * h is known.
            scratch.assign(M * 2 * H, 0.f);
            gemm('N', 'T', M, 2 * H, H, h, H, rd, H, 0.f, scratch.data(),
                 2 * H);
          }
          for (int64_t n = 0; n < M; ++n) {
            float *gn = g + n * GH;
            const float *hzr = d.linearBeforeReset ? extra + n * GH
                                                   : scratch.data() + n * 2 * H;
            for (int64_t j = 0; j < 2 * H; ++j)
              gn[j] += hzr[j] + (d.linearBeforeReset ? 0.f : rb[j]);
            sigmoidSpan(gn, 2 * H); // z, r
            if (!d.linearBeforeReset)
              for (int64_t j = 0; j < H; ++j)
                extra[n * H + j] = gn[H + j] * h[n * H + j];
          }
          if (!d.linearBeforeReset)
            gemm('N', 'T', M, H, H, extra, H, rd + 2 * H * H, H, 1.f, g + 2 * H,
                 GH);
          for (int64_t n = 0; n < M; ++n) {
            float *gn = g + n * GH, *hh = gn + 2 * H;
            for (int64_t j = 0; j < H; ++j)
              hh[j] += d.linearBeforeReset
                           ? gn[H + j] * extra[n * GH + 2 * H + j]
                           : rb[2 * H + j];
            tanhSpan(hh, H);
            for (int64_t j = 0; j < H; ++j)
              out[n * H + j] = hh[j] + gn[j] * (h[n * H + j] - hh[j]);
          }
          break;
        }
        }
        h = out;
      }
    };
    int threads = std::min<int64_t>(omp_get_max_threads(), N);
    if (threads <= 1) {
      rows(0, N);
      continue;
    }
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int k = 0; k < threads; ++k) {
      int64_t n0 = N * k / threads, n1 = N * (k + 1) / threads;
      rows(n0, n1 - n0);
    }
  }
}

void cpu::recurrentBackward(const RecurrentDims &d, const float *x,
                            const float *w, const float *r, const float *state,
                            const float *y,
                            const std::vector<RecurrentTape> &tapes,
                            const float *dy, float *dx, float *dw, float *dr,
                            float *db, float *dstate) {
  const int64_t T = d.steps, N = d.batch, I = d.input, H = d.hidden,
                G = d.gates(), GH = G * H, D = d.directions;
  std::vector<float> zeros(N * H, 0.f), dG(T * N * GH), dh(N * H),
      dhNext(N * H), dcNext(N * H), dHR(N * GH), drh(N * H), tanhCell(N * H);
  std::fill_n(dr, D * GH * H, 0.f);
  std::fill_n(db, D * 2 * GH, 0.f);
  for (int64_t dir = 0; dir < D; ++dir) {
    const RecurrentTape &tape = tapes[dir];
    const float *wd = w + dir * GH * I, *rd = r + dir * GH * H;
    float *drd = dr + dir * GH * H, *wbGrad = db + dir * 2 * GH,
          *rbGrad = wbGrad + GH;
    const float *h0 = state ? state + dir * N * H : zeros.data();
    const float *c0 = state && d.cell == RecurrentCell::LSTM
                          ? state + (D + dir) * N * H
                          : zeros.data();
    std::fill(dhNext.begin(), dhNext.end(), 0.f);
    std::fill(dcNext.begin(), dcNext.end(), 0.f);
    for (int64_t s = T - 1; s >= 0; --s) {
      int64_t t = stepAt(d, dir, s), prev = s > 0 ? stepAt(d, dir, s - 1) : -1;
      const float *hPrev = prev < 0 ? h0 : y + (prev * D + dir) * N * H;
      const float *hOut = y + (t * D + dir) * N * H;
      const float *g = tape.gates.data() + t * N * GH;
      const float *dyt = dy + (t * D + dir) * N * H;
      float *dg = dG.data() + t * N * GH;
      for (int64_t k = 0; k < N * H; ++k)
        dh[k] = dyt[k] + dhNext[k];
      switch (d.cell) {
      case RecurrentCell::RNN:
        for (int64_t k = 0; k < N * H; ++k)
          dg[k] = dh[k] * (1.f - hOut[k] * hOut[k]);
        gemm('N', 'N', N, H, GH, dg, GH, rd, H, 0.f, dhNext.data(), H);
        gemm('T', 'N', GH, H, N, dg, GH, hPrev, H, 1.f, drd, H);
        break;
      case RecurrentCell::LSTM: {
        const float *cPrev = prev < 0 ? c0 : tape.cells.data() + prev * N * H;
        std::copy_n(tape.cells.data() + t * N * H, N * H, tanhCell.data());
        tanhSpan(tanhCell.data(), N * H);
        for (int64_t n = 0; n < N; ++n) {
          const float *gn = g + n * GH;
          float *dgn = dg + n * GH;
          for (int64_t j = 0; j < H; ++j) {
            int64_t k = n * H + j;
            float i = gn[j], o = gn[H + j], f = gn[2 * H + j],
                  cc = gn[3 * H + j], tc = tanhCell[k];
            float dc = dcNext[k] + dh[k] * o * (1.f - tc * tc);
            dgn[j] = dc * cc * i * (1.f - i);
            dgn[H + j] = dh[k] * tc * o * (1.f - o);
            dgn[2 * H + j] = dc * cPrev[k] * f * (1.f - f);
            dgn[3 * H + j] = dc * i * (1.f - cc * cc);
            dcNext[k] = dc * f;
          }
        }
        gemm('N', 'N', N, H, GH, dg, GH, rd, H, 0.f, dhNext.data(), H);
        gemm('T', 'N', GH, H, N, dg, GH, hPrev, H, 1.f, drd, H);
        break;
      }
      case RecurrentCell::GRU: {
        const float *extra =
            tape.extra.data() + t * N * (d.linearBeforeReset ? GH : H);
        // dg: the gates' pre-activations; dHR: what reaches R's product
        // (and R's bias).
        for (int64_t n = 0; n < N; ++n) {
          const float *gn = g + n * GH;
          float *dgn = dg + n * GH, *dhr = dHR.data() + n * GH;
          for (int64_t j = 0; j < H; ++j) {
            int64_t k = n * H + j;
            float z = gn[j], rr = gn[H + j], hh = gn[2 * H + j];
            float da = dh[k] * (1.f - z) * (1.f - hh * hh);
            dgn[j] = dh[k] * (hPrev[k] - hh) * z * (1.f - z);
            dgn[2 * H + j] = da;
            dhNext[k] = dh[k] * z;
            if (d.linearBeforeReset) {
              float hrh = extra[n * GH + 2 * H + j];
              dgn[H + j] = da * hrh * rr * (1.f - rr);
              dhr[j] = dgn[j];
              dhr[H + j] = dgn[H + j];
              dhr[2 * H + j] = da * rr;
            }
          }
        }
        if (d.linearBeforeReset) {
          gemm('N', 'N', N, H, GH, dHR.data(), GH, rd, H, 1.f, dhNext.data(),
               H);
          gemm('T', 'N', GH, H, N, dHR.data(), GH, hPrev, H, 1.f, drd, H);
          for (int64_t n = 0; n < N; ++n)
            for (int64_t j = 0; j < GH; ++j)
              rbGrad[j] += dHR[n * GH + j];
          break;
        }
        // (r h) Rh^T: r h's gradient is da Rh, r's that times h.
        gemm('N', 'N', N, H, H, dg + 2 * H, GH, rd + 2 * H * H, H, 0.f,
             drh.data(), H);
        gemm('T', 'N', H, H, N, dg + 2 * H, GH, extra, H, 1.f, drd + 2 * H * H,
             H);
        for (int64_t n = 0; n < N; ++n) {
          float *dgn = dg + n * GH;
          const float *gn = g + n * GH;
          for (int64_t j = 0; j < H; ++j) {
            int64_t k = n * H + j;
            float rr = gn[H + j];
            dgn[H + j] = drh[k] * hPrev[k] * rr * (1.f - rr);
            dhNext[k] += drh[k] * rr;
          }
          for (int64_t j = 0; j < GH; ++j)
            rbGrad[j] += dgn[j];
        }
        gemm('N', 'N', N, H, 2 * H, dg, GH, rd, H, 1.f, dhNext.data(), H);
        gemm('T', 'N', 2 * H, H, N, dg, GH, hPrev, H, 1.f, drd, H);
        break;
      }
      }
    }
    // W, W's bias and the input, over the whole sequence.
    gemm('T', 'N', GH, I, T * N, dG.data(), GH, x, I, 0.f, dw + dir * GH * I,
         I);
    gemm('N', 'N', T * N, I, GH, dG.data(), GH, wd, I, dir == 0 ? 0.f : 1.f, dx,
         I);
    for (int64_t row = 0; row < T * N; ++row)
      for (int64_t j = 0; j < GH; ++j)
        wbGrad[j] += dG[row * GH + j];
    if (d.cell != RecurrentCell::GRU)
      std::copy_n(wbGrad, GH, rbGrad);
    if (dstate) {
      std::copy(dhNext.begin(), dhNext.end(), dstate + dir * N * H);
      if (d.cell == RecurrentCell::LSTM)
        std::copy(dcNext.begin(), dcNext.end(), dstate + (D + dir) * N * H);
    }
  }
}
