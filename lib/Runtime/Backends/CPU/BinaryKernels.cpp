//===- BinaryKernels.cpp - element-wise binary ops with broadcasting ------===//
//
// Add, Sub, Mul, Div, Max and Min of same-shape operands on oneDNN's binary
// primitive, in their layout (the second is reordered to the first's).
// Broadcasts, and Pow and PRelu, are a loop of our own over plain tensors
// (broadcastLoop), parallel and vectorised.
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

/// The element-wise functions, inlined into the loops below.
enum class BinaryOp { Add, Sub, Mul, Div, Max, Min, Pow, PRelu };

template <BinaryOp Op> static inline float apply(float x, float y) {
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

/// out = op(a, b) with numpy broadcasting over plain tensors, at memory
/// speed: axes along which both operands step alike are merged (a bias over
/// the last axis of [N, H, W, C] becomes rows of C), then each row is one
/// loop the compiler vectorises, rows in parallel.
template <BinaryOp Op>
static void broadcastLoop(const Tensor &a, const Tensor &b, Tensor &out) {
  int64_t rank = out.rank(), n = out.numElements();
  if (n == 0)
    return;
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
  // Merged axes, outermost first, without those of size 1.
  std::vector<int64_t> dims, da, db;
  for (int64_t d = 0; d < rank; ++d) {
    if (out.dim(d) == 1)
      continue;
    if (!dims.empty() && da.back() == sa[d] * out.dim(d) &&
        db.back() == sb[d] * out.dim(d)) {
      dims.back() *= out.dim(d);
      da.back() = sa[d];
      db.back() = sb[d];
      continue;
    }
    dims.push_back(out.dim(d));
    da.push_back(sa[d]);
    db.push_back(sb[d]);
  }
  if (dims.empty()) {
    dims = {1};
    da = db = {0};
  }
  int64_t cols = dims.back(), rows = n / cols;
  int64_t ca = da.back(), cb = db.back();
  const float *pa = a.data<float>(), *pb = b.data<float>();
  float *po = out.data<float>();
#pragma omp parallel for schedule(static) if (n > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t oa = 0, ob = 0, rest = r;
    for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
      int64_t k = rest % dims[d];
      rest /= dims[d];
      oa += k * da[d];
      ob += k * db[d];
    }
    const float *x = pa + oa, *y = pb + ob;
    float *z = po + r * cols;
    if (ca && cb)
      for (int64_t c = 0; c < cols; ++c)
        z[c] = apply<Op>(x[c], y[c]);
    else if (ca)
      for (int64_t c = 0; c < cols; ++c)
        z[c] = apply<Op>(x[c], y[0]);
    else if (cb)
      for (int64_t c = 0; c < cols; ++c)
        z[c] = apply<Op>(x[0], y[c]);
    else
      for (int64_t c = 0; c < cols; ++c)
        z[c] = apply<Op>(x[0], y[0]);
  }
}

static void broadcastLoop(BinaryOp op, const Tensor &a, const Tensor &b,
                          Tensor &out) {
  switch (op) {
  case BinaryOp::Add:
    return broadcastLoop<BinaryOp::Add>(a, b, out);
  case BinaryOp::Sub:
    return broadcastLoop<BinaryOp::Sub>(a, b, out);
  case BinaryOp::Mul:
    return broadcastLoop<BinaryOp::Mul>(a, b, out);
  case BinaryOp::Div:
    return broadcastLoop<BinaryOp::Div>(a, b, out);
  case BinaryOp::Max:
    return broadcastLoop<BinaryOp::Max>(a, b, out);
  case BinaryOp::Min:
    return broadcastLoop<BinaryOp::Min>(a, b, out);
  case BinaryOp::Pow:
    return broadcastLoop<BinaryOp::Pow>(a, b, out);
  case BinaryOp::PRelu:
    return broadcastLoop<BinaryOp::PRelu>(a, b, out);
  }
}

namespace {

struct BinaryEntry {
  dnnl::binary primitive;
  Shape outShape;
  memory::desc src0Md, src1Md, dstMd;
};

class BinaryKernel : public Kernel {
public:
  BinaryKernel(CPUContextPtr ctx, dnnl::algorithm algorithm, BinaryOp op,
               std::string type)
      : cache(std::move(ctx)), algorithm(algorithm), op(op),
        type(std::move(type)) {}
  bool acceptsLayouts() const override { return true; }
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override;

private:
  /// The entry, or an entry-less answer (null primitive) meaning "loop".
  llvm::Expected<BinaryEntry> make(const Tensor &a, const Tensor &b);

  PrimitiveCache<BinaryEntry> cache;
  dnnl::algorithm algorithm;
  BinaryOp op;
  std::string type; // the ONNX op type, for the integer path
};

/// Pow, PRelu: loops only.
class LoopBinaryKernel : public Kernel {
public:
  explicit LoopBinaryKernel(BinaryOp op) : op(op) {}
  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    auto shape = broadcastShapes(inputs[0]->shape(), inputs[1]->shape());
    if (!shape)
      return shape.takeError();
    Tensor out(DType::F32, *shape);
    broadcastLoop(op, *inputs[0], *inputs[1], out);
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  BinaryOp op;
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
  // Broadcasts run on plain tensors either way, and oneDNN 2.6 has jit
  // kernels for some patterns only (per channel, scalar): the reference
  // kernel it falls back to took 14 ms on a [1, 56, 56, 96] minus
  // [1, 56, 56, 1] (ConvNeXt's LayerNorm) on 2 threads.
  if (a.shape() != b.shape())
    return entry;
  memory::desc md = a.isPlain() ? descOf(b) : descOf(a);
  entry.src0Md = entry.src1Md = entry.dstMd = md;
  dnnl::binary::desc d(algorithm, entry.src0Md, entry.src1Md, entry.dstMd);
  entry.primitive = dnnl::binary(dnnl::binary::primitive_desc(d, engine));
  return entry;
}

llvm::Error BinaryKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                              llvm::MutableArrayRef<Tensor> outputs) {
  // Shape arithmetic computed at run time is on i64 tensors.
  if (inputs[0]->dtype() == DType::I64 || inputs[1]->dtype() == DType::I64) {
    llvm::Expected<Tensor> out =
        integerArithmetic(type, *inputs[0], *inputs[1]);
    if (!out)
      return out.takeError();
    outputs[0] = std::move(*out);
    return llvm::Error::success();
  }
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
      broadcastLoop(op, plainOf(a, ctx), plainOf(b, ctx), out);
      outputs[0] = std::move(out);
      return llvm::Error::success();
    }
    Tensor src0 = reorderTo(a, e.src0Md, ctx);
    Tensor src1 = reorderTo(b, e.src1Md, ctx);
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
    BinaryOp op;
  };
  static const Op ops[] = {
      {"Add", dnnl::algorithm::binary_add, BinaryOp::Add},
      {"Sub", dnnl::algorithm::binary_sub, BinaryOp::Sub},
      {"Mul", dnnl::algorithm::binary_mul, BinaryOp::Mul},
      {"Div", dnnl::algorithm::binary_div, BinaryOp::Div},
      {"Max", dnnl::algorithm::binary_max, BinaryOp::Max},
      {"Min", dnnl::algorithm::binary_min, BinaryOp::Min},
  };
  for (const Op &op : ops)
    registry.add(op.type,
                 [ctx, op](const OpInfo &info)
                     -> llvm::Expected<std::unique_ptr<Kernel>> {
                   if (llvm::Error e = info.checkArity(2, 2))
                     return e;
                   return std::make_unique<BinaryKernel>(ctx, op.algorithm,
                                                         op.op, op.type);
                 });
  for (auto [type, op] :
       {std::pair("Pow", BinaryOp::Pow), std::pair("PRelu", BinaryOp::PRelu)})
    registry.add(type,
                 [op = op](const OpInfo &info)
                     -> llvm::Expected<std::unique_ptr<Kernel>> {
                   if (llvm::Error e = info.checkArity(2, 2))
                     return e;
                   return std::make_unique<LoopBinaryKernel>(op);
                 });
}
