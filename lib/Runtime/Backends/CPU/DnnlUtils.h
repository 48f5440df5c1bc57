//===- DnnlUtils.h - shared pieces of the oneDNN kernels --------*- C++ -*-===//
//
// Internal to the CPU backend: the engine and stream, blocked layouts attached
// to tensors, tensor <-> dnnl::memory, reorders, the per-kernel primitive
// cache and conversion of dnnl::error into llvm::Error.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_CPU_DNNLUTILS_H
#define HETERPS_LIB_RUNTIME_BACKENDS_CPU_DNNLUTILS_H

#include "heterps/Runtime/Backends/CPU/CPUBackend.h"
#include "heterps/Runtime/OpGeometry.h"

#include "llvm/ADT/SmallVector.h"

#include "oneapi/dnnl/dnnl.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

namespace heterps::runtime::cpu {

using dnnl::memory;
using Tag = dnnl::memory::format_tag;

/// State shared by the kernels of one CPU backend.
struct CPUContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  PrimitiveCacheStats stats;
  /// BackendOptions::autotune.
  bool autotune = true;
  /// BackendOptions::propagateNaN.
  bool propagateNaN = false;
  /// With autotuning, a Conv times only the candidates whose names
  /// (ConvKernel.cpp) this accepts; empty: all. For tests of candidates
  /// that timing would not pick on the machine they run on.
  std::function<bool(llvm::StringRef)> acceptConvCandidate;
  /// Scratch memory of the primitives (addScratchpad), shared by all since
  /// a backend runs one kernel at a time; grown to the largest need.
  std::shared_ptr<uint8_t> scratchpad;
  size_t scratchpadBytes = 0;
};
using CPUContextPtr = std::shared_ptr<CPUContext>;

/// A oneDNN memory format other than plain row-major.
class DnnlLayout : public Layout {
public:
  DnnlLayout(memory::desc md, CPUContextPtr context)
      : md(std::move(md)), context(std::move(context)) {}
  size_t bytes() const override { return md.get_size(); }
  llvm::Expected<Tensor> toPlain(const Tensor &t) const override;
  llvm::Expected<Tensor> fromPlain(const Tensor &plain) const override;
  bool equals(const Layout &other) const override;
  std::string describe() const override;

  const memory::desc md;

private:
  CPUContextPtr context;
};

memory::dims toDims(llvm::ArrayRef<int64_t> shape);
/// The plain row-major descriptor of `shape`.
memory::desc plainDesc(llvm::ArrayRef<int64_t> shape,
                       memory::data_type type = memory::data_type::f32);
/// The descriptor of `t`'s memory: its layout's, or plain.
memory::desc descOf(const Tensor &t);
/// A dnnl::memory over `t`'s buffer (no copy).
memory memoryOf(const Tensor &t, const CPUContext &ctx);

/// Primitives whose attributes come from here take their scratch memory from
/// the caller (addScratchpad) instead of oneDNN's own, which is local to
/// the thread that created the primitive: run on another thread (pipeline
/// stage workers), Winograd convolutions read freed memory and crashed.
void useCallerScratchpad(dnnl::primitive_attr &attr);
/// Adds the context's scratch memory, grown to `md`'s size if need be, to
/// `args`.
void addScratchpad(const memory::desc &md, CPUContext &ctx,
                   std::unordered_map<int, memory> &args);

/// A primitive's arguments kept from run to run: each dnnl::memory is made
/// once and pointed at the next run's buffer, since making one allocates
/// inside oneDNN (posix_memalign), serial work the other threads wait
/// through (MobileNets at batch 1 3% faster). oneDNN 2.6 leaves a padded
/// layout's padding as it is when an object is pointed elsewhere (its
/// documentation allows zeroing it, which would cost time, not results:
/// the padding of every tensor here is zero).
class PrimitiveArgs {
public:
  PrimitiveArgs() = default;
  // The kept objects refer to descriptors of the entry they were set from:
  // an entry moved elsewhere starts afresh.
  PrimitiveArgs(PrimitiveArgs &&) noexcept {}
  PrimitiveArgs &operator=(PrimitiveArgs &&) noexcept {
    args.clear();
    kept.clear();
    return *this;
  }
  /// Argument `arg` is `data`, laid out as `md`. The memory object is kept
  /// while the same `md` object (an entry's, not a temporary) comes back:
  /// comparing descriptors cost as much as making one.
  void set(int arg, const memory::desc &md, const void *data,
           const dnnl::engine &engine);
  /// The context's scratch memory, grown to `md`'s size if need be.
  void setScratchpad(const memory::desc &md, CPUContext &ctx);
  const std::unordered_map<int, memory> &get() const { return args; }

private:
  std::unordered_map<int, memory> args;
  /// The descriptor each argument's memory object was made with (a few
  /// arguments: a linear search beats hashing).
  llvm::SmallVector<std::pair<int, const memory::desc *>, 8> kept;
};

/// The layout of an f32 tensor of `shape` in `md`: null when `md` is the
/// plain descriptor of `shape`, otherwise a DnnlLayout.
std::shared_ptr<const Layout> layoutOf(const memory::desc &md,
                                       llvm::ArrayRef<int64_t> shape,
                                       const CPUContextPtr &ctx);
/// A plain 2-D `md` with its leading stride padded by 64 bytes, when that
/// stride is a multiple of 1 KiB; else nothing. oneDNN's sgemm packs B by
/// reading a few elements from each of many rows: rows a multiple of
/// 4 KiB apart fall in one L1 set and evict each other. On an AVX2 host,
/// ViT's [768, 3072] weights (12 KiB rows) ran at 72 GFLOP/s, padded at
/// 143; [768, 512] and [2048, 1000]^T gained 30-40%.
std::optional<memory::desc> paddedRows(const memory::desc &md);

/// The channel block of an f32 tensor of `shape` (rank >= 2) in `md`: 1
/// when plain, 8 or 16 when channel-blocked (N, C/b, ..., b); nothing for
/// other layouts. In these, one batch item is one contiguous run of memory,
/// and so is a range of its channels that starts and ends on a block.
std::optional<int64_t> channelBlockOf(const memory::desc &md,
                                      llvm::ArrayRef<int64_t> shape);
/// The channels-last descriptor (N, spatial..., C) of an f32 tensor of
/// `shape`, rank 3 to 5.
memory::desc channelsLastDesc(llvm::ArrayRef<int64_t> shape);
/// Whether `t` is f32 of rank 3 to 5 in channelsLastDesc.
bool isChannelsLast(const Tensor &t);
/// A new f32 tensor of `shape` in `md` (layoutOf).
Tensor allocate(const memory::desc &md, Shape shape, const CPUContextPtr &ctx);
/// Where a kernel writes an output of `shape` in `md`: `offered` (see
/// Kernel::run) when it has that shape and layout, else a new tensor.
Tensor destination(const Tensor &offered, const memory::desc &md,
                   const Shape &shape, const CPUContextPtr &ctx);
/// `t` in format `md`: `t` itself if it is already, else a reordered copy.
Tensor reorderTo(const Tensor &t, const memory::desc &md,
                 const CPUContextPtr &ctx);
/// `t` as plain; a reorder when it has a layout.
Tensor plainOf(const Tensor &t, const CPUContextPtr &ctx);

/// A cache key: each input's type, shape and layout.
std::string shapeKey(llvm::ArrayRef<const Tensor *> inputs);

/// Converts a dnnl::error (or std::bad_alloc) thrown by `body` into an
/// llvm::Error; `body` returns llvm::Error.
template <typename Fn> llvm::Error guardDnnl(Fn &&body) {
  try {
    return body();
  } catch (const dnnl::error &e) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   llvm::Twine("oneDNN: ") + e.what());
  } catch (const std::bad_alloc &) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "out of memory");
  }
}

llvm::Error kernelError(const llvm::Twine &what);
/// An error unless every given input is f32.
llvm::Error checkF32(llvm::ArrayRef<const Tensor *> inputs);

/// Per-kernel cache of primitives (and whatever goes with them), keyed by the
/// input shapes; counts creations and hits in the backend's stats.
template <typename Entry> class PrimitiveCache {
public:
  explicit PrimitiveCache(CPUContextPtr ctx) : ctx(std::move(ctx)) {}

  /// The entry for `key`, made by `make` (returning llvm::Expected<Entry>) on
  /// the first request.
  template <typename Make>
  llvm::Expected<Entry *> get(const std::string &key, Make &&make) {
    auto it = entries.find(key);
    if (it != entries.end()) {
      ++ctx->stats.hits;
      return &it->second;
    }
    llvm::Expected<Entry> entry = make();
    if (!entry)
      return entry.takeError();
    ++ctx->stats.created;
    return &entries.emplace(key, std::move(*entry)).first->second;
  }

  const CPUContextPtr &context() const { return ctx; }

private:
  CPUContextPtr ctx;
  std::map<std::string, Entry> entries;
};

/// The fastest of a few timed runs of `body` after a warm-up run, in
/// seconds, for autotuning: up to five runs, fewer once they took 20 ms in
/// all. A single run of a small kernel varied enough to pick the wrong
/// candidate.
template <typename Fn> double bestSeconds(Fn &&body) {
  body();
  double best = 0, total = 0;
  for (int i = 0; i < 5 && total < 0.02; ++i) {
    auto start = std::chrono::steady_clock::now();
    body();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    best = i == 0 ? seconds : std::min(best, seconds);
    total += seconds;
  }
  return best;
}

/// The channel block of this host's fastest oneDNN kernels: 16 with
/// AVX-512, else 8.
int64_t nativeChannelBlock();

/// Seconds to reorder `x` into `md` (0 when it is in `md` already): part of
/// an autotuning candidate's cost when the run would pay it every time.
double reorderSeconds(const Tensor &x, const memory::desc &md,
                      const CPUContextPtr &ctx);

/// Numpy broadcast of two shapes, or an error naming both.
llvm::Expected<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a,
                                      llvm::ArrayRef<int64_t> b);

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_BACKENDS_CPU_DNNLUTILS_H
