//===- SmallHeadAttention.h - attention products of small heads -*- C++ -*-===//
//
// Internal to the CPU backend: the two products of one attention head,
// Q x Kt and P x V, for heads of at most 64 keys and 64 value columns,
// with AVX-512 registers holding whole rows of the result. Swin's windows
// are such heads (49 tokens, 32 dimensions, 3072 of them per attention at
// batch 16): `dnnl_sgemm` on matrices that small spent more on each call
// than on the arithmetic, and the fused Attention op ran 60% slower than
// the batched matmuls it replaced.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_SMALLHEADATTENTION_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_SMALLHEADATTENTION_H

#include <cstdint>

namespace heterps::runtime::cpu {

/// Keys and value columns a small head holds at most.
constexpr int64_t kSmallHeadMax = 64;

/// Whether the small-head products run a head of S keys and Dv value
/// columns on this CPU (AVX-512).
bool smallHeadsRun(int64_t S, int64_t Dv);

/// Rows of the scores buffer smallHeadScores writes: S rounded up to 16.
inline int64_t smallHeadRowLength(int64_t S) { return (S + 15) / 16 * 16; }

/// scores[t][s] = scale * sum_d q[t * qRow + d] * k[d * kD + s * kS] for
/// t < T, s < S, rows of smallHeadRowLength(S) floats (the lanes past S
/// are left undefined); `packed` holds D * smallHeadRowLength(S) floats of
/// scratch for Kt.
void smallHeadScores(const float *q, int64_t qRow, const float *k, int64_t kD,
                     int64_t kS, int64_t T, int64_t S, int64_t D, float scale,
                     float *packed, float *scores);

/// Softmax of the S scores of `row`, a row smallHeadScores wrote (lanes
/// past S are written too).
void smallHeadSoftmax(float *row, int64_t S);

/// o[t * oRow + j] = sum_s p[t][s] * v[s * vRow + j] for t < T, j < Dv,
/// where the rows of p are smallHeadRowLength(S) floats long.
void smallHeadOutput(const float *p, const float *v, int64_t vRow, int64_t T,
                     int64_t S, int64_t Dv, float *o, int64_t oRow);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_SMALLHEADATTENTION_H
