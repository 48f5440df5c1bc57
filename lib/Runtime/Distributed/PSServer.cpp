//===- PSServer.cpp - the gRPC service over a ParameterServer -------------===//

#include "heterps/Runtime/Distributed/PSServer.h"
#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/Distributed/Coordinator.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/Heartbeats.h"
#include "heterps/Runtime/Distributed/Roles.h"
#include "heterps/Support/PrintableLine.h"

#include "CheckpointParts.h"
#include "Services.grpc.pb.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

/// Messages echo what peers sent: one printable line.
static llvm::Error serverError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

namespace {

class Service final : public ParameterServerService::Service {
public:
  Service(ps::ParameterServer &server, SecurityOptions security,
          llvm::raw_ostream &log)
      : server(server), security(std::move(security)), log(log) {}

  grpc::Status Call(grpc::ServerContext *context, const ps::Request *request,
                    ps::Response *response) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    int64_t epoch = callEpoch(*context);
    server.handle(*request, *response, epoch);
    if (llvm::StringRef(response->error()).starts_with("fenced out"))
      logRefusal("a call of epoch " + std::to_string(epoch) +
                     " (fenced out: the job is at epoch " +
                     std::to_string(server.epoch()) + ")",
                 context->peer());
    return grpc::Status::OK;
  }

  grpc::Status SavePart(grpc::ServerContext *context,
                        const PartRequest *request, PartInfo *info) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    auto checkpoint = server.saveShard(shard);
    if (!checkpoint)
      return failed(checkpoint.takeError());
    auto written =
        writePart(checkpointDir, request->step(),
                  partName({Role::ParameterServer, shard}), *checkpoint);
    if (!written)
      return failed(written.takeError());
    *info = *written;
    return grpc::Status::OK;
  }

  grpc::Status LoadPart(grpc::ServerContext *context,
                        const PartRequest *request, PartInfo *info) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    ps::ShardCheckpoint checkpoint;
    if (llvm::Error e = readPart(checkpointDir, request->step(),
                                 partName({Role::ParameterServer, shard}),
                                 request->expected(), checkpoint))
      return failed(std::move(e));
    if (checkpoint.shard() != shard)
      return failed(serverError("the part is of shard " +
                                llvm::Twine(checkpoint.shard())));
    if (llvm::Error e = server.restoreShard(checkpoint))
      return failed(std::move(e));
    *info = request->expected();
    return grpc::Status::OK;
  }

  grpc::Status Heartbeat(grpc::ServerContext *context,
                         const HeartbeatRequest *request,
                         HeartbeatResponse *) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    if (Watchdog *w = watchdog.load())
      w->beat(std::chrono::milliseconds(request->timeout_ms()));
    return grpc::Status::OK;
  }

  grpc::Status Shutdown(grpc::ServerContext *context, const ShutdownRequest *,
                        ShutdownResponse *) override {
    if (grpc::Status s = refuse(*context); !s.ok())
      return s;
    requestStop();
    return grpc::Status::OK;
  }

  std::atomic<int64_t> refused{0};
  /// Where this shard writes its parts of checkpoints (PSShardOptions).
  std::string checkpointDir;
  int shard = 0;
  /// Told of the coordinator's heartbeats, when it has one.
  std::atomic<Watchdog *> watchdog{nullptr};

private:
  /// OK for a call that carries the job's token; else the refusal, logged.
  grpc::Status refuse(const grpc::ServerContext &context) {
    std::string refusal = checkToken(context, security);
    if (refusal.empty())
      return grpc::Status::OK;
    logRefusal(refusal, context.peer());
    return {grpc::StatusCode::UNAUTHENTICATED,
            "refused: " + refusal +
                " (this server belongs to another job, or the caller was "
                "given none)"};
  }

  static grpc::Status failed(llvm::Error e) {
    return {grpc::StatusCode::FAILED_PRECONDITION,
            heterps::printableLine(llvm::toString(std::move(e)))};
  }

  /// At most one line a second: a flood of bad calls must not flood the
  /// log.
  void logRefusal(const std::string &why, const std::string &peer) {
    ++refused;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(logMutex);
    if (now - lastLog < std::chrono::seconds(1))
      return;
    lastLog = now;
    log << "parameter server: refused a call from " << peer << ": " << why
        << " (" << refused.load() << " refused so far)\n";
    log.flush();
  }

  ps::ParameterServer &server;
  SecurityOptions security;
  llvm::raw_ostream &log;
  std::mutex logMutex;
  std::chrono::steady_clock::time_point lastLog;
};

} // namespace

struct PSServer::Impl {
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
};

PSServer::PSServer(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

PSServer::~PSServer() {
  impl->server->Shutdown();
  impl->server->Wait();
}

int64_t PSServer::refusedCalls() const { return impl->service->refused; }

void PSServer::setCheckpointDir(std::string dir, int shard) {
  impl->service->checkpointDir = std::move(dir);
  impl->service->shard = shard;
}

void PSServer::setWatchdog(Watchdog *watchdog) {
  impl->service->watchdog = watchdog;
}

llvm::Expected<std::unique_ptr<PSServer>>
PSServer::start(ps::ParameterServer &server, const std::string &address,
                SecurityOptions security, llvm::raw_ostream &log) {
  if (llvm::Error e = checkListenAddress(address, security))
    return std::move(e);
  auto impl = std::make_unique<Impl>();
  impl->service = std::make_unique<Service>(server, security, log);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, serverCredentials(security), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  // gRPC shares ports between servers by default (SO_REUSEPORT): a port
  // in use must be an error, not a second server on it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (auto [name, value] : transferTuning())
    builder.AddChannelArgument(name, value);
  builder.RegisterService(impl->service.get());
  impl->server = builder.BuildAndStart();
  if (!impl->server || port == 0)
    return serverError("cannot listen on " + address +
                       " (a port in use, or not an address of this host)");
  std::unique_ptr<PSServer> out(new PSServer(std::move(impl)));
  out->boundPort = port;
  return out;
}

llvm::Error distributed::runPSShard(const PSShardOptions &o,
                                    const SecurityOptions &security) {
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    return serverError("--shard " + llvm::Twine(o.shard) +
                       " is not one of the " + llvm::Twine(o.shards) +
                       " shards (--ps-shards)");
  // Before gRPC starts its threads, so that none of them takes the signal.
  blockStopSignals();
  ps::ServerOptions options;
  options.numShards = o.shards;
  options.served = {o.shard};
  options.configured = false;
  auto server = ps::ParameterServer::create(options);
  if (!server)
    return server.takeError();
  auto listening = PSServer::start(**server, o.listen, security);
  if (!listening)
    return listening.takeError();
  int port = (*listening)->port();
  llvm::errs() << "parameter server: shard " << o.shard << " of " << o.shards
               << " listening on port " << port
               << (security.tls() ? " (mutual TLS)" : "") << "\n";
  if (!o.portFile.empty())
    if (llvm::Error e =
            writeFileAtomically(o.portFile, [&](llvm::raw_ostream &os) {
              os << port << "\n";
              return llvm::Error::success();
            }))
      return e;
  (*listening)->setCheckpointDir(o.checkpointDir, o.shard);
  Watchdog watchdog;
  (*listening)->setWatchdog(&watchdog);
  if (!o.coordinator.empty()) {
    ProcessInfo self;
    self.set_role("ps");
    self.set_shard(o.shard);
    self.set_address(advertisedAddress(o.listen, port, o.advertise));
    auto map = registerWith(o.coordinator, self, security, o.timeout);
    if (!map)
      return map.takeError();
    watchdog.beat(o.heartbeatTimeout);
  }
  StopReason stop = waitForStopSignal();
  (*listening)->setWatchdog(nullptr);
  if (stop.failed)
    return serverError("parameter-server shard " + llvm::Twine(o.shard) +
                       " stopped: " + stop.why);
  llvm::errs() << "parameter server: shard " << o.shard << " stopping ("
               << stop.why << ")\n";
  return llvm::Error::success();
}
