//===- ConcatKernel.cpp - ONNX Concat on oneDNN concat --------------------===//
//
// Inputs that share a layout keep it, and oneDNN chooses the output's
// (blocked when the inputs are). When their layouts differ (say a Winograd
// convolution's blocked output beside a 1x1 convolution's channels-last
// one), oneDNN falls back to a slow reference concat; so every input is then
// reordered to the layout of the largest one first. Empty inputs contribute
// nothing and are skipped.
//
// oneDNN's concat of channel-blocked tensors along the channels ran 4-5x
// slower than the same concat channels-last (SqueezeNet's Fire modules).
// But in a plain (N, C, ...) or blocked (N, C/b, ..., b) layout with every
// C a multiple of b, one batch item of each input is one contiguous run of
// memory and the output is those runs one after the other: such concats
// are copies of whole runs instead, also after the reorders that unify the
// layouts (GoogLeNet's nine concats at batch 1: 0.35 ms -> 0.16 ms).
//
// At batch 1 each input is then one run at a fixed place in the output, so
// the kernel offers those places to the inputs' producers for the next run
// (joinDestinations): a Conv or pool computes its result there and the copy
// goes (GoogLeNet at batch 1: 4% faster, SqueezeNet 3.5%).
//
// A batch norm fused in (fuseConcatBatchNorms: attributes `scale`, `shift`
// and an optional Relu `activation`) is applied as the runs are copied,
// and in place on the runs computed in the output; in the other layouts
// after oneDNN's concat, on the output made plain.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"
#include "ParallelSums.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// A per-channel y = x * scale + shift, then Relu when `relu`.
struct ChannelAffine {
  std::vector<float> scale, shift;
  bool relu = false;
  bool empty() const { return scale.empty(); }
};

/// `affine` applied to channels [c0, c0 + channels) of one batch item, `x`
/// to `y` (which may be `x`), in a layout with channel block `block` (1:
/// plain) and `spatial` positions per channel.
HETERPS_VECTOR_CLONES void applyAffine(const float *x, float *y, int64_t c0,
                                       int64_t channels, int64_t spatial,
                                       int64_t block,
                                       const ChannelAffine &affine) {
  const float *scale = affine.scale.data() + c0,
              *shift = affine.shift.data() + c0;
  float low = affine.relu ? 0.f : -INFINITY;
  if (block == 1) {
    for (int64_t c = 0; c < channels; ++c) {
      float a = scale[c], b = shift[c];
      const float *xc = x + c * spatial;
      float *yc = y + c * spatial;
#pragma omp simd
      for (int64_t p = 0; p < spatial; ++p)
        yc[p] = std::max(xc[p] * a + b, low);
    }
    return;
  }
  for (int64_t j = 0; j < channels / block; ++j)
    for (int64_t p = 0; p < spatial; ++p) {
      const float *xs = x + (j * spatial + p) * block;
      float *ys = y + (j * spatial + p) * block;
      const float *a = scale + j * block, *b = shift + j * block;
#pragma omp simd
      for (int64_t lane = 0; lane < block; ++lane)
        ys[lane] = std::max(xs[lane] * a[lane] + b[lane], low);
    }
}

struct ConcatEntry {
  dnnl::concat primitive;
  /// Indices of the non-empty inputs, in order, and the layout each is
  /// concatenated in.
  std::vector<int> used;
  std::vector<memory::desc> srcMds;
  memory::desc dstMd;
  Shape outShape;
  size_t numInputs = 0;
  /// Bytes per batch item of each used input when the concat is a copy of
  /// contiguous runs (see above); empty otherwise.
  std::vector<size_t> runBytes;
};

class ConcatKernel : public Kernel {
public:
  ConcatKernel(CPUContextPtr ctx, int64_t axis, ChannelAffine affine)
      : cache(std::move(ctx)), axis(axis), affine(std::move(affine)) {}
  bool acceptsLayouts() const override { return true; }
  bool joinsInputs() const override { return true; }

  std::optional<JoinDestinations> joinDestinations() override {
    if (!last || last->runBytes.empty() || last->outShape[0] != 1)
      return std::nullopt;
    JoinDestinations d;
    d.output = allocate(last->dstMd, last->outShape, cache.context());
    d.inputs.resize(last->numInputs);
    size_t offset = 0;
    for (size_t k = 0; k < last->used.size(); ++k) {
      const memory::desc &md = last->srcMds[k];
      memory::dims dims = md.dims();
      Shape shape(dims.begin(), dims.end());
      d.inputs[last->used[k]] =
          d.output.part(offset, shape, layoutOf(md, shape, cache.context()));
      offset += last->runBytes[k];
    }
    return d;
  }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (inputs[0]->dtype() != DType::F32) {
      llvm::Expected<Tensor> y = concatBytes(inputs);
      if (!y)
        return y.takeError();
      outputs[0] = std::move(*y);
      return llvm::Error::success();
    }
    if (llvm::Error e = checkF32(inputs))
      return e;
    const CPUContextPtr &ctx = cache.context();
    return guardDnnl([&]() -> llvm::Error {
      auto entry = cache.get(shapeKey(inputs), [&] { return make(inputs); });
      if (!entry)
        return entry.takeError();
      ConcatEntry &e = **entry;
      last = &e;
      Tensor y = e.used.empty()
                     ? Tensor(DType::F32, e.outShape)
                     : destination(outputs[0], e.dstMd, e.outShape, ctx);
      std::vector<Tensor> srcs;
      for (size_t k = 0; k < e.used.size(); ++k)
        srcs.push_back(reorderTo(*inputs[e.used[k]], e.srcMds[k], ctx));
      if (!affine.empty() &&
          (e.outShape.size() < 3 ||
           e.outShape[1] != static_cast<int64_t>(affine.scale.size())))
        return kernelError(
            "Concat with a batch norm of " + llvm::Twine(affine.scale.size()) +
            " channels cannot output " + shapeToString(e.outShape));
      if (!e.runBytes.empty()) {
        ctx->stats.joinedInPlace += copyRuns(srcs, e, y, affine);
      } else if (!e.used.empty()) {
        std::unordered_map<int, memory> args = {
            {DNNL_ARG_DST, memoryOf(y, *ctx)}};
        for (size_t k = 0; k < srcs.size(); ++k)
          args[DNNL_ARG_MULTIPLE_SRC + k] = memoryOf(srcs[k], *ctx);
        e.primitive.execute(ctx->stream, args);
        ctx->stream.wait();
        if (!affine.empty()) {
          y = plainOf(y, ctx);
          int64_t spatial =
              numElements(llvm::ArrayRef(e.outShape).drop_front(2));
          float *p = y.data<float>();
          int64_t item = e.outShape[1] * spatial;
#pragma omp parallel for schedule(static)
          for (int64_t n = 0; n < e.outShape[0]; ++n)
            applyAffine(p + n * item, p + n * item, 0, e.outShape[1], spatial,
                        1, affine);
        }
      }
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  /// Concat of plain i64 or bool tensors (shapes computed at run time): a
  /// copy of each input's run per index of the leading dimensions.
  llvm::Expected<Tensor> concatBytes(llvm::ArrayRef<const Tensor *> inputs) {
    const Tensor &first = *inputs[0];
    llvm::Expected<int64_t> a = normalizeAxis(axis, first.rank());
    if (!a)
      return a.takeError();
    Shape shape = first.shape();
    shape[*a] = 0;
    for (const Tensor *t : inputs) {
      bool fits = t->dtype() == first.dtype() && t->rank() == first.rank();
      for (int64_t d = 0; fits && d < t->rank(); ++d)
        fits = d == *a || t->dim(d) == first.dim(d);
      if (!fits)
        return kernelError("cannot concatenate " + t->typeString() + " to " +
                           first.typeString() + " along axis " +
                           llvm::Twine(*a));
      shape[*a] += t->dim(*a);
    }
    Tensor y(first.dtype(), shape);
    int64_t outer = numElements(llvm::ArrayRef(shape).take_front(*a));
    size_t inner = numElements(llvm::ArrayRef(shape).drop_front(*a + 1)) *
                   dtypeSize(first.dtype());
    auto *out = static_cast<char *>(y.rawData());
    for (int64_t o = 0; o < outer; ++o)
      for (const Tensor *t : inputs) {
        size_t run = t->dim(*a) * inner;
        std::memcpy(out, static_cast<const char *>(t->rawData()) + o * run,
                    run);
        out += run;
      }
    return y;
  }

  /// The concat as copies of each used input's contiguous run per batch
  /// item, with `affine` applied when there is one; `srcs` are the used
  /// inputs in their layouts. Returns how many were in place already
  /// (computed in the output, see joinDestinations), which are not copied
  /// (but normalised in place).
  static int copyRuns(llvm::ArrayRef<Tensor> srcs, const ConcatEntry &e,
                      Tensor &y, const ChannelAffine &affine) {
    int64_t batch = y.dim(0);
    int64_t numInputs = static_cast<int64_t>(e.used.size());
    std::vector<size_t> offset(numInputs + 1, 0);
    std::vector<int64_t> firstChannel(numInputs + 1, 0);
    for (int64_t k = 0; k < numInputs; ++k) {
      offset[k + 1] = offset[k] + e.runBytes[k];
      firstChannel[k + 1] = firstChannel[k] + srcs[k].dim(1);
    }
    auto *out = static_cast<char *>(y.rawData());
    std::vector<char> inPlace(numInputs, false);
    int numInPlace = 0;
    if (batch == 1)
      for (int64_t k = 0; k < numInputs; ++k)
        numInPlace += inPlace[k] = srcs[k].rawData() == out + offset[k];
    int64_t spatial = numElements(llvm::ArrayRef(e.outShape).drop_front(2));
    int64_t block =
        affine.empty() ? 1 : channelBlockOf(e.dstMd, e.outShape).value_or(1);
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t k = 0; k < numInputs; ++k) {
        char *to = out + n * offset[numInputs] + offset[k];
        const char *from = inPlace[k]
                               ? to
                               : static_cast<const char *>(srcs[k].rawData()) +
                                     n * e.runBytes[k];
        if (!affine.empty())
          applyAffine(reinterpret_cast<const float *>(from),
                      reinterpret_cast<float *>(to), firstChannel[k],
                      srcs[k].dim(1), spatial, block, affine);
        else if (!inPlace[k])
          std::memcpy(to, from, e.runBytes[k]);
      }
    return numInPlace;
  }

  /// Bytes per batch item of each input when, in the layouts `mds` (inputs
  /// in others are reordered first), the concat along `axis` is a copy of
  /// contiguous runs (channelBlockOf); empty otherwise.
  static std::vector<size_t> runBytesOf(llvm::ArrayRef<const Tensor *> inputs,
                                        const std::vector<int> &used,
                                        const std::vector<memory::desc> &mds,
                                        int64_t axis) {
    if (axis != 1 || used.empty())
      return {};
    std::optional<int64_t> block =
        channelBlockOf(mds[0], inputs[used[0]]->shape());
    std::vector<size_t> runs;
    for (size_t k = 0; k < used.size(); ++k) {
      const Tensor &t = *inputs[used[k]];
      if (!block || channelBlockOf(mds[k], t.shape()) != block ||
          t.dim(1) % *block != 0)
        return {};
      runs.push_back(mds[k].get_size() / t.dim(0));
    }
    return runs;
  }

  llvm::Expected<ConcatEntry> make(llvm::ArrayRef<const Tensor *> inputs) {
    const Tensor &first = *inputs[0];
    auto a = normalizeAxis(axis, first.rank());
    if (!a)
      return a.takeError();
    ConcatEntry entry;
    entry.numInputs = inputs.size();
    entry.outShape = first.shape();
    entry.outShape[*a] = 0;
    std::vector<memory::desc> mds;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor &t = *inputs[i];
      bool compatible = t.rank() == first.rank();
      for (int64_t d = 0; compatible && d < t.rank(); ++d)
        compatible = d == *a || t.dim(d) == first.dim(d);
      if (!compatible)
        return kernelError("input " + llvm::Twine(i) + " is " + t.typeString() +
                           ", which does not concatenate "
                           "with " +
                           first.typeString() + " along axis " +
                           llvm::Twine(*a));
      entry.outShape[*a] += t.dim(*a);
      if (t.numElements() == 0)
        continue;
      entry.used.push_back(static_cast<int>(i));
      mds.push_back(descOf(t));
    }
    if (!mds.empty()) {
      unifyLayouts(inputs, entry.used, mds);
      entry.srcMds = mds;
      entry.runBytes = runBytesOf(inputs, entry.used, mds, *a);
      if (!entry.runBytes.empty()) {
        entry.dstMd =
            memory::desc(toDims(entry.outShape), memory::data_type::f32,
                         *tagOf(mds[0], *inputs[entry.used[0]]));
      } else {
        dnnl::concat::primitive_desc pd(static_cast<int>(*a), mds,
                                        cache.context()->engine);
        entry.primitive = dnnl::concat(pd);
        entry.dstMd = pd.dst_desc();
      }
    }
    return entry;
  }

  /// When the layouts in `mds` differ, gives every input the layout of the
  /// largest one, if it is a format tag that applies to all.
  static void unifyLayouts(llvm::ArrayRef<const Tensor *> inputs,
                           const std::vector<int> &used,
                           std::vector<memory::desc> &mds) {
    size_t largest = 0;
    bool same = true;
    for (size_t k = 1; k < mds.size(); ++k) {
      same &=
          tagOf(mds[k], *inputs[used[k]]) == tagOf(mds[0], *inputs[used[0]]);
      if (inputs[used[k]]->numElements() > inputs[used[largest]]->numElements())
        largest = k;
    }
    std::optional<Tag> tag = tagOf(mds[largest], *inputs[used[largest]]);
    if (same || !tag)
      return;
    for (size_t k = 0; k < mds.size(); ++k)
      mds[k] = memory::desc(toDims(inputs[used[k]]->shape()),
                            memory::data_type::f32, *tag);
  }

  /// The format tag that gives `md` for `t`'s dimensions, among the plain,
  /// channels-last and channel-blocked ones.
  static std::optional<Tag> tagOf(const memory::desc &md, const Tensor &t) {
    static const std::vector<Tag> byRank[] = {
        {},
        {Tag::a},
        {Tag::ab, Tag::ba},
        {Tag::abc, Tag::acb, Tag::aBc16b, Tag::aBc8b},
        {Tag::abcd, Tag::acdb, Tag::aBcd16b, Tag::aBcd8b},
        {Tag::abcde, Tag::acdeb, Tag::aBcde16b, Tag::aBcde8b}};
    if (t.rank() < 1 || t.rank() > 5)
      return std::nullopt;
    for (Tag tag : byRank[t.rank()])
      if (memory::desc(toDims(t.shape()), memory::data_type::f32, tag) == md)
        return tag;
    return std::nullopt;
  }

  PrimitiveCache<ConcatEntry> cache;
  int64_t axis;
  ChannelAffine affine;
  /// The entry of the last run, for joinDestinations.
  ConcatEntry *last = nullptr;
};

/// ConcatShuffle(a, b): the channels of a and b ([N, C/2, ...] each)
/// interleaved, a's first: ShuffleNet's concat and two-group channel
/// shuffle (fuseChannelShuffles) as one pass, where the exported graph
/// concatenates, makes the result plain for the 5-D Reshape, and
/// transposes it. With two outputs, the first and the second half of those
/// channels (fuseShuffleChunks: the chunk the next block splits them into),
/// each written directly. Channels-last inputs (the convolutions' choice
/// in ShuffleNet) give channels-last outputs, each position's two channel
/// rows interleaved, so that neither side of the shuffle reorders; other
/// layouts go through plain ones.
class ConcatShuffleKernel : public Kernel {
public:
  explicit ConcatShuffleKernel(CPUContextPtr ctx) : ctx(std::move(ctx)) {}
  bool acceptsLayouts() const override { return true; }

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &a = *inputs[0], &b = *inputs[1];
    int64_t parts = static_cast<int64_t>(outputs.size());
    if (a.shape() != b.shape() || a.rank() < 2)
      return kernelError("ConcatShuffle interleaves two tensors of one shape "
                         "of rank 2 or more, not " +
                         a.typeString() + " and " + b.typeString());
    if (a.dim(1) % parts)
      return kernelError("ConcatShuffle of two " + a.typeString() +
                         " cannot give its output as two halves of whole "
                         "channels of each");
    // Each output interleaves `width` channels of each input, from
    // channel `width * part` on.
    int64_t batch = a.dim(0), half = a.dim(1), width = half / parts;
    Shape shape = a.shape();
    shape[1] = 2 * width;
    if (a.numElements() > 0 && isChannelsLast(a) && isChannelsLast(b)) {
      for (int64_t part = 0; part < parts; ++part) {
        Tensor y = allocate(channelsLastDesc(shape), shape, ctx);
        interleaveRows(a.data<float>() + width * part,
                       b.data<float>() + width * part, y.data<float>(),
                       a.numElements() / half, width, half);
        outputs[part] = std::move(y);
      }
      return llvm::Error::success();
    }
    Tensor pa = plainOf(a, ctx), pb = plainOf(b, ctx);
    size_t run = numElements(llvm::ArrayRef(shape).drop_front(2));
    const float *fa = pa.data<float>(), *fb = pb.data<float>();
    for (int64_t part = 0; part < parts; ++part) {
      Tensor y(DType::F32, shape);
      float *py = y.data<float>();
#pragma omp parallel for collapse(2) schedule(static)                          \
    num_threads(threadsFor(y.numElements()))
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t c = 0; c < width; ++c) {
          size_t from = (n * half + width * part + c) * run,
                 to = (n * 2 * width + 2 * c) * run;
          std::memcpy(py + to, fa + from, run * sizeof(float));
          std::memcpy(py + to + run, fb + from, run * sizeof(float));
        }
      outputs[part] = std::move(y);
    }
    return llvm::Error::success();
  }

private:
  /// y's row r is `width` floats of a's row r and of b's interleaved (a
  /// first); rows `stride` floats apart in a and b.
  static void interleaveRows(const float *a, const float *b, float *y,
                             int64_t rows, int64_t width, int64_t stride) {
#pragma omp parallel for schedule(static)                                      \
    num_threads(threadsFor(rows *width * 2))
    for (int64_t r = 0; r < rows; ++r) {
      const float *ra = a + r * stride, *rb = b + r * stride;
      float *ry = y + r * width * 2;
      for (int64_t c = 0; c < width; ++c) {
        ry[2 * c] = ra[c];
        ry[2 * c + 1] = rb[c];
      }
    }
  }

  CPUContextPtr ctx;
};

} // namespace

void cpu::registerConcatKernel(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "ConcatShuffle",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        // One output, or its two halves (fuseShuffleChunks).
        if (llvm::Error e =
                info.checkArity(2, 2, info.numOutputs() == 2 ? 2 : 1))
          return e;
        return std::make_unique<ConcatShuffleKernel>(ctx);
      });
  registry.add(
      "Concat",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(1, std::max(1, info.numInputs())))
          return e;
        for (int i = 0; i < info.numInputs(); ++i)
          if (!info.hasInput(i))
            return kernelError("input " + llvm::Twine(i) + " is required");
        auto axis = info.attrs.getInt("axis");
        if (!axis)
          return axis.takeError();
        ChannelAffine affine;
        auto scale = info.attrs.getFloats("scale", std::vector<float>());
        auto shift = info.attrs.getFloats("shift", std::vector<float>());
        auto activation = info.attrs.getString("activation", std::string());
        if (!scale)
          return scale.takeError();
        if (!shift)
          return shift.takeError();
        if (!activation)
          return activation.takeError();
        if (scale->size() != shift->size() ||
            (!activation->empty() && *activation != "Relu") ||
            (!scale->empty() && *axis != 1))
          return kernelError("Concat: a fused batch norm needs as many "
                             "shifts as scales, axis 1 and no activation "
                             "but Relu");
        affine.scale = std::move(*scale);
        affine.shift = std::move(*shift);
        affine.relu = !activation->empty();
        return std::make_unique<ConcatKernel>(ctx, *axis, std::move(affine));
      });
}
