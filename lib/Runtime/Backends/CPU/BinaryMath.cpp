//===- BinaryMath.cpp - loops over plain numpy-broadcast tensors ----------===//
//
// The forward (op), the elementwise part of the backward (dOut times a
// partial derivative) and the sum of a gradient over broadcast axes, each
// at memory speed: rows after merging axes, rows in parallel, each row a
// loop the compiler vectorises (no per-element index arithmetic).
//
//===----------------------------------------------------------------------===//

#include "BinaryMath.h"
#include "Broadcast.h"
#include "ParallelSums.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// z[c] = f(x[c * sx], y[c * sy]) for c < n, each stride 0 or 1, with the
/// strides fixed at compile time so that every case vectorises.
template <typename F>
inline void rowLoop(float *z, const float *x, int64_t sx, const float *y,
                    int64_t sy, int64_t n, F f) {
  if (sx && sy)
    for (int64_t c = 0; c < n; ++c)
      z[c] = f(c, x[c], y[c]);
  else if (sx)
    for (int64_t c = 0; c < n; ++c)
      z[c] = f(c, x[c], y[0]);
  else if (sy)
    for (int64_t c = 0; c < n; ++c)
      z[c] = f(c, x[0], y[c]);
  else
    for (int64_t c = 0; c < n; ++c)
      z[c] = f(c, x[0], y[0]);
}

} // namespace

void cpu::broadcastBinary(BinaryOp op, const Tensor &a, const Tensor &b,
                          Tensor &out) {
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float *po = out.data<float>();
  visitBinaryOp(op, [&](auto kind) {
    forEachMergedRow<2>(out.shape(), {a.shape(), b.shape()},
                        [&](int64_t o, const std::array<int64_t, 2> &offsets,
                            int64_t n, const std::array<int64_t, 2> &steps) {
                          rowLoop(po + o, pa + offsets[0], steps[0],
                                  pb + offsets[1], steps[1], n,
                                  [](int64_t, float x, float y) {
                                    return apply<decltype(kind)::value>(x, y);
                                  });
                        });
  });
}

void cpu::broadcastPartial(BinaryOp op, bool first, const Tensor &dOut,
                           const Tensor &a, const Tensor &b, Tensor &out) {
  const float *pa = a.data<float>(), *pb = b.data<float>(),
              *pg = dOut.data<float>();
  float *po = out.data<float>();
  auto loop = [&](auto kind, auto wrtFirst) {
    forEachMergedRow<2>(
        out.shape(), {a.shape(), b.shape()},
        [&](int64_t o, const std::array<int64_t, 2> &offsets, int64_t n,
            const std::array<int64_t, 2> &steps) {
          const float *g = pg + o;
          rowLoop(po + o, pa + offsets[0], steps[0], pb + offsets[1], steps[1],
                  n, [g](int64_t c, float x, float y) {
                    return g[c] * partial<decltype(kind)::value,
                                          decltype(wrtFirst)::value>(x, y);
                  });
        });
  };
  visitBinaryOp(op, [&](auto kind) {
    if (first)
      loop(kind, std::true_type{});
    else
      loop(kind, std::false_type{});
  });
}

void cpu::reluInPlace(Tensor &t) {
  float *x = t.data<float>();
  int64_t n = static_cast<int64_t>(t.bytes() / sizeof(float));
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i)
    x[i] = x[i] < 0.f ? 0.f : x[i];
}

bool cpu::reluAsPostOp(const memory::desc &md, llvm::ArrayRef<int64_t> shape) {
  std::optional<int64_t> block = channelBlockOf(md, shape);
  return block && (*block == 1 || *block == 16);
}

dnnl::post_ops cpu::reluPostOps(bool relu) {
  dnnl::post_ops ops;
  if (relu)
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
  return ops;
}

Tensor cpu::maskByPositive(const Tensor &y, const Tensor &dy, bool inPlace) {
  Tensor masked = inPlace ? dy : dy.uninitialisedLike();
  const float *yp = y.data<float>(), *dp = dy.data<float>();
  float *out = masked.data<float>();
  int64_t n = static_cast<int64_t>(dy.bytes() / sizeof(float));
  // Both loads unconditional: a select vectorizes, a conditional load
  // became a branch per element (mispredicted half the time after a Relu;
  // 9% of the Fashion CNN's training step).
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float d = dp[i];
    out[i] = yp[i] > 0.f ? d : 0.f;
  }
  return masked;
}

Tensor cpu::reluGradient(const Tensor &y, const Tensor &dy,
                         const CPUContextPtr &ctx) {
  bool owned = dy.ownsBufferAlone();
  Tensor grad = reorderTo(dy, descOf(y), ctx);
  return maskByPositive(y, grad, owned || grad.rawData() != dy.rawData());
}

Tensor cpu::sumToShape(const Tensor &in, llvm::ArrayRef<int64_t> shape) {
  Tensor out(DType::F32, Shape(shape.begin(), shape.end()));
  float *dst = out.data<float>();
  const float *src = in.data<float>();
  int64_t total = in.numElements();
  std::fill(dst, dst + out.numElements(), 0.f);
  if (total == 0)
    return out;
  // in's axes merged into runs that out keeps or sums over, outermost
  // first, each with its stride in `in`.
  Shape strides = broadcastStrides(shape, in.shape());
  Shape sizes;
  std::vector<bool> kept;
  for (int64_t d = 0; d < in.rank(); ++d) {
    if (in.dim(d) == 1)
      continue;
    bool keep = strides[d] != 0;
    if (!sizes.empty() && kept.back() == keep)
      sizes.back() *= in.dim(d);
    else {
      sizes.push_back(in.dim(d));
      kept.push_back(keep);
    }
  }
  if (sizes.empty()) {
    dst[0] = src[0];
    return out;
  }
  int64_t axes = sizes.size();
  Shape inStride(axes, 1);
  for (int64_t d = axes - 2; d >= 0; --d)
    inStride[d] = inStride[d + 1] * sizes[d + 1];
  // The offsets in `in` of every combination of the summed outer axes.
  std::vector<int64_t> sums{0};
  for (int64_t d = 0; d + 1 < axes; ++d)
    if (!kept[d]) {
      std::vector<int64_t> next;
      next.reserve(sums.size() * sizes[d]);
      for (int64_t s : sums)
        for (int64_t i = 0; i < sizes[d]; ++i)
          next.push_back(s + i * inStride[d]);
      sums = std::move(next);
    }
  // The offset in `in` of the j-th combination of the kept outer axes,
  // which is also out's j-th run of the last axis (or element).
  auto base = [&](int64_t j) {
    int64_t offset = 0;
    for (int64_t d = axes - 2; d >= 0; --d)
      if (kept[d]) {
        offset += (j % sizes[d]) * inStride[d];
        j /= sizes[d];
      }
    return offset;
  };
  int64_t length = sizes.back();
  int64_t runs = out.numElements() / (kept.back() ? length : 1);
  bool parallel = total > 32768;
  if (!kept.back()) {
    // out[j] is the sum of whole rows of `in`.
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t j = 0; j < runs; ++j) {
      const float *row = src + base(j);
      float sum = 0;
      for (int64_t s : sums)
        for (int64_t c = 0; c < length; ++c)
          sum += row[s + c];
      dst[j] = sum;
    }
    return out;
  }
  // out's runs are rows of `in` added up: each task one run's block of
  // columns, so that a single run (a bias) still splits across threads.
  constexpr int64_t kBlock = 512;
  int64_t blocks = (length + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < runs * blocks; ++t) {
    int64_t j = t / blocks, c0 = t % blocks * kBlock;
    int64_t n = std::min(kBlock, length - c0);
    float *o = dst + j * length + c0;
    const float *row = src + base(j) + c0;
    for (int64_t s : sums)
      for (int64_t c = 0; c < n; ++c)
        o[c] += row[s + c];
  }
  return out;
}

std::optional<Tensor> cpu::blockedPartial(BinaryOp op, bool first,
                                          const Tensor &dOut, const Tensor &a,
                                          const Tensor &b,
                                          const CPUContextPtr &ctx) {
  memory::desc md = descOf(a);
  std::optional<int64_t> block = channelBlockOf(md, a.shape());
  if (a.isPlain() || !block || a.shape() != b.shape())
    return std::nullopt;
  Tensor pb = reorderTo(b, md, ctx), g = reorderTo(dOut, md, ctx);
  Tensor out = allocate(md, a.shape(), ctx);
  const float *px = a.data<float>(), *py = pb.data<float>(),
              *pg = g.data<float>();
  float *po = out.data<float>();
  // Every element of the buffer, padding included (what it gives there, a
  // NaN from Div's 0 / 0, is overwritten below).
  int64_t n = static_cast<int64_t>(a.bytes() / sizeof(float));
  auto loop = [&](auto kind, auto wrtFirst) {
    constexpr BinaryOp Op = decltype(kind)::value;
    constexpr bool F = decltype(wrtFirst)::value;
#pragma omp parallel for schedule(static) if (n > 32768)
    for (int64_t i = 0; i < n; ++i)
      po[i] = pg[i] * partial<Op, F>(px[i], py[i]);
  };
  visitBinaryOp(op, [&](auto kind) {
    if (first)
      loop(kind, std::true_type{});
    else
      loop(kind, std::false_type{});
  });
  int64_t items = a.dim(0), channels = a.dim(1), valid = channels % *block;
  if (valid) {
    int64_t blocks = (channels + *block - 1) / *block;
    int64_t spatial = a.numElements() / std::max<int64_t>(items * channels, 1);
    for (int64_t item = 0; item < items; ++item) {
      float *last = po + ((item + 1) * blocks - 1) * spatial * *block;
      for (int64_t i = 0; i < spatial; ++i)
        std::fill(last + i * *block + valid, last + (i + 1) * *block, 0.f);
    }
  }
  return out;
}

std::optional<ChannelBroadcast> cpu::channelBroadcastOf(const Tensor &a,
                                                        const Tensor &b) {
  for (bool scaleFirst : {false, true}) {
    const Tensor &x = scaleFirst ? b : a, &s = scaleFirst ? a : b;
    int64_t rank = x.rank();
    if (rank < 3 || s.rank() > rank || x.dtype() != DType::F32 ||
        s.dtype() != DType::F32)
      continue;
    std::optional<int64_t> block = channelBlockOf(descOf(x), x.shape());
    if (!block && isChannelsLast(x))
      block = 0;
    if (!block)
      continue;
    // s right-aligned to x's rank: 1 everywhere but the channel axis (C)
    // and maybe the item axis (N).
    Shape padded(rank - s.rank(), 1);
    padded.insert(padded.end(), s.shape().begin(), s.shape().end());
    bool fits =
        padded[1] == x.dim(1) && (padded[0] == 1 || padded[0] == x.dim(0));
    for (int64_t d = 2; d < rank && fits; ++d)
      fits = padded[d] == 1;
    if (!fits)
      continue;
    return ChannelBroadcast{scaleFirst,
                            padded[0] != 1 || x.dim(0) == 1,
                            x.dim(0),
                            x.dim(1),
                            x.numElements() /
                                std::max<int64_t>(x.dim(0) * x.dim(1), 1),
                            *block};
  }
  return std::nullopt;
}

namespace {

/// The scale's values as rows: channel c of item n at row(n)[c]. Read in
/// place when s is plain or, with x's rank, [N, C, 1...] channel-blocked
/// or channels-last (its items are then rows of the padded channel count:
/// squeeze-excitation's scale as the Conv before it wrote it); from a
/// plain copy otherwise.
struct ScaleRows {
  ScaleRows(const Tensor &s, const ChannelBroadcast &f, int64_t rank,
            const CPUContextPtr &ctx)
      : perItem(f.perItem), stride(f.channels) {
    std::optional<int64_t> block;
    if (s.rank() == rank)
      block = channelBlockOf(descOf(s), s.shape());
    if (block)
      stride = (f.channels + *block - 1) / *block * *block;
    held =
        block || (s.rank() == rank && isChannelsLast(s)) ? s : plainOf(s, ctx);
  }
  const float *row(int64_t item) const {
    return held.data<float>() + (perItem ? item * stride : 0);
  }

  Tensor held;
  bool perItem;
  int64_t stride;
};

/// The (item, channel block) runs of a plain or channel-blocked x: run t
/// covers channels [c0, c0 + valid) of item n, `spatial` positions of
/// `block` lanes each.
struct ChannelRuns {
  const ChannelBroadcast &f;
  int64_t blocks() const { return (f.channels + f.block - 1) / f.block; }
  int64_t count() const { return f.items * blocks(); }
  int64_t offset(int64_t t) const { return t * f.spatial * f.block; }
  int64_t item(int64_t t) const { return t / blocks(); }
  int64_t firstChannel(int64_t t) const { return t % blocks() * f.block; }
  int64_t valid(int64_t t) const {
    return std::min(f.block, f.channels - firstChannel(t));
  }
};

/// Calls body(x, s, n, lanes) for the run's positions: lane j of position
/// i is x[i * block + j] paired with s[j]; s has `block` entries (0 past
/// the valid channels). Blocks of 8 and 16 lanes are fixed at compile time.
template <typename Body>
inline void forEachPosition(int64_t block, const float *scale, int64_t valid,
                            int64_t positions, Body body) {
  auto run = [&](auto lanes) {
    constexpr int64_t B = decltype(lanes)::value;
    float s[B] = {};
    std::copy(scale, scale + valid, s);
    body(s, positions, lanes);
  };
  if (block == 16)
    run(std::integral_constant<int64_t, 16>{});
  else if (block == 8)
    run(std::integral_constant<int64_t, 8>{});
  else
    run(std::integral_constant<int64_t, 1>{});
}

} // namespace

Tensor cpu::channelBroadcast(BinaryOp op, const ChannelBroadcast &form,
                             const Tensor &a, const Tensor &b,
                             const CPUContextPtr &ctx) {
  const Tensor &x = form.scaleFirst ? b : a;
  ScaleRows scale(form.scaleFirst ? a : b, form, x.rank(), ctx);
  Tensor out = allocate(descOf(x), x.shape(), ctx);
  const float *px = x.data<float>();
  float *po = out.data<float>();
  ChannelRuns runs{form};
  int threads = threadsFor(x.numElements());
  auto loop = [&](auto kind, auto scaleFirst) {
    constexpr BinaryOp Op = decltype(kind)::value;
    constexpr bool SF = decltype(scaleFirst)::value;
    if (form.block == 0) {
      // Channels-last: row r (item r / spatial) is one position's channels.
      int64_t c = form.channels;
#pragma omp parallel for schedule(static) num_threads(threads)
      for (int64_t r = 0; r < form.items * form.spatial; ++r) {
        const float *s = scale.row(r / form.spatial), *xr = px + r * c;
        float *o = po + r * c;
        for (int64_t j = 0; j < c; ++j)
          o[j] = SF ? apply<Op>(s[j], xr[j]) : apply<Op>(xr[j], s[j]);
      }
      return;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t t = 0; t < runs.count(); ++t) {
      int64_t valid = runs.valid(t);
      const float *xr = px + runs.offset(t);
      float *o = po + runs.offset(t);
      forEachPosition(form.block,
                      scale.row(runs.item(t)) + runs.firstChannel(t), valid,
                      form.spatial, [&](const float *s, int64_t n, auto lanes) {
                        constexpr int64_t B = decltype(lanes)::value;
                        for (int64_t i = 0; i < n; ++i)
                          for (int64_t j = 0; j < B; ++j)
                            o[i * B + j] = SF ? apply<Op>(s[j], xr[i * B + j])
                                              : apply<Op>(xr[i * B + j], s[j]);
                        // Padded channels stay 0, as oneDNN's blocked layouts
                        // expect.
                        if (valid < B)
                          for (int64_t i = 0; i < n; ++i)
                            std::fill(o + i * B + valid, o + (i + 1) * B, 0.f);
                      });
    }
  };
  visitBinaryOp(op, [&](auto kind) {
    if (form.scaleFirst)
      loop(kind, std::true_type{});
    else
      loop(kind, std::false_type{});
  });
  return out;
}

std::vector<float> cpu::channelMeans(const ChannelBroadcast &form,
                                     const Tensor &x) {
  int64_t c = form.channels;
  std::vector<float> means(form.items * c, 0.f);
  const float *px = x.data<float>();
  float inv = 1.f / static_cast<float>(std::max<int64_t>(form.spatial, 1));
  int threads = threadsFor(x.numElements());
  if (form.block == 0) {
    // Channels-last rows (one item at batch 1 still splits).
    means = sumRowsInParallel(form.items * form.spatial, means.size(), threads,
                              [&](int64_t r, float *acc) {
                                const float *xr = px + r * c;
                                float *d = acc + r / form.spatial * c;
                                for (int64_t j = 0; j < c; ++j)
                                  d[j] += xr[j];
                              });
    for (float &m : means)
      m *= inv;
    return means;
  }
  ChannelRuns runs{form};
  auto loop = [&](auto lanes) {
    // Positions of B lanes summed into W = 16 / B independent accumulators
    // per lane, a vector's worth, which the compiler keeps in a register
    // (one chain of dependent adds would be latency-bound).
    constexpr int64_t B = decltype(lanes)::value, W = 16 / B;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t t = 0; t < runs.count(); ++t) {
      const float *xr = px + runs.offset(t);
      float acc[W * B] = {};
      int64_t i = 0;
      for (; i + W <= form.spatial; i += W)
        for (int64_t j = 0; j < W * B; ++j)
          acc[j] += xr[i * B + j];
      for (; i < form.spatial; ++i)
        for (int64_t j = 0; j < B; ++j)
          acc[j] += xr[i * B + j];
      float *d = means.data() + runs.item(t) * c + runs.firstChannel(t);
      for (int64_t j = 0; j < runs.valid(t); ++j) {
        float sum = 0.f;
        for (int64_t w = 0; w < W; ++w)
          sum += acc[w * B + j];
        d[j] = sum * inv;
      }
    }
  };
  if (form.block == 16)
    loop(std::integral_constant<int64_t, 16>{});
  else if (form.block == 8)
    loop(std::integral_constant<int64_t, 8>{});
  else
    loop(std::integral_constant<int64_t, 1>{});
  return means;
}

void cpu::channelBroadcastGrad(BinaryOp op, const ChannelBroadcast &form,
                               const Tensor &dOut, const Tensor &a,
                               const Tensor &b, const bool need[2],
                               Tensor grads[2], const CPUContextPtr &ctx) {
  const Tensor &x = form.scaleFirst ? b : a;
  const Tensor &sIn = form.scaleFirst ? a : b;
  int xi = form.scaleFirst ? 1 : 0;
  ScaleRows scale(sIn, form, x.rank(), ctx);
  Tensor g = reorderTo(dOut, descOf(x), ctx);
  bool needX = need[xi], needS = need[1 - xi];
  Tensor dx = needX ? allocate(descOf(x), x.shape(), ctx) : Tensor();
  // Sums per (item, channel), over the items afterwards when s is shared.
  std::vector<float> ds(needS ? form.items * form.channels : 0);
  const float *px = x.data<float>(), *pg = g.data<float>();
  float *pdx = needX ? dx.data<float>() : nullptr;
  ChannelRuns runs{form};
  int threads = threadsFor(x.numElements());
  auto loop = [&](auto kind, auto scaleFirst) {
    constexpr BinaryOp Op = decltype(kind)::value;
    constexpr bool SF = decltype(scaleFirst)::value;
    // d op / d x and d op / d s, with the operands in op's order.
    auto dX = [](float xv, float sv) {
      return SF ? partial<Op, false>(sv, xv) : partial<Op, true>(xv, sv);
    };
    auto dS = [](float xv, float sv) {
      return SF ? partial<Op, true>(sv, xv) : partial<Op, false>(xv, sv);
    };
    if (form.block == 0) {
      // Channels-last rows.
      int64_t c = form.channels;
      ds = sumRowsInParallel(form.items * form.spatial, ds.size(), threads,
                             [&](int64_t r, float *acc) {
                               int64_t n = r / form.spatial;
                               const float *s = scale.row(n), *xr = px + r * c,
                                           *gr = pg + r * c;
                               if (pdx)
                                 for (int64_t j = 0; j < c; ++j)
                                   pdx[r * c + j] = gr[j] * dX(xr[j], s[j]);
                               if (needS)
                                 for (int64_t j = 0; j < c; ++j)
                                   acc[n * c + j] += gr[j] * dS(xr[j], s[j]);
                             });
      return;
    }
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t t = 0; t < runs.count(); ++t) {
      int64_t valid = runs.valid(t), at = runs.offset(t);
      const float *xr = px + at, *gr = pg + at;
      float *dxr = needX ? pdx + at : nullptr;
      forEachPosition(
          form.block, scale.row(runs.item(t)) + runs.firstChannel(t), valid,
          form.spatial, [&](const float *s, int64_t n, auto lanes) {
            constexpr int64_t B = decltype(lanes)::value;
            if (dxr) {
              for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < B; ++j)
                  dxr[i * B + j] = gr[i * B + j] * dX(xr[i * B + j], s[j]);
              if (valid < B)
                for (int64_t i = 0; i < n; ++i)
                  std::fill(dxr + i * B + valid, dxr + (i + 1) * B, 0.f);
            }
            if (needS) {
              float sum[B] = {};
              for (int64_t i = 0; i < n; ++i)
                for (int64_t j = 0; j < B; ++j)
                  sum[j] += gr[i * B + j] * dS(xr[i * B + j], s[j]);
              float *d = ds.data() + runs.item(t) * form.channels +
                         runs.firstChannel(t);
              std::copy(sum, sum + valid, d);
            }
          });
    }
  };
  visitBinaryOp(op, [&](auto kind) {
    if (form.scaleFirst)
      loop(kind, std::true_type{});
    else
      loop(kind, std::false_type{});
  });
  if (needX)
    grads[xi] = std::move(dx);
  if (needS) {
    Tensor d(DType::F32, sIn.shape());
    float *pd = d.data<float>();
    int64_t perItem = form.perItem ? form.items : 1;
    std::fill(pd, pd + d.numElements(), 0.f);
    for (int64_t n = 0; n < form.items; ++n)
      for (int64_t c = 0; c < form.channels; ++c)
        pd[(n % perItem) * form.channels + c] += ds[n * form.channels + c];
    grads[1 - xi] = std::move(d);
  }
}
