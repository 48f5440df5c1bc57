//===- DistributedTest.cpp - the PS over gRPC, security, rendezvous -------===//
//
// Servers and clients on loopback inside this process: the parameter
// server behind gRPC gives what the in-process one gives, a call without
// the job's token or with a certificate another CA signed reads and
// changes nothing, and a process of another job cannot join one.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Distributed/Coordinator.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/PSServer.h"
#include "heterps/Runtime/Distributed/Roles.h"

#include "TensorWire.h"

#include "llvm/Support/FileSystem.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

namespace {

const char *kToken = "distributed-test-token-0123456789";

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

SecurityOptions withToken(std::string token = kToken) {
  SecurityOptions s;
  s.token = std::move(token);
  return s;
}

Tensor ramp(int64_t n, float scale) {
  Tensor t(DType::F32, {n});
  for (int64_t i = 0; i < n; ++i)
    t.data<float>()[i] = scale * static_cast<float>(i % 97) - 1.f;
  return t;
}

/// A job's shard as its own server on loopback, configured by the job.
struct Shard {
  std::unique_ptr<ps::ParameterServer> server;
  std::unique_ptr<PSServer> listening;

  Shard(int shard, int shards, SecurityOptions security = withToken()) {
    ps::ServerOptions options;
    options.numShards = shards;
    options.served = {shard};
    options.configured = false;
    server = llvm::cantFail(ps::ParameterServer::create(options));
    listening = llvm::cantFail(
        PSServer::start(*server, "127.0.0.1:0", std::move(security)));
  }
  std::string address() const {
    return "127.0.0.1:" + std::to_string(listening->port());
  }
};

ps::ServerOptions jobOptions(int shards) {
  ps::ServerOptions o;
  o.numShards = shards;
  o.numWorkers = 2;
  o.dense.kind = train::OptimizerKind::Adam;
  o.job = "job-a";
  return o;
}

/// Two workers' steps on a dense table (pulled and pushed in pieces: 3M
/// floats, 6 MB a shard) and a sparse one; every value pulled, in order.
std::vector<float> train(ps::Transport &transport, bool configure) {
  auto first = llvm::cantFail(ps::PSClient::create(transport, 0));
  if (configure) {
    EXPECT_FALSE(bool(first->configure(ps::toConfig(jobOptions(2)))));
    EXPECT_FALSE(bool(first->addDenseTable("w", ramp(3000000, 0.01f), 2)));
    EXPECT_FALSE(bool(first->addSparseTable("e", 1000, 4, 0.1f, 7, 2)));
  }
  auto second = llvm::cantFail(ps::PSClient::create(transport, 1));
  std::vector<float> seen;
  Tensor w(DType::F32, {3000000}), rows(DType::F32, {3, 4});
  for (int step = 0; step < 3; ++step) {
    for (auto *client : {first.get(), second.get()}) {
      Tensor g = ramp(3000000, 0.001f * (client->worker() + 1 + step));
      EXPECT_FALSE(bool(client->wait(client->pushDense("w", g, step, 0.1f))));
      Tensor sg = ramp(8, 0.5f).reshaped({2, 4});
      EXPECT_FALSE(bool(
          client->wait(client->pushSparse("e", {3, 998}, sg, step, 0.1f))));
    }
    EXPECT_FALSE(bool(first->wait(first->pullDense("w", w, step + 1))));
    EXPECT_FALSE(bool(
        first->wait(first->pullSparse("e", {998, 3, 500}, rows, step + 1))));
    seen.insert(seen.end(), w.data<float>(), w.data<float>() + 3000000);
    seen.insert(seen.end(), rows.data<float>(), rows.data<float>() + 12);
  }
  return seen;
}

TEST(GrpcParameterServer, GivesWhatTheInProcessServerGives) {
  auto local = llvm::cantFail(ps::ParameterServer::create(jobOptions(2)));
  ps::InProcessTransport inProcess(*local);
  std::vector<float> expected = train(inProcess, true);

  Shard a(0, 2), b(1, 2);
  auto transport = llvm::cantFail(
      GrpcTransport::connect({a.address(), b.address()}, withToken()));
  std::vector<float> got = train(*transport, true);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(
      0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)));
  // Each process holds its own shard only.
  EXPECT_EQ(a.server->storedRows("e") + b.server->storedRows("e"), 2);
  EXPECT_EQ(b.listening->refusedCalls(), 0);
}

TEST(GrpcParameterServer, CallsWithoutTheJobTokenChangeNothing) {
  Shard shard(0, 1);
  for (const char *token : {"another-jobs-token-0123456789", ""}) {
    auto transport = llvm::cantFail(
        GrpcTransport::connect({shard.address()}, withToken(token)));
    auto client = ps::PSClient::create(*transport, 0);
    ASSERT_FALSE(bool(client));
    std::string error = errorOf(client.takeError());
    EXPECT_NE(error.find(*token ? "refused: a wrong job token"
                                : "refused: no job token"),
              std::string::npos)
        << error;
    // A Configure sent straight through the transport is refused too.
    ps::Request request;
    *request.mutable_configure()->mutable_config() =
        ps::toConfig(jobOptions(1));
    ps::Response response;
    EXPECT_FALSE(errorOf(transport->call(request, response)).empty());
  }
  EXPECT_EQ(shard.listening->refusedCalls(), 4);
  // Still unconfigured and empty: the job can have it.
  auto good =
      llvm::cantFail(GrpcTransport::connect({shard.address()}, withToken()));
  auto client = llvm::cantFail(ps::PSClient::create(*good, 0));
  EXPECT_FALSE(bool(client->configure(ps::toConfig(jobOptions(1)))));
  EXPECT_FALSE(bool(client->table("w")));
}

TEST(GrpcParameterServer, AnotherJobOrOtherOptionsAreRefused) {
  Shard shard(0, 1);
  auto transport =
      llvm::cantFail(GrpcTransport::connect({shard.address()}, withToken()));
  auto client = llvm::cantFail(ps::PSClient::create(*transport, 0));
  ASSERT_FALSE(bool(client->configure(ps::toConfig(jobOptions(1)))));
  ASSERT_FALSE(bool(client->addDenseTable("w", ramp(10, 1.f), 2)));

  ps::ServerOptions other = jobOptions(1);
  other.job = "job-b";
  EXPECT_EQ(errorOf(client->configure(ps::toConfig(other))),
            "parameter-server shard 0: this server belongs to job job-a; "
            "the caller's model or options make job job-b");
  other = jobOptions(1);
  other.dense.kind = train::OptimizerKind::SGD;
  EXPECT_EQ(errorOf(client->configure(ps::toConfig(other))),
            "parameter-server shard 0: mismatched options (this server vs "
            "the caller): optimizer 2 vs 0");
  // A second job's table of the same name is refused; the first is kept.
  EXPECT_NE(errorOf(client->addDenseTable("w", ramp(12, 1.f), 2))
                .find("already has a table 'w'"),
            std::string::npos);
  EXPECT_EQ(llvm::cantFail(client->table("w")).elements(), 10);
}

TEST(GrpcParameterServer, MutualTLS) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("heterps-certs", dir));
  std::string make = std::string(HETERPS_MAKE_CERTS) + " " + dir.str().str();
  ASSERT_EQ(std::system(make.c_str()), 0) << make;
  auto files = [&](const std::string &ca, const std::string &who) {
    SecurityOptions s = withToken();
    s.caFile = (dir + "/" + ca + ".pem").str();
    s.certFile = (dir + "/" + who + ".pem").str();
    s.keyFile = (dir + "/" + who + ".key").str();
    return s;
  };
  Shard shard(0, 1, files("ca", "server"));
  // A client the job's CA signed gets in.
  auto good = GrpcTransport::connect({shard.address()}, files("ca", "client"));
  ASSERT_TRUE(bool(good)) << errorOf(good.takeError());
  EXPECT_TRUE(bool(ps::PSClient::create(**good, 0)));
  // One another CA signed, or one without TLS, does not.
  auto rogue = GrpcTransport::connect({shard.address()}, files("ca", "rogue"),
                                      std::chrono::seconds(2));
  ASSERT_FALSE(bool(rogue));
  EXPECT_NE(errorOf(rogue.takeError()).find("cannot reach"), std::string::npos);
  auto plain = GrpcTransport::connect({shard.address()}, withToken(),
                                      std::chrono::seconds(2));
  ASSERT_FALSE(bool(plain));
  llvm::consumeError(plain.takeError());
  llvm::sys::fs::remove_directories(dir);
}

TEST(GrpcParameterServer, ListeningAndAddressesAreChecked) {
  auto server = llvm::cantFail(ps::ParameterServer::create({}));
  EXPECT_EQ(
      errorOf(PSServer::start(*server, "0.0.0.0:0", withToken()).takeError()),
      "listening on 0.0.0.0:0 (beyond loopback) needs TLS: --tls-ca, "
      "--tls-cert and --tls-key");
  auto first =
      llvm::cantFail(PSServer::start(*server, "127.0.0.1:0", withToken()));
  std::string taken = "127.0.0.1:" + std::to_string(first->port());
  EXPECT_EQ(errorOf(PSServer::start(*server, taken, withToken()).takeError()),
            "cannot listen on " + taken +
                " (a port in use, or not an address of this host)");
  EXPECT_EQ(
      errorOf(GrpcTransport::connect({taken, taken}, withToken()).takeError()),
      "address " + taken + " is listed twice");
  EXPECT_EQ(errorOf(parseAddresses("a:1,b").takeError()),
            "'b' is not HOST:PORT with a port in 1..65535");
  // A port nothing listens on: the port just freed by a server.
  std::string closed;
  {
    auto gone =
        llvm::cantFail(PSServer::start(*server, "127.0.0.1:0", withToken()));
    closed = "127.0.0.1:" + std::to_string(gone->port());
  }
  EXPECT_EQ(errorOf(GrpcTransport::connect({closed}, withToken(),
                                           std::chrono::milliseconds(300))
                        .takeError()),
            "cannot reach parameter-server shard 0 at " + closed +
                " within 300 ms");
}

TEST(Security, TokensAndTLSFilesAreChecked) {
  ::unsetenv(kTokenEnv);
  EXPECT_EQ(errorOf(loadSecurity("", "", "", "").takeError()),
            "a distributed job needs a job token: --job-token-file or "
            "$HETERPS_JOB_TOKEN");
  ::setenv(kTokenEnv, "short", 1);
  EXPECT_EQ(errorOf(loadSecurity("", "", "", "").takeError()),
            "the job token is 5 bytes; at least 16 are needed");
  ::setenv(kTokenEnv, kToken, 1);
  EXPECT_EQ(errorOf(loadSecurity("ca.pem", "", "", "").takeError()),
            "TLS needs all of --tls-ca, --tls-cert and --tls-key");
  EXPECT_NE(errorOf(loadSecurity("/nonexistent/ca.pem", "/nonexistent/c",
                                 "/nonexistent/k", "")
                        .takeError())
                .find("--tls-ca /nonexistent/ca.pem: "),
            std::string::npos);
  EXPECT_EQ(llvm::cantFail(loadSecurity("", "", "", "")).token, kToken);
  ::unsetenv(kTokenEnv);
  EXPECT_EQ(newJobToken().size(), 64u);
  EXPECT_NE(newJobToken(), newJobToken());
}

TEST(Roles, RanksMapToRoles) {
  JobShape shape{2, {1, 3}};
  EXPECT_EQ(shape.worldSize(), 7);
  std::vector<std::string> names;
  for (int rank = 0; rank < shape.worldSize(); ++rank)
    names.push_back(llvm::cantFail(roleOfRank(rank, shape)).name());
  EXPECT_EQ(names, (std::vector<std::string>{"coordinator", "ps0", "ps1",
                                             "worker s0r0", "worker s1r0",
                                             "worker s1r1", "worker s1r2"}));
  EXPECT_EQ(errorOf(roleOfRank(7, shape).takeError()),
            "rank 7 is not in this job of 7 processes (1 coordinator, 2 "
            "parameter-server shards, 4 stage replicas)");
  ::setenv("SLURM_PROCID", "3", 1);
  EXPECT_EQ(*llvm::cantFail(rankFromEnvironment()), 3);
  ::setenv("HETERPS_RANK", "x", 1);
  EXPECT_EQ(errorOf(rankFromEnvironment().takeError()),
            "$HETERPS_RANK is 'x', not a rank");
  ::unsetenv("HETERPS_RANK");
  ::unsetenv("SLURM_PROCID");
}

TEST(Coordinator, AProcessOfAnotherJobStopsTheJob) {
  auto coordinator = llvm::cantFail(Coordinator::start(
      "127.0.0.1:0", JobShape{1, {1}}, "job-a", withToken()));
  std::string address = "127.0.0.1:" + std::to_string(coordinator->port());
  ProcessInfo worker;
  worker.set_role("worker");
  worker.set_address("127.0.0.1:9");
  worker.set_job("job-b");
  auto refused = registerWith(address, worker, withToken());
  ASSERT_FALSE(bool(refused));
  std::string error = errorOf(refused.takeError());
  EXPECT_NE(error.find("worker stage 0 replica 0 from ipv4:127.0.0.1:"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find(" computed job job-b, the coordinator job-a: its model "
                       "or options differ"),
            std::string::npos)
      << error;
  // The coordinator learns it at once, not at its timeout.
  auto map = coordinator->waitForAll(std::chrono::seconds(30),
                                     [] { return llvm::Error::success(); });
  ASSERT_FALSE(bool(map));
  EXPECT_NE(errorOf(map.takeError()).find("its model or options differ"),
            std::string::npos);
  // A caller without the token is refused before it is looked at.
  auto anonymous =
      registerWith(address, worker, withToken("not-the-token-0123"));
  ASSERT_FALSE(bool(anonymous));
  EXPECT_NE(errorOf(anonymous.takeError()).find("refused: a wrong job token"),
            std::string::npos);
}

TEST(TensorWire, WhatArrivesIsChecked) {
  TensorData data;
  ASSERT_FALSE(bool(toWire(ramp(6, 1.f).reshaped({2, 3}), data)));
  Tensor back = llvm::cantFail(fromWire(data));
  EXPECT_EQ(back.shape(), (Shape{2, 3}));
  data.set_data(data.data().substr(0, 20));
  EXPECT_EQ(errorOf(fromWire(data).takeError()),
            "a tensor of 6 elements arrived with 20 bytes");
  data.set_dtype(99);
  EXPECT_EQ(errorOf(fromWire(data).takeError()), "a tensor of unknown type 99");
  data.set_dtype(1);
  data.add_dims(-1);
  EXPECT_EQ(errorOf(fromWire(data).takeError()), "a tensor with dimension -1");
}

// A stream sends a slot's type and shape once: the receiver restores what
// the sender stripped, and refuses a stripped tensor it has no shape for.
TEST(TensorWire, AStreamSendsEachSlotsLayoutOnce) {
  StreamLayouts sender, receiver;
  std::vector<TensorData> sent;
  for (int64_t rows : {2, 2, 3}) {
    TensorData data;
    ASSERT_FALSE(bool(toWire(ramp(rows * 3, 1.f).reshaped({rows, 3}), data)));
    sender.strip({0, 1, 0}, data);
    sent.push_back(data);
  }
  EXPECT_NE(sent[0].dtype(), 0);
  EXPECT_EQ(sent[1].dtype(), 0); // the same shape again: bytes only
  EXPECT_EQ(sent[1].dims_size(), 0);
  EXPECT_NE(sent[2].dtype(), 0); // a new shape
  TensorData stripped = sent[1];
  for (TensorData &data : sent) {
    ASSERT_FALSE(bool(receiver.restore({0, 1, 0}, data)));
    EXPECT_EQ(llvm::cantFail(fromWire(data)).dim(1), 3);
  }
  EXPECT_EQ(errorOf(StreamLayouts().restore({0, 1, 0}, stripped)),
            "a tensor without its type and shape, in a slot that never "
            "carried them");
}

} // namespace
