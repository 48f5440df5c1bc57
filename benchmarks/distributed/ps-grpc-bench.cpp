//===- ps-grpc-bench.cpp - the parameter server over gRPC, per shard -----===//
//
// Prints one table: dense pull and push GB/s of one worker against one
// parameter-server shard, for tables of 1, 16 and 100 MB, through
//  * memcpy (the machine's copy bandwidth on the same size),
//  * the in-process transport (the server in this process),
//  * gRPC over loopback to a shard in another process (forked before this
//    process holds any gRPC state), with the job token on every call,
// and the round trip of a 4 KB pull (latency). A push includes the
// server's SGD update of the table.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/PSServer.h"
#include "heterps/Runtime/PS/Client.h"

#include "../Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

static llvm::cl::opt<double>
    minSeconds("seconds", llvm::cl::desc("Time per measurement (default 1)"),
               llvm::cl::init(1.0));

namespace {

const char *kToken = "ps-grpc-bench-token-0123456789";

/// Seconds per call of `body`, run for --seconds.
template <typename F> double timeIt(F body) {
  return bench::timeIt(minSeconds, body);
}

void check(llvm::Error e) {
  if (e) {
    llvm::errs() << "ps-grpc-bench: " << llvm::toString(std::move(e)) << "\n";
    std::exit(1);
  }
}

/// The shard's process: serves until its stdin pipe closes.
[[noreturn]] void serveShard(int portPipe, int stopPipe) {
  ps::ServerOptions options;
  options.numShards = 1;
  options.configured = false;
  auto server = llvm::cantFail(ps::ParameterServer::create(options));
  SecurityOptions security;
  security.token = kToken;
  auto listening = PSServer::start(*server, "127.0.0.1:0", security);
  check(listening.takeError());
  int port = (*listening)->port();
  if (::write(portPipe, &port, sizeof port) != sizeof port)
    std::_Exit(1);
  char byte;
  while (::read(stopPipe, &byte, 1) > 0) {
  }
  std::_Exit(0);
}

struct Rates {
  double pull = 0, push = 0;
};

/// GB/s of pulls and pushes of a `bytes` table through `transport`.
Rates measure(ps::Transport &transport, int64_t bytes,
              const std::string &name) {
  auto client = llvm::cantFail(ps::PSClient::create(transport, 0));
  ps::ServerOptions config;
  config.numShards = 1;
  check(client->configure(ps::toConfig(config)));
  int64_t n = bytes / 4;
  Tensor table(DType::F32, {n});
  std::memset(table.rawData(), 0, table.bytes());
  check(client->addDenseTable(name, table, 1));
  Tensor out(DType::F32, {n}), grad(DType::F32, {n});
  std::memset(grad.rawData(), 0, grad.bytes());
  int64_t step = 0;
  Rates r;
  double pull =
      timeIt([&] { check(client->wait(client->pullDense(name, out))); });
  double push = timeIt(
      [&] { check(client->wait(client->pushDense(name, grad, step++, 0.f))); });
  r.pull = bytes / pull / 1e9;
  r.push = bytes / push / 1e9;
  return r;
}

double latency(ps::Transport &transport, const std::string &name) {
  auto client = llvm::cantFail(ps::PSClient::create(transport, 0));
  Tensor small(DType::F32, {1024});
  std::memset(small.rawData(), 0, small.bytes());
  check(client->addDenseTable(name, small, 1));
  return timeIt([&] { check(client->wait(client->pullDense(name, small))); }) *
         1e6;
}

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "Parameter-server pull/push over gRPC against in-process\n");
  int portPipe[2], stopPipe[2];
  if (::pipe(portPipe) || ::pipe(stopPipe))
    return 1;
  pid_t child = ::fork();
  if (child == 0) {
    ::close(portPipe[0]);
    ::close(stopPipe[1]);
    serveShard(portPipe[1], stopPipe[0]);
  }
  ::close(portPipe[1]);
  ::close(stopPipe[0]);
  int port = 0;
  if (::read(portPipe[0], &port, sizeof port) != sizeof port)
    return 1;

  SecurityOptions security;
  security.token = kToken;
  auto grpc =
      GrpcTransport::connect({"127.0.0.1:" + std::to_string(port)}, security);
  check(grpc.takeError());
  ps::ServerOptions local;
  local.numShards = 1;
  auto server = llvm::cantFail(ps::ParameterServer::create(local));
  ps::InProcessTransport inProcess(*server);

  llvm::outs() << "| table | memcpy GB/s | in-process pull | in-process push "
                  "| gRPC pull | gRPC push | gRPC pull / in-process |\n"
                  "|---:|---:|---:|---:|---:|---:|---:|\n";
  for (int64_t mb : {1, 16, 100}) {
    int64_t bytes = mb * 1000 * 1000;
    std::vector<char> a(bytes, 1), b(bytes, 2);
    double copy = timeIt([&] { std::memcpy(b.data(), a.data(), bytes); });
    std::string name = "t" + std::to_string(mb);
    Rates in = measure(inProcess, bytes, name);
    Rates over = measure(**grpc, bytes, name);
    llvm::outs() << llvm::format(
        "| %lld MB | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx |\n",
        static_cast<long long>(mb), bytes / copy / 1e9, in.pull, in.push,
        over.pull, over.push, over.pull / in.pull);
    llvm::outs().flush();
  }
  llvm::outs() << llvm::format(
      "\n4 KB pull round trip: in-process %.1f us, gRPC %.1f us\n",
      latency(inProcess, "small"), latency(**grpc, "small"));
  grpc->reset();
  ::close(stopPipe[1]);
  int status = 0;
  ::waitpid(child, &status, 0);
  return 0;
}
