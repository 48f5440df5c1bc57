//===- placement.cpp - fuzz target: the placement JSON --------------------===//

#include "FuzzCommon.h"

#include "heterps/Planner/PlacementFile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto parsed = heterps::planner::parsePlacement(
      heterps::fuzz::asText(data, size), "fuzz-placement.json");
  heterps::fuzz::requireOneLine(parsed);
  return 0;
}
