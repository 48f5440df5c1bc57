//===- Distributed.h - heterps-run's processes of a distributed job -*- C++
//-*-===//
//
// The flags that start one role of a job (--role=ps) and that put a
// training run's parameter server in other processes (--ps=local starts
// them here; --ps=HOST:PORT,... reaches them elsewhere).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_DISTRIBUTED_H
#define HETERPS_TOOLS_HETERPS_RUN_DISTRIBUTED_H

#include "heterps/Runtime/PS/Client.h"

#include "llvm/Support/CommandLine.h"

namespace heterps::tools {

llvm::cl::OptionCategory &distributedCategory();

/// Whether --role was given: this process is one role of a job, not a
/// run of a model.
bool roleRequested();
/// Runs the --role; the exit code (errors are one line on stderr).
int runRole();

/// The parameter server's processes and the transport to them.
class RemoteServer {
public:
  virtual ~RemoteServer();
  virtual runtime::ps::Transport &transport() = 0;
};

/// Whether --ps was given.
bool remoteServerRequested();
/// Starts or reaches the --ps servers, `shards` of them. Called before
/// anything else in this process uses gRPC: local servers are forked here.
llvm::Expected<std::unique_ptr<RemoteServer>> startRemoteServer(int shards);

} // namespace heterps::tools

#endif // HETERPS_TOOLS_HETERPS_RUN_DISTRIBUTED_H
