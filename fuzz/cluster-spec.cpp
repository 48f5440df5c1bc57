//===- cluster-spec.cpp - fuzz target: the cluster-spec YAML --------------===//

#include "FuzzCommon.h"

#include "heterps/Planner/ClusterSpec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto parsed = heterps::planner::parseClusterSpec(
      heterps::fuzz::asText(data, size), "fuzz.yaml");
  heterps::fuzz::requireOneLine(parsed);
  return 0;
}
