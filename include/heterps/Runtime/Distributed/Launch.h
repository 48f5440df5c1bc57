//===- Launch.h - a job's processes on this host ----------------*- C++ -*-===//
//
// Starts the processes of a job run locally: fork + exec of a program, so
// that no gRPC state of the parent crosses into a child. Each child's
// stdout and stderr come back line by line, prefixed with its role
// ("[ps0] ..."), on the parent's stderr. A child dies with its parent
// (PR_SET_PDEATHSIG), so a killed launcher leaves nothing running.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_LAUNCH_H
#define HETERPS_RUNTIME_DISTRIBUTED_LAUNCH_H

#include "llvm/Support/Error.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime::distributed {

class ChildProcess {
public:
  /// Runs `argv` (argv[0] a path) with `env` added to this process's
  /// environment; its output is prefixed with "[role] ".
  static llvm::Expected<std::unique_ptr<ChildProcess>>
  spawn(const std::string &role, const std::vector<std::string> &argv,
        const std::map<std::string, std::string> &env);
  /// Stops the child (SIGTERM, then SIGKILL after 5 s) if it still runs.
  ~ChildProcess();

  const std::string &role() const { return name; }
  /// Whether it has exited; its status then.
  bool exited();
  int exitStatus() const { return status; }
  /// SIGTERM, and waits up to `grace` before SIGKILL; the exit status.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

private:
  ChildProcess() = default;
  struct Output;
  std::string name;
  int pid = -1;
  int status = 0;
  bool done = false;
  std::unique_ptr<Output> output;
};

/// A free loopback port for a server whose address children get before it
/// listens: taken below the kernel's ephemeral range, so that no child's
/// own port-0 server can be handed the same one meanwhile.
llvm::Expected<int> freeLoopbackPort();

/// This program's own path (/proc/self/exe), to start its roles.
llvm::Expected<std::string> selfExecutable();

/// Waits for `child` to write a port number into `portFile`: the port, or
/// an error if the child exits first or `timeout` passes.
llvm::Expected<int> waitForPort(ChildProcess &child,
                                const std::string &portFile,
                                std::chrono::milliseconds timeout);

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_LAUNCH_H
