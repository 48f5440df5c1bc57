//===- FaultsTest.cpp - pushes at most once, fences, lost messages --------===//
//
// What a distributed job's recovery rests on, checked at the parameter
// server: a push sent again (a retry after a timeout, a duplicate on the
// network) is applied once and answered with the first answer; a process
// of an epoch the job has fenced out changes nothing; a restore wakes the
// pulls that waited for a step that was given up. And a load test: 64
// clients pushing to one shard over gRPC at once, through a transport
// that drops requests and answers and delivers some twice; at the end the
// table has counted every push exactly once. And a shard's own part of a
// checkpoint put back. ctest label: faults.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/PSServer.h"

#include "gtest/gtest.h"

#include <random>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

namespace {

std::unique_ptr<ps::ParameterServer> server(ps::Consistency consistency,
                                            int workers = 1) {
  ps::ServerOptions o;
  o.numShards = 1;
  o.numWorkers = workers;
  o.consistency = consistency;
  o.waitTimeout = std::chrono::seconds(20);
  return llvm::cantFail(ps::ParameterServer::create(o));
}

/// One f32 that counts: an SGD step with gradient -1 and lr 1 adds 1.
void addCounter(ps::ParameterServer &s) {
  Tensor zero(DType::F32, {1});
  zero.data<float>()[0] = 0;
  llvm::cantFail(s.addDenseTable("count", zero));
}

ps::Request push(uint64_t client, uint64_t sequence, int64_t step = 0,
                 int worker = 0) {
  ps::Request r;
  ps::PushRequest *p = r.mutable_push();
  p->set_table("count");
  p->set_worker(worker);
  p->set_step(step);
  p->set_lr(1);
  float minusOne = -1;
  p->set_grads(&minusOne, sizeof minusOne);
  p->set_client(client);
  p->set_sequence(sequence);
  return r;
}

float counted(ps::ParameterServer &s) {
  ps::Request r;
  r.mutable_pull()->set_table("count");
  ps::Response out;
  s.handle(r, out);
  EXPECT_EQ(out.error(), "");
  float v = 0;
  std::memcpy(&v, out.pull().values().data(), sizeof v);
  return v;
}

TEST(AtMostOnce, ARetriedPushIsAppliedOnceAndGetsTheFirstAnswer) {
  auto s = server(ps::Consistency::ASP);
  addCounter(*s);
  ps::Response first, again, other;
  s->handle(push(7, 1), first);
  s->handle(push(7, 1), again);
  ASSERT_EQ(first.error(), "");
  EXPECT_EQ(again.error(), "");
  EXPECT_EQ(again.push().version(), first.push().version());
  // The same sequence of another client is another push.
  s->handle(push(8, 1), other);
  EXPECT_EQ(counted(*s), 2.f);
  EXPECT_EQ(s->replayedPushes(), 1);
}

TEST(AtMostOnce, ABspRetryIsNotASecondPush) {
  // Without the ledger, the second arrival is "pushed twice for version
  // 0", and the step fails.
  auto s = server(ps::Consistency::BSP, 2);
  addCounter(*s);
  ps::Response a, b, c;
  s->handle(push(1, 1, 0, 0), a);
  s->handle(push(1, 1, 0, 0), b);
  EXPECT_EQ(b.error(), "");
  EXPECT_EQ(counted(*s), 0.f); // worker 1 has not pushed yet
  s->handle(push(2, 1, 0, 1), c);
  EXPECT_EQ(c.error(), "");
  EXPECT_EQ(counted(*s), 1.f); // the mean of two -1 gradients, once
}

TEST(AtMostOnce, APushOlderThanTheWindowIsRefusedNotApplied) {
  auto s = server(ps::Consistency::ASP);
  addCounter(*s);
  ps::Response out;
  for (uint64_t q = 1; q <= 1100; ++q)
    s->handle(push(3, q), out);
  EXPECT_EQ(counted(*s), 1100.f);
  s->handle(push(3, 2), out);
  EXPECT_NE(out.error().find("older than the last 1024"), std::string::npos)
      << out.error();
  EXPECT_EQ(counted(*s), 1100.f);
  // A recent one is still answered from memory.
  s->handle(push(3, 1000), out);
  EXPECT_EQ(out.error(), "");
  EXPECT_EQ(counted(*s), 1100.f);
}

TEST(AtMostOnce, ConcurrentCopiesOfOnePushApplyItOnce) {
  auto s = server(ps::Consistency::ASP);
  addCounter(*s);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (uint64_t q = 1; q <= 500; ++q) {
        ps::Response out;
        s->handle(push(5, q), out);
        EXPECT_EQ(out.error(), "");
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(counted(*s), 500.f);
  EXPECT_EQ(s->replayedPushes(), 7 * 500);
}

TEST(Fencing, RequestsOfAnEarlierEpochChangeNothing) {
  auto s = server(ps::Consistency::ASP);
  addCounter(*s);
  ps::Response out;
  s->handle(push(1, 1), out, 0);
  ASSERT_EQ(out.error(), "");
  ps::Request fence;
  fence.mutable_fence()->set_epoch(2);
  s->handle(fence, out, 2);
  ASSERT_EQ(out.error(), "");
  EXPECT_EQ(s->epoch(), 2);
  s->handle(push(1, 2), out, 1);
  EXPECT_NE(out.error().find("fenced out: the request belongs to epoch 1"),
            std::string::npos)
      << out.error();
  ps::Request pull;
  pull.mutable_pull()->set_table("count");
  s->handle(pull, out, 0);
  EXPECT_NE(out.error().find("fenced out"), std::string::npos);
  // The job's own processes go on; so does the coordinator's process.
  s->handle(push(9, 1), out, 2);
  EXPECT_EQ(out.error(), "");
  EXPECT_EQ(counted(*s), 2.f);
  // An epoch never goes back.
  fence.mutable_fence()->set_epoch(1);
  s->handle(fence, out, 2);
  EXPECT_NE(out.error().find("fenced out"), std::string::npos);
  EXPECT_EQ(s->epoch(), 2);
}

TEST(Fencing, ARestoreEndsThePullsThatWaitForAGivenUpStep) {
  auto s = server(ps::Consistency::BSP, 2);
  addCounter(*s);
  std::string waited;
  std::thread puller([&] {
    ps::Request pull;
    pull.mutable_pull()->set_table("count");
    pull.mutable_pull()->set_min_version(1);
    ps::Response out;
    s->handle(pull, out);
    waited = out.error();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ps::Request restore;
  restore.mutable_restore()->set_table("count");
  ps::ShardState *state = restore.mutable_restore()->mutable_state();
  float zero = 0;
  state->set_values(&zero, sizeof zero);
  ps::Response out;
  auto start = std::chrono::steady_clock::now();
  s->handle(restore, out);
  puller.join();
  EXPECT_EQ(out.error(), "");
  EXPECT_NE(waited.find("was restored to version 0 while a pull waited"),
            std::string::npos)
      << waited;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Checkpoints, AShardPutsItsOwnPartBack) {
  auto s = server(ps::Consistency::ASP);
  addCounter(*s);
  llvm::cantFail(s->addSparseTable("rows", 10, 2, 0.1f, 3));
  ps::Response out;
  s->handle(push(1, 1), out);
  ps::ShardCheckpoint saved = llvm::cantFail(s->saveShard(0));
  EXPECT_EQ(saved.tables_size(), 2);
  s->handle(push(1, 2), out);
  s->handle(push(1, 3), out);
  EXPECT_EQ(counted(*s), 3.f);
  ASSERT_FALSE(bool(s->restoreShard(saved)));
  EXPECT_EQ(counted(*s), 1.f);
  // A part that does not hold every table of the shard is refused whole.
  saved.mutable_tables()->RemoveLast();
  llvm::Error refused = s->restoreShard(saved);
  ASSERT_TRUE(bool(refused));
  EXPECT_EQ(llvm::toString(std::move(refused)),
            "the checkpoint holds 1 tables of shard 0, the server 2");
  saved.set_shard(1);
  EXPECT_EQ(llvm::toString(s->restoreShard(saved)),
            "the checkpoint is of shard 1, which this server does not hold");
}

/// Loses and repeats messages: drops a request before it is sent, drops
/// the answer of one that was applied, or delivers one twice.
class LossyTransport : public ps::Transport {
public:
  LossyTransport(ps::Transport &inner, unsigned seed)
      : inner(inner), random(seed) {}
  llvm::Error call(const ps::Request &request,
                   ps::Response &response) override {
    bool pushing = request.has_push();
    unsigned roll = random() % 10;
    if (pushing && roll == 0) {
      ++droppedRequests;
      return llvm::make_error<ps::TransientError>("request lost");
    }
    if (llvm::Error e = inner.call(request, response))
      return e;
    if (pushing && roll == 1) {
      ++duplicates;
      ps::Response copy;
      if (llvm::Error e = inner.call(request, copy))
        return e;
    }
    if (pushing && roll == 2) {
      ++droppedAnswers;
      return llvm::make_error<ps::TransientError>("answer lost");
    }
    return llvm::Error::success();
  }
  std::chrono::milliseconds retryFor() const override {
    return std::chrono::seconds(30);
  }

  int64_t droppedRequests = 0, droppedAnswers = 0, duplicates = 0;

private:
  ps::Transport &inner;
  std::mt19937 random;
};

TEST(LoadTest, SixtyFourClientsOnOneShardLoseAndRepeatNothing) {
  auto s = server(ps::Consistency::ASP);
  addCounter(*s);
  SecurityOptions security;
  security.token = "faults-test-token-0123456789abcdef";
  auto listening = llvm::cantFail(PSServer::start(*s, "127.0.0.1:0", security));
  std::string address = "127.0.0.1:" + std::to_string(listening->port());
  auto grpc = llvm::cantFail(GrpcTransport::connect({address}, security));

  constexpr int kClients = 64;
  std::vector<std::unique_ptr<LossyTransport>> lossy;
  std::vector<std::unique_ptr<ps::PSClient>> clients;
  for (int c = 0; c < kClients; ++c) {
    lossy.push_back(std::make_unique<LossyTransport>(*grpc, 1000 + c));
    clients.push_back(llvm::cantFail(ps::PSClient::create(*lossy.back(), c)));
  }
  Tensor minusOne(DType::F32, {1});
  minusOne.data<float>()[0] = -1;
  std::vector<int64_t> pushed(kClients, 0);
  std::vector<std::string> errors(kClients);
  auto stop = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c)
    threads.emplace_back([&, c] {
      while (std::chrono::steady_clock::now() < stop) {
        ps::Ticket t = clients[c]->pushDense("count", minusOne, 0, 1);
        if (llvm::Error e = clients[c]->wait(t)) {
          errors[c] = llvm::toString(std::move(e));
          return;
        }
        ++pushed[c];
      }
    });
  for (auto &t : threads)
    t.join();
  int64_t all = 0, requestsLost = 0, answersLost = 0, twice = 0;
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(errors[c], "") << "client " << c;
    all += pushed[c];
    requestsLost += lossy[c]->droppedRequests;
    answersLost += lossy[c]->droppedAnswers;
    twice += lossy[c]->duplicates;
  }
  // Faults happened, and the table counted each push once.
  EXPECT_GT(requestsLost, 0);
  EXPECT_GT(answersLost, 0);
  EXPECT_GT(twice, 0);
  EXPECT_EQ(counted(*s), static_cast<float>(all));
  EXPECT_EQ(s->replayedPushes(), answersLost + twice);
  ASSERT_LT(all, int64_t(1) << 24); // exact in f32
  std::printf("%lld pushes from %d clients in 2 s over gRPC: %lld requests "
              "and %lld answers lost, %lld delivered twice; the table "
              "counted %.0f\n",
              static_cast<long long>(all), kClients,
              static_cast<long long>(requestsLost),
              static_cast<long long>(answersLost),
              static_cast<long long>(twice), counted(*s));
}

} // namespace
