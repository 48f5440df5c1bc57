//===- ps-bench.cpp - parameter server throughput, in process -------------===//
//
// Prints two tables:
//  1. Dense: pull and push GB/s of one worker through the in-process
//     transport (4 shards, BSP, SGD at the server) for tables of 1-64 MiB,
//     beside this machine's memcpy GB/s on the same sizes: a pull copies
//     the table twice (into the message, out of it), a push copies the
//     gradient twice and reads the weights once in the update.
//  2. Sparse: rows/s of pulls and pushes (Adagrad) of batches of 4096 ids
//     from a 10M x 16 embedding table, with 1 and 2 workers at once (ASP),
//     and the rows the server stores afterwards against the table's rows.
//
//===----------------------------------------------------------------------===//

#include "heterps/Runtime/PS/Client.h"

#include "../Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::ps;

static llvm::cl::opt<double>
    minSeconds("seconds", llvm::cl::desc("Time per measurement (default 1)"),
               llvm::cl::init(1.0));

static llvm::cl::opt<std::string>
    only("only", llvm::cl::desc("Run one table only: dense or sparse"),
         llvm::cl::init(""));

namespace {

/// Seconds per call of `body`, run for --seconds.
template <typename F> double timeIt(F body) {
  return bench::timeIt(minSeconds, body);
}

void check(llvm::Error e) {
  if (e) {
    llvm::errs() << "ps-bench: " << llvm::toString(std::move(e)) << "\n";
    std::exit(1);
  }
}

void denseTable() {
  llvm::outs() << "| dense table | pull GB/s | push GB/s | memcpy GB/s |\n"
                  "|---:|---:|---:|---:|\n";
  for (int64_t mib : {1, 16, 64}) {
    int64_t n = mib * (1 << 20) / 4;
    ServerOptions options;
    options.numShards = 4;
    auto server = llvm::cantFail(ParameterServer::create(options));
    Tensor w(DType::F32, {n});
    std::memset(w.rawData(), 0, w.bytes());
    check(server->addDenseTable("w", w));
    InProcessTransport transport(*server);
    auto client = llvm::cantFail(PSClient::create(transport, 0));
    Tensor out(DType::F32, {n}), grad(DType::F32, {n});
    std::memset(grad.rawData(), 0, grad.bytes());
    int64_t version = 0;
    double pull =
        timeIt([&] { check(client->wait(client->pullDense("w", out))); });
    double push = timeIt([&] {
      check(client->wait(client->pushDense("w", grad, version++, 0.01f)));
    });
    double copy = timeIt(
        [&] { std::memcpy(out.rawData(), grad.rawData(), grad.bytes()); });
    double gb = static_cast<double>(w.bytes()) / 1e9;
    llvm::outs() << llvm::format("| %lld MiB | %.2f | %.2f | %.2f |\n",
                                 static_cast<long long>(mib), gb / pull,
                                 gb / push, gb / copy);
  }
  llvm::outs() << "\n";
}

void sparseTable() {
  const int64_t rows = 10'000'000, dim = 16, batch = 4096;
  llvm::outs() << "| workers | pull rows/s | push rows/s (Adagrad) | rows "
                  "stored | of the table |\n"
                  "|---:|---:|---:|---:|---:|\n";
  for (int workers : {1, 2}) {
    ServerOptions options;
    options.numShards = 4;
    options.consistency = Consistency::ASP;
    auto server = llvm::cantFail(ParameterServer::create(options));
    check(server->addSparseTable("emb", rows, dim, 0.01f, 1));
    InProcessTransport transport(*server);
    double pullRate = 0, pushRate = 0;
    std::vector<std::thread> threads;
    std::mutex mutex;
    for (int w = 0; w < workers; ++w)
      threads.emplace_back([&, w] {
        auto client = llvm::cantFail(PSClient::create(transport, w));
        // Ids skewed as click logs are: a few hot rows, a long tail. Drawn
        // before the clock starts.
        std::mt19937_64 rng(w + 1);
        std::uniform_real_distribution<double> u(0, 1);
        std::vector<std::vector<int64_t>> batches(64);
        for (auto &ids : batches)
          for (int64_t k = 0; k < batch; ++k)
            ids.push_back(
                static_cast<int64_t>(std::pow(u(rng), 4.0) * (rows - 1)));
        size_t next = 0;
        auto draw = [&] { return batches[next++ % batches.size()]; };
        Tensor out(DType::F32, {batch, dim}), grad(DType::F32, {batch, dim});
        for (int64_t i = 0; i < grad.numElements(); ++i)
          grad.data<float>()[i] = 0.001f * static_cast<float>(i % 7);
        double pull = timeIt([&] {
          check(client->wait(client->pullSparse("emb", draw(), out)));
        });
        double push = timeIt([&] {
          check(
              client->wait(client->pushSparse("emb", draw(), grad, 0, 0.01f)));
        });
        std::lock_guard lock(mutex);
        pullRate += batch / pull;
        pushRate += batch / push;
      });
    for (auto &t : threads)
      t.join();
    int64_t stored = server->storedRows("emb");
    llvm::outs() << llvm::format(
        "| %d | %.0f | %.0f | %lld | %.2f%% |\n", workers, pullRate, pushRate,
        static_cast<long long>(stored), 100.0 * stored / rows);
  }
  llvm::outs() << "\n";
}

} // namespace

int main(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "ps-bench: parameter server throughput, in process\n");
  if (only != "sparse")
    denseTable();
  if (only != "dense")
    sparseTable();
  return 0;
}
