//===- AttentionKernel.cpp - scaled dot-product attention as one op -------===//
//
// Attention(q, k, v, mask) = Softmax(mask(scale * Q x Kt)) x V over the last
// axis, per batch index (batch and head), where Q = transpose(q, q_perm),
// Kt = transpose(k, k_perm) and V = transpose(v, v_perm) are [..., T, D],
// [..., D, S] and [..., S, Dv], and the result is written as
// transpose(O, out_perm). fuseAttention forms it from the ops PyTorch
// exports: there the transposes are copies of every head's Q, K, V and
// output (14% of a GPT-2-sized decoder's run at batch 8); here each matrix
// is read in place through its strides, each batch index's scores stay in
// one thread's buffer, and the two products are single-threaded sgemms
// with the batch indices split across threads.
//
// Attributes: the four perms, `scale`, and with a bool mask `mask_fill` and
// `mask_fill_where` (1: the fill replaces the scores where the mask is
// true, 0: where it is false). The mask broadcasts to [..., T, S].
//
//===----------------------------------------------------------------------===//

#include "Broadcast.h"
#include "CPUKernels.h"
#include "ExpPolynomial.h"

#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

/// e^x for x <= 0 to about 2 ulp (ExpPolynomial.h), and exactly 0 below
/// -87 (a masked -inf gets probability 0, as with std::exp); n rounded by
/// the 1.5 * 2^23 trick, 2^n from its bits. Plain arithmetic the compiler
/// vectorises, unlike std::exp.
inline float expNonPositive(float x) {
  using namespace exppoly;
  constexpr float kRound = 12582912.f;
  float clamped = x < kMinArgument ? kMinArgument : x;
  float t = clamped * kLog2e + kRound;
  float n = t - kRound;
  float r = clamped - n * kLn2High - n * kLn2Low;
  const float *c = kCoefficients;
  float p = ((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5];
  float y = p * r * r + r + 1.f;
  int32_t tBits, expBits;
  std::memcpy(&tBits, &t, sizeof t);
  expBits = (tBits - 0x4B400000 + 127) << 23; // kRound's bits are 0x4B400000
  float scale;
  std::memcpy(&scale, &expBits, sizeof scale);
  return x < kMinArgument ? 0.f : y * scale;
}

/// Softmax of one row in place: the exponentials take most of an
/// attention's time outside its sgemms, so the function is compiled for
/// AVX-512 and AVX2 as well as the baseline, chosen at load time.
HETERPS_VECTOR_CLONES void softmaxRow(float *row, int64_t n) {
  float max = row[0];
  for (int64_t j = 1; j < n; ++j)
    max = row[j] > max ? row[j] : max;
  float sum = 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    row[j] = expNonPositive(row[j] - max);
    sum += row[j];
  }
  float inverse = 1.f / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    row[j] *= inverse;
}

/// A tensor seen through a permutation of its axes: the permuted shape and
/// each permuted axis's stride in elements.
struct View {
  std::vector<int64_t> dims, strides;
};

View permuted(llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<int64_t> perm) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  View v;
  for (int64_t p : perm) {
    v.dims.push_back(shape[p]);
    v.strides.push_back(strides[p]);
  }
  return v;
}

bool isPermutation(llvm::ArrayRef<int64_t> perm, size_t rank) {
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank)
    return false;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

class AttentionKernel : public Kernel {
public:
  struct Params {
    std::vector<int64_t> qPerm, kPerm, vPerm, outPerm;
    float scale = 1.f, fill = 0.f;
    bool fillWhere = true;
  };
  explicit AttentionKernel(Params p) : p(std::move(p)) {}

  llvm::Error run(llvm::ArrayRef<const Tensor *> inputs,
                  llvm::MutableArrayRef<Tensor> outputs) override {
    if (llvm::Error e = checkF32(inputs.take_front(3)))
      return e;
    const Tensor &q = *inputs[0], &k = *inputs[1], &v = *inputs[2];
    const Tensor *mask = inputs.size() > 3 ? inputs[3] : nullptr;
    size_t rank = p.qPerm.size();
    if (q.rank() != rank || k.rank() != rank || v.rank() != rank)
      return kernelError("Attention needs q, k and v of rank " +
                         llvm::Twine(rank) + ", got " + q.typeString() + ", " +
                         k.typeString() + " and " + v.typeString());
    View Q = permuted(q.shape(), p.qPerm), K = permuted(k.shape(), p.kPerm),
         V = permuted(v.shape(), p.vPerm);
    size_t r = rank;
    int64_t T = Q.dims[r - 2], D = Q.dims[r - 1], S = K.dims[r - 1],
            Dv = V.dims[r - 1];
    bool batchesAgree = true;
    for (size_t i = 0; i + 2 < r; ++i)
      batchesAgree &= Q.dims[i] == K.dims[i] && Q.dims[i] == V.dims[i];
    if (!batchesAgree || K.dims[r - 2] != D || V.dims[r - 2] != S)
      return kernelError("Attention: Q " + shapeToString(Q.dims) + ", K^T " +
                         shapeToString(K.dims) + " and V " +
                         shapeToString(V.dims) + " do not fit");
    if (S == 0 || D == 0)
      return kernelError("Attention: Q " + shapeToString(Q.dims) + " and K^T " +
                         shapeToString(K.dims) +
                         " leave no key or no head dimension to attend over");
    // fuseAttention keeps every matrix row contiguous: Kt's as K's rows
    // (its D axis the source's last) or as its own (its S axis last).
    bool kRowsAreD = K.strides[r - 2] == 1;
    if (Q.strides[r - 1] != 1 || (!kRowsAreD && K.strides[r - 1] != 1) ||
        V.strides[r - 1] != 1)
      return kernelError("Attention: a matrix of q, k or v has its rows "
                         "strided");

    std::vector<int64_t> oDims(Q.dims.begin(), Q.dims.end() - 1);
    oDims.push_back(Dv);
    std::vector<int64_t> outShape;
    for (int64_t a : p.outPerm)
      outShape.push_back(oDims[a]);
    Tensor out(DType::F32, outShape);
    // O's logical axis j is the output's axis i with outPerm[i] = j.
    View outView = permuted(outShape, identity(r));
    std::vector<int64_t> oStrides(r);
    for (size_t i = 0; i < r; ++i)
      oStrides[p.outPerm[i]] = outView.strides[i];

    // The mask's stride along each axis of the scores [..., T, S] (0 where
    // it broadcasts).
    Shape mStrides(r, 0);
    if (mask) {
      if (mask->dtype() != DType::Bool || mask->rank() > r)
        return kernelError("Attention: the mask " + mask->typeString() +
                           " is not a bool tensor of rank " + llvm::Twine(r) +
                           " or less");
      Shape scores(Q.dims.begin(), Q.dims.end() - 1);
      scores.push_back(S);
      size_t lead = r - mask->rank();
      for (size_t i = lead; i < r; ++i)
        if (mask->dim(i - lead) != 1 && mask->dim(i - lead) != scores[i])
          return kernelError("Attention: the mask " + mask->typeString() +
                             " does not broadcast to the scores " +
                             shapeToString(scores));
      mStrides = broadcastStrides(mask->shape(), scores);
    }

    int64_t batches = 1;
    for (size_t i = 0; i + 2 < r; ++i)
      batches *= Q.dims[i];
    if (out.numElements() == 0) { // no query, value column or batch index
      outputs[0] = std::move(out);
      return llvm::Error::success();
    }
    const float *qData = q.data<float>(), *kData = k.data<float>(),
                *vData = v.data<float>();
    const uint8_t *mData = mask ? mask->data<uint8_t>() : nullptr;
    float *oData = out.data<float>();
    std::atomic<int> failed{dnnl_success};
    int threads = std::min<int64_t>(omp_get_max_threads(), batches);
#pragma omp parallel num_threads(std::max(threads, 1))
    {
      std::vector<float> scores(T * S);
#pragma omp for schedule(static)
      for (int64_t b = 0; b < batches; ++b) {
        // The batch index's offset in each operand.
        int64_t qOff = 0, kOff = 0, vOff = 0, oOff = 0, mOff = 0;
        for (int64_t i = static_cast<int64_t>(r) - 3, rest = b; i >= 0; --i) {
          int64_t at = rest % Q.dims[i];
          rest /= Q.dims[i];
          qOff += at * Q.strides[i];
          kOff += at * K.strides[i];
          vOff += at * V.strides[i];
          oOff += at * oStrides[i];
          mOff += at * mStrides[i];
        }
        dnnl_status_t status =
            dnnl_sgemm('N', kRowsAreD ? 'T' : 'N', T, S, D, p.scale,
                       qData + qOff, Q.strides[r - 2], kData + kOff,
                       kRowsAreD ? K.strides[r - 1] : K.strides[r - 2], 0.f,
                       scores.data(), S);
        for (int64_t t = 0; t < T && status == dnnl_success; ++t) {
          float *row = scores.data() + t * S;
          if (mData)
            for (int64_t s = 0; s < S; ++s)
              if ((mData[mOff + t * mStrides[r - 2] + s * mStrides[r - 1]] !=
                   0) == p.fillWhere)
                row[s] = p.fill;
          softmaxRow(row, S);
        }
        if (status == dnnl_success)
          status = dnnl_sgemm('N', 'N', T, Dv, S, 1.f, scores.data(), S,
                              vData + vOff, V.strides[r - 2], 0.f, oData + oOff,
                              oStrides[r - 2]);
        if (status != dnnl_success)
          failed = status;
      }
    }
    if (failed != dnnl_success)
      return kernelError("Attention: dnnl_sgemm failed with status " +
                         llvm::Twine(failed.load()));
    outputs[0] = std::move(out);
    return llvm::Error::success();
  }

private:
  static std::vector<int64_t> identity(size_t rank) {
    std::vector<int64_t> perm(rank);
    for (size_t d = 0; d < rank; ++d)
      perm[d] = static_cast<int64_t>(d);
    return perm;
  }

  Params p;
};

} // namespace

void cpu::registerAttentionKernel(KernelRegistry &registry, CPUContextPtr) {
  registry.add(
      "Attention",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
        if (llvm::Error e = info.checkArity(3, 4))
          return e;
        AttentionKernel::Params p;
        for (auto [name, perm] :
             {std::pair{"q_perm", &p.qPerm}, std::pair{"k_perm", &p.kPerm},
              std::pair{"v_perm", &p.vPerm},
              std::pair{"out_perm", &p.outPerm}}) {
          auto ints = info.attrs.getInts(name);
          if (!ints)
            return ints.takeError();
          *perm = *ints;
        }
        size_t rank = p.qPerm.size();
        if (rank < 2 || !isPermutation(p.qPerm, rank) ||
            !isPermutation(p.kPerm, rank) || !isPermutation(p.vPerm, rank) ||
            !isPermutation(p.outPerm, rank))
          return kernelError("Attention: q_perm, k_perm, v_perm and out_perm "
                             "must be permutations of one rank of 2 or more");
        auto scale = info.attrs.getFloat("scale", 1.f);
        auto fill = info.attrs.getFloat("mask_fill", 0.f);
        auto where = info.attrs.getInt("mask_fill_where", 1);
        if (!scale)
          return scale.takeError();
        if (!fill)
          return fill.takeError();
        if (!where)
          return where.takeError();
        p.scale = *scale;
        p.fill = *fill;
        p.fillWhere = *where != 0;
        return std::make_unique<AttentionKernel>(std::move(p));
      });
}
