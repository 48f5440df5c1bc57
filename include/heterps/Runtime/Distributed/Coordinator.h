//===- Coordinator.h - rendezvous of a job's processes ----------*- C++ -*-===//
//
// The coordinator listens for the job's processes. Each registers its role
// and address (and, for a worker, the job it computed from its own model
// and options); once all have come, the coordinator makes the job's tables
// on the parameter server and only then answers every registration with
// the job's map. A process that does not fit (another job, a role taken
// twice, an index out of range) is refused, and the job fails before
// anything is written to the server.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_COORDINATOR_H
#define HETERPS_RUNTIME_DISTRIBUTED_COORDINATOR_H

#include "heterps/Runtime/Distributed/Roles.h"
#include "heterps/Runtime/Distributed/Security.h"
#include "heterps/Runtime/Distributed/Services.pb.h"

#include <chrono>
#include <functional>
#include <memory>

namespace heterps::runtime::distributed {

class Coordinator {
public:
  static llvm::Expected<std::unique_ptr<Coordinator>>
  start(const std::string &address, JobShape shape, std::string job,
        SecurityOptions security);
  ~Coordinator();

  int port() const;
  /// Waits until every process has registered; `check` is called while
  /// waiting (a local child that exited is an error). The job's map, or
  /// the first refusal, or a timeout naming who is missing.
  llvm::Expected<RegisterResponse>
  waitForAll(std::chrono::milliseconds timeout,
             const std::function<llvm::Error()> &check);
  /// Answers the registrations: with the map, or with `failure`.
  void release(std::string failure = "");
  /// After a failure: the processes of these ranks are gone, and their
  /// replacements may register (waitForAll waits for them, release
  /// answers them); the map says `epoch`.
  void reopen(const std::vector<int> &ranks, int64_t epoch);

private:
  struct Impl;
  explicit Coordinator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

/// Registers this process with the coordinator at `address` (retrying its
/// connection until `timeout`); the job's map once the coordinator
/// releases it.
llvm::Expected<RegisterResponse>
registerWith(const std::string &address, const ProcessInfo &self,
             const SecurityOptions &security,
             std::chrono::milliseconds timeout = std::chrono::seconds(60));

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_COORDINATOR_H
