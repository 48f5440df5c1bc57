//===- PSServer.cpp - the gRPC service over a ParameterServer -------------===//

#include "heterps/Runtime/Distributed/PSServer.h"
#include "heterps/Runtime/AtomicFile.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"

#include "PSService.grpc.pb.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <csignal>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

static llvm::Error serverError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

namespace {

class Service final : public ParameterServerService::Service {
public:
  Service(ps::ParameterServer &server, SecurityOptions security,
          llvm::raw_ostream &log)
      : server(server), security(std::move(security)), log(log) {}

  grpc::Status Call(grpc::ServerContext *context, const ps::Request *request,
                    ps::Response *response) override {
    std::string refusal = checkToken(*context, security);
    if (!refusal.empty()) {
      logRefusal(refusal, context->peer());
      return {grpc::StatusCode::UNAUTHENTICATED,
              "refused: " + refusal +
                  " (this server belongs to another "
                  "job, or the caller was given none)"};
    }
    server.handle(*request, *response);
    return grpc::Status::OK;
  }

  std::atomic<int64_t> refused{0};

private:
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
  builder.RegisterService(impl->service.get());
  impl->server = builder.BuildAndStart();
  if (!impl->server || port == 0)
    return serverError("cannot listen on " + address +
                       " (a port in use, or not an address of this host)");
  std::unique_ptr<PSServer> out(new PSServer(std::move(impl)));
  out->boundPort = port;
  return out;
}

llvm::Error distributed::runPSShard(int shard, int shards,
                                    const std::string &address,
                                    const SecurityOptions &security,
                                    const std::string &portFile) {
  if (shards < 1 || shard < 0 || shard >= shards)
    return serverError("--shard " + llvm::Twine(shard) + " is not one of the " +
                       llvm::Twine(shards) + " shards (--ps-shards)");
  // SIGTERM and SIGINT wait for sigwait below, on this thread; blocked
  // before gRPC starts its threads so none of them takes the signal.
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGTERM);
  sigaddset(&stopSignals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  ps::ServerOptions options;
  options.numShards = shards;
  options.served = {shard};
  options.configured = false;
  auto server = ps::ParameterServer::create(options);
  if (!server)
    return server.takeError();
  auto listening = PSServer::start(**server, address, security);
  if (!listening)
    return listening.takeError();
  llvm::errs() << "parameter server: shard " << shard << " of " << shards
               << " listening on port " << (*listening)->port()
               << (security.tls() ? " (mutual TLS)" : "") << "\n";
  if (!portFile.empty())
    if (llvm::Error e =
            writeFileAtomically(portFile, [&](llvm::raw_ostream &os) {
              os << (*listening)->port() << "\n";
              return llvm::Error::success();
            }))
      return e;
  int signal = 0;
  sigwait(&stopSignals, &signal);
  llvm::errs() << "parameter server: shard " << shard << " stopping ("
               << (signal == SIGTERM ? "SIGTERM" : "SIGINT") << ")\n";
  return llvm::Error::success();
}
