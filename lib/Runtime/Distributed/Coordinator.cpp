//===- Coordinator.cpp - rendezvous over gRPC -----------------------------===//

#include "heterps/Runtime/Distributed/Coordinator.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"

#include "Services.grpc.pb.h"

#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <mutex>
#include <optional>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

/// Messages echo what peers sent: one printable line.
static llvm::Error coordinatorError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

struct Coordinator::Impl final : CoordinatorService::Service {
  JobShape shape;
  std::string job;
  SecurityOptions security;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::optional<ProcessInfo>> shards, workers;
  /// The first process refused: the job cannot start.
  std::string refusal;
  bool released = false;
  std::string failure;
  RegisterResponse map;

  /// Index of a worker among all workers, or -1.
  int workerIndex(int stage, int replica) const {
    if (stage < 0 || stage >= static_cast<int>(shape.replicas.size()) ||
        replica < 0 || replica >= shape.replicas[stage])
      return -1;
    int index = replica;
    for (int s = 0; s < stage; ++s)
      index += shape.replicas[s];
    return index;
  }

  /// Why `info` cannot join, or empty. Under the lock.
  std::string admit(const ProcessInfo &info, const std::string &peer) {
    std::optional<ProcessInfo> *slot = nullptr;
    std::string who;
    if (info.role() == "ps") {
      who = "parameter-server shard " + std::to_string(info.shard());
      if (info.shard() < 0 || info.shard() >= shape.shards)
        return who + " from " + peer + " is not one of the job's " +
               std::to_string(shape.shards) + " shards";
      slot = &shards[info.shard()];
    } else if (info.role() == "worker") {
      who = "worker stage " + std::to_string(info.stage()) + " replica " +
            std::to_string(info.replica());
      int index = workerIndex(info.stage(), info.replica());
      if (index < 0)
        return who + " from " + peer + " is not a replica of this job";
      if (info.job() != job)
        return who + " from " + peer + " computed job " + info.job() +
               ", the coordinator " + job + ": its model or options differ";
      slot = &workers[index];
    } else {
      return "a process from " + peer + " with unknown role '" + info.role() +
             "'";
    }
    if (*slot)
      return who + " registered twice (" + (*slot)->address() + " and " +
             info.address() + ")";
    *slot = info;
    return {};
  }

  grpc::Status Register(grpc::ServerContext *context, const ProcessInfo *info,
                        RegisterResponse *response) override {
    std::string refused = checkToken(*context, security);
    if (!refused.empty())
      return {grpc::StatusCode::UNAUTHENTICATED, "refused: " + refused};
    std::unique_lock lock(mutex);
    // What the caller sent is echoed in one printable line.
    std::string why = heterps::printableLine(admit(*info, context->peer()));
    if (!why.empty()) {
      if (refusal.empty())
        refusal = why;
      changed.notify_all();
      return {grpc::StatusCode::FAILED_PRECONDITION, why};
    }
    changed.notify_all();
    changed.wait(lock, [&] { return released; });
    if (!failure.empty())
      return {grpc::StatusCode::ABORTED, "the job failed: " + failure};
    *response = map;
    return grpc::Status::OK;
  }
};

Coordinator::Coordinator(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

Coordinator::~Coordinator() {
  release("the coordinator stopped");
  impl->server->Shutdown();
  impl->server->Wait();
}

int Coordinator::port() const { return impl->port; }

llvm::Expected<std::unique_ptr<Coordinator>>
Coordinator::start(const std::string &address, JobShape shape, std::string job,
                   SecurityOptions security) {
  if (llvm::Error e = checkListenAddress(address, security))
    return std::move(e);
  auto impl = std::make_unique<Impl>();
  impl->shards.resize(shape.shards);
  impl->workers.resize(shape.workers());
  impl->shape = std::move(shape);
  impl->job = std::move(job);
  impl->security = security;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, serverCredentials(security), &impl->port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(impl.get());
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0)
    return coordinatorError("the coordinator cannot listen on " + address +
                            " (a port in use, or not an address of this "
                            "host)");
  return std::unique_ptr<Coordinator>(new Coordinator(std::move(impl)));
}

llvm::Expected<RegisterResponse>
Coordinator::waitForAll(std::chrono::milliseconds timeout,
                        const std::function<llvm::Error()> &check) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(impl->mutex);
  while (true) {
    if (!impl->refusal.empty())
      return coordinatorError(impl->refusal);
    bool all = true;
    for (auto *group : {&impl->shards, &impl->workers})
      for (const auto &p : *group)
        all = all && p.has_value();
    if (all)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::string missing;
      for (auto [i, p] : llvm::enumerate(impl->shards))
        if (!p)
          missing += " ps" + std::to_string(i);
      int index = 0;
      for (size_t s = 0; s < impl->shape.replicas.size(); ++s)
        for (int r = 0; r < impl->shape.replicas[s]; ++r)
          if (!impl->workers[index++])
            missing +=
                " worker s" + std::to_string(s) + "r" + std::to_string(r);
      return coordinatorError(
          "these processes did not register within " +
          llvm::Twine(static_cast<int64_t>(timeout.count() / 1000)) +
          " s:" + missing);
    }
    lock.unlock();
    if (llvm::Error e = check())
      return std::move(e);
    lock.lock();
    impl->changed.wait_for(lock, std::chrono::milliseconds(100));
  }
  RegisterResponse &map = impl->map;
  int64_t epoch = map.epoch();
  map.Clear();
  map.set_epoch(epoch);
  for (const auto &p : impl->shards)
    map.add_ps(p->address());
  for (const auto &p : impl->workers)
    *map.add_workers() = *p;
  return map;
}

void Coordinator::release(std::string failure) {
  {
    std::lock_guard lock(impl->mutex);
    if (impl->released)
      return;
    impl->released = true;
    impl->failure = std::move(failure);
  }
  impl->changed.notify_all();
}

void Coordinator::reopen(const std::vector<int> &ranks, int64_t epoch) {
  std::lock_guard lock(impl->mutex);
  for (int rank : ranks) {
    int shards = impl->shape.shards;
    if (rank >= 1 && rank <= shards)
      impl->shards[rank - 1].reset();
    else if (rank > shards && rank - 1 - shards < impl->shape.workers())
      impl->workers[rank - 1 - shards].reset();
  }
  impl->released = false;
  impl->failure.clear();
  impl->map.set_epoch(epoch);
}

llvm::Expected<RegisterResponse>
distributed::registerWith(const std::string &address, const ProcessInfo &self,
                          const SecurityOptions &security,
                          std::chrono::milliseconds timeout) {
  grpc::ChannelArguments args = channelArguments();
  auto channel =
      grpc::CreateCustomChannel(address, channelCredentials(security), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + timeout))
    return coordinatorError(
        "cannot reach the coordinator at " + address + " within " +
        llvm::Twine(static_cast<int64_t>(timeout.count() / 1000)) + " s");
  auto stub = CoordinatorService::NewStub(channel);
  grpc::ClientContext context;
  // The coordinator answers once every process has come (at most 120 s)
  // and the tables are made.
  startCall(context, security, std::chrono::minutes(10));
  RegisterResponse map;
  grpc::Status status = stub->Register(&context, self, &map);
  if (!status.ok())
    return coordinatorError("the coordinator at " + address + ": " +
                            status.error_message());
  return map;
}
