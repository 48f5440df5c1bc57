//===- Plan.h - loading and verifying executable plans ----------*- C++ -*-===//
//
// The plan message is defined in lib/Runtime/Plan.proto. Files ending in
// `.pbtxt` or `.txtpb` hold the protobuf text format, any other file the
// binary encoding. Every error is one line: "FILE: op 3 'conv1' (Conv): ...".
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PLAN_H
#define HETERPS_RUNTIME_PLAN_H

#include "heterps/Runtime/Plan.pb.h"
#include "heterps/Runtime/Tensor.h"

#include "llvm/Support/Error.h"

namespace heterps::runtime {

/// The plan format version this runtime reads.
constexpr int32_t kPlanVersion = 1;

/// The runtime element type of a (verified) plan value.
DType dtypeOf(const plan::Value &value);

/// Whether `t` has `value`'s type; -1 dimensions match any size.
bool hasValueType(const Tensor &t, const plan::Value &value);

/// Removes the ops marked in `dead` (one flag per op), keeping the order of
/// the others.
void eraseOps(plan::Plan &plan, const std::vector<bool> &dead);

/// Checks that `plan` is well formed: indices in range, every value defined
/// once and before use, bindings named uniquely, weights consistent with
/// their values, stages ordered. `where` prefixes the messages.
llvm::Error verifyPlan(const plan::Plan &plan, llvm::StringRef where);

/// Parses a plan from `bytes` (binary, or text when `text`) and verifies it.
llvm::Expected<plan::Plan> parsePlan(llvm::StringRef bytes, bool text,
                                     llvm::StringRef where);

/// Reads and verifies a plan file. A relative `model_path` is made relative
/// to the current directory (it was relative to the plan's folder).
llvm::Expected<plan::Plan> loadPlan(llvm::StringRef path);

/// Writes `plan` to `path` (text format for .pbtxt/.txtpb).
llvm::Error savePlan(const plan::Plan &plan, llvm::StringRef path);

/// "op 3 'conv1' (Conv)", the prefix of messages about one op.
std::string describeOp(const plan::Plan &plan, int index);

/// "'image', 'mask'": the plan's input names, for messages.
std::string describeInputs(const plan::Plan &plan);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PLAN_H
