//===- PlacementFile.h - a saved device type per layer ----------*- C++ -*-===//
//
// hps-place strategy=manual reads, and save= writes, a JSON object mapping
// ONNX node names to device type names:
//
//   { "conv1": "v100", "fc1": "cpu" }
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_PLACEMENTFILE_H
#define HETERPS_PLANNER_PLACEMENTFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>

namespace heterps::planner {

/// node name -> device type name.
using PlacementFile = std::map<std::string, std::string>;

/// Parses a placement; errors are one line naming the file.
llvm::Expected<PlacementFile> parsePlacement(llvm::StringRef json,
                                             llvm::StringRef filename);
llvm::Expected<PlacementFile> loadPlacement(llvm::StringRef path);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_PLACEMENTFILE_H
