//===- GrpcTransport.cpp - one channel per shard's server -----------------===//

#include "heterps/Runtime/Distributed/GrpcTransport.h"

#include "Services.grpc.pb.h"

#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/Twine.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

/// Messages echo what peers sent: one printable line.
static llvm::Error transportError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

struct GrpcTransport::Shard {
  std::string address;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<ParameterServerService::Stub> stub;
};

GrpcTransport::GrpcTransport() = default;
GrpcTransport::~GrpcTransport() = default;

std::shared_ptr<GrpcTransport::Shard>
GrpcTransport::open(const std::string &address,
                    const SecurityOptions &security) {
  auto shard = std::make_shared<Shard>();
  shard->address = address;
  shard->channel = grpc::CreateCustomChannel(
      address, channelCredentials(security), channelArguments());
  shard->stub = ParameterServerService::NewStub(shard->channel);
  return shard;
}

int GrpcTransport::numServers() const {
  std::lock_guard lock(mutex);
  return static_cast<int>(shards.size());
}

std::shared_ptr<GrpcTransport::Shard> GrpcTransport::shard(int index) const {
  std::lock_guard lock(mutex);
  if (index < 0 || index >= static_cast<int>(shards.size()))
    return nullptr;
  return shards[index];
}

void GrpcTransport::setCallTimeout(std::chrono::milliseconds timeout) {
  callTimeoutMs = timeout.count();
}

std::chrono::milliseconds GrpcTransport::retryFor() const {
  return std::chrono::milliseconds(callTimeoutMs.load());
}

void GrpcTransport::setEpoch(int64_t epoch) {
  std::lock_guard lock(mutex);
  currentEpoch = epoch;
  aborted = false;
}

void GrpcTransport::abortCalls() {
  std::lock_guard lock(mutex);
  aborted = true;
  for (grpc::ClientContext *context : inFlight)
    context->TryCancel();
}

void GrpcTransport::redirect(const std::vector<std::string> &to) {
  std::lock_guard lock(mutex);
  shards.resize(to.size());
  for (size_t i = 0; i < to.size(); ++i)
    if (!shards[i] || shards[i]->address != to[i])
      shards[i] = open(to[i], security);
  addresses = to;
}

llvm::Error GrpcTransport::begin(grpc::ClientContext &context) {
  startCall(context, security, retryFor());
  context.AddMetadata(kEpochKey, std::to_string(currentEpoch.load()));
  std::lock_guard lock(mutex);
  if (aborted)
    return transportError("the step was given up (a process of the job "
                          "failed)");
  inFlight.insert(&context);
  return llvm::Error::success();
}

void GrpcTransport::end(grpc::ClientContext &context) {
  std::lock_guard lock(mutex);
  inFlight.erase(&context);
}

/// A failed call as an error; one that may pass is a TransientError.
static llvm::Error callError(const grpc::Status &status, int shard,
                             const std::string &address) {
  std::string message =
      heterps::printableLine("parameter-server shard " + std::to_string(shard) +
                             " at " + address + ": " + status.error_message());
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
    return llvm::make_error<ps::TransientError>(message);
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

int64_t distributed::callEpoch(const grpc::ServerContext &context) {
  const auto &metadata = context.client_metadata();
  auto it = metadata.find(kEpochKey);
  int64_t epoch = 0;
  // None, or not a number: the job's first epoch.
  if (it == metadata.end() ||
      llvm::StringRef(it->second.data(), it->second.size())
          .getAsInteger(10, epoch) ||
      epoch < 0)
    return 0;
  return epoch;
}

llvm::Expected<std::vector<std::string>>
distributed::parseAddresses(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef> parts;
  list.split(parts, ',');
  std::vector<std::string> out;
  llvm::StringSet<> seen;
  for (llvm::StringRef part : parts) {
    part = part.trim();
    auto [host, portText] = part.rsplit(':');
    unsigned port = 0;
    if (host.empty() || portText.getAsInteger(10, port) || port < 1 ||
        port > 65535)
      return transportError("'" + part +
                            "' is not HOST:PORT with a port in 1..65535");
    if (!seen.insert(part).second)
      return transportError("address " + part + " is listed twice");
    out.push_back(part.str());
  }
  return out;
}

llvm::Expected<std::unique_ptr<GrpcTransport>>
GrpcTransport::connect(const std::vector<std::string> &addresses,
                       SecurityOptions security,
                       std::chrono::milliseconds timeout) {
  if (addresses.empty())
    return transportError("no parameter-server addresses");
  llvm::StringSet<> seen;
  for (const std::string &a : addresses)
    if (!seen.insert(a).second)
      return transportError("address " + a + " is listed twice");
  std::unique_ptr<GrpcTransport> transport(new GrpcTransport());
  transport->addresses = addresses;
  transport->security = std::move(security);
  auto deadline = std::chrono::system_clock::now() + timeout;
  for (auto [i, address] : llvm::enumerate(addresses)) {
    auto shard = open(address, transport->security);
    if (!shard->channel->WaitForConnected(deadline))
      return transportError("cannot reach parameter-server shard " +
                            llvm::Twine(i) + " at " + address + " within " +
                            llvm::Twine(static_cast<int64_t>(timeout.count())) +
                            " ms" +
                            (transport->security.tls()
                                 ? " (or it refused this process's certificate)"
                                 : ""));
    transport->shards.push_back(std::move(shard));
  }
  return transport;
}

llvm::Error GrpcTransport::call(const ps::Request &request,
                                ps::Response &response) {
  std::shared_ptr<Shard> to = shard(request.shard());
  if (!to)
    return transportError("shard " + llvm::Twine(request.shard()) +
                          " has no server (" + llvm::Twine(numServers()) +
                          " addresses)");
  grpc::ClientContext context;
  if (llvm::Error e = begin(context))
    return e;
  grpc::Status status = to->stub->Call(&context, request, &response);
  end(context);
  if (status.ok())
    return llvm::Error::success();
  return callError(status, request.shard(), to->address);
}

llvm::Error
GrpcTransport::callMany(llvm::ArrayRef<ps::Request> requests,
                        llvm::MutableArrayRef<ps::Response> responses) {
  if (requests.size() == 1)
    return call(requests[0], responses[0]);
  struct Pending {
    grpc::ClientContext context;
    grpc::Status status;
    std::shared_ptr<Shard> shard;
  };
  std::vector<Pending> pending(requests.size());
  std::mutex doneMutex;
  std::condition_variable finished;
  size_t done = 0;
  llvm::Error failed = llvm::Error::success();
  for (size_t i = 0; i < requests.size(); ++i) {
    Pending &p = pending[i];
    p.shard = shard(requests[i].shard());
    llvm::Error refused =
        p.shard ? begin(p.context)
                : transportError("no server for shard " +
                                 llvm::Twine(requests[i].shard()));
    if (refused) {
      failed = llvm::joinErrors(std::move(failed), std::move(refused));
      std::lock_guard lock(doneMutex);
      ++done;
      continue;
    }
    p.shard->stub->async()->Call(&p.context, &requests[i], &responses[i],
                                 [&, i](grpc::Status status) {
                                   std::lock_guard lock(doneMutex);
                                   pending[i].status = std::move(status);
                                   if (++done == requests.size())
                                     finished.notify_all();
                                 });
  }
  {
    std::unique_lock lock(doneMutex);
    finished.wait(lock, [&] { return done == requests.size(); });
  }
  for (Pending &p : pending)
    if (p.shard)
      end(p.context);
  if (failed)
    return failed;
  for (size_t i = 0; i < requests.size(); ++i)
    if (!pending[i].status.ok())
      return callError(pending[i].status, requests[i].shard(),
                       pending[i].shard->address);
  return llvm::Error::success();
}

int64_t GrpcTransport::pieceBytes(int64_t rangeBytes) const {
  return std::clamp<int64_t>(rangeBytes / 8, 256 << 10, 4 << 20);
}

void GrpcTransport::shutdownServers() {
  std::vector<std::shared_ptr<Shard>> all;
  {
    std::lock_guard lock(mutex);
    all = shards;
  }
  for (auto &shard : all) {
    grpc::ClientContext context;
    startCall(context, security, std::chrono::seconds(5));
    ShutdownResponse unused;
    shard->stub->Shutdown(&context, ShutdownRequest(), &unused);
  }
}
