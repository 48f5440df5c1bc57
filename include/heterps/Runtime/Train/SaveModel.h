//===- SaveModel.h - trained weights back into an ONNX model ----*- C++ -*-===//
//
// Writes a copy of the plan's source model (`Plan.model_path`) with the
// initializers (and Constant node values) the plan reads replaced by
// `weights`: the trained inference model, which ONNX Runtime and
// heterps-run load as they loaded the original. Weights holding NaN or
// infinities are refused. The file is replaced atomically (AtomicFile.h), so
// a failure never leaves a partial file at `path`.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_TRAIN_SAVEMODEL_H
#define HETERPS_RUNTIME_TRAIN_SAVEMODEL_H

#include "heterps/Runtime/Plan.pb.h"
#include "heterps/Runtime/Weights.h"

namespace heterps::runtime::train {

llvm::Error saveTrainedModel(const plan::Plan &plan, const WeightMap &weights,
                             llvm::StringRef path);

} // namespace heterps::runtime::train

#endif // HETERPS_RUNTIME_TRAIN_SAVEMODEL_H
