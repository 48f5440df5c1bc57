//===- ParameterServerTest.cpp - dense and sparse tables, BSP and ASP -----===//

#include "heterps/Runtime/PS/Client.h"

#include "gtest/gtest.h"

#include <cstring>
#include <numeric>
#include <random>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::ps;

namespace {

Tensor filled(Shape shape, std::function<float(int64_t)> value) {
  Tensor t(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = value(i);
  return t;
}

std::unique_ptr<ParameterServer> makeServer(ServerOptions options) {
  return llvm::cantFail(ParameterServer::create(options));
}

std::unique_ptr<PSClient> makeClient(Transport &transport, int worker) {
  return llvm::cantFail(PSClient::create(transport, worker));
}

std::string errorOf(llvm::Error e) { return llvm::toString(std::move(e)); }

TEST(ParameterServer, DenseRoundTripAcrossShards) {
  ServerOptions options;
  options.numShards = 3;
  auto server = makeServer(options);
  // 10 elements over 3 shards: ranges of 3, 3 and 4.
  Tensor init = filled({2, 5}, [](int64_t i) { return float(i); });
  ASSERT_FALSE(bool(server->addDenseTable("w", init)));
  InProcessTransport transport(*server);
  auto client = makeClient(transport, 0);
  TableInfo info = llvm::cantFail(client->table("w"));
  EXPECT_EQ(info.shard_offsets_size(), 4);
  EXPECT_EQ(info.shard_offsets(3), 10);

  Tensor out(DType::F32, {10});
  ASSERT_FALSE(bool(client->wait(client->pullDense("w", out))));
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(out.data<float>()[i], float(i));

  // SGD at the server: w -= lr * g.
  Tensor grad = filled({10}, [](int64_t i) { return float(i % 2); });
  ASSERT_FALSE(bool(client->wait(client->pushDense("w", grad, 0, 0.5f))));
  ASSERT_FALSE(bool(client->wait(client->pullDense("w", out, 1))));
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(out.data<float>()[i], float(i) - 0.5f * float(i % 2));
}

// A table's worker count overrides the server's (a pipeline stage's
// replicas), and a saved table restored into a new server continues as
// the original does: values, momentum and version.
TEST(ParameterServer, PerTableWorkersAndSavedState) {
  ServerOptions options;
  options.numShards = 3;
  options.dense.kind = train::OptimizerKind::Momentum;
  auto server = makeServer(options);
  Tensor init = filled({7}, [](int64_t i) { return float(i); });
  ASSERT_FALSE(bool(server->addDenseTable("w", init, /*workers=*/2)));
  InProcessTransport transport(*server);
  auto first = makeClient(transport, 0), second = makeClient(transport, 1);
  Tensor grad = filled({7}, [](int64_t i) { return float(i % 3); });
  Tensor out(DType::F32, {7});
  for (int step = 0; step < 3; ++step) {
    ASSERT_FALSE(bool(first->wait(first->pushDense("w", grad, step, 0.1f))));
    // One of two pushes: the version has not moved.
    llvm::Expected<DenseTableState> half = first->saveDense("w");
    ASSERT_TRUE(bool(half));
    EXPECT_EQ(half->version, step);
    ASSERT_FALSE(bool(second->wait(second->pushDense("w", grad, step, 0.1f))));
  }
  llvm::Expected<DenseTableState> saved = first->saveDense("w");
  ASSERT_TRUE(bool(saved)) << llvm::toString(saved.takeError());
  EXPECT_EQ(saved->version, 3);
  EXPECT_EQ(saved->optimizer.steps, 3);
  ASSERT_FALSE(saved->optimizer.first.isNull());

  auto copy = makeServer(options);
  ASSERT_FALSE(bool(copy->addDenseTable("w", init, 2)));
  InProcessTransport copyTransport(*copy);
  auto restorer = makeClient(copyTransport, 0);
  ASSERT_FALSE(bool(restorer->restoreDense("w", *saved)));
  for (auto *t : {&transport, &copyTransport}) {
    auto a = makeClient(*t, 0), b = makeClient(*t, 1);
    ASSERT_FALSE(bool(a->wait(a->pushDense("w", grad, 3, 0.1f))));
    ASSERT_FALSE(bool(b->wait(b->pushDense("w", grad, 3, 0.1f))));
  }
  Tensor original(DType::F32, {7}), restored(DType::F32, {7});
  ASSERT_FALSE(bool(first->wait(first->pullDense("w", original, 4))));
  auto reader = makeClient(copyTransport, 0);
  ASSERT_FALSE(bool(reader->wait(reader->pullDense("w", restored, 4))));
  EXPECT_EQ(0, std::memcmp(original.rawData(), restored.rawData(), 28));

  DenseTableState wrong;
  wrong.values = Tensor(DType::F32, {6});
  EXPECT_EQ(errorOf(restorer->restoreDense("w", wrong)),
            "table 'w' holds 7 values, the state 6");
}

// Under BSP a worker may push its range in pieces: it counts once they make
// up the range, and the update is the one whole pushes make. Pieces that
// overrun the range, and pieces under ASP, are refused.
TEST(ParameterServer, PushesInPieces) {
  auto run = [](bool pieces) {
    ServerOptions options;
    options.numShards = 1;
    options.numWorkers = 2;
    options.dense.kind = train::OptimizerKind::Momentum;
    auto server = makeServer(options);
    EXPECT_FALSE(bool(server->addDenseTable(
        "w", filled({10}, [](int64_t i) { return float(i); }))));
    InProcessTransport transport(*server);
    for (int worker = 0; worker < 2; ++worker)
      for (auto [offset, count] :
           pieces ? std::vector<std::pair<int, int>>{{6, 4}, {0, 6}}
                  : std::vector<std::pair<int, int>>{{0, 0}}) {
        Request request;
        PushRequest *push = request.mutable_push();
        push->set_table("w");
        push->set_worker(worker);
        push->set_lr(0.5f);
        push->set_offset(offset);
        push->set_count(count);
        Tensor g = filled({10}, [&](int64_t i) { return float(worker + i); });
        int n = count ? count : 10;
        push->set_grads(static_cast<const char *>(g.rawData()) +
                            offset * sizeof(float),
                        n * sizeof(float));
        Response response;
        server->handle(request, response);
        EXPECT_EQ(response.error(), "");
        // The version moves only when both workers' ranges are complete.
        EXPECT_EQ(response.push().version(),
                  worker == 1 && (!pieces || offset == 0) ? 1 : 0);
      }
    auto client = makeClient(transport, 0);
    Tensor out(DType::F32, {10});
    EXPECT_FALSE(bool(client->wait(client->pullDense("w", out, 1))));
    return std::vector<float>(out.data<float>(), out.data<float>() + 10);
  };
  EXPECT_EQ(run(true), run(false));

  ServerOptions options;
  options.numShards = 1;
  auto server = makeServer(options);
  ASSERT_FALSE(bool(
      server->addDenseTable("w", filled({4}, [](int64_t) { return 1.f; }))));
  Request request;
  PushRequest *push = request.mutable_push();
  push->set_table("w");
  push->set_offset(2);
  push->set_count(3);
  push->set_grads(std::string(3 * sizeof(float), '\0'));
  Response response;
  server->handle(request, response);
  EXPECT_EQ(response.error(),
            "table 'w': gradient values [2, +3) of a shard range of 4");
  push->set_count(2);
  push->set_grads(std::string(2 * sizeof(float), '\0'));
  server->handle(request, response);
  EXPECT_EQ(response.error(), "");
  push->set_offset(0);
  push->set_count(4);
  push->set_grads(std::string(4 * sizeof(float), '\0'));
  server->handle(request, response);
  EXPECT_EQ(response.error(),
            "table 'w': worker 0 pushed more than its range for version 0");
}

// k workers each pushing the gradient of their slice give, under BSP, the
// update of one worker pushing the mean: what synchronous data-parallel
// training needs.
TEST(ParameterServer, BSPAveragesTheWorkersGradients) {
  const int k = 3, steps = 5, n = 64;
  ServerOptions options;
  options.numShards = 2;
  options.numWorkers = k;
  options.dense.kind = train::OptimizerKind::Momentum;
  auto server = makeServer(options);
  Tensor init = filled({n}, [](int64_t i) { return 0.1f * float(i); });
  ASSERT_FALSE(bool(server->addDenseTable("w", init)));
  InProcessTransport transport(*server);
  // Worker w's gradient at step s: a function of (w, s, i) and of the
  // weights it pulled, so a stale or missing update changes the result.
  auto gradient = [](int w, int s, const Tensor &weights) {
    return filled({n}, [&](int64_t i) {
      return weights.data<float>()[i] * 0.5f + float((w + 1) * (s + 1) % 7) -
             float(i % 5);
    });
  };
  std::vector<std::thread> workers;
  std::vector<std::string> errors(k);
  for (int w = 0; w < k; ++w)
    workers.emplace_back([&, w] {
      auto client = makeClient(transport, w);
      Tensor weights(DType::F32, {n});
      for (int s = 0; s < steps; ++s) {
        if (llvm::Error e = client->wait(client->pullDense("w", weights, s)))
          return void(errors[w] = errorOf(std::move(e)));
        if (llvm::Error e = client->wait(
                client->pushDense("w", gradient(w, s, weights), s, 0.01f)))
          return void(errors[w] = errorOf(std::move(e)));
      }
    });
  for (auto &t : workers)
    t.join();
  for (const std::string &e : errors)
    EXPECT_EQ(e, "");

  // The same steps on one worker with the mean gradient.
  train::Optimizer reference(options.dense);
  Tensor expected = init.clone();
  for (int s = 0; s < steps; ++s) {
    Tensor mean = filled({n}, [](int64_t) { return 0.f; });
    for (int w = 0; w < k; ++w) {
      Tensor g = gradient(w, s, expected);
      for (int64_t i = 0; i < n; ++i)
        mean.data<float>()[i] += g.data<float>()[i];
    }
    for (int64_t i = 0; i < n; ++i)
      mean.data<float>()[i] *= 1.f / k;
    ASSERT_FALSE(bool(reference.update(0, expected, mean, 0.01f)));
  }
  auto client = makeClient(transport, 0);
  Tensor out(DType::F32, {n});
  ASSERT_FALSE(bool(client->wait(client->pullDense("w", out, steps))));
  for (int64_t i = 0; i < n; ++i)
    EXPECT_NEAR(out.data<float>()[i], expected.data<float>()[i], 1e-5)
        << "element " << i;
}

TEST(ParameterServer, BSPProtocolErrorsAreNamed) {
  ServerOptions options;
  options.numShards = 1;
  options.numWorkers = 2;
  options.waitTimeout = std::chrono::milliseconds(50);
  auto server = makeServer(options);
  ASSERT_FALSE(bool(
      server->addDenseTable("w", filled({4}, [](int64_t) { return 1.f; }))));
  InProcessTransport transport(*server);
  auto client = makeClient(transport, 0);
  Tensor g = filled({4}, [](int64_t) { return 1.f; });
  ASSERT_FALSE(bool(client->wait(client->pushDense("w", g, 0, 0.1f))));
  EXPECT_EQ(errorOf(client->wait(client->pushDense("w", g, 0, 0.1f))),
            "table 'w': worker 0 pushed twice for version 0");
  EXPECT_EQ(errorOf(client->wait(client->pushDense("w", g, 3, 0.1f))),
            "table 'w': worker 0 pushed a gradient of version 3, but the "
            "table is at version 0 (BSP: pull the current version first)");
  Tensor out(DType::F32, {4});
  EXPECT_EQ(errorOf(client->wait(client->pullDense("w", out, 1))),
            "table 'w': waited 50 ms for version 1 (at 0); workers not yet "
            "pushed for version 0: 1");
  auto stranger = makeClient(transport, 5);
  EXPECT_EQ(errorOf(stranger->wait(stranger->pushDense("w", g, 0, 0.1f))),
            "table 'w': worker 5 is not one of the server's 2 workers");
  Tensor wrong(DType::F32, {3});
  EXPECT_EQ(errorOf(client->wait(client->pullDense("w", wrong))),
            "table 'w': the output is f32[3], expected plain f32 of 4 "
            "elements");
  EXPECT_EQ(errorOf(client->wait(client->pullDense("nosuch", out))),
            "the parameter server has no table 'nosuch'");
  EXPECT_EQ(errorOf(server->addDenseTable("w", out)),
            "the parameter server already has a table 'w'");
  EXPECT_EQ(errorOf(ParameterServer::create({0}).takeError()),
            "a parameter server has 1 to 1024 shards, not 0");
  // A million shards is a typo, refused before anything is allocated.
  EXPECT_EQ(errorOf(ParameterServer::create({1000000}).takeError()),
            "a parameter server has 1 to 1024 shards, not 1000000");
}

TEST(ParameterServer, SparseRowsStartFromTheSeedAndAreStoredOnUpdate) {
  ServerOptions options;
  options.numShards = 4;
  options.consistency = Consistency::ASP;
  options.sparse.kind = SparseOptimizerOptions::Kind::Adagrad;
  auto server = makeServer(options);
  const int64_t rows = 10'000'000, dim = 16;
  ASSERT_FALSE(bool(server->addSparseTable("emb", rows, dim, 0.01f, 7)));
  InProcessTransport transport(*server);
  auto client = makeClient(transport, 0);

  std::vector<int64_t> ids = {rows - 1, 3, 3, 12345};
  Tensor first(DType::F32, {4, dim}), again(DType::F32, {4, dim});
  ASSERT_FALSE(bool(client->wait(client->pullSparse("emb", ids, first))));
  // The same rows on the calling thread.
  ASSERT_FALSE(bool(client->pullSparseNow("emb", ids, again)));
  EXPECT_EQ(0, std::memcmp(first.rawData(), again.rawData(), first.bytes()));
  for (int64_t j = 0; j < dim; ++j) {
    EXPECT_EQ(first.data<float>()[dim + j], first.data<float>()[2 * dim + j]);
    EXPECT_LE(std::abs(first.data<float>()[j]), 0.01f);
  }
  EXPECT_NE(first.data<float>()[0], first.data<float>()[dim]);
  EXPECT_EQ(server->storedRows("emb"), 0); // pulls store nothing

  // Row 3 twice in one push: its gradients are summed, then one Adagrad
  // step: p -= lr g / (sqrt(g^2) + eps) = p - lr sign(g).
  Tensor grads = filled({3, dim}, [](int64_t) { return 0.25f; });
  std::vector<int64_t> pushed = {3, 3, 12345};
  ASSERT_FALSE(
      bool(client->wait(client->pushSparse("emb", pushed, grads, 0, 0.1f))));
  EXPECT_EQ(server->storedRows("emb"), 2);
  ASSERT_FALSE(bool(client->wait(client->pullSparse("emb", ids, again))));
  for (int64_t j = 0; j < dim; ++j) {
    EXPECT_EQ(again.data<float>()[j], first.data<float>()[j]);
    EXPECT_NEAR(again.data<float>()[dim + j],
                first.data<float>()[dim + j] - 0.1f, 1e-6);
    EXPECT_NEAR(again.data<float>()[3 * dim + j],
                first.data<float>()[3 * dim + j] - 0.1f, 1e-6);
  }

  Tensor one(DType::F32, {1, dim});
  EXPECT_EQ(errorOf(client->wait(client->pullSparse("emb", {rows}, one))),
            "table 'emb': row id 10000000 is outside [0, 10000000)");
  EXPECT_EQ(errorOf(client->wait(client->pullDense("emb", one))),
            "table 'emb' is sparse, not dense");
}

// Many workers push overlapping rows at once (ASP, SGD, lr 1, gradients of
// whole numbers so every sum is exact): every update must be there.
TEST(ParameterServer, ConcurrentSparsePushersLoseNoUpdate) {
  const int workers = 8, pushes = 200, batch = 64, rows = 500, dim = 4;
  ServerOptions options;
  options.numShards = 3;
  options.consistency = Consistency::ASP;
  options.sparse.kind = SparseOptimizerOptions::Kind::SGD;
  auto server = makeServer(options);
  ASSERT_FALSE(bool(server->addSparseTable("emb", rows, dim, 0.f, 1)));
  InProcessTransport transport(*server);

  std::vector<std::vector<int64_t>> counts(workers, std::vector<int64_t>(rows));
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      auto client = makeClient(transport, w);
      std::mt19937 rng(w);
      std::vector<Ticket> tickets;
      for (int p = 0; p < pushes; ++p) {
        std::vector<int64_t> ids(batch);
        for (int64_t &id : ids) {
          id = rng() % rows;
          ++counts[w][id];
        }
        Tensor g = filled({batch, dim}, [](int64_t) { return -1.f; });
        tickets.push_back(client->pushSparse("emb", ids, g, 0, 1.f));
      }
      for (const Ticket &t : tickets)
        EXPECT_FALSE(bool(client->wait(t)));
    });
  for (auto &t : threads)
    t.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 20.0) << "102400 row updates took " << seconds << " s";

  auto client = makeClient(transport, 0);
  std::vector<int64_t> all(rows);
  std::iota(all.begin(), all.end(), 0);
  Tensor out(DType::F32, {rows, dim});
  ASSERT_FALSE(bool(client->wait(client->pullSparse("emb", all, out))));
  for (int64_t id = 0; id < rows; ++id) {
    int64_t expected = 0;
    for (int w = 0; w < workers; ++w)
      expected += counts[w][id];
    for (int64_t j = 0; j < dim; ++j)
      ASSERT_EQ(out.data<float>()[id * dim + j], float(expected))
          << "row " << id;
  }
}

TEST(ParameterServer, SparseBSPWaitsForEveryWorker) {
  ServerOptions options;
  options.numShards = 2;
  options.numWorkers = 2;
  options.sparse.kind = SparseOptimizerOptions::Kind::SGD;
  auto server = makeServer(options);
  ASSERT_FALSE(bool(server->addSparseTable("emb", 100, 2, 0.f, 1)));
  InProcessTransport transport(*server);
  auto a = makeClient(transport, 0), b = makeClient(transport, 1);
  // Worker 0 touches row 4, worker 1 rows 4 and 7: the update is the mean
  // over the two workers, row by row.
  Tensor ga = filled({1, 2}, [](int64_t) { return 2.f; });
  Tensor gb = filled({2, 2}, [](int64_t i) { return i < 2 ? 4.f : 6.f; });
  Ticket pa = a->pushSparse("emb", {4}, ga, 0, 1.f);
  Tensor out(DType::F32, {2, 2});
  Ticket pull = a->pullSparse("emb", {4, 7}, out, 1);
  ASSERT_FALSE(bool(b->wait(b->pushSparse("emb", {4, 7}, gb, 0, 1.f))));
  ASSERT_FALSE(bool(a->wait(pa)));
  ASSERT_FALSE(bool(a->wait(pull)));
  EXPECT_EQ(out.data<float>()[0], -3.f); // -(2 + 4) / 2
  EXPECT_EQ(out.data<float>()[2], -3.f); // -(0 + 6) / 2
}

} // namespace

namespace {

// Saved rows go back only into a table they fit; a table's worker count is
// at least one.
TEST(ParameterServer, SavedStateMustFit) {
  ServerOptions options;
  options.sparse.kind = SparseOptimizerOptions::Kind::Adagrad;
  auto server = makeServer(options);
  ASSERT_FALSE(bool(server->addSparseTable("emb", 100, 4, 0.01f, 1)));
  ASSERT_FALSE(bool(
      server->addDenseTable("w", filled({3}, [](int64_t) { return 1.f; }))));
  EXPECT_EQ(errorOf(server->addDenseTable(
                "v", filled({2}, [](int64_t) { return 0.f; }), -1)),
            "table 'v' needs at least one worker, not -1");
  InProcessTransport transport(*server);
  auto client = makeClient(transport, 0);
  EXPECT_EQ(errorOf(client->saveDense("emb").takeError()),
            "table 'emb' is not dense");
  EXPECT_EQ(errorOf(client->saveSparse("w").takeError()),
            "table 'w' is not sparse");

  // Nothing stored yet: nothing to restore but the version.
  auto empty = client->saveSparse("emb");
  ASSERT_TRUE(bool(empty)) << llvm::toString(empty.takeError());
  EXPECT_TRUE(empty->ids.empty());
  EXPECT_FALSE(bool(client->restoreSparse("emb", *empty)));

  train::SparseRows rows;
  rows.ids = {7};
  rows.values = filled({1, 4}, [](int64_t) { return 0.5f; });
  EXPECT_EQ(errorOf(client->restoreSparse("emb", rows)),
            "table 'emb' holds rows of 4 with Adagrad accumulators; the "
            "saved rows do not fit");
  rows.accumulators = filled({1, 4}, [](int64_t) { return 0.1f; });
  rows.ids = {100};
  EXPECT_EQ(errorOf(client->restoreSparse("emb", rows)),
            "table 'emb': saved row id 100 is outside [0, 100)");
  rows.ids = {7};
  EXPECT_FALSE(bool(client->restoreSparse("emb", rows)));
  EXPECT_EQ(server->storedRows("emb"), 1);
}

} // namespace

namespace {

std::string handled(ParameterServer &server, const Request &request) {
  Response response;
  server.handle(request, response);
  return response.error();
}

// A server that holds one shard of a job's and learns its job from the
// first Configure: what it refuses, each with one line.
TEST(ParameterServer, AShardOfAJobRefusesWhatIsNotItsOwn) {
  ServerOptions options;
  options.numShards = 2;
  options.served = {1, 0};
  EXPECT_EQ(errorOf(ParameterServer::create(options).takeError()),
            "served shards must ascend within [0, 2)");
  options.served = {1};
  options.configured = false;
  auto server = makeServer(options);

  Request add;
  add.set_shard(1);
  add.mutable_add()->mutable_info()->set_name("w");
  add.mutable_add()->mutable_info()->set_elements(4);
  add.mutable_add()->set_values(std::string(2 * sizeof(float), '\0'));
  EXPECT_EQ(handled(*server, add),
            "table 'w' added before the server was configured");

  Request configure;
  ServerOptions job;
  job.numShards = 2;
  job.consistency = Consistency::ASP;
  *configure.mutable_configure()->mutable_config() = toConfig(job);
  configure.mutable_configure()->mutable_config()->set_optimizer(9);
  EXPECT_EQ(
      handled(*server, configure).rfind("a configuration out of range: ", 0),
      0u);
  configure.mutable_configure()->mutable_config()->set_optimizer(0);
  EXPECT_EQ(handled(*server, configure), "");
  EXPECT_EQ(handled(*server, add), "");
  add.set_shard(0);
  EXPECT_EQ(handled(*server, add),
            "shard 0 of table 'w' is not held by this server");

  // Under ASP a push is an update of its own: never in pieces.
  Request push;
  push.set_shard(1);
  push.mutable_push()->set_table("w");
  push.mutable_push()->set_count(1);
  push.mutable_push()->set_grads(std::string(sizeof(float), '\0'));
  EXPECT_EQ(handled(*server, push),
            "table 'w': an ASP push is the whole shard range");
  push.set_shard(0);
  EXPECT_EQ(handled(*server, push), "shard 0 is not held by this server");

  Request sparse;
  sparse.set_shard(1);
  sparse.mutable_add()->mutable_info()->set_name("e");
  sparse.mutable_add()->mutable_info()->set_kind(SPARSE);
  sparse.mutable_add()->mutable_info()->set_rows(10);
  sparse.mutable_add()->mutable_info()->set_dim(1);
  ASSERT_EQ(handled(*server, sparse), "");
  // A name taken by a table of the other kind (a fuzz finding: the shard
  // slots of the other kind were looked at before the kinds were compared).
  Request dense = add;
  dense.set_shard(1);
  dense.mutable_add()->mutable_info()->set_name("e");
  EXPECT_EQ(handled(*server, dense),
            "the parameter server already has a table 'e'");
  sparse.mutable_add()->mutable_info()->set_name("w");
  EXPECT_EQ(handled(*server, sparse),
            "the parameter server already has a table 'w'");
  Request restore;
  restore.set_shard(1);
  restore.mutable_restore()->set_table("e");
  restore.mutable_restore()->mutable_state()->add_ids(4);
  restore.mutable_restore()->mutable_state()->set_rows(
      std::string(sizeof(float), '\0'));
  restore.mutable_restore()->mutable_state()->set_accumulators(
      std::string(sizeof(float), '\0'));
  EXPECT_EQ(handled(*server, restore),
            "table 'e': row 4 does not belong to shard 1");
}

} // namespace
