//===- ConstantOps.h - ops of weights alone, computed once ------*- C++ -*-===//
//
// Exported graphs often compute tensors from constants alone: Swin's
// shifted-window attention masks (Range, Expand, ScatterND, Equal, Where
// over its fixed image sizes), a scale as Pow(32, -0.5). Run per inference
// they are hundreds of tiny ops (902 of Swin-T's 1602); computed once when
// an executor is made, their outputs are weights like any other, and the
// backends' rewrites see them as such (a scale a fusion takes in, a mask an
// attention kernel reads).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CONSTANTOPS_H
#define HETERPS_LIB_RUNTIME_CONSTANTOPS_H

#include "heterps/Runtime/Backend.h"

namespace heterps::runtime {

/// Runs on `host` every op of `plan` whose inputs are all weights (or
/// outputs of such ops), in plan order, adds its outputs to `weights` and
/// removes the op, together with the weights only such ops read. Ops that
/// make a graph output, have no inputs, have no kernel on `host`, fail, or
/// produce an output of another type than the plan's or of more than
/// `maxBytes` stay, to run (and fail, with the run's message) as before.
/// Returns the number of ops removed.
int foldConstantOps(plan::Plan &plan, WeightMap &weights, Backend &host,
                    uint64_t maxBytes = uint64_t(64) << 20);

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_CONSTANTOPS_H
