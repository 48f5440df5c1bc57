//===- BinaryKernels.cpp - element-wise binary ops with broadcasting ------===//
//
// Add, Sub, Mul, Div, Max and Min of same-shape operands on oneDNN's binary
// primitive, in their layout (the second is reordered to the first's).
// Broadcasts, and Pow and PRelu, are a loop of our own over plain tensors
// (broadcastBinary, BinaryMath.h), parallel and vectorised; a value per
// channel (squeeze-excitation) is applied in the other operand's layout.
// A fused Relu (fuseTrainableActivations, in a trained plan that is
// evaluated) is the primitive's post-op, or a pass after the loops.
//
//===----------------------------------------------------------------------===//

#include "BinaryMath.h"
#include "CPUKernels.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct BinaryEntry {
  dnnl::binary primitive;
  Shape outShape;
  memory::desc src0Md, src1Md, dstMd;
  PrimitiveArgs args;
  /// The fused Relu runs as a pass after the primitive (reluAsPostOp).
  bool reluPass = false;
};

class BinaryKernel : public Kernel {
public:
  BinaryKernel(CPUContextPtr ctx, dnnl::algorithm algorithm, BinaryOp op,
               std::string type, bool relu)
      : cache(std::move(ctx)), algorithm(algorithm), op(op),
        type(std::move(type)), relu(relu) {}
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
  bool relu;
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
    broadcastBinary(op, *inputs[0], *inputs[1], out);
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
  entry.reluPass = relu && !reluAsPostOp(md, a.shape());
  dnnl::primitive_attr attr;
  attr.set_post_ops(reluPostOps(relu && !entry.reluPass));
  entry.primitive = dnnl::binary(dnnl::binary::primitive_desc(d, attr, engine));
  return entry;
}

llvm::Error BinaryKernel::run(llvm::ArrayRef<const Tensor *> inputs,
                              llvm::MutableArrayRef<Tensor> outputs) {
  // Shape arithmetic computed at run time is on i64 tensors.
  if (inputs[0]->dtype() == DType::I64 || inputs[1]->dtype() == DType::I64) {
    if (relu)
      return kernelError(type + " with a fused Relu takes f32, not i64");
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
      Tensor out;
      if (auto form = channelBroadcastOf(a, b)) {
        out = channelBroadcast(op, *form, a, b, ctx);
      } else {
        out = Tensor(DType::F32, e.outShape);
        broadcastBinary(op, plainOf(a, ctx), plainOf(b, ctx), out);
      }
      if (relu)
        reluInPlace(out);
      outputs[0] = std::move(out);
      return llvm::Error::success();
    }
    Tensor src0 = reorderTo(a, e.src0Md, ctx);
    Tensor src1 = reorderTo(b, e.src1Md, ctx);
    Tensor dst = allocate(e.dstMd, e.outShape, ctx);
    e.args.set(DNNL_ARG_SRC_0, e.src0Md, src0.rawData(), ctx->engine);
    e.args.set(DNNL_ARG_SRC_1, e.src1Md, src1.rawData(), ctx->engine);
    e.args.set(DNNL_ARG_DST, e.dstMd, dst.rawData(), ctx->engine);
    e.primitive.execute(ctx->stream, e.args.get());
    ctx->stream.wait();
    if (e.reluPass)
      reluInPlace(dst);
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
                   llvm::Expected<bool> relu = fusesRelu(info.attrs, op.type);
                   if (!relu)
                     return relu.takeError();
                   return std::make_unique<BinaryKernel>(ctx, op.algorithm,
                                                         op.op, op.type, *relu);
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
