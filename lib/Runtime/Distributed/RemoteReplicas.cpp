//===- RemoteReplicas.cpp - RunStep to every worker at once ---------------===//

#include "heterps/Runtime/Distributed/RemoteReplicas.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"

#include "TensorWire.h"

#include "Services.grpc.pb.h"

#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/Twine.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;
using pipeline::ReplicaId;

/// Messages echo what peers sent: one printable line.
static llvm::Error remoteError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

struct RemoteReplicas::Impl {
  struct Worker {
    ReplicaId id;
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<WorkerService::Stub> stub;
    std::string name() const {
      return "stage " + std::to_string(id.stage) + " replica " +
             std::to_string(id.replica) + " (" + address + ")";
    }
  };
  std::vector<Worker> workers;
  std::vector<int> replicas;
  SecurityOptions security;
  int64_t epoch = 0;

  /// Set by interrupt(): a process of the job died; the step in flight,
  /// and any later one until reset(), fails with it.
  std::mutex mutex;
  std::condition_variable changed;
  std::string interrupted;

  /// Tells every worker to give up the step (a peer failed), all at once:
  /// a stopped one costs its deadline once, not once per worker.
  void abortAll() {
    struct Call {
      grpc::ClientContext context;
      AbortResponse response;
    };
    std::vector<Call> calls(workers.size());
    AbortRequest request;
    request.set_epoch(epoch);
    std::mutex doneMutex;
    std::condition_variable finished;
    size_t done = 0;
    for (size_t i = 0; i < workers.size(); ++i) {
      // A live worker answers in a millisecond; a stopped one never does.
      startCall(calls[i].context, security, std::chrono::milliseconds(500));
      workers[i].stub->async()->Abort(&calls[i].context, &request,
                                      &calls[i].response, [&](grpc::Status) {
                                        std::lock_guard lock(doneMutex);
                                        ++done;
                                        finished.notify_all();
                                      });
    }
    std::unique_lock lock(doneMutex);
    finished.wait(lock, [&] { return done == workers.size(); });
  }

  void open(const RegisterResponse &map) {
    grpc::ChannelArguments args = channelArguments();
    auto credentials = channelCredentials(security);
    workers.clear();
    for (const ProcessInfo &p : map.workers()) {
      Worker w;
      w.id = {p.stage(), p.replica()};
      w.address = p.address();
      w.channel = grpc::CreateCustomChannel(p.address(), credentials, args);
      w.stub = WorkerService::NewStub(w.channel);
      workers.push_back(std::move(w));
    }
  }
};

RemoteReplicas::RemoteReplicas(std::unique_ptr<Impl> impl)
    : impl(std::move(impl)) {}
RemoteReplicas::~RemoteReplicas() = default;

llvm::Expected<std::unique_ptr<RemoteReplicas>>
RemoteReplicas::connect(const RegisterResponse &map, std::vector<int> replicas,
                        SecurityOptions security,
                        std::chrono::milliseconds timeout) {
  auto impl = std::make_unique<Impl>();
  impl->replicas = std::move(replicas);
  impl->security = std::move(security);
  impl->epoch = map.epoch();
  impl->open(map);
  // Connected before the first step, whose calls do not wait for a
  // channel: a TLS handshake that a loaded host finishes late would fail
  // it (three jobs at once under ASan on 2 cores: 11 of 12).
  auto deadline = std::chrono::system_clock::now() + timeout;
  for (const Impl::Worker &w : impl->workers)
    if (!w.channel->WaitForConnected(deadline))
      return remoteError(
          "cannot reach " + w.name() + " within " +
          llvm::Twine(static_cast<int64_t>(timeout.count())) + " ms" +
          (impl->security.tls() ? " (or it refused this process's certificate)"
                                : ""));
  return std::unique_ptr<RemoteReplicas>(new RemoteReplicas(std::move(impl)));
}

llvm::Error
RemoteReplicas::runStep(pipeline::StepInputs &step,
                        std::vector<pipeline::ReplicaStepStats> &stats) {
  const std::vector<int> &k = impl->replicas;
  int m = static_cast<int>(step.sizes.size());
  int last = static_cast<int>(k.size()) - 1;
  struct Call {
    grpc::ClientContext context;
    StepRequest request;
    StepResponse response;
    grpc::Status status;
  };
  size_t n = impl->workers.size();
  std::vector<Call> calls(n);
  for (size_t w = 0; w < n; ++w) {
    ReplicaId id = impl->workers[w].id;
    StepRequest &r = calls[w].request;
    r.set_epoch(impl->epoch);
    r.set_version(step.version);
    r.set_lr(step.lr);
    r.set_batch(step.batch);
    for (int64_t size : step.sizes)
      r.add_sizes(size);
    // Only what the process reads: stage 0 its micro-batches' samples,
    // the last stage their targets.
    for (int j = 0; j < m; ++j) {
      if (id.stage == 0 && j % k[0] == id.replica)
        if (llvm::Error e = toWire(step.inputs[j], (*r.mutable_inputs())[j]))
          return e;
      if (id.stage == last && j % k[last] == id.replica)
        if (llvm::Error e = toWire(step.targets[j], (*r.mutable_targets())[j]))
          return e;
    }
    // A step that takes longer than this is hung (its process still
    // answering heartbeats).
    startCall(calls[w].context, impl->security, kStepDeadline);
  }
  // Step calls report here; interrupt() too (Impl::changed).
  std::unique_lock lock(impl->mutex);
  if (!impl->interrupted.empty())
    return remoteError("the step was not run: " + impl->interrupted);
  size_t done = 0;
  bool failed = false;
  for (size_t w = 0; w < n; ++w)
    impl->workers[w].stub->async()->RunStep(
        &calls[w].context, &calls[w].request, &calls[w].response,
        [&, w](grpc::Status status) {
          std::lock_guard lock(impl->mutex);
          calls[w].status = std::move(status);
          failed = failed || !calls[w].status.ok() ||
                   !calls[w].response.error().empty();
          ++done;
          impl->changed.notify_all();
        });
  bool aborted = false;
  while (done < n) {
    impl->changed.wait(lock, [&] {
      return done == n || ((failed || !impl->interrupted.empty()) && !aborted);
    });
    if ((failed || !impl->interrupted.empty()) && !aborted) {
      // The others may wait for values the failed one will not send; a
      // process given up for dead may never answer.
      aborted = true;
      lock.unlock();
      impl->abortAll();
      for (Call &c : calls)
        c.context.TryCancel();
      lock.lock();
    }
  }
  std::string interrupted = impl->interrupted;
  lock.unlock();
  if (!interrupted.empty())
    return remoteError(interrupted);
  // The failure that caused the others: a worker that cannot be reached
  // first, then one that failed on its own, then the aborts and the calls
  // cancelled because of another.
  std::string error;
  int rank = 3;
  for (size_t w = 0; w < n; ++w) {
    const Call &c = calls[w];
    std::string why =
        !c.status.ok() ? c.status.error_message() : c.response.error();
    if (why.empty())
      continue;
    int r = c.status.error_code() == grpc::StatusCode::UNAVAILABLE ? 0
            : c.status.error_code() == grpc::StatusCode::CANCELLED ||
                    why.find("aborted") != std::string::npos
                ? 2
                : 1;
    if (r < rank) {
      rank = r;
      error = impl->workers[w].name() + ": " + why;
    }
  }
  if (!error.empty())
    return remoteError(error);
  stats.clear();
  for (const Call &c : calls) {
    for (const MicroBatchLoss &l : c.response.losses()) {
      if (l.micro_batch() < 0 || l.micro_batch() >= m)
        return remoteError("a worker reported micro-batch " +
                           llvm::Twine(l.micro_batch()));
      train::LossResult &out = step.losses[l.micro_batch()];
      out.loss = l.loss();
      out.correct = l.correct();
      out.judged = l.judged();
    }
    for (const ReplicaStats &r : c.response.stats()) {
      pipeline::ReplicaStepStats s;
      s.stage = r.stage();
      s.replica = r.replica();
      s.pull = r.pull();
      s.forward = r.forward();
      s.backward = r.backward();
      s.push = r.push();
      s.computeBegin = r.compute_begin();
      s.computeEnd = r.compute_end();
      s.microBatches = r.micro_batches();
      s.stashSlots = r.stash_slots();
      stats.push_back(s);
    }
  }
  return llvm::Error::success();
}

llvm::Expected<WeightMap> RemoteReplicas::stageWeights(int stage) {
  for (Impl::Worker &w : impl->workers) {
    if (w.id.stage != stage || w.id.replica != 0)
      continue;
    grpc::ClientContext context;
    startCall(context, impl->security, std::chrono::minutes(2));
    WeightsRequest request;
    request.set_stage(stage);
    WeightsResponse response;
    grpc::Status status = w.stub->Weights(&context, request, &response);
    if (!status.ok())
      return remoteError(w.name() + ": " + status.error_message());
    WeightMap out;
    for (const auto &[v, data] : response.weights()) {
      auto t = fromWire(data);
      if (!t)
        return t.takeError();
      out.emplace(v, std::move(*t));
    }
    return out;
  }
  return remoteError("no worker runs stage " + llvm::Twine(stage) +
                     " replica 0");
}

llvm::Error RemoteReplicas::setWeights(const WeightMap &weights) {
  WeightsResponse request;
  for (const auto &[v, t] : weights)
    if (llvm::Error e = toWire(t, (*request.mutable_weights())[v]))
      return e;
  for (Impl::Worker &w : impl->workers) {
    grpc::ClientContext context;
    startCall(context, impl->security, std::chrono::minutes(2));
    SetWeightsResponse unused;
    grpc::Status status = w.stub->SetWeights(&context, request, &unused);
    if (!status.ok())
      return remoteError(w.name() + ": " + status.error_message());
  }
  return llvm::Error::success();
}

void RemoteReplicas::interrupt(const std::string &why) {
  std::lock_guard lock(impl->mutex);
  if (impl->interrupted.empty())
    impl->interrupted = why;
  impl->changed.notify_all();
}

llvm::Error RemoteReplicas::reset(const RegisterResponse &map) {
  {
    std::lock_guard lock(impl->mutex);
    impl->interrupted.clear();
    impl->epoch = map.epoch();
  }
  impl->open(map);
  ResetRequest request;
  request.set_epoch(map.epoch());
  *request.mutable_map() = map;
  for (Impl::Worker &w : impl->workers) {
    grpc::ClientContext context;
    // A restarted worker answers once it has made its trainer.
    startCall(context, impl->security, std::chrono::minutes(2));
    ResetResponse unused;
    grpc::Status status = w.stub->Reset(&context, request, &unused);
    if (!status.ok())
      return remoteError(w.name() + ": reset: " + status.error_message());
  }
  return llvm::Error::success();
}

void RemoteReplicas::shutdown() {
  for (Impl::Worker &w : impl->workers) {
    grpc::ClientContext context;
    startCall(context, impl->security, std::chrono::seconds(5));
    ShutdownResponse unused;
    w.stub->Shutdown(&context, ShutdownRequest(), &unused);
  }
}
