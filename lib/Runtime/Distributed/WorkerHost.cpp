//===- WorkerHost.cpp - the worker process's service ----------------------===//

#include "heterps/Runtime/Distributed/WorkerHost.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/Heartbeats.h"
#include "heterps/Runtime/Distributed/Roles.h"

#include "CheckpointParts.h"
#include "StageLinks.h"
#include "TensorWire.h"

#include "heterps/Support/PrintableLine.h"

#include "Services.grpc.pb.h"

#include "llvm/ADT/Twine.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <set>
#include <shared_mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;
using pipeline::ReplicaId;

static std::map<std::pair<int, int>, std::string>
addressesOf(const RegisterResponse &map);

struct WorkerHost::Impl final : WorkerService::Service {
  SecurityOptions security;
  pipeline::Mailbox mailbox;
  std::unique_ptr<StageLinks> stageLinks;
  std::atomic<GrpcTransport *> psTransport{nullptr};
  std::unique_ptr<Watchdog> watchdog;
  /// The job's epoch as this process knows it. Deliveries hold it shared
  /// from their check to the mailbox, a reset exclusively: no value of an
  /// old epoch gets in after the reset cleared the mailbox.
  std::shared_mutex epochMutex;
  int64_t epoch = 0;
  /// Held by a running step; a reset waits for it.
  std::mutex stepMutex;
  /// Where this process writes its parts of checkpoints.
  std::string checkpointDir;
  bool stopped = false;
  std::vector<ReplicaId> local;
  std::vector<int> replicas;
  std::unique_ptr<grpc::Server> server;
  int port = 0;

  std::mutex mutex;
  std::condition_variable attached;
  pipeline::PipelineTrainer *trainer = nullptr;

  grpc::Status refuse(const grpc::ServerContext &context) {
    std::string why = checkToken(context, security);
    if (why.empty())
      return grpc::Status::OK;
    return {grpc::StatusCode::UNAUTHENTICATED, "refused: " + why};
  }

  /// The trainer, once attached (a step may come while this process is
  /// still preparing it).
  pipeline::PipelineTrainer *ready() {
    std::unique_lock lock(mutex);
    attached.wait_for(lock, std::chrono::minutes(10),
                      [&] { return trainer != nullptr; });
    return trainer;
  }

  grpc::Status RunStep(grpc::ServerContext *context, const StepRequest *request,
                       StepResponse *response) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    pipeline::PipelineTrainer *t = ready();
    if (!t) {
      response->set_error("the worker is not ready");
      return grpc::Status::OK;
    }
    auto fail = [&](llvm::Error e) {
      response->set_error(heterps::printableLine(llvm::toString(std::move(e))));
      return grpc::Status::OK;
    };
    std::lock_guard running(stepMutex);
    if (int64_t ours = currentEpoch(); request->epoch() != ours)
      return fail(llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "a step of epoch " + llvm::Twine(request->epoch()) +
              " for a worker at epoch " + llvm::Twine(ours)));
    pipeline::StepInputs step;
    step.version = request->version();
    step.lr = request->lr();
    step.batch = request->batch();
    step.sizes.assign(request->sizes().begin(), request->sizes().end());
    int m = static_cast<int>(step.sizes.size());
    if (m != t->settings().microBatches)
      return fail(llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "a step of " + llvm::Twine(m) + " micro-batches for a trainer of " +
              llvm::Twine(t->settings().microBatches)));
    step.inputs.resize(m);
    step.targets.resize(m);
    step.losses.resize(m);
    for (auto *field : {&request->inputs(), &request->targets()})
      for (const auto &[j, data] : *field) {
        if (j < 0 || j >= m)
          return fail(llvm::createStringError(llvm::inconvertibleErrorCode(),
                                              "micro-batch " + llvm::Twine(j) +
                                                  " is out of range"));
        auto tensor = fromWire(data);
        if (!tensor)
          return fail(tensor.takeError());
        (field == &request->inputs() ? step.inputs : step.targets)[j] =
            std::move(*tensor);
      }
    std::vector<pipeline::ReplicaStepStats> stats;
    if (llvm::Error e = t->runLocal(step, stats))
      return fail(std::move(e));
    if (std::string broken = stageLinks->failure(); !broken.empty()) {
      response->set_error(broken);
      return grpc::Status::OK;
    }
    int last = static_cast<int>(replicas.size()) - 1;
    for (int j = 0; j < m; ++j)
      if (llvm::is_contained(local, ReplicaId{last, j % replicas[last]})) {
        MicroBatchLoss *loss = response->add_losses();
        loss->set_micro_batch(j);
        loss->set_loss(step.losses[j].loss);
        loss->set_correct(step.losses[j].correct);
        loss->set_judged(step.losses[j].judged);
      }
    for (const pipeline::ReplicaStepStats &r : stats) {
      ReplicaStats *out = response->add_stats();
      out->set_stage(r.stage);
      out->set_replica(r.replica);
      out->set_pull(r.pull);
      out->set_forward(r.forward);
      out->set_backward(r.backward);
      out->set_push(r.push);
      out->set_compute_begin(r.computeBegin);
      out->set_compute_end(r.computeEnd);
      out->set_micro_batches(r.microBatches);
      out->set_stash_slots(r.stashSlots);
    }
    return grpc::Status::OK;
  }

  grpc::Status Abort(grpc::ServerContext *context, const AbortRequest *request,
                     AbortResponse *) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    if (request->epoch() == currentEpoch())
      abortStep();
    return grpc::Status::OK;
  }

  /// Ends the step that runs, if any: nothing may wait on a dead peer, nor
  /// on the parameter server.
  void abortStep() {
    mailbox.abort();
    if (GrpcTransport *t = psTransport.load())
      t->abortCalls();
  }

  int64_t currentEpoch() {
    std::shared_lock lock(epochMutex);
    return epoch;
  }

  grpc::Status Heartbeat(grpc::ServerContext *context,
                         const HeartbeatRequest *request,
                         HeartbeatResponse *) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    std::lock_guard lock(mutex);
    if (watchdog)
      watchdog->beat(std::chrono::milliseconds(request->timeout_ms()));
    return grpc::Status::OK;
  }

  grpc::Status Reset(grpc::ServerContext *context, const ResetRequest *request,
                     ResetResponse *) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    if (!ready() || !stageLinks)
      return {grpc::StatusCode::UNAVAILABLE, "the worker is not ready"};
    // The step of the old epoch may still wait (its abort lost).
    abortStep();
    std::lock_guard running(stepMutex);
    std::unique_lock lock(epochMutex);
    if (request->epoch() < epoch)
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "a reset to epoch " + std::to_string(request->epoch()) +
                  " of a worker at epoch " + std::to_string(epoch)};
    epoch = request->epoch();
    mailbox.clear();
    stageLinks->reset(epoch, addressesOf(request->map()));
    GrpcTransport *t = psTransport.load();
    t->redirect({request->map().ps().begin(), request->map().ps().end()});
    t->setEpoch(epoch);
    return grpc::Status::OK;
  }

  grpc::Status Deliver(grpc::ServerContext *context,
                       grpc::ServerReader<Packet> *reader,
                       StreamEnd *) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    Packet packet;
    // What this stream's slots last carried: the sender sends it once.
    StreamLayouts layouts;
    while (reader->Read(&packet)) {
      std::shared_lock epochLock(epochMutex);
      // From a process of an earlier epoch, given up for dead.
      if (packet.epoch() < epoch)
        continue;
      if (packet.direction() != 0 && packet.direction() != 1)
        return {grpc::StatusCode::INVALID_ARGUMENT, "a packet's direction "
                                                    "is 0 or 1"};
      std::vector<Tensor> values;
      for (int i = 0; i < packet.values_size(); ++i) {
        TensorData &data = *packet.mutable_values(i);
        if (llvm::Error e = layouts.restore(
                {packet.direction(), packet.boundary(), i}, data))
          return {grpc::StatusCode::INVALID_ARGUMENT,
                  llvm::toString(std::move(e))};
        auto t = fromWire(data);
        if (!t)
          return {grpc::StatusCode::INVALID_ARGUMENT,
                  llvm::toString(t.takeError())};
        values.push_back(std::move(*t));
      }
      mailbox.deliver(
          packet.step(),
          static_cast<pipeline::StageExchange::Direction>(packet.direction()),
          packet.boundary(), packet.micro_batch(), std::move(values));
    }
    return grpc::Status::OK;
  }

  grpc::Status Weights(grpc::ServerContext *context,
                       const WeightsRequest *request,
                       WeightsResponse *response) override {
    pipeline::PipelineTrainer *t = nullptr;
    if (grpc::Status s = serving(*context, t); !s.ok())
      return s;
    auto weights = t->localWeights({request->stage(), request->replica()});
    if (!weights)
      return {grpc::StatusCode::NOT_FOUND, llvm::toString(weights.takeError())};
    for (const auto &[v, tensor] : *weights)
      if (llvm::Error e = toWire(tensor, (*response->mutable_weights())[v]))
        return {grpc::StatusCode::INTERNAL, llvm::toString(std::move(e))};
    return grpc::Status::OK;
  }

  /// The call's token checked and the trainer attached (`t`), or why not.
  grpc::Status serving(const grpc::ServerContext &context,
                       pipeline::PipelineTrainer *&t) {
    if (grpc::Status s = refuse(context); !s.ok())
      return s;
    t = ready();
    if (!t)
      return {grpc::StatusCode::UNAVAILABLE, "the worker is not ready"};
    return grpc::Status::OK;
  }

  /// Sets the local replicas' copies of the weights `message` holds.
  static grpc::Status setWeights(pipeline::PipelineTrainer &t,
                                 const WeightsResponse &message) {
    WeightMap weights;
    for (const auto &[v, data] : message.weights()) {
      auto tensor = fromWire(data);
      if (!tensor)
        return {grpc::StatusCode::INVALID_ARGUMENT,
                llvm::toString(tensor.takeError())};
      weights.emplace(v, std::move(*tensor));
    }
    t.setLocalWeights(weights);
    return grpc::Status::OK;
  }

  /// This process's replica, as a checkpoint part names it.
  std::string part() const {
    return partName({Role::Worker, 0, local[0].stage, local[0].replica});
  }

  grpc::Status SavePart(grpc::ServerContext *context,
                        const PartRequest *request, PartInfo *info) override {
    pipeline::PipelineTrainer *t = nullptr;
    if (grpc::Status s = serving(*context, t); !s.ok())
      return s;
    WeightsResponse weights;
    auto local = t->localWeights(this->local[0]);
    if (!local)
      return failed(local.takeError());
    // The parameters are the shards' to save; what is the replica's own
    // (running statistics) is this part.
    std::set<std::string> parameters;
    for (const auto &[name, size] : t->parameters())
      parameters.insert(name);
    for (const auto &[v, tensor] : *local)
      if (!parameters.count(t->plan().values(v).name()))
        if (llvm::Error e = toWire(tensor, (*weights.mutable_weights())[v]))
          return failed(std::move(e));
    auto written = writePart(checkpointDir, request->step(), part(), weights);
    if (!written)
      return failed(written.takeError());
    *info = *written;
    return grpc::Status::OK;
  }

  grpc::Status LoadPart(grpc::ServerContext *context,
                        const PartRequest *request, PartInfo *info) override {
    pipeline::PipelineTrainer *t = nullptr;
    if (grpc::Status s = serving(*context, t); !s.ok())
      return s;
    WeightsResponse saved;
    if (llvm::Error e = readPart(checkpointDir, request->step(), part(),
                                 request->expected(), saved))
      return failed(std::move(e));
    if (grpc::Status s = setWeights(*t, saved); !s.ok())
      return s;
    *info = request->expected();
    return grpc::Status::OK;
  }

  static grpc::Status failed(llvm::Error e) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            heterps::printableLine(llvm::toString(std::move(e)))};
  }

  grpc::Status SetWeights(grpc::ServerContext *context,
                          const WeightsResponse *request,
                          SetWeightsResponse *) override {
    pipeline::PipelineTrainer *t = nullptr;
    if (grpc::Status s = serving(*context, t); !s.ok())
      return s;
    return setWeights(*t, *request);
  }

  grpc::Status Shutdown(grpc::ServerContext *context, const ShutdownRequest *,
                        ShutdownResponse *) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    requestStop();
    return grpc::Status::OK;
  }
};

WorkerHost::WorkerHost(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

WorkerHost::~WorkerHost() {
  stop();
  impl->stageLinks.reset();
}

void WorkerHost::stop() {
  if (impl->stopped)
    return;
  impl->stopped = true;
  {
    std::lock_guard lock(impl->mutex);
    impl->watchdog.reset();
  }
  // A step still running (this process was cut off mid-step) ends: it
  // waits for nothing more.
  impl->abortStep();
  // Cancels the streams neighbours still hold open (they are stopping
  // too): waiting for them to close would wait for each other.
  impl->server->Shutdown(std::chrono::system_clock::now());
  impl->server->Wait();
}

int WorkerHost::port() const { return impl->port; }

llvm::Expected<std::unique_ptr<WorkerHost>>
WorkerHost::start(const std::string &address, SecurityOptions security) {
  if (llvm::Error e = checkListenAddress(address, security))
    return std::move(e);
  auto impl = std::make_unique<Impl>();
  impl->security = security;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, serverCredentials(security), &impl->port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (auto [name, value] : transferTuning())
    builder.AddChannelArgument(name, value);
  builder.RegisterService(impl.get());
  impl->server = builder.BuildAndStart();
  if (!impl->server || impl->port == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "a worker cannot listen on " + address +
                                       " (a port in use, or not an address "
                                       "of this host)");
  return std::unique_ptr<WorkerHost>(new WorkerHost(std::move(impl)));
}

static std::map<std::pair<int, int>, std::string>
addressesOf(const RegisterResponse &map) {
  std::map<std::pair<int, int>, std::string> addresses;
  for (const ProcessInfo &w : map.workers())
    addresses[{w.stage(), w.replica()}] = w.address();
  return addresses;
}

pipeline::StageExchange &
WorkerHost::links(const RegisterResponse &map, std::vector<ReplicaId> local,
                  std::vector<int> replicas, GrpcTransport &server,
                  std::chrono::milliseconds heartbeatTimeout) {
  {
    std::lock_guard lock(impl->mutex);
    impl->watchdog = std::make_unique<Watchdog>();
    impl->watchdog->beat(heartbeatTimeout);
  }
  {
    std::unique_lock lock(impl->epochMutex);
    impl->epoch = map.epoch();
  }
  server.setEpoch(map.epoch());
  impl->psTransport = &server;
  impl->local = local;
  impl->replicas = replicas;
  impl->stageLinks = std::make_unique<StageLinks>(
      impl->mailbox, std::move(local), std::move(replicas), addressesOf(map),
      impl->security, map.epoch());
  return *impl->stageLinks;
}

void WorkerHost::setCheckpointDir(std::string dir) {
  impl->checkpointDir = std::move(dir);
}

void WorkerHost::attach(pipeline::PipelineTrainer &trainer) {
  {
    std::lock_guard lock(impl->mutex);
    impl->trainer = &trainer;
  }
  impl->attached.notify_all();
}

StopReason WorkerHost::waitForShutdown() { return waitForStopSignal(); }
