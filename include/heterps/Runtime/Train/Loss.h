//===- Loss.h - training losses ---------------------------------*- C++ -*-===//
//
// Each loss is the mean over the batch (over all elements for the
// element-wise ones), as PyTorch's defaults:
//   softmax-ce    softmax cross-entropy of logits [N, C] with i64 class
//                 labels [N] (nn.CrossEntropyLoss);
//   bce-logits    binary cross-entropy of logits with f32 targets in [0, 1]
//                 of the same shape (nn.BCEWithLogitsLoss);
//   mse           mean squared error against f32 targets of the same shape
//                 (nn.MSELoss).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_LOSS_H
#define HETERPS_RUNTIME_TRAIN_LOSS_H

#include "heterps/Runtime/Tensor.h"

namespace heterps::runtime::train {

enum class LossKind { SoftmaxCrossEntropy, BCEWithLogits, MSE };

/// "softmax-ce", "bce-logits" or "mse"; an error lists them.
llvm::Expected<LossKind> parseLoss(llvm::StringRef name);
const char *lossName(LossKind kind);

/// An error unless the loss fits a model output of `outputShape` (its first
/// dimension the batch, -1 when dynamic) and targets of `targetType` and
/// `targetSample` (one sample's shape). Label values are checked by
/// computeLoss.
llvm::Error checkLossFits(LossKind kind, const Shape &outputShape,
                          DType targetType, const Shape &targetSample);

struct LossResult {
  /// The batch's mean loss.
  double loss = 0;
  /// d loss / d output, plain, the output's shape.
  Tensor grad;
  /// Correct predictions (argmax = label; for bce-logits, elements whose
  /// logit sign matches the target) and how many were judged; 0 of 0 for mse.
  int64_t correct = 0, judged = 0;
};

/// What is wrong with class label `label` of sample `sample` when it lies
/// outside [0, classes).
std::string outOfRangeLabel(int64_t label, int64_t sample, int64_t classes);

/// The loss of `output` (plain f32) against `targets` and its gradient; a
/// label outside [0, C) is an error naming it (outOfRangeLabel).
llvm::Expected<LossResult> computeLoss(LossKind kind, const Tensor &output,
                                       const Tensor &targets);

/// For bce-logits with one logit per sample: appends each sample's logit
/// and target to `scores` and `labels`; nothing for other losses.
void collectScores(LossKind kind, const Tensor &output, const Tensor &targets,
                   std::vector<float> &scores, std::vector<float> &labels);

/// The area under the ROC curve of `scores` against 0/1 `labels` (ties
/// count half: the Mann-Whitney statistic); -1 without both classes.
double rocAuc(llvm::ArrayRef<float> scores, llvm::ArrayRef<float> labels);

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_LOSS_H
