//===- Profile.h - measured per-layer costs ---------------------*- C++ -*-===//
//
// A profile overrides analytic costs with measured ones. JSON, keyed by ONNX
// node name, then by device type name:
//
//   { "conv1": { "v100": { "oct_s": 0.002, "odt_s": 0.0005,
//                          "alpha": 0.9, "beta": 0.4, "b0": 32 } } }
//
// All five fields are required; unknown keys are errors.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_PROFILE_H
#define HETERPS_PLANNER_PROFILE_H

#include "heterps/Planner/CostModel.h"

#include <map>
#include <string>

namespace heterps::planner {

/// node name -> device type -> cost.
using Profile = std::map<std::string, std::map<std::string, LayerCost>>;

/// Parses and validates a profile; errors are one line naming the file.
llvm::Expected<Profile> parseProfile(llvm::StringRef json,
                                     llvm::StringRef filename);
llvm::Expected<Profile> loadProfile(llvm::StringRef path);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_PROFILE_H
