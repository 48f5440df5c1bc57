//===- Supervisor.cpp - deaths detected, processes replaced, epochs -------===//

#include "heterps/Runtime/Distributed/Supervisor.h"

#include "CheckpointParts.h"
#include "Services.grpc.pb.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

static llvm::Error supervisorError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

Supervisor::Supervisor(Coordinator &coordinator, GrpcTransport &server,
                       RemoteReplicas &workers, const RegisterResponse &map,
                       SupervisorOptions o)
    : coordinator(coordinator), server(server), workers(workers),
      options(std::move(o)) {
  monitor = std::make_unique<HeartbeatMonitor>(
      options.security, options.heartbeatTimeout,
      [this](const std::string &name, const std::string &why) {
        // One write: other threads log too.
        llvm::errs() << ("heterps-run: " + name + " " + why +
                         ": given up for dead\n");
        // Nothing may wait for it: the step in flight ends now.
        this->workers.interrupt(name + " " + why);
        this->server.abortCalls();
      },
      options.probe);
  watch(map);
}

Supervisor::~Supervisor() { monitor.reset(); }

void Supervisor::watch(const RegisterResponse &map) {
  current = map;
  std::vector<HeartbeatMonitor::Peer> peers;
  JobShape &shape = options.shape;
  for (int rank = 1; rank < shape.worldSize(); ++rank) {
    auto role = roleOfRank(rank, shape);
    if (!role) {
      llvm::consumeError(role.takeError());
      continue;
    }
    HeartbeatMonitor::Peer peer;
    peer.rank = rank;
    peer.name = role->name();
    if (role->kind == Role::ParameterServer) {
      peer.parameterServer = true;
      peer.address = map.ps(role->shard);
    } else {
      for (const ProcessInfo &w : map.workers())
        if (w.stage() == role->stage && w.replica() == role->replica)
          peer.address = w.address();
    }
    peers.push_back(std::move(peer));
  }
  monitor->watch(std::move(peers), map.epoch());
}

void Supervisor::declareDead(int rank, const std::string &why) {
  monitor->declareDead(rank, why);
}

llvm::Error Supervisor::recover(
    const std::string &failure,
    const std::function<llvm::Error(const std::vector<int> &)> &remakeTables) {
  // A process's death may be seen a little after the step failed on it.
  HeartbeatMonitor::Deaths deaths = monitor->waitForDeaths(
      options.heartbeatTimeout + std::chrono::milliseconds(1000));
  if (deaths.empty())
    return supervisorError(failure);
  int64_t epoch = current.epoch() + 1;
  std::vector<int> ranks, shards;
  std::string names;
  for (const auto &[rank, why] : deaths) {
    ranks.push_back(rank);
    if (rank >= 1 && rank <= options.shape.shards)
      shards.push_back(rank - 1);
    auto role = roleOfRank(rank, options.shape);
    names += (names.empty() ? "" : ", ") +
             (role ? role->name() : "rank " + std::to_string(rank));
    if (!role)
      llvm::consumeError(role.takeError());
  }
  llvm::errs() << ("heterps-run: recovering: restarting " + names +
                   "; the job moves to epoch " + std::to_string(epoch) + "\n");
  coordinator.reopen(ranks, epoch);
  if (options.restart) {
    for (int rank : ranks)
      if (llvm::Error e = options.restart(rank))
        return e;
  } else {
    llvm::errs() << ("heterps-run: waiting up to " +
                     std::to_string(options.rejoinTimeout.count() / 1000) +
                     " s for the launcher to restart " + names + "\n");
  }
  std::function<llvm::Error()> check = options.check;
  if (!check)
    check = [] { return llvm::Error::success(); };
  auto map = coordinator.waitForAll(options.rejoinTimeout, check);
  if (!map) {
    std::string why = llvm::toString(map.takeError());
    coordinator.release(why);
    return supervisorError("cannot recover from '" + failure + "': " + why);
  }
  // The new processes hear heartbeats from now on: what follows may take
  // longer than their timeout (a large model's tables, a worker loading
  // its trainer).
  watch(*map);
  // From here on, calls of the old epoch are refused everywhere.
  std::vector<std::string> addresses(map->ps().begin(), map->ps().end());
  server.redirect(addresses);
  server.setEpoch(epoch);
  std::vector<ps::Request> fences(addresses.size());
  std::vector<ps::Response> answers(addresses.size());
  for (size_t s = 0; s < fences.size(); ++s) {
    fences[s].set_shard(static_cast<int>(s));
    fences[s].mutable_fence()->set_epoch(epoch);
  }
  llvm::Error fenced = server.send(fences, answers);
  for (const ps::Response &answer : answers)
    if (!fenced && !answer.error().empty())
      fenced = supervisorError(answer.error());
  if (fenced)
    return fenced;
  if (llvm::Error e = remakeTables(shards))
    return e;
  coordinator.release();
  return workers.reset(*map);
}

/// The address of `role`'s process in `map`.
static std::string addressOf(const RegisterResponse &map, const Role &role) {
  if (role.kind == Role::ParameterServer)
    return role.shard < map.ps_size() ? map.ps(role.shard) : "";
  for (const ProcessInfo &w : map.workers())
    if (w.stage() == role.stage && w.replica() == role.replica)
      return w.address();
  return "";
}

llvm::Error Supervisor::forEachProcess(
    const std::function<llvm::Error(const Role &, const std::string &)> &call) {
  int world = options.shape.worldSize();
  std::vector<std::string> failures(world);
  std::vector<std::thread> threads;
  for (int rank = 1; rank < world; ++rank) {
    auto role = roleOfRank(rank, options.shape);
    if (!role)
      return role.takeError();
    threads.emplace_back([&, rank, role = *role] {
      if (llvm::Error e = call(role, addressOf(current, role)))
        failures[rank] = role.name() + ": " + llvm::toString(std::move(e));
    });
  }
  for (std::thread &t : threads)
    t.join();
  for (const std::string &failure : failures)
    if (!failure.empty())
      return supervisorError(failure);
  return llvm::Error::success();
}

/// One SavePart or LoadPart call to the process at `address`.
static llvm::Error partCall(const Role &role, const std::string &address,
                            const SecurityOptions &security, bool save,
                            const PartRequest &request, PartInfo &answer) {
  auto channel = grpc::CreateCustomChannel(
      address, channelCredentials(security), channelArguments());
  grpc::ClientContext context;
  // A large table takes a while to write.
  startCall(context, security, std::chrono::minutes(10));
  grpc::Status status;
  if (role.kind == Role::ParameterServer) {
    auto stub = ParameterServerService::NewStub(channel);
    status = save ? stub->SavePart(&context, request, &answer)
                  : stub->LoadPart(&context, request, &answer);
  } else {
    auto stub = WorkerService::NewStub(channel);
    status = save ? stub->SavePart(&context, request, &answer)
                  : stub->LoadPart(&context, request, &answer);
  }
  if (!status.ok())
    return supervisorError(status.error_message());
  return llvm::Error::success();
}

llvm::Expected<std::vector<train::Trainer::Part>>
Supervisor::save(int64_t step) {
  std::mutex mutex;
  std::vector<train::Trainer::Part> parts;
  PartRequest request;
  request.set_step(step);
  if (llvm::Error e = forEachProcess(
          [&](const Role &role, const std::string &address) -> llvm::Error {
            PartInfo info;
            if (llvm::Error e = partCall(role, address, options.security,
                                         /*save=*/true, request, info))
              return e;
            if (info.name() != partName(role))
              return supervisorError("it wrote a part named '" + info.name() +
                                     "'");
            std::lock_guard lock(mutex);
            parts.push_back({info.name(), info.bytes(), info.xxh3()});
            return llvm::Error::success();
          }))
    return std::move(e);
  // In a stable order: the manifest does not change with the answers'.
  llvm::sort(parts,
             [](const auto &a, const auto &b) { return a.name < b.name; });
  return parts;
}

llvm::Error Supervisor::load(int64_t step,
                             const std::vector<train::Trainer::Part> &parts) {
  if (static_cast<int>(parts.size()) != options.shape.worldSize() - 1)
    return supervisorError(
        "the checkpoint has " + llvm::Twine(parts.size()) + " parts, the job " +
        llvm::Twine(options.shape.worldSize() - 1) + " processes");
  return forEachProcess(
      [&](const Role &role, const std::string &address) -> llvm::Error {
        std::string name = partName(role);
        auto part = llvm::find_if(parts, [&](const train::Trainer::Part &p) {
          return p.name == name;
        });
        if (part == parts.end())
          return supervisorError("the checkpoint has no part " + name);
        PartRequest request;
        request.set_step(step);
        request.mutable_expected()->set_name(part->name);
        request.mutable_expected()->set_bytes(part->bytes);
        request.mutable_expected()->set_xxh3(part->xxh3);
        PartInfo unused;
        return partCall(role, address, options.security, /*save=*/false,
                        request, unused);
      });
}
