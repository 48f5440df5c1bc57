//===- ClusterSpec.h - device types, prices and the job ---------*- C++ -*-===//
//
// The cluster spec is a YAML file (read with LLVM's YAML I/O):
//
//   device_types:
//     - name: v100
//       kind: cuda              # cpu | cuda
//       price_per_hour: 2.42    # dollars per device per hour
//       max_count: 32           # N_t,limit
//       gflops: 14000           # effective GFLOP/s of one device
//       memory_bandwidth_gbs: 900
//       network_bandwidth_gbs: 3.125
//       alpha: 0.95             # optional: parallel fraction of compute
//   job:
//     batch_size: 256           # B
//     samples_per_epoch: 1000000  # M
//     epochs: 10                # L
//     throughput_limit: 5000    # samples/s the pipeline must sustain
//     step: training            # optional: what the analytic costs model,
//                               # training (default) or inference
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PLANNER_CLUSTERSPEC_H
#define HETERPS_PLANNER_CLUSTERSPEC_H

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace heterps::planner {

struct DeviceType {
  std::string name;
  std::string kind; // "cpu" or "cuda"
  double pricePerHour = 0;
  int64_t maxCount = 0;
  double gflops = 0;              // effective GFLOP/s
  double memoryBandwidthGBs = 0;  // GB/s between device memory and compute
  double networkBandwidthGBs = 0; // GB/s to the parameter server
  double alpha = 0.95;            // parallel fraction of compute time

  double pricePerSecond() const { return pricePerHour / 3600.0; }
};

/// What one step of the job computes: the analytic costs differ (see
/// analyticCost in CostModel.h).
enum class Step { Training, Inference };
llvm::StringRef stepName(Step step);
std::optional<Step> parseStep(llvm::StringRef name);

struct Job {
  int64_t batchSize = 0;       // B
  int64_t samplesPerEpoch = 0; // M
  int64_t epochs = 0;          // L
  double throughputLimit = 0;  // samples per second
  Step step = Step::Training;
};

struct ClusterSpec {
  std::vector<DeviceType> deviceTypes;
  Job job;

  /// Index of the device type called `name`, if any.
  std::optional<size_t> find(const std::string &name) const;
};

/// Parses and validates a spec. Errors are one line: "FILE:LINE:COL: what".
llvm::Expected<ClusterSpec> parseClusterSpec(llvm::StringRef yaml,
                                             llvm::StringRef filename);
llvm::Expected<ClusterSpec> loadClusterSpec(llvm::StringRef path);

} // namespace heterps::planner

#endif // HETERPS_PLANNER_CLUSTERSPEC_H
