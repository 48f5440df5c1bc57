//===- TwoCpuTypes.h - the cluster the oracle tests measure on --*- C++ -*-===//

#ifndef HETERPS_UNITTESTS_MEASURE_TWOCPUTYPES_H
#define HETERPS_UNITTESTS_MEASURE_TWOCPUTYPES_H

#include "heterps/Planner/ClusterSpec.h"

namespace heterps::testutil {

/// Device types "a" and "b", both CPUs, two devices each.
inline planner::ClusterSpec twoCpuTypes() {
  planner::ClusterSpec spec;
  for (const char *name : {"a", "b"}) {
    planner::DeviceType d;
    d.name = name;
    d.kind = "cpu";
    d.maxCount = 2;
    spec.deviceTypes.push_back(d);
  }
  return spec;
}

} // namespace heterps::testutil

#endif // HETERPS_UNITTESTS_MEASURE_TWOCPUTYPES_H
