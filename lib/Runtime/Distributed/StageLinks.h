//===- StageLinks.h - the stage exchange across processes -------*- C++ -*-===//
//
// Internal to the distributed runtime. Values bound for a replica in this
// process go into its Mailbox; the others go out on one client stream per
// peer process (WorkerService.Deliver), opened at the first send and kept
// for the job. A send that fails aborts the step here and is reported by
// failure(), so the coordinator learns which link broke.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_DISTRIBUTED_STAGELINKS_H
#define HETERPS_LIB_RUNTIME_DISTRIBUTED_STAGELINKS_H

#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

#include <map>
#include <mutex>

namespace heterps::runtime::distributed {

class StageLinks : public pipeline::StageExchange {
public:
  /// `addresses[{stage, replica}]` is the process of each replica not in
  /// `local`; `replicas` per stage.
  StageLinks(pipeline::Mailbox &mailbox, std::vector<pipeline::ReplicaId> local,
             std::vector<int> replicas,
             std::map<std::pair<int, int>, std::string> addresses,
             SecurityOptions security, int64_t epoch);
  ~StageLinks() override;

  void begin(int64_t step) override;
  void put(Direction dir, int boundary, int microBatch,
           std::vector<Tensor> values) override;
  std::optional<std::vector<Tensor>> take(Direction dir, int boundary,
                                          int microBatch) override;
  void abort() override;
  /// Why a send of this step failed; empty if none did.
  std::string failure() const;
  /// A new epoch, the peers at these addresses (after a failure; no step
  /// runs): the streams of the old epoch are cancelled.
  void reset(int64_t epoch,
             std::map<std::pair<int, int>, std::string> addresses);

  /// One stream to a peer process (StageLinks.cpp).
  struct Peer;

private:
  Peer &peer(const std::string &address);

  pipeline::Mailbox &mailbox;
  std::vector<pipeline::ReplicaId> local;
  std::vector<int> replicas;
  /// Read by put, changed by reset (when no step runs).
  std::map<std::pair<int, int>, std::string> addresses;
  SecurityOptions security;
  std::mutex peersMutex;
  std::map<std::string, std::unique_ptr<Peer>> peers;
  mutable std::mutex failureMutex;
  std::string failed;
  int64_t step = 0;
  int64_t epoch = 0;
};

} // namespace heterps::runtime::distributed

#endif // HETERPS_LIB_RUNTIME_DISTRIBUTED_STAGELINKS_H
