//===- Client.h - a worker's view of the parameter server -------*- C++ -*-===//
//
// Push, pull, wait: a worker issues requests that return at once with a
// Ticket, keeps computing, and waits on the ticket when it needs the
// result. The client splits each request by shard (dense ranges, sparse
// rows by id % shards) and sends the parts through a Transport from its
// own communication thread, in the order they were issued.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PS_CLIENT_H
#define HETERPS_RUNTIME_PS_CLIENT_H

#include "heterps/Runtime/PS/ParameterServer.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <thread>

namespace heterps::runtime::ps {

/// A call that failed in a way that may pass (a connection lost, a
/// deadline passed): the request may or may not have arrived. Sending it
/// again is safe, since a server applies a push at most once.
class TransientError : public llvm::ErrorInfo<TransientError> {
public:
  static char ID;
  explicit TransientError(std::string message) : message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  std::string message;
};

/// Carries a request to the server and its response back. Failures of the
/// transport itself are errors; the server's go in `response.error()`.
class Transport {
public:
  virtual ~Transport();
  virtual llvm::Error call(const Request &request, Response &response) = 0;
  /// As callMany, sent again while it fails with a TransientError, for at
  /// most retryFor(): what clients use.
  llvm::Error send(llvm::ArrayRef<Request> requests,
                   llvm::MutableArrayRef<Response> responses);
  /// How long a call may keep failing transiently before it is an error
  /// (0: no retries).
  virtual std::chrono::milliseconds retryFor() const { return {}; }
  /// Carries several requests, response i for request i. A transport that
  /// can keep them in flight at once does (gRPC); this one sends them in
  /// turn. The first failure is the error; the others still complete.
  virtual llvm::Error callMany(llvm::ArrayRef<Request> requests,
                               llvm::MutableArrayRef<Response> responses);
  /// The largest piece a dense pull of a `rangeBytes` shard range should
  /// ask for at once (0: the whole range): pieces in flight together can
  /// move faster than one large message.
  virtual int64_t pieceBytes(int64_t rangeBytes) const { return 0; }
};

/// The server in this process: messages are handed over, not serialised.
class InProcessTransport : public Transport {
public:
  explicit InProcessTransport(ParameterServer &server) : server(server) {}
  llvm::Error call(const Request &request, Response &response) override;

private:
  ParameterServer &server;
};

/// A request in flight; PSClient::wait gives its outcome.
class Ticket {
public:
  Ticket() = default;

private:
  friend class PSClient;
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    std::string error;
  };
  std::shared_ptr<State> state;
};

class PSClient {
public:
  /// Reads the server's tables through `transport` (which must outlive
  /// the client). `worker` is this replica's index for BSP.
  static llvm::Expected<std::unique_ptr<PSClient>> create(Transport &transport,
                                                          int worker);
  /// Finishes the requests in flight.
  ~PSClient();
  PSClient(const PSClient &) = delete;
  PSClient &operator=(const PSClient &) = delete;

  int worker() const { return workerIndex; }
  /// This client's name in its pushes (PushRequest.client): random, so
  /// that a restarted process is a client of its own.
  uint64_t id() const { return clientId; }
  int numShards() const { return shards; }
  bool bsp() const { return isBsp; }
  /// The named table's description.
  llvm::Expected<TableInfo> table(const std::string &name);

  /// Sends the job's configuration to every shard, now: a server keeps the
  /// first it receives and refuses a different one.
  llvm::Error configure(const ServerConfig &config);
  /// Creates a dense table holding `initial` (plain f32, kept flat) on
  /// every shard, each its range; `workers` as ParameterServer's. `only`
  /// (when not empty) lists the shards to make it on: a shard restarted
  /// after a failure.
  llvm::Error addDenseTable(const std::string &name, const Tensor &initial,
                            int workers, llvm::ArrayRef<int> only = {});
  /// Creates a sparse table on every shard (see ParameterServer), or on
  /// those in `only`.
  llvm::Error addSparseTable(const std::string &name, int64_t rows, int64_t dim,
                             float initScale, uint64_t seed, int workers,
                             llvm::ArrayRef<int> only = {});

  /// Copies the dense table into `out` (plain f32 of its element count,
  /// any shape), under BSP once `minVersion` updates have been applied.
  /// `out` must stay alive until the ticket is waited for.
  Ticket pullDense(const std::string &table, Tensor &out,
                   int64_t minVersion = 0);
  /// Sends the gradient of the whole dense table, computed from version
  /// `step`; `grad` is copied before this returns. `worker` (default: the
  /// client's) is the pusher's index among the table's workers: a table
  /// that several pipeline stages read has its own numbering.
  Ticket pushDense(const std::string &table, const Tensor &grad, int64_t step,
                   float lr, std::optional<int> worker = std::nullopt);

  /// Several dense tables in one go: their requests travel together (one
  /// round trip over a network, not one per table).
  struct DenseOut {
    std::string table;
    Tensor *out;
  };
  Ticket pullDense(llvm::ArrayRef<DenseOut> tables, int64_t minVersion);
  struct DenseGrad {
    std::string table;
    const Tensor *grad;
    /// As pushDense's `worker`; nullopt: the client's.
    std::optional<int> worker;
  };
  Ticket pushDense(llvm::ArrayRef<DenseGrad> grads, int64_t step, float lr);
  /// As pullDense and pushDense, but now, on the calling thread (after
  /// what was issued before): for a caller that would wait at once, one
  /// hand-over less each way.
  llvm::Error pullDenseNow(llvm::ArrayRef<DenseOut> tables, int64_t minVersion);
  llvm::Error pushDenseNow(llvm::ArrayRef<DenseGrad> grads, int64_t step,
                           float lr);
  /// Rows `ids` of a sparse table into `out`, [ids.size(), dim].
  Ticket pullSparse(const std::string &table, std::vector<int64_t> ids,
                    Tensor &out, int64_t minVersion = 0);
  /// As pullSparse, but now, on the calling thread: for a lookup that needs
  /// its rows at once, without the hand-over to the communication thread.
  llvm::Error pullSparseNow(const std::string &table,
                            llvm::ArrayRef<int64_t> ids, Tensor &out,
                            int64_t minVersion = 0);
  /// Gradients of rows `ids` ([ids.size(), dim]; repeated ids are summed).
  Ticket pushSparse(const std::string &table, const std::vector<int64_t> &ids,
                    const Tensor &grads, int64_t step, float lr);

  /// Checkpoints, now: a table's state gathered from every shard, and put
  /// back. Meant for a quiescent server (between steps).
  llvm::Expected<DenseTableState> saveDense(const std::string &table);
  llvm::Error restoreDense(const std::string &table,
                           const DenseTableState &state);
  /// The stored rows by ascending id.
  llvm::Expected<train::SparseRows> saveSparse(const std::string &table);
  /// Every other row returns to its initial value.
  llvm::Error restoreSparse(const std::string &table,
                            const train::SparseRows &rows);

  /// Waits for the ticket's request; its error, if any.
  llvm::Error wait(const Ticket &ticket);

private:
  PSClient(Transport &transport, int worker);
  /// Asks the server for its tables.
  llvm::Expected<ListTablesResponse> refreshTables();
  /// Runs `work` on the communication thread; its error ends the ticket.
  Ticket submit(std::function<llvm::Error()> work);
  Ticket submitWork(llvm::Expected<std::function<llvm::Error()>> work);
  /// Runs `work` on this thread once the communication thread is idle.
  llvm::Error runNow(llvm::Expected<std::function<llvm::Error()>> work);
  /// The work of a dense pull or push (checked now, sent when run).
  llvm::Expected<std::function<llvm::Error()>>
  pullWork(llvm::ArrayRef<DenseOut> tables, int64_t minVersion);
  llvm::Expected<std::function<llvm::Error()>>
  pushWork(llvm::ArrayRef<DenseGrad> grads, int64_t step, float lr);
  static Ticket failed(llvm::Error error);
  using Requests = std::shared_ptr<std::vector<Request>>;
  Ticket submitAll(Requests requests);
  std::function<llvm::Error()> sendAll(Requests requests);
  void run();

  /// `count` requests from the pool, returned to it when the last
  /// reference goes: their byte buffers keep their capacity, so large
  /// pushes do not allocate (and page-fault) every time.
  Requests takeRequests(size_t count);
  /// A pooled request emptied and addressed as worker `worker`'s push.
  PushRequest *startPush(Request &request, int shard, const std::string &table,
                         int64_t step, float lr, int worker) const;

  /// Buffers of a sparse pull, reused from call to call.
  struct SparseScratch {
    std::vector<Request> requests;
    std::vector<Response> responses;
    std::vector<int> shards;
    std::vector<std::vector<int64_t>> positions;
  };
  llvm::Error fetchSparse(const TableInfo &info, llvm::ArrayRef<int64_t> ids,
                          Tensor &out, int64_t minVersion,
                          SparseScratch &scratch);

  Transport &transport;
  int workerIndex;
  uint64_t clientId;
  /// The last push's sequence number (PushRequest.sequence).
  mutable std::atomic<uint64_t> pushes{0};
  int shards = 1;
  bool isBsp = true;
  std::mutex tablesMutex;
  std::map<std::string, TableInfo> tables;

  std::mutex poolMutex;
  std::vector<std::unique_ptr<std::vector<Request>>> pool;
  /// Used by the communication thread only, reused from call to call.
  std::vector<Response> responses;
  std::vector<Request> pullRequests;
  std::vector<Response> pullResponses;
  SparseScratch commScratch;
  /// pullSparseNow's, for one caller at a time.
  std::mutex nowMutex;
  SparseScratch nowScratch;

  std::mutex queueMutex;
  std::condition_variable queueChanged;
  std::deque<std::pair<std::function<llvm::Error()>, Ticket>> queue;
  bool stopping = false;
  /// Work runs (on the communication thread, or a caller's: runNow).
  bool running = false;
  std::thread thread;
};

} // namespace heterps::runtime::ps

#endif // HETERPS_RUNTIME_PS_CLIENT_H
