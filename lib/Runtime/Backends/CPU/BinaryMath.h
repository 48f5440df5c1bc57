//===- BinaryMath.h - binary element-wise functions and their loops -*- C++
//-*-//
//
// Add, Sub, Mul, Div, Max, Min, Pow and PRelu as compile-time functions
// (so each loop over them is vectorised), their partial derivatives for
// the backward, and the loops over plain numpy-broadcast tensors that the
// inference kernels and the training kernels share.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_BINARYMATH_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_BINARYMATH_H

#include "DnnlUtils.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

namespace heterps::runtime::cpu {

enum class BinaryOp { Add, Sub, Mul, Div, Max, Min, Pow, PRelu };

template <BinaryOp Op> inline float apply(float x, float y) {
  if constexpr (Op == BinaryOp::Add)
    return x + y;
  else if constexpr (Op == BinaryOp::Sub)
    return x - y;
  else if constexpr (Op == BinaryOp::Mul)
    return x * y;
  else if constexpr (Op == BinaryOp::Div)
    return x / y;
  else if constexpr (Op == BinaryOp::Max)
    return std::max(x, y);
  else if constexpr (Op == BinaryOp::Min)
    return std::min(x, y);
  else if constexpr (Op == BinaryOp::Pow)
    return y == 2.f ? x * x : std::pow(x, y); // variances square
  else
    return x < 0 ? y * x : x;
}

/// d(x op y)/dx (`First`) or d(x op y)/dy. Max and Min split a tie evenly,
/// as PyTorch does; Pow's exponent gradient is 0 where x <= 0; PRelu's
/// slope gradient is x where x <= 0.
template <BinaryOp Op, bool First> inline float partial(float x, float y) {
  if constexpr (Op == BinaryOp::Add)
    return 1;
  else if constexpr (Op == BinaryOp::Sub)
    return First ? 1 : -1;
  else if constexpr (Op == BinaryOp::Mul)
    return First ? y : x;
  else if constexpr (Op == BinaryOp::Div)
    return First ? 1 / y : -x / (y * y);
  else if constexpr (Op == BinaryOp::Max || Op == BinaryOp::Min) {
    bool firstWins = Op == BinaryOp::Max ? x > y : x < y;
    return x == y ? 0.5f : firstWins == First ? 1.f : 0.f;
  } else if constexpr (Op == BinaryOp::Pow) {
    if constexpr (First)
      return y == 2.f ? 2 * x : y * std::pow(x, y - 1);
    else
      return x > 0 ? std::pow(x, y) * std::log(x) : 0;
  } else {
    if constexpr (First)
      return x > 0 ? 1 : y;
    else
      return x > 0 ? 0 : x;
  }
}

/// Calls fn(std::integral_constant<BinaryOp, op>{}): a run-time op to a
/// compile-time one.
template <typename Fn> void visitBinaryOp(BinaryOp op, Fn &&fn) {
  switch (op) {
  case BinaryOp::Add:
    return fn(std::integral_constant<BinaryOp, BinaryOp::Add>{});
  case BinaryOp::Sub:
    return fn(std::integral_constant<BinaryOp, BinaryOp::Sub>{});
  case BinaryOp::Mul:
    return fn(std::integral_constant<BinaryOp, BinaryOp::Mul>{});
  case BinaryOp::Div:
    return fn(std::integral_constant<BinaryOp, BinaryOp::Div>{});
  case BinaryOp::Max:
    return fn(std::integral_constant<BinaryOp, BinaryOp::Max>{});
  case BinaryOp::Min:
    return fn(std::integral_constant<BinaryOp, BinaryOp::Min>{});
  case BinaryOp::Pow:
    return fn(std::integral_constant<BinaryOp, BinaryOp::Pow>{});
  case BinaryOp::PRelu:
    return fn(std::integral_constant<BinaryOp, BinaryOp::PRelu>{});
  }
}

/// out = op(a, b) with numpy broadcasting over plain f32 tensors; `out`
/// has the broadcast shape. Parallel and vectorised (Broadcast.h).
void broadcastBinary(BinaryOp op, const Tensor &a, const Tensor &b,
                     Tensor &out);

/// out = dOut * d(a op b)/da (`first`) or /db, elementwise over the
/// broadcast shape (dOut's), before any sum over broadcast axes.
void broadcastPartial(BinaryOp op, bool first, const Tensor &dOut,
                      const Tensor &a, const Tensor &b, Tensor &out);

/// max(x, 0) over t's buffer, in place (a binary op's fused Relu where no
/// oneDNN post-op applies it; padded channels stay 0); NaN stays NaN.
/// Parallel.
void reluInPlace(Tensor &t);

/// Whether a binary primitive on `md` (a tensor of `shape`) may take a
/// fused Relu as its post-op: plain or in 16-channel blocks. oneDNN 2.6's
/// AVX-512 binary kernel with a post-op writes wrong values into 8-channel
/// blocks, and past their end, when their count is odd ([2, 24, 56, 56]);
/// elsewhere the Relu is reluInPlace after the primitive.
bool reluAsPostOp(const memory::desc &md, llvm::ArrayRef<int64_t> shape);

/// The post-ops of a binary primitive: a Relu, or none.
dnnl::post_ops reluPostOps(bool relu);

/// `dy` where `y` > 0, else 0 (`y` and `dy` in the same layout): into
/// `dy`'s buffer when `inPlace`, else a new one. Parallel.
Tensor maskByPositive(const Tensor &y, const Tensor &dy, bool inPlace);

/// The gradient through a fused Relu whose output is `y`: maskByPositive
/// in y's layout, in dy's buffer when no one else reads it (a gradient
/// held alone, or a reordered copy).
Tensor reluGradient(const Tensor &y, const Tensor &dy,
                    const CPUContextPtr &ctx);

/// `in` (plain f32) summed over the axes along which `shape` broadcasts
/// to in's shape: the gradient of a broadcast operand. Parallel.
Tensor sumToShape(const Tensor &in, llvm::ArrayRef<int64_t> shape);

/// dOut * d(a op b)/da (`first`) or /db for a and b of one shape, in a's
/// layout when it is channel-blocked (b and dOut reordered to it; padded
/// channels 0); nothing when a is plain or in another layout.
std::optional<Tensor> blockedPartial(BinaryOp op, bool first,
                                     const Tensor &dOut, const Tensor &a,
                                     const Tensor &b, const CPUContextPtr &ctx);

/// op(a, b) where one operand, `x`, is [N, C, spatial...] (rank >= 3) in
/// a plain, channel-blocked or channels-last layout and the other, `s`, has
/// one value per channel or per (item, channel): squeeze-excitation's
/// scale, a per-channel bias. Such an op runs in x's layout, without the
/// reorders to plain and back that a general broadcast would cost.
struct ChannelBroadcast {
  bool scaleFirst; // op(s, x) rather than op(x, s)
  bool perItem;    // s is [N, C, 1...] rather than [C, 1...] or [1, C, 1...]
  int64_t items, channels, spatial;
  int64_t block; // channels per block: 1 plain, 8 or 16; 0 channels-last
};
std::optional<ChannelBroadcast> channelBroadcastOf(const Tensor &a,
                                                   const Tensor &b);
/// op(a, b) in x's layout (padded channels 0).
Tensor channelBroadcast(BinaryOp op, const ChannelBroadcast &form,
                        const Tensor &a, const Tensor &b,
                        const CPUContextPtr &ctx);
/// The mean over the positions of each (item, channel) of x, which
/// channelBroadcastOf described as `form`: [N * C] row-major, read in x's
/// layout. Parallel.
std::vector<float> channelMeans(const ChannelBroadcast &form, const Tensor &x);
/// The gradients of a and b (where `need` says) given dOut: x's in x's
/// layout, s's plain, summed over the items when s is per channel.
void channelBroadcastGrad(BinaryOp op, const ChannelBroadcast &form,
                          const Tensor &dOut, const Tensor &a, const Tensor &b,
                          const bool need[2], Tensor grads[2],
                          const CPUContextPtr &ctx);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_BINARYMATH_H
