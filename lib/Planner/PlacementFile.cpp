//===- PlacementFile.cpp - a saved device type per layer ------------------===//

#include "heterps/Planner/PlacementFile.h"

#include "heterps/Support/NestingDepth.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace heterps::planner;

static llvm::Error placementError(llvm::StringRef filename,
                                  const llvm::Twine &what) {
  return heterps::printableError(filename + ": " + what);
}

llvm::Expected<PlacementFile>
heterps::planner::parsePlacement(llvm::StringRef text,
                                 llvm::StringRef filename) {
  if (llvm::Error e = checkNestingDepth(text, filename))
    return std::move(e);
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return placementError(filename,
                          "invalid JSON: " + llvm::toString(json.takeError()));
  const llvm::json::Object *object = json->getAsObject();
  if (!object)
    return placementError(filename, "expected an object mapping node names "
                                    "to device types");
  PlacementFile placement;
  for (const auto &[node, device] : *object) {
    std::optional<llvm::StringRef> name = device.getAsString();
    if (!name)
      return placementError(filename, "node '" + node.str() +
                                          "': expected a device type name");
    placement[node.str()] = name->str();
  }
  return placement;
}

llvm::Expected<PlacementFile>
heterps::planner::loadPlacement(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return placementError(path, "cannot open: " + buffer.getError().message());
  return parsePlacement((*buffer)->getBuffer(), path);
}
