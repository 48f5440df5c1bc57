//===- Heartbeats.cpp - pings from the coordinator, and their absence -----===//

#include "heterps/Runtime/Distributed/Heartbeats.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/Roles.h"

#include "Services.grpc.pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

using namespace heterps::runtime::distributed;
using Clock = std::chrono::steady_clock;

static double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

Watchdog::Watchdog() {
  thread = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  thread.join();
}

void Watchdog::beat(std::chrono::milliseconds t) {
  std::lock_guard lock(mutex);
  last = Clock::now();
  timeout = t;
}

void Watchdog::run() {
  std::unique_lock lock(mutex);
  while (!stopping) {
    changed.wait_for(lock, std::chrono::milliseconds(200));
    if (stopping || timeout.count() <= 0 || Clock::now() - last < timeout)
      continue;
    std::string why =
        llvm::formatv("no heartbeat from the coordinator for {0:F1} s: cut "
                      "off from the job, or the coordinator is gone (a "
                      "relaunch with --resume continues from the last "
                      "checkpoint)",
                      seconds(Clock::now() - last))
            .str();
    requestStop(why, /*failed=*/true);
    return;
  }
}

struct HeartbeatMonitor::Watched
    : std::enable_shared_from_this<HeartbeatMonitor::Watched> {
  Peer peer;
  std::unique_ptr<ParameterServerService::Stub> ps;
  std::unique_ptr<WorkerService::Stub> worker;
  Clock::time_point lastAnswer, lastPing;
  bool dead = false;
  /// The ping in flight, if any.
  std::unique_ptr<grpc::ClientContext> context;
  HeartbeatRequest request;
  HeartbeatResponse response;
};

HeartbeatMonitor::HeartbeatMonitor(
    SecurityOptions security, std::chrono::milliseconds timeout,
    std::function<void(const std::string &, const std::string &)> onDeath,
    std::function<void()> probe)
    : security(std::move(security)), limit(timeout),
      onDeath(std::move(onDeath)), probe(std::move(probe)) {
  thread = std::thread([this] { run(); });
}

HeartbeatMonitor::~HeartbeatMonitor() {
  std::unique_lock lock(mutex);
  stopping = true;
  changed.notify_all();
  lock.unlock();
  thread.join();
  lock.lock();
  cancelPings(lock);
}

void HeartbeatMonitor::cancelPings(std::unique_lock<std::mutex> &lock) {
  for (auto &p : peers)
    if (p->context)
      p->context->TryCancel();
  changed.wait(lock, [&] {
    return llvm::none_of(peers, [](auto &p) { return p->context != nullptr; });
  });
}

void HeartbeatMonitor::watch(std::vector<Peer> list, int64_t newEpoch) {
  std::unique_lock lock(mutex);
  // Pings in flight to the old list finish first.
  cancelPings(lock);
  peers.clear();
  deaths.clear();
  epoch = newEpoch;
  auto credentials = channelCredentials(security);
  for (Peer &peer : list) {
    auto w = std::make_shared<Watched>();
    auto channel = grpc::CreateCustomChannel(peer.address, credentials,
                                             channelArguments());
    if (peer.parameterServer)
      w->ps = ParameterServerService::NewStub(channel);
    else
      w->worker = WorkerService::NewStub(channel);
    w->peer = std::move(peer);
    w->lastAnswer = Clock::now();
    peers.push_back(std::move(w));
  }
}

void HeartbeatMonitor::die(Watched &w, const std::string &why) {
  // Not if the job has moved on to other processes meanwhile (watch).
  if (!llvm::is_contained(peers, w.shared_from_this()))
    return;
  deaths[w.peer.rank] = w.peer.name + " (" + w.peer.address + ") " + why;
  changed.notify_all();
}

void HeartbeatMonitor::declareDead(int rank, const std::string &why) {
  std::shared_ptr<Watched> dying;
  {
    std::lock_guard lock(mutex);
    for (auto &p : peers)
      if (p->peer.rank == rank && !p->dead) {
        p->dead = true;
        dying = p;
      }
  }
  if (!dying)
    return;
  // Said before anyone waiting for deaths hears of it.
  if (onDeath)
    onDeath(dying->peer.name, why);
  std::lock_guard lock(mutex);
  die(*dying, why);
}

HeartbeatMonitor::Deaths
HeartbeatMonitor::waitForDeaths(std::chrono::milliseconds within) {
  std::unique_lock lock(mutex);
  changed.wait_for(lock, within, [&] { return !deaths.empty(); });
  return deaths;
}

void HeartbeatMonitor::ping(Watched &w) {
  w.context = std::make_unique<grpc::ClientContext>();
  // A slow answer still counts, as long as it comes within the timeout.
  startCall(*w.context, security, limit);
  w.request.set_epoch(epoch);
  w.request.set_timeout_ms(limit.count());
  auto done = [this, &w](grpc::Status status) {
    std::lock_guard lock(mutex);
    if (status.ok())
      w.lastAnswer = Clock::now();
    w.context.reset();
    changed.notify_all();
  };
  if (w.ps)
    w.ps->async()->Heartbeat(w.context.get(), &w.request, &w.response, done);
  else
    w.worker->async()->Heartbeat(w.context.get(), &w.request, &w.response,
                                 done);
}

void HeartbeatMonitor::run() {
  // Pings about once a second (more often for a short timeout); a look at
  // the probe and the silences every 100 ms.
  auto interval = std::clamp(limit / 5, std::chrono::milliseconds(100),
                             std::chrono::milliseconds(1000));
  auto tick = std::chrono::milliseconds(100);
  while (true) {
    if (probe)
      probe();
    std::vector<std::pair<std::shared_ptr<Watched>, std::string>> died;
    {
      std::unique_lock lock(mutex);
      if (stopping)
        return;
      Clock::time_point now = Clock::now();
      for (auto &p : peers) {
        if (p->dead)
          continue;
        if (now - p->lastAnswer > limit) {
          p->dead = true;
          died.emplace_back(p,
                            llvm::formatv("answered no heartbeat for {0:F1} s",
                                          seconds(now - p->lastAnswer)));
        } else if (!p->context && now - p->lastPing >= interval) {
          p->lastPing = now;
          ping(*p);
        }
      }
    }
    // Said before anyone waiting for deaths hears of them.
    for (auto &[w, why] : died) {
      if (onDeath)
        onDeath(w->peer.name, why);
      std::lock_guard lock(mutex);
      die(*w, why);
    }
    std::unique_lock lock(mutex);
    if (changed.wait_for(lock, tick, [&] { return stopping; }))
      return;
  }
}
