//===- Weights.h - the constant tensors of a plan ---------------*- C++ -*-===//
//
// A plan's weights are inline bytes or references to the initializers (and
// Constant node outputs) of the ONNX model named by `Plan.model_path`; the
// model is read once, external data included.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_WEIGHTS_H
#define HETERPS_RUNTIME_WEIGHTS_H

#include "heterps/Runtime/Plan.pb.h"
#include "heterps/Runtime/Tensor.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <map>

namespace heterps::runtime {

/// Value index -> weight tensor. Each tensor's type and shape are checked
/// against its plan value.
using WeightMap = std::map<int32_t, Tensor>;

/// The plan's weights, less those `skip` names by value index (tables a
/// caller serves otherwise, never read into memory).
llvm::Expected<WeightMap>
loadWeights(const plan::Plan &plan,
            llvm::function_ref<bool(int32_t)> skip = nullptr);

/// An error naming the first f32 weight that holds a NaN or an infinity,
/// and how many of its values do: trained weights are checked before they
/// are saved, since a Relu or a MaxPool can keep such weights out of the
/// loss. Weights of infinities only (mask fill values) are constants, not
/// checked.
llvm::Error checkFiniteWeights(const plan::Plan &plan,
                               const WeightMap &weights);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_WEIGHTS_H
