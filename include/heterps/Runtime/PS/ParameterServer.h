//===- ParameterServer.h - dense and sparse parameters, sharded -*- C++ -*-===//
//
// The HeterPS parameter server: tables of parameters split across shards,
// the optimizer applied at the server. A dense table is one f32 vector cut
// into contiguous ranges, one per shard; a sparse table (embeddings) holds
// rows by id, row `id` on shard id % shards, and stores only the rows that
// have been updated: a row never pushed is its initial value, drawn from a
// hash of (seed, id), so memory grows with the rows training touches, not
// with the table's size.
//
// Consistency, per server:
//  * BSP: a shard applies an update once all the table's workers have
//    pushed their gradient for the current version (their mean, so k
//    replicas on k slices of a batch equal one worker on the whole batch),
//    and a pull waits until the version it asks for has been applied.
//  * ASP: every push is applied when it arrives; pulls never wait.
//
// The server is driven by Request/Response messages (PS.proto): `handle`
// is what a transport calls, from any number of threads. A server may hold
// only some of the shards (`ServerOptions::served`): across processes, each
// shard is a server of its own, and the job's processes create their tables
// through Configure and AddTable requests.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PS_PARAMETERSERVER_H
#define HETERPS_RUNTIME_PS_PARAMETERSERVER_H

#include "heterps/Runtime/PS/PS.pb.h"
#include "heterps/Runtime/Train/Optimizer.h"
#include "heterps/Runtime/Train/SparseRows.h"

#include "llvm/Support/Error.h"

#include <chrono>
#include <map>
#include <memory>
#include <shared_mutex>

namespace heterps::runtime::ps {

enum class Consistency { BSP, ASP };

/// "bsp" or "asp"; an error names both.
llvm::Expected<Consistency> parseConsistency(llvm::StringRef name);

/// The optimizer of sparse tables, applied to the rows a push touches.
struct SparseOptimizerOptions {
  enum class Kind { SGD, Adagrad } kind = Kind::Adagrad;
  /// Adagrad: s += g^2, p -= lr g / (sqrt(s) + epsilon), s starting at
  /// `initialAccumulator` (PyTorch's defaults).
  float epsilon = 1e-10f;
  float initialAccumulator = 0;
};

struct ServerOptions {
  /// At most kMaxShards: a shard is a table slice with its own lock, and a
  /// million of them is a typo that would exhaust memory.
  static constexpr int kMaxShards = 1024;
  int numShards = 2;
  /// Workers (replicas) whose pushes make one BSP update.
  int numWorkers = 1;
  Consistency consistency = Consistency::BSP;
  train::OptimizerOptions dense;
  SparseOptimizerOptions sparse;
  /// A BSP pull that waits longer than this is an error naming the
  /// workers that have not pushed (a crashed or stuck replica).
  std::chrono::milliseconds waitTimeout = std::chrono::seconds(60);
  /// The shards this server holds, ascending; empty: all of them.
  std::vector<int> served;
  /// False for a server started before it knows its job (a PS process):
  /// the first Configure request then sets consistency, optimizers, worker
  /// count and job, and tables can be added only after it.
  bool configured = true;
  /// What the job is (ServerConfig.job); a Configure naming another job is
  /// refused.
  std::string job;
};

/// The options as the message every process of a job sends, and back.
ServerConfig toConfig(const ServerOptions &options);
/// `options` with consistency, optimizers, worker count and job from
/// `config` (shards, served shards and timeouts stay).
ServerOptions withConfig(ServerOptions options, const ServerConfig &config);

/// A dense table's whole state, for checkpoints (PSClient::saveDense).
struct DenseTableState {
  /// Plain f32 [elements].
  Tensor values;
  /// The optimizer's moments ([elements], null until needed) and updates.
  train::Optimizer::State optimizer;
  /// Updates applied (the BSP version).
  int64_t version = 0;
};

class DenseShard;
class SparseShard;
class PushLedger;

class ParameterServer {
public:
  /// Checks the options (shard and worker counts at least 1).
  static llvm::Expected<std::unique_ptr<ParameterServer>>
  create(ServerOptions options);
  ~ParameterServer();

  /// A dense table holding `initial` (f32, any shape; kept flat). Under
  /// BSP an update waits for the pushes of `workers` workers (0: the
  /// server's numWorkers), numbered from 0.
  llvm::Error addDenseTable(const std::string &name, const Tensor &initial,
                            int workers = 0);
  /// A sparse table of `rows` rows of `dim` f32, initialised uniformly in
  /// [-initScale, initScale) from `seed` and the row id; `workers` as for
  /// a dense table.
  llvm::Error addSparseTable(const std::string &name, int64_t rows, int64_t dim,
                             float initScale, uint64_t seed, int workers = 0);

  /// Serves one request; errors go into `response.error()`. `epoch` is
  /// the job incarnation the caller belongs to (a network transport sends
  /// it with each call; kNoEpoch: a caller in this process, never fenced):
  /// a request of an epoch below the server's (FenceRequest) is refused.
  static constexpr int64_t kNoEpoch = -1;
  void handle(const Request &request, Response &response,
              int64_t epoch = kNoEpoch);

  /// Shard `shard` of every table, for a checkpoint the shard's process
  /// writes itself; and putting it back (every table of the shard, each
  /// restored as a Restore request does).
  llvm::Expected<ShardCheckpoint> saveShard(int shard);
  llvm::Error restoreShard(const ShardCheckpoint &checkpoint);

  const ServerOptions &options() const { return opts; }
  int64_t epoch() const;
  /// Pushes answered from memory (retries and duplicates): applied once.
  int64_t replayedPushes() const;
  /// Sparse rows stored (updated at least once) over all shards.
  int64_t storedRows(const std::string &table) const;

private:
  explicit ParameterServer(ServerOptions options);
  llvm::Error serve(const Request &request, Response &response);
  llvm::Error setWorkers(TableInfo &info, int workers) const;
  llvm::Error configure(const ServerConfig &config);
  /// Creates shard `shard` of the table `info` describes (offsets filled
  /// in here); `values` is a dense shard's range.
  llvm::Error addShard(TableInfo info, int shard, llvm::ArrayRef<float> values,
                       float initScale, uint64_t seed);
  bool serves(int shard) const;

  struct Table {
    TableInfo info;
    // One per shard (null where another server holds it); the kind's
    // vector only.
    std::vector<std::unique_ptr<DenseShard>> dense;
    std::vector<std::unique_ptr<SparseShard>> sparse;
  };
  llvm::Expected<Table *> lookup(const std::string &name, int shard);
  /// Whether `table` has shard `shard` here.
  static bool holds(const Table &table, int shard);
  /// A shard's state into `out`, and back (checkpoints). Meant for a
  /// quiescent server, between steps.
  llvm::Error save(const Table &table, int shard, ShardState &out);
  llvm::Error restore(const Table &table, int shard, const ShardState &in);

  /// Raises the epoch; waits for the pushes being applied.
  llvm::Error fence(int64_t epoch);
  /// Checks `epoch` and applies a push at most once (PushLedger).
  void push(const Request &request, Response &response, int64_t epoch);

  ServerOptions opts;
  /// Pushes hold it shared while they apply, a fence exclusively: once a
  /// fence returns, no push of an earlier epoch changes a table.
  mutable std::shared_mutex epochMutex;
  int64_t currentEpoch = 0;
  std::unique_ptr<PushLedger> ledger;
  /// Tables are added (and the server configured) while it runs: lookups
  /// share the lock.
  mutable std::shared_mutex tablesMutex;
  std::map<std::string, std::unique_ptr<Table>> tables;
};

} // namespace heterps::runtime::ps

#endif // HETERPS_RUNTIME_PS_PARAMETERSERVER_H
