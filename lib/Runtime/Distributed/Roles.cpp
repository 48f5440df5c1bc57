//===- Roles.cpp - ranks to roles -----------------------------------------===//

#include "heterps/Runtime/Distributed/Roles.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <pthread.h>
#include <unistd.h>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

int JobShape::workers() const {
  return std::accumulate(replicas.begin(), replicas.end(), 0);
}

std::string Role::name() const {
  switch (kind) {
  case Coordinator:
    return "coordinator";
  case ParameterServer:
    return "ps" + std::to_string(shard);
  case Worker:
    return "worker s" + std::to_string(stage) + "r" + std::to_string(replica);
  }
  return "?";
}

llvm::Expected<Role> distributed::roleOfRank(int rank, const JobShape &shape) {
  if (rank < 0 || rank >= shape.worldSize())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "rank " + llvm::Twine(rank) + " is not in this job of " +
            llvm::Twine(shape.worldSize()) + " processes (1 coordinator, " +
            llvm::Twine(shape.shards) + " parameter-server shards, " +
            llvm::Twine(shape.workers()) + " stage replicas)");
  Role role;
  if (rank == 0)
    return role;
  if (rank <= shape.shards) {
    role.kind = Role::ParameterServer;
    role.shard = rank - 1;
    return role;
  }
  role.kind = Role::Worker;
  int index = rank - 1 - shape.shards;
  for (size_t s = 0; s < shape.replicas.size(); ++s) {
    if (index < shape.replicas[s]) {
      role.stage = static_cast<int>(s);
      role.replica = index;
      break;
    }
    index -= shape.replicas[s];
  }
  return role;
}

llvm::Expected<std::optional<int>> distributed::rankFromEnvironment() {
  for (const char *name :
       {"HETERPS_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}) {
    const char *value = std::getenv(name);
    if (!value)
      continue;
    int rank = 0;
    if (llvm::StringRef(value).trim().getAsInteger(10, rank) || rank < 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::Twine("$") + name + " is '" + value +
                                         "', not a rank");
    return std::optional<int>(rank);
  }
  return std::optional<int>();
}

std::string distributed::advertisedAddress(const std::string &listen, int port,
                                           const std::string &advertise) {
  if (!advertise.empty())
    return advertise + ":" + std::to_string(port);
  llvm::StringRef host = llvm::StringRef(listen).rsplit(':').first;
  if (host == "0.0.0.0" || host == "[::]" || host.empty()) {
    char name[256] = {0};
    if (::gethostname(name, sizeof name - 1) == 0)
      return std::string(name) + ":" + std::to_string(port);
  }
  return host.str() + ":" + std::to_string(port);
}

static std::mutex stopMutex;
static std::optional<StopReason> stopRequested;

static sigset_t stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

/// The process that started this one, when it blocked the stop signals.
static pid_t launcher = 0;

void distributed::blockStopSignals() {
  launcher = ::getppid();
  sigset_t set = stopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

StopReason distributed::waitForStopSignal() {
  sigset_t set = stopSignals();
  int signal = 0;
  sigwait(&set, &signal);
  std::lock_guard lock(stopMutex);
  if (stopRequested)
    return *stopRequested;
  // A local job's launcher (its coordinator) that dies sends SIGTERM
  // (PR_SET_PDEATHSIG): then this process has a new parent.
  if (signal == SIGTERM && launcher > 1 && ::getppid() != launcher)
    return {"the process that launched this one (the job's coordinator) "
            "died",
            true};
  return {signal == SIGTERM ? "SIGTERM" : "SIGINT", false};
}

void distributed::requestStop(std::string why, bool failed) {
  {
    std::lock_guard lock(stopMutex);
    if (stopRequested)
      return;
    stopRequested = StopReason{std::move(why), failed};
  }
  ::kill(::getpid(), SIGTERM);
}
