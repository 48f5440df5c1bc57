//===- RemoteReplicas.h - the coordinator's view of the workers -*- C++ -*-===//
//
// Runs each step's replicas in their worker processes: one RunStep call to
// each, carrying only the micro-batches' inputs and targets that process
// reads, all in flight at once. When one fails, the others are told to
// abort the step so that none waits for a value that will not come; when
// a process dies (interrupt), the step ends at once.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_REMOTEREPLICAS_H
#define HETERPS_RUNTIME_DISTRIBUTED_REMOTEREPLICAS_H

#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/Distributed/Services.pb.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

#include <chrono>

namespace heterps::runtime::distributed {

class RemoteReplicas : public pipeline::ReplicaRunner {
public:
  /// A step's calls fail after this: a worker that still answers
  /// heartbeats but never ends its step is hung.
  static constexpr std::chrono::minutes kStepDeadline{10};

  /// Channels to the workers of `map`, `replicas` per stage, each
  /// connected within `timeout`.
  static llvm::Expected<std::unique_ptr<RemoteReplicas>>
  connect(const RegisterResponse &map, std::vector<int> replicas,
          SecurityOptions security, std::chrono::milliseconds timeout);
  ~RemoteReplicas() override;

  llvm::Error runStep(pipeline::StepInputs &step,
                      std::vector<pipeline::ReplicaStepStats> &stats) override;
  llvm::Expected<WeightMap> stageWeights(int stage) override;
  llvm::Error setWeights(const WeightMap &weights) override;
  /// A process of the job died: the step in flight fails now (its calls
  /// cancelled, the workers told to abort), and so does every step until
  /// reset.
  void interrupt(const std::string &why);
  /// After a failure: the workers (some new) at the addresses of `map`,
  /// each told the new epoch and where its peers are.
  llvm::Error reset(const RegisterResponse &map);
  /// Tells every worker process to exit.
  void shutdown();

private:
  struct Impl;
  explicit RemoteReplicas(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_REMOTEREPLICAS_H
