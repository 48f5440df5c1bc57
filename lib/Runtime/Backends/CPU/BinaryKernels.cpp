//===- BinaryKernels.cpp - element-wise binary ops with broadcasting ------===//
//
// Add, Sub, Mul, Div, Max and Min on oneDNN's binary primitive. Same-shape
// operands stay in their layout (the second is reordered to the first's);
// with broadcasting the full-shape operand comes first (oneDNN broadcasts
// only its second source; commutative ops swap) and the other is plain.
// The rest (Pow, PRelu and broadcasts of both operands) is a loop over plain
// tensors.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

using BinaryFn = float (*)(float, float);

/// out = fn(a, b) with numpy broadcasting; a, b and out are plain.
static void broadcastLoop(const Tensor &a, const Tensor &b, Tensor &out,
                          BinaryFn fn) {
  int64_t rank = out.rank();
  // Element strides of a and b over out's index space (0 on broadcast axes).
  std::vector<int64_t> sa(rank, 0), sb(rank, 0);
  auto strides = [&](const Tensor &t, std::vector<int64_t> &s) {
    int64_t stride = 1;
    for (int64_t i = t.rank() - 1, j = rank - 1; i >= 0; --i, --j) {
      s[j] = t.dim(i) == 1 ? 0 : stride;
      stride *= t.dim(i);
    }
  };
  strides(a, sa);
  strides(b, sb);
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float *po = out.data<float>();
  int64_t n = out.numElements();
  if (n == 0)
    return;
  std::vector<int64_t> index(rank, 0);
  int64_t ia = 0, ib = 0;
  for (int64_t k = 0; k < n; ++k) {
    po[k] = fn(pa[ia], pb[ib]);
    for (int64_t d = rank - 1; d >= 0; --d) {
      ia += sa[d];
      ib += sb[d];
      if (++index[d] < out.dim(d))
        break;
      ia -= sa[d] * out.dim(d);
      ib -= sb[d] * out.dim(d);
      index[d] = 0;
    }
  }
}

/// `shape` with leading 1s up to `rank`.
static Shape padRank(llvm::ArrayRef<int64_t> shape, size_t rank) {
  Shape out(rank - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

namespace {

struct BinaryEntry {
  dnnl::binary primitive;
  /// Swap the operands (the second has the full shape).
  bool swap = false;
  /// Keep the first operand's layout (same shapes); else all plain.
  bool keepLayout = false;
  Shape outShape;
  memory::desc src0Md, src1Md, dstMd;
};

class BinaryKernel : public Kernel {
public:
  BinaryKernel(CPUContextPtr ctx, dnnl::algorithm algorithm, bool commutative,
               BinaryFn fallback)
      : cache(std::move(ctx)), algorithm(algorithm), commutative(commutative),
        fallback(fallback) {}
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  /// The entry, or an entry-less answer (null primitive) meaning "loop".
  llvm::Expected<BinaryEntry> make(const Tensor &a, const Tensor &b);

  PrimitiveCache<BinaryEntry> cache;
  dnnl::algorithm algorithm;
  bool commutative;
  BinaryFn fallback;
};

/// Pow, PRelu: loops only.
class LoopBinaryKernel : public Kernel {
public:
  explicit LoopBinaryKernel(BinaryFn fn) : fn(fn) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    auto shape = broadcastShapes(inputs[0]->shape(), inputs[1]->shape());
    if (!shape)
      return shape.takeError();
    Tensor out(DType::F32, *shape);
    broadcastLoop(*inputs[0], *inputs[1], out, fn);
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  BinaryFn fn;
};

} // namespace

llvm::Expected<BinaryEntry> BinaryKernel::make(const Tensor &a,
                                               const Tensor &b) {
  auto shape = broadcastShapes(a.shape(), b.shape());
  if (!shape)
    return shape.takeError();
  BinaryEntry entry;
  entry.outShape = *shape;
  const dnnl::engine &engine = cache.context()->engine;
  if (shape->empty() || numElements(*shape) == 0)
    return entry; // oneDNN has no 0-d or empty tensors: loop.
  if (a.shape() == b.shape()) {
    entry.keepLayout = true;
    memory::desc md = a.isPlain() ? descOf(b) : descOf(a);
    entry.src0Md = entry.src1Md = entry.dstMd = md;
  } else {
    size_t rank = shape->size();
    Shape pa = padRank(a.shape(), rank), pb = padRank(b.shape(), rank);
    if (pa != *shape && !(commutative && pb == *shape))
      return entry; // Both operands broadcast: loop.
    entry.swap = pa != *shape;
    if (entry.swap)
      std::swap(pa, pb);
    entry.src0Md = entry.dstMd = plainDesc(pa);
    entry.src1Md = plainDesc(pb);
  }
  dnnl::binary::desc d(algorithm, entry.src0Md, entry.src1Md, entry.dstMd);
  entry.primitive = dnnl::binary(dnnl::binary::primitive_desc(d, engine));
  return entry;
}

llvm::Error BinaryKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                              llvm::MutableArrayRef<Tensor> outputs) {
  if (llvm::Error e = checkF32(inputs))
    return e;
  const CPUContextPtr &ctx = cache.context();
  return guardDnnl([&]() -> llvm::Error {
    const Tensor &a = *inputs[0], &b = *inputs[1];
    auto entry = cache.get(shapeKey(inputs), [&] { return make(a, b); });
    if (!entry)
      return entry.takeError();
    BinaryEntry &e = **entry;
    if (!e.primitive) {
      Tensor out(DType::F32, e.outShape);
      broadcastLoop(plainOf(a, ctx), plainOf(b, ctx), out, fallback);
      outputs[0] = std::move(out);
      return llvm::Error::success();
    }
    Tensor src0, src1;
    if (e.keepLayout) {
      src0 = reorderTo(a, e.src0Md, ctx);
      src1 = reorderTo(b, e.src1Md, ctx);
    } else {
      src0 = plainOf(e.swap ? b : a, ctx);
      src1 = plainOf(e.swap ? a : b, ctx);
    }
    Tensor dst = allocate(e.dstMd, e.outShape, ctx);
    e.primitive.execute(
        ctx->stream,
        {{DNNL_ARG_SRC_0, memory(e.src0Md, ctx->engine, src0.rawData())},
         {DNNL_ARG_SRC_1, memory(e.src1Md, ctx->engine, src1.rawData())},
         {DNNL_ARG_DST, memory(e.dstMd, ctx->engine, dst.rawData())}});
    ctx->stream.wait();
    outputs[0] = std::move(dst);
    return llvm::Error::success();
  });
}

void cpu::registerBinaryKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  struct Op {
    const char *type;
    dnnl::algorithm algorithm;
    bool commutative;
    BinaryFn fn;
  };
  static const Op ops[] = {
      {"Add", dnnl::algorithm::binary_add, true,
       [](float x, float y) { return x + y; }},
      {"Sub", dnnl::algorithm::binary_sub, false,
       [](float x, float y) { return x - y; }},
      {"Mul", dnnl::algorithm::binary_mul, true,
       [](float x, float y) { return x * y; }},
      {"Div", dnnl::algorithm::binary_div, false,
       [](float x, float y) { return x / y; }},
      {"Max", dnnl::algorithm::binary_max, true,
       [](float x, float y) { return std::max(x, y); }},
      {"Min", dnnl::algorithm::binary_min, true,
       [](float x, float y) { return std::min(x, y); }},
  };
  for (const Op &op : ops)
    registry.add(op.type,
                 [ctx, op](const OpInfo &info)
                     -> llvm::Expected<std::unique_ptr<Kernel>> {
                   if (llvm::Error e = info.checkArity(2, 2))
                     return e;
                   return std::make_unique<BinaryKernel>(ctx, op.algorithm,
                                                         op.commutative, op.fn);
                 });
  registry.add(
      "Pow", [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 2))
          return e;
        return std::make_unique<LoopBinaryKernel>(
            [](float x, float y) { return std::pow(x, y); });
      });
  registry.add(
      "PRelu",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 2))
          return e;
        return std::make_unique<LoopBinaryKernel>(
            [](float x, float slope) { return x < 0 ? slope * x : x; });
      });
}
