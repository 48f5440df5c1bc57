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
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<ParameterServerService::Stub> stub;
};

GrpcTransport::~GrpcTransport() = default;

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
  auto credentials = channelCredentials(transport->security);
  grpc::ChannelArguments args = channelArguments();
  auto deadline = std::chrono::system_clock::now() + timeout;
  for (auto [i, address] : llvm::enumerate(addresses)) {
    auto shard = std::make_unique<Shard>();
    shard->channel = grpc::CreateCustomChannel(address, credentials, args);
    if (!shard->channel->WaitForConnected(deadline))
      return transportError("cannot reach parameter-server shard " +
                            llvm::Twine(i) + " at " + address + " within " +
                            llvm::Twine(static_cast<int64_t>(timeout.count())) +
                            " ms" +
                            (transport->security.tls()
                                 ? " (or it refused this process's certificate)"
                                 : ""));
    shard->stub = ParameterServerService::NewStub(shard->channel);
    transport->shards.push_back(std::move(shard));
  }
  return transport;
}

llvm::Error GrpcTransport::call(const ps::Request &request,
                                ps::Response &response) {
  int shard = request.shard();
  if (shard < 0 || shard >= numServers())
    return transportError("shard " + llvm::Twine(shard) + " has no server (" +
                          llvm::Twine(numServers()) + " addresses)");
  grpc::ClientContext context;
  attachToken(context, security);
  grpc::Status status = shards[shard]->stub->Call(&context, request, &response);
  if (status.ok())
    return llvm::Error::success();
  return transportError("parameter-server shard " + llvm::Twine(shard) +
                        " at " + addresses[shard] + ": " +
                        status.error_message());
}

llvm::Error
GrpcTransport::callMany(llvm::ArrayRef<ps::Request> requests,
                        llvm::MutableArrayRef<ps::Response> responses) {
  if (requests.size() == 1)
    return call(requests[0], responses[0]);
  struct Pending {
    grpc::ClientContext context;
    grpc::Status status;
  };
  std::vector<Pending> pending(requests.size());
  std::mutex mutex;
  std::condition_variable finished;
  size_t done = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    int shard = requests[i].shard();
    if (shard < 0 || shard >= numServers()) {
      std::lock_guard lock(mutex);
      pending[i].status =
          grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                       "no server for shard " + std::to_string(shard));
      ++done;
      continue;
    }
    attachToken(pending[i].context, security);
    shards[shard]->stub->async()->Call(&pending[i].context, &requests[i],
                                       &responses[i],
                                       [&, i](grpc::Status status) {
                                         std::lock_guard lock(mutex);
                                         pending[i].status = std::move(status);
                                         if (++done == requests.size())
                                           finished.notify_all();
                                       });
  }
  std::unique_lock lock(mutex);
  finished.wait(lock, [&] { return done == requests.size(); });
  for (size_t i = 0; i < requests.size(); ++i)
    if (!pending[i].status.ok())
      return transportError("parameter-server shard " +
                            llvm::Twine(requests[i].shard()) + ": " +
                            pending[i].status.error_message());
  return llvm::Error::success();
}

int64_t GrpcTransport::pieceBytes(int64_t rangeBytes) const {
  return std::clamp<int64_t>(rangeBytes / 8, 256 << 10, 4 << 20);
}

void GrpcTransport::shutdownServers() {
  for (auto &shard : shards) {
    grpc::ClientContext context;
    attachToken(context, security);
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
    ShutdownResponse unused;
    shard->stub->Shutdown(&context, ShutdownRequest(), &unused);
  }
}
