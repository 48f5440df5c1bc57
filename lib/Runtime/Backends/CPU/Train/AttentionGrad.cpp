//===- AttentionGrad.cpp - scaled dot-product attention, trained ----------===//
//
// The Attention op of fuseTrainableAttention: O = Softmax(scale * Q Kt) V
// per batch index (batch and head), with Q, Kt and V read, and O written,
// through their perms as the inference kernel does (AttentionKernel.cpp;
// no mask, biases or indices here). The forward keeps the probabilities
// P; the backward, per batch index, is
//   dV = P^T dO,   dP = dO V^T,   dZ = scale * P * (dP - rowsum(dP * P)),
//   dQ = dZ K,     dKt = Q^T dZ,
// each gradient written through its operand's perm into a tensor of the
// operand's source shape. Unfused, PyTorch's export copies Q, K, V and O
// transposed in both passes and scales Q by its own op (ViT-B/16 at batch
// 8: five 4.8 MB passes per layer each way); here those copies go,
// and each batch index's scores and their gradient stay in one thread's
// cache between the products, which are single-threaded sgemms with the
// batch indices split across threads.
//
//===----------------------------------------------------------------------===//

#include "TrainKernels.h"

#include "../AttentionViews.h"
#include "../CPUKernels.h"

#include <omp.h>

#include <atomic>

using namespace heterps::runtime;
using namespace heterps::runtime::train;
using cpu::kernelError;

namespace {

/// Where the matrices of batch index b are: operand views and the
/// products' sizes.
struct Geometry {
  cpu::View q, k, v;
  std::vector<int64_t> oStrides;
  Shape outShape;
  int64_t T = 0, D = 0, S = 0, Dv = 0, batches = 1;
  /// Kt's columns are K's rows, contiguous (D is the source's last axis);
  /// else Kt's own rows are.
  bool kRowsAreD = false;

  struct Offsets {
    int64_t q = 0, k = 0, v = 0, o = 0;
  };
  Offsets offsetsOf(int64_t b) const {
    auto [qAt, kAt, vAt, oAt] = cpu::batchOffsets<4>(
        b, q.dims, {q.strides, k.strides, v.strides, oStrides});
    return {qAt, kAt, vAt, oAt};
  }
  /// Row strides (leading dimensions) of Q, Kt or K, V and O.
  int64_t ldq() const { return q.strides[q.strides.size() - 2]; }
  int64_t ldk() const {
    size_t r = k.strides.size();
    return kRowsAreD ? k.strides[r - 1] : k.strides[r - 2];
  }
  int64_t ldv() const { return v.strides[v.strides.size() - 2]; }
  int64_t ldo() const { return oStrides[oStrides.size() - 2]; }
};

struct Perms {
  std::vector<int64_t> q, k, v, out;
};

llvm::Expected<Geometry> geometryOf(const Tensor &q, const Tensor &k,
                                    const Tensor &v, const Perms &perms) {
  size_t r = perms.out.size();
  for (auto [t, name] :
       {std::pair{&q, "q"}, std::pair{&k, "k"}, std::pair{&v, "v"}})
    if (static_cast<size_t>(t->rank()) != r)
      return kernelError(llvm::Twine("Attention needs ") + name + " of rank " +
                         llvm::Twine(r) + ", got " + t->typeString());
  Geometry g;
  g.q = cpu::permuted(q.shape(), perms.q);
  g.k = cpu::permuted(k.shape(), perms.k);
  g.v = cpu::permuted(v.shape(), perms.v);
  g.T = g.q.dims[r - 2];
  g.D = g.q.dims[r - 1];
  g.S = g.k.dims[r - 1];
  g.Dv = g.v.dims[r - 1];
  bool fit = g.k.dims[r - 2] == g.D && g.v.dims[r - 2] == g.S;
  for (size_t i = 0; i + 2 < r; ++i) {
    fit &= g.q.dims[i] == g.k.dims[i] && g.q.dims[i] == g.v.dims[i];
    g.batches *= g.q.dims[i];
  }
  if (!fit)
    return kernelError("Attention: Q " + shapeToString(g.q.dims) + ", K^T " +
                       shapeToString(g.k.dims) + " and V " +
                       shapeToString(g.v.dims) + " do not fit");
  if (g.S == 0 || g.D == 0)
    return kernelError("Attention: Q " + shapeToString(g.q.dims) + " and K^T " +
                       shapeToString(g.k.dims) +
                       " leave no key or no head dimension to attend over");
  g.kRowsAreD = g.k.strides[r - 2] == 1;
  std::vector<int64_t> oDims(g.q.dims.begin(), g.q.dims.end() - 1);
  oDims.push_back(g.Dv);
  for (int64_t a : perms.out)
    g.outShape.push_back(oDims[a]);
  g.oStrides = cpu::writtenStrides(g.outShape, perms.out);
  if (g.q.strides[r - 1] != 1 || (!g.kRowsAreD && g.k.strides[r - 1] != 1) ||
      g.v.strides[r - 1] != 1 || g.oStrides[r - 1] != 1)
    return kernelError("Attention: a matrix of q, k, v or the result has its "
                       "rows strided");
  return g;
}

/// dz = scale * p * (dz - sum(dz * p)) over one row: the softmax's
/// gradient, and the scale's.
HETERPS_VECTOR_CLONES void softmaxGradRow(const float *p, float *dz, int64_t n,
                                          float scale) {
  float dot = 0.f;
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < n; ++j)
    dot += dz[j] * p[j];
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    dz[j] = scale * p[j] * (dz[j] - dot);
}

class AttentionGradKernel : public TrainKernel {
public:
  AttentionGradKernel(CPUContextPtr ctx, Perms perms, float scale)
      : ctx(std::move(ctx)), perms(std::move(perms)), scale(scale) {}
  bool differentiable(int i) const override { return i <= 2; }

  llvm::Error forward(llvm::ArrayRef<const Tensor *> inputs,
                      Tensor &output) override {
    if (llvm::Error e = cpu::checkF32(inputs.take_front(3)))
      return e;
    q = cpu::plainOf(*inputs[0], ctx);
    k = cpu::plainOf(*inputs[1], ctx);
    v = cpu::plainOf(*inputs[2], ctx);
    llvm::Expected<Geometry> planned = geometryOf(q, k, v, perms);
    if (!planned)
      return planned.takeError();
    g = std::move(*planned);
    probabilities = Tensor(DType::F32, {g.batches, g.T, g.S});
    Tensor out(DType::F32, g.outShape);
    const float *qd = q.data<float>(), *kd = k.data<float>(),
                *vd = v.data<float>();
    float *pd = probabilities.data<float>(), *od = out.data<float>();
    llvm::Error e = forEachBatch([&](int64_t b, std::vector<float> &) {
      Geometry::Offsets at = g.offsetsOf(b);
      float *p = pd + b * g.T * g.S;
      dnnl_status_t s =
          dnnl_sgemm('N', g.kRowsAreD ? 'T' : 'N', g.T, g.S, g.D, scale,
                     qd + at.q, g.ldq(), kd + at.k, g.ldk(), 0.f, p, g.S);
      for (int64_t t = 0; t < g.T && s == dnnl_success; ++t)
        cpu::softmaxRow(p + t * g.S, g.S);
      if (s == dnnl_success)
        s = dnnl_sgemm('N', 'N', g.T, g.Dv, g.S, 1.f, p, g.S, vd + at.v,
                       g.ldv(), 0.f, od + at.o, g.ldo());
      return s;
    });
    if (e)
      return e;
    output = std::move(out);
    return llvm::Error::success();
  }

  llvm::Error backward(llvm::ArrayRef<const Tensor *>, const Tensor &,
                       const Tensor &dOutput, llvm::ArrayRef<bool> needGrad,
                       llvm::MutableArrayRef<Tensor> dInputs) override {
    Tensor dOut = cpu::plainOf(dOutput, ctx);
    // Each element of a source is one element of one batch index's
    // matrix: the products write every gradient whole.
    Tensor dq, dk, dv;
    if (needGrad[0])
      dq = Tensor(DType::F32, q.shape());
    if (needGrad[1])
      dk = Tensor(DType::F32, k.shape());
    if (needGrad[2])
      dv = Tensor(DType::F32, v.shape());
    const float *qd = q.data<float>(), *kd = k.data<float>(),
                *vd = v.data<float>(), *pd = probabilities.data<float>(),
                *dod = dOut.data<float>();
    int64_t T = g.T, S = g.S, D = g.D, Dv = g.Dv;
    llvm::Error e = forEachBatch([&](int64_t b, std::vector<float> &dz) {
      Geometry::Offsets at = g.offsetsOf(b);
      const float *p = pd + b * T * S, *dO = dod + at.o;
      dnnl_status_t s = dnnl_success;
      if (dv.rawData())
        s = dnnl_sgemm('T', 'N', S, Dv, T, 1.f, p, S, dO, g.ldo(), 0.f,
                       dv.data<float>() + at.v, g.ldv());
      if (s != dnnl_success || (!dq.rawData() && !dk.rawData()))
        return s;
      dz.resize(T * S);
      s = dnnl_sgemm('N', 'T', T, S, Dv, 1.f, dO, g.ldo(), vd + at.v, g.ldv(),
                     0.f, dz.data(), S);
      if (s != dnnl_success)
        return s;
      for (int64_t t = 0; t < T; ++t)
        softmaxGradRow(p + t * S, dz.data() + t * S, S, scale);
      // dQ = dZ K; dKt = Q^T dZ, or its transpose dK = dZ^T Q when K's rows
      // are contiguous.
      if (dq.rawData())
        s = dnnl_sgemm('N', g.kRowsAreD ? 'N' : 'T', T, D, S, 1.f, dz.data(), S,
                       kd + at.k, g.ldk(), 0.f, dq.data<float>() + at.q,
                       g.ldq());
      if (s == dnnl_success && dk.rawData()) {
        float *to = dk.data<float>() + at.k;
        s = g.kRowsAreD ? dnnl_sgemm('T', 'N', S, D, T, 1.f, dz.data(), S,
                                     qd + at.q, g.ldq(), 0.f, to, g.ldk())
                        : dnnl_sgemm('T', 'N', D, S, T, 1.f, qd + at.q, g.ldq(),
                                     dz.data(), S, 0.f, to, g.ldk());
      }
      return s;
    });
    if (e)
      return e;
    dInputs[0] = std::move(dq);
    dInputs[1] = std::move(dk);
    dInputs[2] = std::move(dv);
    return llvm::Error::success();
  }

private:
  /// fn(b, buffer) for every batch index, split across the threads, each
  /// thread with a scratch buffer of its own; the first failed sgemm's
  /// status is the error.
  template <typename Fn> llvm::Error forEachBatch(Fn fn) {
    std::atomic<int> failed{dnnl_success};
    int threads =
        static_cast<int>(std::min<int64_t>(omp_get_max_threads(), g.batches));
#pragma omp parallel num_threads(std::max(threads, 1))
    {
      std::vector<float> buffer;
#pragma omp for schedule(static)
      for (int64_t b = 0; b < g.batches; ++b)
        if (failed == dnnl_success)
          if (dnnl_status_t s = fn(b, buffer); s != dnnl_success)
            failed = s;
    }
    if (failed != dnnl_success)
      return kernelError("Attention: dnnl_sgemm failed with status " +
                         llvm::Twine(failed.load()));
    return llvm::Error::success();
  }

  CPUContextPtr ctx;
  Perms perms;
  float scale;
  Tensor q, k, v, probabilities;
  Geometry g;
};

} // namespace

void train::registerAttentionGrad(TrainRegistry &registry) {
  registry["Attention"] = [](const OpInfo &info, const TrainKernelEnv &env)
      -> llvm::Expected<std::unique_ptr<TrainKernel>> {
    if (llvm::Error e = info.checkArity(3, 4))
      return e;
    // fuseTrainableAttention forms it without them.
    for (const char *name : {"q_index", "k_index", "v_index", "bias_ranks"})
      if (info.attrs.has(name))
        return kernelError(llvm::Twine("Attention with `") + name +
                           "` cannot be trained");
    if (info.hasInput(3))
      return kernelError("Attention with a mask cannot be trained");
    Perms perms;
    for (auto [name, perm] :
         {std::pair{"q_perm", &perms.q}, std::pair{"k_perm", &perms.k},
          std::pair{"v_perm", &perms.v}, std::pair{"out_perm", &perms.out}}) {
      auto ints = info.attrs.getInts(name);
      if (!ints)
        return ints.takeError();
      *perm = std::move(*ints);
    }
    size_t rank = perms.out.size();
    if (rank < 2 || !cpu::isPermutation(perms.q, rank) ||
        !cpu::isPermutation(perms.k, rank) ||
        !cpu::isPermutation(perms.v, rank) ||
        !cpu::isPermutation(perms.out, rank))
      return kernelError("Attention: q_perm, k_perm, v_perm and out_perm "
                         "must be permutations of one rank of 2 or more");
    auto scale = info.attrs.getFloat("scale", 1.f);
    if (!scale)
      return scale.takeError();
    return std::make_unique<AttentionGradKernel>(env.ctx, std::move(perms),
                                                 *scale);
  };
}
