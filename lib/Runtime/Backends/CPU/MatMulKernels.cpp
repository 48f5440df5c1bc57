//===- MatMulKernels.cpp - Gemm and MatMul on oneDNN matmul ---------------===//
//
// Gemm: alpha * op(A) * op(B) + beta * C, transposes expressed as strides.
// C is the primitive's bias when alpha is 1 (scaled by beta first when beta
// is not 1), else a binary post-op after the output scale alpha.
// MatMul: numpy semantics (1-D operands promoted, batch dimensions
// broadcast); an N-D A times a 2-D B is one 2-D product of A's rows, which
// takes a bias (third input, fuseMatMulBiases) and an activation after it
// (attribute `activation`, fuseActivations: the GELU of a transformer's
// MLP as oneDNN's post-op instead of a pass over the product); with
// `trans_b` = 1 it multiplies by the transpose of its 2-D B, read through
// strides (foldWeightTransposes, training's nn.Linear). A constant
// B is reordered once into the format oneDNN prefers; where that format is
// plain (the gemm-based matmul of hosts without AVX-512), its rows are
// padded when their length is a multiple of 1 KiB (see paddedRows).
//
// A Gemm of a few rows (M <= 8: a fully-connected layer at batch 1) with a
// constant B is memory-bound: its time is one read of B. With autotuning,
// it also times dnnl_sgemm on the plain B and keeps the faster (then drops
// the packed copy): on AlexNet's 9216x4096 and 4096x4096 layers at M = 1
// sgemm read B at 31-38 GB/s, the matmul primitive 15-25% slower.
//
// Empty operands (a batch of 0, an inner dimension of 0) never reach
// oneDNN, whose 2.6 matmul divides by zero on them: the product is empty,
// or all zeros when only the inner dimension is 0 (plus beta * C for Gemm).
//
//===----------------------------------------------------------------------===//

#include "CPUKernels.h"

#include "heterps/Runtime/OpGeometry.h"

#include <algorithm>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct MatMulEntry {
  dnnl::matmul primitive;
  memory::desc srcMd, weightsMd, plainWeightsMd, cMd, dstMd, scratchpadMd;
  /// B in weightsMd, when B is constant.
  Tensor weights;
  /// C goes in as a binary post-op (else as bias).
  bool cAsPostOp = false;
  /// Gemm only: run as dnnl_sgemm on the plain B (see above).
  bool sgemm = false;
  Shape outShape;
  PrimitiveArgs args;
};

/// Matmul state shared by Gemm and MatMul.
class MatMulBase : public Kernel {
public:
  MatMulBase(CPUContextPtr ctx, bool constantB,
             dnnl::post_ops activation = dnnl::post_ops())
      : cache(std::move(ctx)), constantB(constantB),
        activation(std::move(activation)) {}

protected:
  /// Creates the primitive for src/weights/c/dst descriptors (weightsMd
  /// plain; made `any` when B is constant) and packs a constant B.
  llvm::Expected<MatMulEntry> finish(MatMulEntry entry, const Tensor &b,
                                     float alpha) {
    const CPUContextPtr &ctx = cache.context();
    memory::desc weightsMd = entry.plainWeightsMd;
    if (constantB)
      weightsMd = memory::desc(entry.plainWeightsMd.dims(),
                               memory::data_type::f32, Tag::any);
    dnnl::primitive_attr attr;
    useCallerScratchpad(attr);
    if (alpha != 1.f)
      attr.set_output_scales(0, {alpha});
    memory::desc biasMd;
    dnnl::post_ops ops;
    if (!entry.cMd.is_zero() && entry.cAsPostOp)
      ops.append_binary(dnnl::algorithm::binary_add, entry.cMd);
    else if (!entry.cMd.is_zero())
      biasMd = entry.cMd;
    for (int i = 0; i < activation.len(); ++i) {
      dnnl::algorithm algorithm;
      float scale, alpha, beta;
      activation.get_params_eltwise(i, scale, algorithm, alpha, beta);
      ops.append_eltwise(scale, algorithm, alpha, beta);
    }
    attr.set_post_ops(ops);
    auto makePd = [&](const memory::desc &weights) {
      return dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(entry.srcMd, weights, biasMd, entry.dstMd), attr,
          ctx->engine);
    };
    dnnl::matmul::primitive_desc pd = makePd(weightsMd);
    if (constantB)
      if (std::optional<memory::desc> padded = paddedRows(pd.weights_desc()))
        pd = makePd(*padded);
    entry.primitive = dnnl::matmul(pd);
    entry.weightsMd = pd.weights_desc();
    entry.scratchpadMd = pd.scratchpad_desc();
    if (constantB)
      entry.weights = pack(b, entry);
    return entry;
  }

  /// `b` (plain) in the primitive's weights format.
  Tensor pack(const Tensor &b, const MatMulEntry &e) {
    const CPUContextPtr &ctx = cache.context();
    if (e.weightsMd == e.plainWeightsMd)
      return b;
    Tensor packed = allocate(e.weightsMd, b.shape(), ctx);
    memory from(e.plainWeightsMd, ctx->engine, const_cast<void *>(b.rawData()));
    memory to(e.weightsMd, ctx->engine, packed.rawData());
    dnnl::reorder(from, to).execute(ctx->stream, from, to);
    ctx->stream.wait();
    return packed;
  }

  llvm::Error execute(MatMulEntry &e, const Tensor &a, const Tensor &b,
                      const Tensor *c, llvm::MutableArrayRef<Tensor> outputs) {
    const CPUContextPtr &ctx = cache.context();
    Tensor packed = e.weights.isNull() ? pack(b, e) : e.weights;
    Tensor dst(DType::F32, e.outShape);
    const dnnl::engine &engine = ctx->engine;
    e.args.set(DNNL_ARG_SRC, e.srcMd, a.rawData(), engine);
    e.args.set(DNNL_ARG_WEIGHTS, e.weightsMd, packed.rawData(), engine);
    e.args.set(DNNL_ARG_DST, e.dstMd, dst.rawData(), engine);
    if (c)
      e.args.set(e.cAsPostOp
                     ? DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1
                     : DNNL_ARG_BIAS,
                 e.cMd, c->rawData(), engine);
    e.args.setScratchpad(e.scratchpadMd, *ctx);
    e.primitive.execute(ctx->stream, e.args.get());
    ctx->stream.wait();
    outputs[0] = std::move(dst);
    return llvm::Error::success();
  }

  PrimitiveCache<MatMulEntry> cache;
  bool constantB;
  /// The fused activation's post-ops (MatMul only).
  dnnl::post_ops activation;
};

/// The row-major descriptor of a 2-D matrix stored transposed or not.
memory::desc matrixDesc(int64_t rows, int64_t cols, bool transposed) {
  return memory::desc({rows, cols}, memory::data_type::f32,
                      transposed ? memory::dims{1, rows}
                                 : memory::dims{cols, 1});
}

class GemmKernel : public MatMulBase {
public:
  GemmKernel(CPUContextPtr ctx, GemmAttrs params, bool constantB)
      : MatMulBase(std::move(ctx), constantB), params(params) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &a = *inputs[0], &b = *inputs[1];
    const Tensor *c = inputs.size() > 2 ? inputs[2] : nullptr;
    if (a.rank() != 2 || b.rank() != 2)
      return kernelError("Gemm needs 2-D A and B, got " + a.typeString() +
                         " and " + b.typeString());
    int64_t m = params.transA ? a.dim(1) : a.dim(0);
    int64_t k = params.transA ? a.dim(0) : a.dim(1);
    int64_t kb = params.transB ? b.dim(1) : b.dim(0);
    int64_t n = params.transB ? b.dim(0) : b.dim(1);
    if (k != kb)
      return kernelError("A " + a.typeString() + " and B " + b.typeString() +
                         " do not multiply (trans_a " +
                         llvm::Twine(params.transA) + ", trans_b " +
                         llvm::Twine(params.transB) + ")");
    Shape cShape;
    if (c) {
      if (c->rank() > 2)
        return kernelError("C is " + c->typeString() + ", expected rank <= 2");
      cShape = c->shape();
      cShape.insert(cShape.begin(), 2 - cShape.size(), 1);
      if ((cShape[0] != 1 && cShape[0] != m) ||
          (cShape[1] != 1 && cShape[1] != n))
        return kernelError("C " + c->typeString() + " does not broadcast to [" +
                           llvm::Twine(m) + ", " + llvm::Twine(n) + "]");
    }
    if (m == 0 || n == 0 || k == 0) {
      outputs[0] = emptyProduct(m, n, c, cShape);
      return llvm::Error::success();
    }
    return guardDnnl([&]() -> llvm::Error {
      auto entry = cache.get(shapeKey(inputs), [&] {
        MatMulEntry e;
        e.srcMd = matrixDesc(m, k, params.transA);
        e.plainWeightsMd = matrixDesc(k, n, params.transB);
        e.dstMd = plainDesc({m, n});
        if (c)
          e.cMd = plainDesc(cShape);
        e.cAsPostOp = params.alpha != 1.f;
        e.outShape = {m, n};
        llvm::Expected<MatMulEntry> made =
            finish(std::move(e), b, params.alpha);
        if (made && a.isPlain())
          chooseSgemm(*made, a, b, c, cShape);
        return made;
      });
      if (!entry)
        return entry.takeError();
      // beta * C; beta 0 drops C.
      Tensor scaled;
      if (c && params.beta != 1.f) {
        scaled = Tensor(DType::F32, c->shape());
        for (int64_t i = 0; i < c->numElements(); ++i)
          scaled.data<float>()[i] = params.beta * c->data<float>()[i];
        c = &scaled;
      }
      MatMulEntry &e = **entry;
      if (!e.sgemm)
        return execute(e, a, b, c, outputs);
      Tensor y(DType::F32, e.outShape);
      if (llvm::Error err = runSgemm(a, b, c, cShape, y))
        return err;
      outputs[0] = std::move(y);
      return llvm::Error::success();
    });
  }

private:
  /// The [m, n] result when A or B is empty: beta * C broadcast, or zeros.
  Tensor emptyProduct(int64_t m, int64_t n, const Tensor *c,
                      const Shape &cShape) const {
    Tensor y(DType::F32, {m, n});
    std::fill_n(y.data<float>(), y.numElements(), 0.f);
    if (c)
      addBroadcast(y, *c, cShape, params.beta);
    return y;
  }

  /// y += scale * C, C of `cShape` ([1 or m, 1 or n]) broadcast to y's.
  static void addBroadcast(Tensor &y, const Tensor &c, const Shape &cShape,
                           float scale) {
    int64_t m = y.dim(0), n = y.dim(1);
    float *out = y.data<float>();
    const float *add = c.data<float>();
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        out[i * n + j] += scale * add[(cShape[0] == 1 ? 0 : i) * cShape[1] +
                                      (cShape[1] == 1 ? 0 : j)];
  }

  /// y = alpha op(A) op(B) + C (C already scaled by beta, broadcast).
  llvm::Error runSgemm(const Tensor &a, const Tensor &b, const Tensor *c,
                       const Shape &cShape, Tensor &y) const {
    int64_t m = y.dim(0), n = y.dim(1);
    int64_t k = params.transA ? a.dim(0) : a.dim(1);
    dnnl_status_t status = dnnl_sgemm(
        params.transA ? 'T' : 'N', params.transB ? 'T' : 'N', m, n, k,
        params.alpha, a.data<float>(), params.transA ? m : k, b.data<float>(),
        params.transB ? k : n, 0.f, y.data<float>(), n);
    if (status != dnnl_success)
      return kernelError("dnnl_sgemm failed with status " +
                         llvm::Twine(static_cast<int>(status)));
    if (c)
      addBroadcast(y, *c, cShape, 1.f);
    return llvm::Error::success();
  }

  /// With autotuning, whether dnnl_sgemm beats the primitive of `e` on
  /// this shape (see the file comment); then the packed B is dropped.
  void chooseSgemm(MatMulEntry &e, const Tensor &a, const Tensor &b,
                   const Tensor *c, const Shape &cShape) {
    if (!cache.context()->autotune || !constantB || e.outShape[0] > 8 ||
        !b.isPlain())
      return;
    Tensor y(DType::F32, e.outShape);
    std::vector<Tensor> out(1);
    double primitive =
        bestSeconds([&] { llvm::consumeError(execute(e, a, b, c, out)); });
    double sgemm =
        bestSeconds([&] { llvm::consumeError(runSgemm(a, b, c, cShape, y)); });
    if (sgemm < primitive) {
      e.sgemm = true;
      e.weights = Tensor();
    }
  }

  GemmAttrs params;
};

class MatMulKernel : public MatMulBase {
public:
  MatMulKernel(CPUContextPtr ctx, bool constantB, dnnl::post_ops activation,
               bool transB)
      : MatMulBase(std::move(ctx), constantB, std::move(activation)),
        transB(transB) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs))
      return e;
    const Tensor &a = *inputs[0], &b = *inputs[1];
    // A bias (fuseMatMulBiases) comes with a 2-D B: the product is 2-D.
    const Tensor *bias = inputs.size() > 2 ? inputs[2] : nullptr;
    if (a.rank() == 0 || b.rank() == 0)
      return kernelError("MatMul operands must have rank >= 1");
    if (transB && b.rank() != 2)
      return kernelError("MatMul by the transpose of " + b.typeString() +
                         ": trans_b needs a 2-D B");
    // B as multiplied: [K, N].
    Shape sb = transB ? Shape{b.dim(1), b.dim(0)} : b.shape();
    if (bias &&
        (sb.size() != 2 || a.rank() < 2 || bias->numElements() != sb.back()))
      return kernelError("MatMul bias " + bias->typeString() + " of " +
                         a.typeString() + " x " + b.typeString() +
                         ": a bias needs a 2-D B and one value per column");
    Shape sa = a.shape();
    bool promoteA = sa.size() == 1, promoteB = sb.size() == 1;
    if (promoteA)
      sa.insert(sa.begin(), 1);
    if (promoteB)
      sb.push_back(1);
    if (sa.back() != sb[sb.size() - 2])
      return kernelError("operands " + a.typeString() + " and " +
                         b.typeString() + " do not multiply");
    size_t rank = std::max(sa.size(), sb.size());
    sa.insert(sa.begin(), rank - sa.size(), 1);
    sb.insert(sb.begin(), rank - sb.size(), 1);
    auto batch = broadcastShapes(llvm::ArrayRef(sa).drop_back(2),
                                 llvm::ArrayRef(sb).drop_back(2));
    if (!batch)
      return kernelError("batch dimensions of " + a.typeString() + " and " +
                         b.typeString() + " do not broadcast");
    Shape dstDims = *batch;
    dstDims.push_back(sa[rank - 2]);
    dstDims.push_back(sb[rank - 1]);
    Shape out = *batch;
    if (!promoteA)
      out.push_back(sa[rank - 2]);
    if (!promoteB)
      out.push_back(sb[rank - 1]);
    if (b.rank() == 2 && a.rank() > 2) {
      // [..., M, K] x [K, N] is one [prod(...) * M, K] x [K, N] product:
      // oneDNN's 2-D kernels run it faster than a broadcast batch.
      int64_t rows = numElements(dstDims) / sb[rank - 1];
      sa = {rows, sa.back()};
      sb = {sb[rank - 2], sb[rank - 1]};
      dstDims = {rows, sb[1]};
    }
    if (numElements(out) == 0 || sa.back() == 0) {
      Tensor y(DType::F32, out);
      std::fill_n(y.data<float>(), y.numElements(), 0.f);
      outputs[0] = std::move(y);
      return llvm::Error::success();
    }
    return guardDnnl([&]() -> llvm::Error {
      auto entry = cache.get(shapeKey(inputs), [&] {
        MatMulEntry e;
        e.srcMd = plainDesc(sa);
        e.plainWeightsMd =
            transB ? matrixDesc(sb[0], sb[1], true) : plainDesc(sb);
        e.dstMd = plainDesc(dstDims);
        e.outShape = out;
        if (bias)
          e.cMd = plainDesc({1, dstDims.back()});
        return finish(std::move(e), b, 1.f);
      });
      if (!entry)
        return entry.takeError();
      return execute(**entry, a, b, bias, outputs);
    });
  }

private:
  bool transB;
};

} // namespace

void cpu::registerMatMulKernels(KernelRegistry &registry, CPUContextPtr ctx) {
  registry.add(
      "Gemm",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 3))
          return e;
        llvm::Expected<GemmAttrs> p = parseGemmAttrs(info.attrs);
        if (!p)
          return p.takeError();
        return std::make_unique<GemmKernel>(ctx, *p,
                                            info.constants[1] != nullptr);
      });
  registry.add(
      "MatMul",
      [ctx](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(2, 3))
          return e;
        dnnl::post_ops activation;
        if (llvm::Error e = appendFusedActivation(info.attrs, activation))
          return std::move(e);
        auto transB = info.attrs.getInt("trans_b", 0);
        if (!transB)
          return transB.takeError();
        return std::make_unique<MatMulKernel>(ctx, info.constants[1] != nullptr,
                                              std::move(activation),
                                              *transB != 0);
      });
}
