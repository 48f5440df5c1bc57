//===- Loss.cpp - training losses -----------------------------------------===//

#include "heterps/Runtime/Train/Loss.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::train;

std::string train::outOfRangeLabel(int64_t label, int64_t sample,
                                   int64_t classes) {
  return llvm::formatv(
      "label {0} of sample {1} is outside the model's {2} classes (0 to {3})",
      label, sample, classes, classes - 1);
}

static llvm::Error lossError(const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), what);
}

llvm::Expected<LossKind> train::parseLoss(llvm::StringRef name) {
  auto kind = llvm::StringSwitch<std::optional<LossKind>>(name)
                  .Case("softmax-ce", LossKind::SoftmaxCrossEntropy)
                  .Case("bce-logits", LossKind::BCEWithLogits)
                  .Case("mse", LossKind::MSE)
                  .Default(std::nullopt);
  if (!kind)
    return lossError("unknown loss '" + name +
                     "' (expected softmax-ce, bce-logits or mse)");
  return *kind;
}

const char *train::lossName(LossKind kind) {
  switch (kind) {
  case LossKind::SoftmaxCrossEntropy:
    return "softmax-ce";
  case LossKind::BCEWithLogits:
    return "bce-logits";
  case LossKind::MSE:
    return "mse";
  }
  return "?";
}

llvm::Error train::checkLossFits(LossKind kind, const Shape &outputShape,
                                 DType targetType, const Shape &targetSample) {
  Shape sample(outputShape.begin() + std::min<size_t>(1, outputShape.size()),
               outputShape.end());
  if (kind == LossKind::SoftmaxCrossEntropy) {
    // [batch, classes] with a label per sample, or [batch, positions...,
    // classes] (a language model's tokens) with a label per position.
    if (outputShape.size() < 2)
      return lossError(llvm::Twine("loss softmax-ce needs a model output of "
                                   "[batch, classes] or [batch, positions..., "
                                   "classes], the model gives ") +
                       shapeToString(outputShape));
    Shape positions(outputShape.begin() + 1, outputShape.end() - 1);
    bool fits =
        targetType == DType::I64 && targetSample.size() == positions.size();
    for (size_t i = 0; fits && i < positions.size(); ++i)
      fits = positions[i] < 0 || positions[i] == targetSample[i];
    if (!fits && positions.empty())
      return lossError(llvm::Twine("loss softmax-ce needs one i64 class label "
                                   "per sample, the data has ") +
                       dtypeName(targetType) + shapeToString(targetSample));
    if (!fits)
      return lossError(llvm::Twine("loss softmax-ce needs i64 class labels "
                                   "shaped ") +
                       shapeToString(positions) +
                       " per sample (the model output without its batch and "
                       "classes), the data has " +
                       dtypeName(targetType) + shapeToString(targetSample));
    return llvm::Error::success();
  }
  // Dimensions the model leaves dynamic (-1) take the data's size.
  bool dynamic = llvm::any_of(sample, [](int64_t d) { return d < 0; });
  bool fits = dynamic ? targetSample.size() == sample.size() &&
                            llvm::all_of(llvm::seq<size_t>(0, sample.size()),
                                         [&](size_t i) {
                                           return sample[i] < 0 ||
                                                  sample[i] == targetSample[i];
                                         })
                      : numElements(targetSample) == numElements(sample);
  if (!fits)
    return lossError(llvm::Twine("loss ") + lossName(kind) +
                     " needs targets shaped as the model output per sample " +
                     shapeToString(sample) + ", the data has " +
                     shapeToString(targetSample));
  return llvm::Error::success();
}

llvm::Expected<LossResult>
train::computeLoss(LossKind kind, const Tensor &output, const Tensor &targets) {
  LossResult r;
  r.grad = Tensor(DType::F32, output.shape());
  const float *x = output.data<float>();
  float *g = r.grad.data<float>();
  int64_t n = output.numElements();
  if (kind == LossKind::SoftmaxCrossEntropy) {
    // One row of classes per label (per sample, or per token); the mean
    // over all of them, as PyTorch's cross_entropy.
    int64_t classes = output.dim(output.rank() - 1);
    int64_t batch = classes ? n / classes : 0;
    if (targets.dtype() != DType::I64 || targets.numElements() != batch)
      return lossError("softmax-ce needs " + llvm::Twine(batch) +
                       " i64 labels, got " + targets.typeString());
    const int64_t *labels = targets.data<int64_t>();
    double total = 0;
    for (int64_t i = 0; i < batch; ++i) {
      int64_t label = labels[i];
      if (label < 0 || label >= classes)
        return lossError(outOfRangeLabel(label, i, classes));
      const float *row = x + i * classes;
      float *grow = g + i * classes;
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (row[c] > row[best])
          best = c;
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c)
        sum += std::exp(static_cast<double>(row[c]) - row[best]);
      double logSum = std::log(sum) + row[best];
      total += logSum - row[label];
      for (int64_t c = 0; c < classes; ++c)
        grow[c] = static_cast<float>(std::exp(row[c] - logSum) / batch);
      grow[label] -= 1.f / batch;
      r.correct += best == label;
    }
    r.judged = batch;
    r.loss = total / batch;
    return r;
  }
  if (targets.numElements() != n)
    return lossError(llvm::Twine(lossName(kind)) + " needs " + llvm::Twine(n) +
                     " targets, got " + targets.typeString());
  auto target = [&](int64_t i) -> double {
    return targets.dtype() == DType::I64 ? targets.data<int64_t>()[i]
                                         : targets.data<float>()[i];
  };
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = x[i], t = target(i);
    if (kind == LossKind::MSE) {
      total += (v - t) * (v - t);
      g[i] = static_cast<float>(2 * (v - t) / n);
      continue;
    }
    // log(1 + e^v) - v t, computed without overflow.
    total += std::max(v, 0.0) - v * t + std::log1p(std::exp(-std::abs(v)));
    g[i] = static_cast<float>((1 / (1 + std::exp(-v)) - t) / n);
    r.correct += (v > 0) == (t > 0.5);
  }
  r.judged = kind == LossKind::BCEWithLogits ? n : 0;
  r.loss = total / n;
  return r;
}

void train::collectScores(LossKind kind, const Tensor &output,
                          const Tensor &targets, std::vector<float> &scores,
                          std::vector<float> &labels) {
  if (kind != LossKind::BCEWithLogits || output.rank() == 0 ||
      output.numElements() != output.dim(0))
    return;
  const float *s = output.data<float>(), *t = targets.data<float>();
  scores.insert(scores.end(), s, s + output.numElements());
  labels.insert(labels.end(), t, t + output.numElements());
}

double train::rocAuc(llvm::ArrayRef<float> scores,
                     llvm::ArrayRef<float> labels) {
  std::vector<size_t> order(scores.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks (1-based, ties given their mean rank).
  double rankSum = 0, positives = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]])
      ++j;
    double meanRank = (double(i + 1) + double(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (labels[order[k]] > 0.5f) {
        rankSum += meanRank;
        ++positives;
      }
    i = j;
  }
  double negatives = double(scores.size()) - positives;
  if (positives == 0 || negatives == 0)
    return -1;
  return (rankSum - positives * (positives + 1) / 2) / (positives * negatives);
}
