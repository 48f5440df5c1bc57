//===- Roles.h - which process of a job this is -----------------*- C++ -*-===//
//
// A distributed job is 1 + S + R processes: rank 0 the coordinator, ranks
// 1..S the parameter-server shards, then one worker per stage replica,
// stage by stage. Every process is started with the same command line; its
// rank (a flag, or a launcher's environment) picks its role.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_ROLES_H
#define HETERPS_RUNTIME_DISTRIBUTED_ROLES_H

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace heterps::runtime::distributed {

struct JobShape {
  int shards = 1;
  /// Per stage.
  std::vector<int> replicas;

  int workers() const;
  int worldSize() const { return 1 + shards + workers(); }
};

struct Role {
  enum Kind { Coordinator, ParameterServer, Worker } kind = Coordinator;
  int shard = 0;
  int stage = 0, replica = 0;
  /// "coordinator", "ps1", "worker s0r1": log prefixes.
  std::string name() const;
};

/// The role of `rank`; an error outside [0, worldSize).
llvm::Expected<Role> roleOfRank(int rank, const JobShape &shape);

/// HOST:PORT where others reach a server listening on `listen` at `port`:
/// `advertise` when given, else the listen host, or this host's name when
/// it listens on every address.
std::string advertisedAddress(const std::string &listen, int port,
                              const std::string &advertise = "");

/// The rank a launcher gave this process: $HETERPS_RANK, $SLURM_PROCID or
/// $OMPI_COMM_WORLD_RANK, in that order; nothing when none is set, an error
/// when one is not a number.
llvm::Expected<std::optional<int>> rankFromEnvironment();

/// How a server role ends: SIGTERM, SIGINT or the coordinator's Shutdown.
/// Blocks SIGTERM and SIGINT in this thread (and the threads it starts
/// after), so that waitForStopSignal receives them.
void blockStopSignals();
/// Why a server role stopped: a signal's name or what requestStop said,
/// and whether that is a failure (the process then exits non-zero).
struct StopReason {
  std::string why;
  bool failed = false;
};
/// Waits for SIGTERM or SIGINT, or requestStop.
StopReason waitForStopSignal();
/// Makes waitForStopSignal return: the coordinator's Shutdown, or a
/// failure (the coordinator gone silent).
void requestStop(std::string why = "asked by the coordinator",
                 bool failed = false);

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_ROLES_H
