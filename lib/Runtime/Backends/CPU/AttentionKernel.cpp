//===- AttentionKernel.cpp - scaled dot-product attention as one op -------===//
//
// Attention(q, k, v, mask, biases...) = Softmax(mask(scale * Q x Kt +
// biases)) x V over the last axis, per batch index (batch and head), where
// Q = transpose(q, q_perm), Kt = transpose(k, k_perm) and V = transpose(v,
// v_perm) are [..., T, D], [..., D, S] and [..., S, Dv], and the result is
// written as transpose(O, out_perm). fuseAttention forms it from the ops
// PyTorch exports: there the transposes are copies of every head's Q, K, V
// and output (14% of a GPT-2-sized decoder's run at batch 8); here each
// matrix is read in place through its strides, each batch index's scores
// stay in one thread's buffer, and the two products are single-threaded
// sgemms with the batch indices split across threads.
//
// Attributes: the four perms, `scale`, and with a bool mask `mask_fill` and
// `mask_fill_where` (1: the fill replaces the scores where the mask is
// true, 0: where it is false). The mask broadcasts to [..., T, S].
// `q_index` (likewise k, v), when not -1, reads Q as one slice of a source
// of one more axis, as Swin's q, k and v are slices of one tensor: the
// source's axis q_perm[0] at that index, the other perm entries as before.
// Each bias input i (after the mask, absent or not) is added to the scores
// seen as `bias_views` row i (`bias_ranks` entries each; one entry -1, the
// size the others leave), which keeps the scores' last two axes and which
// the bias broadcasts to: Swin's relative-position bias [heads, T, S] and
// its shift mask [1, windows, 1, T, S] on [batch, windows, heads, T, S].
//
//===----------------------------------------------------------------------===//

#include "AttentionViews.h"
#include "Broadcast.h"
#include "CPUKernels.h"
#include "ExpPolynomial.h"
#include "SmallHeadAttention.h"

#include <omp.h>

#include <atomic>
#include <cmath>

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

// The exponentials take most of an attention's time outside its sgemms, so
// the softmax is compiled for AVX-512 and AVX2 as well as the baseline,
// chosen at load time.
HETERPS_VECTOR_CLONES void cpu::softmaxRow(float *row, int64_t n) {
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

namespace {

/// `permuted`, and with `index` >= 0 the slice at that index of the first
/// permuted axis, which then goes.
llvm::Expected<View> operandView(const Tensor &t, llvm::ArrayRef<int64_t> perm,
                                 int64_t index, llvm::StringRef name) {
  size_t rank = perm.size() - (index >= 0 ? 1 : 0);
  if (static_cast<size_t>(t.rank()) != perm.size())
    return kernelError("Attention needs " + name + " of rank " +
                       llvm::Twine(perm.size()) + ", got " + t.typeString());
  View v = permuted(t.shape(), perm);
  if (index < 0)
    return v;
  if (index >= v.dims[0])
    return kernelError("Attention: " + name + "_index " + llvm::Twine(index) +
                       " is past the " + llvm::Twine(v.dims[0]) +
                       " slices of " + name + " " + t.typeString());
  v.offset = index * v.strides[0];
  v.dims.erase(v.dims.begin());
  v.strides.erase(v.strides.begin());
  assert(v.dims.size() == rank);
  (void)rank;
  return v;
}

/// row[s] += from[s * step] for s < n.
HETERPS_VECTOR_CLONES void addStrided(float *row, const float *from,
                                      int64_t step, int64_t n) {
  if (step == 1) {
#pragma omp simd
    for (int64_t s = 0; s < n; ++s)
      row[s] += from[s];
  } else {
    for (int64_t s = 0; s < n; ++s)
      row[s] += from[s * step];
  }
}

/// A bias added to the scores, seen as `view` ([..., T, S]): its strides
/// along the view's axes, 0 where it broadcasts.
struct Bias {
  const float *data;
  Shape view, strides;

  /// Where batch index `b` (over the view's leading axes) starts.
  int64_t offsetOf(int64_t b) const {
    int64_t at = 0;
    for (int64_t i = static_cast<int64_t>(view.size()) - 3; i >= 0; --i) {
      at += b % view[i] * strides[i];
      b /= view[i];
    }
    return at;
  }
  /// Adds row t of the bias, from `at`, to the S scores of `row`.
  void addRow(float *row, int64_t at, int64_t t, int64_t S) const {
    size_t r = view.size();
    addStrided(row, data + at + t * strides[r - 2], strides[r - 1], S);
  }
};

class AttentionKernel : public Kernel {
public:
  struct Params {
    std::vector<int64_t> qPerm, kPerm, vPerm, outPerm;
    int64_t qIndex = -1, kIndex = -1, vIndex = -1;
    std::vector<Shape> biasViews;
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
    llvm::Expected<View> qView = operandView(q, p.qPerm, p.qIndex, "q");
    llvm::Expected<View> kView = operandView(k, p.kPerm, p.kIndex, "k");
    llvm::Expected<View> vView = operandView(v, p.vPerm, p.vIndex, "v");
    if (!qView || !kView || !vView)
      return llvm::joinErrors(
          llvm::joinErrors(qView.takeError(), kView.takeError()),
          vView.takeError());
    const View &Q = *qView, &K = *kView, &V = *vView;
    // The factory checked that each perm, less its index, has out_perm's
    // rank.
    size_t r = p.outPerm.size();
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
    std::vector<int64_t> oStrides = writtenStrides(outShape, p.outPerm);
    if (oStrides[r - 1] != 1)
      return kernelError("Attention: out_perm " + shapeToString(p.outPerm) +
                         " moves the value columns off the last axis");

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
    llvm::Expected<std::vector<Bias>> biases =
        biasesOf(inputs.drop_front(4), llvm::ArrayRef(Q.dims).drop_back(), S);
    if (!biases)
      return biases.takeError();

    int64_t batches = 1;
    for (size_t i = 0; i + 2 < r; ++i)
      batches *= Q.dims[i];
    if (out.numElements() == 0) { // no query, value column or batch index
      outputs[0] = std::move(out);
      return llvm::Error::success();
    }
    const float *qData = q.data<float>() + Q.offset,
                *kData = k.data<float>() + K.offset,
                *vData = v.data<float>() + V.offset;
    const uint8_t *mData = mask ? mask->data<uint8_t>() : nullptr;
    float *oData = out.data<float>();
    std::atomic<int> failed{dnnl_success};
    int threads = std::min<int64_t>(omp_get_max_threads(), batches);
    // Small heads (Swin's windows) by our own products, rows of the scores
    // padded to whole vectors; others by sgemm.
    bool small = smallHeadsRun(S, Dv);
    int64_t rowLength = small ? smallHeadRowLength(S) : S;
    // Batch index b's offsets in Q, K, V, O and the mask.
    auto offsetsOf = [&](int64_t b) {
      return batchOffsets<5>(
          b, Q.dims, {Q.strides, K.strides, V.strides, oStrides, mStrides});
    };
#pragma omp parallel num_threads(std::max(threads, 1))
    {
      std::vector<float> scores(T * rowLength),
          packed(small ? D * rowLength : 0);
      std::vector<int64_t> biasAt(biases->size());
#pragma omp for schedule(static)
      for (int64_t b = 0; b < batches; ++b) {
        auto [qOff, kOff, vOff, oOff, mOff] = offsetsOf(b);
        for (size_t i = 0; i < biases->size(); ++i)
          biasAt[i] = (*biases)[i].offsetOf(b);
        // A small head's rows are few and far apart (Swin's: 128 bytes of
        // 1152): the next head's are fetched while this one computes.
        if (small && b + 1 < batches) {
          [[maybe_unused]] auto [qNext, kNext, vNext, oNext, mNext] =
              offsetsOf(b + 1);
          for (int64_t t = 0; t < T; ++t)
            __builtin_prefetch(qData + qNext + t * Q.strides[r - 2]);
          for (int64_t s = 0; s < S; ++s) {
            __builtin_prefetch(kData + kNext + s * K.strides[r - 1]);
            __builtin_prefetch(vData + vNext + s * V.strides[r - 2]);
          }
        }
        dnnl_status_t status = dnnl_success;
        if (small)
          smallHeadScores(qData + qOff, Q.strides[r - 2], kData + kOff,
                          K.strides[r - 2], K.strides[r - 1], T, S, D, p.scale,
                          packed.data(), scores.data());
        else
          status = dnnl_sgemm('N', kRowsAreD ? 'T' : 'N', T, S, D, p.scale,
                              qData + qOff, Q.strides[r - 2], kData + kOff,
                              kRowsAreD ? K.strides[r - 1] : K.strides[r - 2],
                              0.f, scores.data(), S);
        for (int64_t t = 0; t < T && status == dnnl_success; ++t) {
          float *row = scores.data() + t * rowLength;
          for (size_t i = 0; i < biases->size(); ++i)
            (*biases)[i].addRow(row, biasAt[i], t, S);
          if (mData)
            for (int64_t s = 0; s < S; ++s)
              if ((mData[mOff + t * mStrides[r - 2] + s * mStrides[r - 1]] !=
                   0) == p.fillWhere)
                row[s] = p.fill;
          if (small)
            smallHeadSoftmax(row, S);
          else
            softmaxRow(row, S);
        }
        if (small)
          smallHeadOutput(scores.data(), vData + vOff, V.strides[r - 2], T, S,
                          Dv, oData + oOff, oStrides[r - 2]);
        else if (status == dnnl_success)
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
  /// The bias inputs against scores of `leading` (Q's axes but the last)
  /// by S, each view's -1 resolved: an error unless each view keeps T and
  /// S last, holds as many scores, and the bias broadcasts to it.
  llvm::Expected<std::vector<Bias>>
  biasesOf(llvm::ArrayRef<const Tensor *> inputs,
           llvm::ArrayRef<int64_t> leading, int64_t S) const {
    // The factory checked one bias input per view.
    assert(inputs.size() == p.biasViews.size());
    Shape scores(leading.begin(), leading.end());
    scores.push_back(S);
    std::vector<Bias> biases;
    for (auto [bias, given] : llvm::zip(inputs, p.biasViews)) {
      if (!bias || bias->dtype() != DType::F32)
        return kernelError("Attention: a bias is not an f32 tensor");
      Shape view = given;
      int64_t known = 1, unknown = -1;
      for (size_t i = 0; i < view.size(); ++i)
        if (view[i] < 0)
          unknown = i;
        else
          known *= view[i];
      size_t r = view.size();
      int64_t total = numElements(scores);
      if (unknown >= 0 && known > 0 && total % known == 0)
        view[unknown] = total / known;
      bool fits = r >= 2 && view[r - 2] == scores[scores.size() - 2] &&
                  view[r - 1] == S && numElements(view) == total &&
                  bias->rank() <= static_cast<int64_t>(r);
      for (int64_t i = 0; fits && i < bias->rank(); ++i) {
        int64_t d = bias->dim(bias->rank() - 1 - i);
        fits = d == 1 || d == view[r - 1 - i];
      }
      if (!fits)
        return kernelError("Attention: the bias " + bias->typeString() +
                           " does not broadcast to the scores " +
                           shapeToString(scores) + " seen as " +
                           shapeToString(given));
      biases.push_back(
          {bias->data<float>(), view, broadcastStrides(bias->shape(), view)});
    }
    return biases;
  }

  Params p;
};

} // namespace

void cpu::registerAttentionKernel(KernelRegistry &registry, CPUContextPtr) {
  registry.add(
      "Attention",
      [](const OpInfo &info) -> llvm::Expected<std::unique_ptr<Kernel>> {
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
        for (auto [name, index] :
             {std::pair{"q_index", &p.qIndex}, std::pair{"k_index", &p.kIndex},
              std::pair{"v_index", &p.vIndex}}) {
          auto i = info.attrs.getInt(name, -1);
          if (!i)
            return i.takeError();
          *index = *i;
        }
        // A perm with an index covers one more axis, the one it fixes.
        size_t rank = p.outPerm.size();
        auto permutes = [&](llvm::ArrayRef<int64_t> perm, int64_t index) {
          return index >= -1 && isPermutation(perm, rank + (index >= 0));
        };
        if (rank < 2 || !permutes(p.qPerm, p.qIndex) ||
            !permutes(p.kPerm, p.kIndex) || !permutes(p.vPerm, p.vIndex) ||
            !isPermutation(p.outPerm, rank))
          return kernelError("Attention: q_perm, k_perm, v_perm and out_perm "
                             "must be permutations of one rank of 2 or more "
                             "(of one more where an index fixes an axis)");
        auto ranks = info.attrs.getInts("bias_ranks", std::vector<int64_t>());
        auto views = info.attrs.getInts("bias_views", std::vector<int64_t>());
        if (!ranks)
          return ranks.takeError();
        if (!views)
          return views.takeError();
        size_t used = 0;
        for (int64_t n : *ranks) {
          if (n < 2 || used + n > views->size())
            return kernelError("Attention: bias_ranks " +
                               shapeToString(*ranks) + " do not split the " +
                               llvm::Twine(views->size()) +
                               " bias_views entries");
          p.biasViews.emplace_back(views->begin() + used,
                                   views->begin() + used + n);
          used += n;
        }
        if (used != views->size())
          return kernelError("Attention: bias_views has entries past its "
                             "bias_ranks");
        int biases = static_cast<int>(p.biasViews.size());
        if (llvm::Error e = info.checkArity(3, biases ? 4 + biases : 4))
          return e;
        if (biases && info.numInputs() != 4 + biases)
          return kernelError("Attention: " + llvm::Twine(biases) +
                             " bias views need " + llvm::Twine(biases) +
                             " bias inputs after the mask");
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
