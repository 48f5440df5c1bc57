//===- Heartbeats.h - who is alive in a distributed job ---------*- C++ -*-===//
//
// The coordinator sends every process of the job a heartbeat about once a
// second (HeartbeatMonitor). A process that answers none for the job's
// timeout is given up for dead, and one that the local launcher saw exit
// at once; the coordinator's log names it. The other way round, a process
// that hears no heartbeat for that long stops with one line (Watchdog):
// the coordinator is gone, and nothing else would end it on a cluster.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DISTRIBUTED_HEARTBEATS_H
#define HETERPS_RUNTIME_DISTRIBUTED_HEARTBEATS_H

#include "heterps/Runtime/Distributed/Security.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace heterps::runtime::distributed {

/// 10 s at most, by the default of --heartbeat-timeout.
inline constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{6000};

/// A process's side: stops the process (requestStop, as a failure saying
/// why) when no heartbeat came for the timeout the last one carried.
class Watchdog {
public:
  Watchdog();
  ~Watchdog();
  void beat(std::chrono::milliseconds timeout);

private:
  void run();
  std::mutex mutex;
  std::condition_variable changed;
  std::chrono::steady_clock::time_point last;
  std::chrono::milliseconds timeout{0};
  bool stopping = false;
  std::thread thread;
};

/// The coordinator's side.
class HeartbeatMonitor {
public:
  struct Peer {
    int rank = 0;
    /// As in logs: "ps0", "worker s1r0".
    std::string name;
    std::string address;
    bool parameterServer = false;
  };
  /// Why a peer was given up for dead.
  using Deaths = std::map<int, std::string>;

  /// `onDeath(name, why)` is called once per death, from the monitor's
  /// thread; `probe` each tick (the launcher reports children that exited
  /// through declareDead).
  HeartbeatMonitor(
      SecurityOptions security, std::chrono::milliseconds timeout,
      std::function<void(const std::string &name, const std::string &why)>
          onDeath,
      std::function<void()> probe = nullptr);
  ~HeartbeatMonitor();

  /// Watches these processes from now on, all alive now; forgets deaths.
  void watch(std::vector<Peer> peers, int64_t epoch);
  void declareDead(int rank, const std::string &why);
  /// The deaths so far, waiting up to `within` for a first one.
  Deaths waitForDeaths(std::chrono::milliseconds within);

private:
  struct Watched;
  void run();
  void ping(Watched &peer);
  /// Cancels the pings in flight and waits for them: they point into the
  /// peers.
  void cancelPings(std::unique_lock<std::mutex> &lock);
  /// Makes a death known to waitForDeaths; under the lock.
  void die(Watched &peer, const std::string &why);

  SecurityOptions security;
  std::chrono::milliseconds limit;
  std::function<void(const std::string &, const std::string &)> onDeath;
  std::function<void()> probe;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::shared_ptr<Watched>> peers;
  int64_t epoch = 0;
  Deaths deaths;
  bool stopping = false;
  std::thread thread;
};

} // namespace heterps::runtime::distributed

#endif // HETERPS_RUNTIME_DISTRIBUTED_HEARTBEATS_H
