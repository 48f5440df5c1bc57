//===- profile.cpp - fuzz target: the cost-profile JSON -------------------===//

#include "FuzzCommon.h"

#include "heterps/Planner/Profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto parsed = heterps::planner::parseProfile(
      heterps::fuzz::asText(data, size), "fuzz.json");
  heterps::fuzz::requireOneLine(parsed);
  return 0;
}
