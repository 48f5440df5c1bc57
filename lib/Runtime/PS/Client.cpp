//===- Client.cpp - requests split by shard, sent in order ----------------===//

#include "heterps/Runtime/PS/Client.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"

#include <cstring>
#include <random>
#include <thread>

using namespace heterps::runtime;
using namespace heterps::runtime::ps;

static llvm::Error psError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

char TransientError::ID = 0;

Transport::~Transport() = default;

llvm::Error Transport::send(llvm::ArrayRef<Request> requests,
                            llvm::MutableArrayRef<Response> responses) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point deadline = Clock::now() + retryFor();
  auto backoff = std::chrono::milliseconds(10);
  while (true) {
    llvm::Error sent = callMany(requests, responses);
    std::string transient;
    llvm::Error other =
        llvm::handleErrors(std::move(sent), [&](const TransientError &e) {
          if (transient.empty()) {
            llvm::raw_string_ostream os(transient);
            e.log(os);
          }
        });
    if (other || transient.empty())
      return other;
    if (Clock::now() + backoff > deadline)
      return psError(transient + " (still failing after " +
                     llvm::Twine(static_cast<int64_t>(retryFor().count())) +
                     " ms of retries)");
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

llvm::Error Transport::callMany(llvm::ArrayRef<Request> requests,
                                llvm::MutableArrayRef<Response> responses) {
  llvm::Error all = llvm::Error::success();
  for (size_t i = 0; i < requests.size(); ++i)
    all = llvm::joinErrors(std::move(all), call(requests[i], responses[i]));
  return all;
}

llvm::Error InProcessTransport::call(const Request &request,
                                     Response &response) {
  server.handle(request, response);
  return llvm::Error::success();
}

/// A client's random name: processes restarted after a failure must not
/// reuse a name whose pushes a server remembers.
static uint64_t randomClientId() {
  std::random_device device;
  return (uint64_t(device()) << 32 | device()) | 1;
}

PSClient::PSClient(Transport &transport, int worker)
    : transport(transport), workerIndex(worker), clientId(randomClientId()) {}

llvm::Expected<std::unique_ptr<PSClient>> PSClient::create(Transport &transport,
                                                           int worker) {
  std::unique_ptr<PSClient> client(new PSClient(transport, worker));
  llvm::Expected<ListTablesResponse> list = client->refreshTables();
  if (!list)
    return list.takeError();
  client->shards = list->num_shards();
  client->isBsp = list->bsp();
  client->responses.resize(client->shards);
  client->thread = std::thread([c = client.get()] { c->run(); });
  return client;
}

PSClient::~PSClient() {
  {
    std::lock_guard lock(queueMutex);
    stopping = true;
  }
  queueChanged.notify_all();
  if (thread.joinable())
    thread.join();
}

static llvm::Error exchange(Transport &transport, const Request &request,
                            Response &response) {
  if (llvm::Error e = transport.send(request, response))
    return e;
  if (!response.error().empty())
    return psError(response.error());
  return llvm::Error::success();
}

PSClient::Requests PSClient::takeRequests(size_t count) {
  std::unique_ptr<std::vector<Request>> requests;
  {
    std::lock_guard lock(poolMutex);
    if (!pool.empty()) {
      requests = std::move(pool.back());
      pool.pop_back();
    }
  }
  if (!requests)
    requests = std::make_unique<std::vector<Request>>();
  requests->resize(count);
  return Requests(requests.release(), [this](std::vector<Request> *r) {
    std::lock_guard lock(poolMutex);
    pool.emplace_back(r);
  });
}

llvm::Expected<ListTablesResponse> PSClient::refreshTables() {
  Request request;
  request.mutable_list();
  Response response;
  if (llvm::Error e = exchange(transport, request, response))
    return std::move(e);
  std::lock_guard lock(tablesMutex);
  for (const TableInfo &info : response.list().tables())
    tables[info.name()] = info;
  return response.list();
}

llvm::Expected<TableInfo> PSClient::table(const std::string &name) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard lock(tablesMutex);
      auto it = tables.find(name);
      if (it != tables.end())
        return it->second;
    }
    // Tables may have been added since the client last asked.
    if (attempt == 0)
      if (llvm::Expected<ListTablesResponse> list = refreshTables(); !list)
        return list.takeError();
  }
  return psError("the parameter server has no table '" + name + "'");
}

llvm::Error PSClient::configure(const ServerConfig &config) {
  Request request;
  *request.mutable_configure()->mutable_config() = config;
  Response response;
  for (int s = 0; s < shards; ++s) {
    request.set_shard(s);
    if (llvm::Error e = exchange(transport, request, response))
      return psError("parameter-server shard " + llvm::Twine(s) + ": " +
                     llvm::toString(std::move(e)));
  }
  isBsp = config.bsp();
  return llvm::Error::success();
}

/// Whether a table is made on shard `s` (`only` empty: on every shard).
static bool madeOn(llvm::ArrayRef<int> only, int s) {
  return only.empty() || llvm::is_contained(only, s);
}

llvm::Error PSClient::addDenseTable(const std::string &name,
                                    const Tensor &initial, int workers,
                                    llvm::ArrayRef<int> only) {
  if (initial.dtype() != DType::F32 || !initial.isPlain())
    return psError("dense table '" + name + "' must be plain f32, not " +
                   initial.typeString());
  Request request;
  AddTableRequest *add = request.mutable_add();
  TableInfo *info = add->mutable_info();
  info->set_name(name);
  info->set_kind(DENSE);
  int64_t n = initial.numElements();
  info->set_elements(n);
  info->set_workers(workers);
  const auto *bytes = static_cast<const char *>(initial.rawData());
  Response response;
  for (int s = 0; s < shards; ++s) {
    if (!madeOn(only, s))
      continue;
    int64_t begin = n * s / shards, end = n * (s + 1) / shards;
    request.set_shard(s);
    add->set_values(bytes + begin * sizeof(float),
                    (end - begin) * sizeof(float));
    if (llvm::Error e = exchange(transport, request, response))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error PSClient::addSparseTable(const std::string &name, int64_t rows,
                                     int64_t dim, float initScale,
                                     uint64_t seed, int workers,
                                     llvm::ArrayRef<int> only) {
  Request request;
  AddTableRequest *add = request.mutable_add();
  TableInfo *info = add->mutable_info();
  info->set_name(name);
  info->set_kind(SPARSE);
  info->set_rows(rows);
  info->set_dim(dim);
  info->set_workers(workers);
  add->set_init_scale(initScale);
  add->set_seed(seed);
  Response response;
  for (int s = 0; s < shards; ++s) {
    if (!madeOn(only, s))
      continue;
    request.set_shard(s);
    if (llvm::Error e = exchange(transport, request, response))
      return e;
  }
  return llvm::Error::success();
}

void PSClient::run() {
  while (true) {
    std::pair<std::function<llvm::Error()>, Ticket> item;
    {
      std::unique_lock lock(queueMutex);
      queueChanged.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return;
      item = std::move(queue.front());
      queue.pop_front();
      running = true;
    }
    llvm::Error e = item.first();
    {
      Ticket::State &state = *item.second.state;
      std::lock_guard lock(state.mutex);
      if (e)
        state.error = llvm::toString(std::move(e));
      state.finished = true;
      state.done.notify_all();
    }
    std::lock_guard lock(queueMutex);
    running = false;
    queueChanged.notify_all();
  }
}

llvm::Error
PSClient::runNow(llvm::Expected<std::function<llvm::Error()>> work) {
  if (!work)
    return work.takeError();
  // After what was issued before, with the communication thread's buffers.
  std::unique_lock lock(queueMutex);
  queueChanged.wait(lock, [&] { return queue.empty() && !running; });
  running = true;
  lock.unlock();
  llvm::Error e = (*work)();
  lock.lock();
  running = false;
  queueChanged.notify_all();
  return e;
}

Ticket PSClient::submitWork(llvm::Expected<std::function<llvm::Error()>> work) {
  if (!work)
    return failed(work.takeError());
  return submit(std::move(*work));
}

Ticket PSClient::submit(std::function<llvm::Error()> work) {
  Ticket ticket;
  ticket.state = std::make_shared<Ticket::State>();
  {
    std::lock_guard lock(queueMutex);
    queue.emplace_back(std::move(work), ticket);
  }
  queueChanged.notify_one();
  return ticket;
}

Ticket PSClient::failed(llvm::Error error) {
  Ticket ticket;
  ticket.state = std::make_shared<Ticket::State>();
  ticket.state->finished = true;
  ticket.state->error = llvm::toString(std::move(error));
  return ticket;
}

llvm::Error PSClient::wait(const Ticket &ticket) {
  if (!ticket.state)
    return psError("waiting on a ticket no request gave");
  Ticket::State &state = *ticket.state;
  std::unique_lock lock(state.mutex);
  state.done.wait(lock, [&] { return state.finished; });
  if (!state.error.empty())
    return psError(state.error);
  return llvm::Error::success();
}

/// The table's info if it has `kind`, else an error.
static llvm::Expected<TableInfo> expectKind(llvm::Expected<TableInfo> info,
                                            TableKind kind) {
  if (info && info->kind() != kind)
    return psError("table '" + info->name() + "' is " +
                   (kind == DENSE ? "sparse, not dense" : "dense, not sparse"));
  return info;
}

static llvm::Error checkBuffer(const TableInfo &info, const Tensor &t,
                               int64_t elements, llvm::StringRef what) {
  if (t.dtype() != DType::F32 || !t.isPlain() || t.numElements() != elements)
    return psError("table '" + info.name() + "': " + what + " is " +
                   t.typeString() + ", expected plain f32 of " +
                   llvm::Twine(elements) + " elements");
  return llvm::Error::success();
}

Ticket PSClient::pullDense(const std::string &name, Tensor &out,
                           int64_t minVersion) {
  return pullDense({DenseOut{name, &out}}, minVersion);
}

Ticket PSClient::pullDense(llvm::ArrayRef<DenseOut> tables,
                           int64_t minVersion) {
  return submitWork(pullWork(tables, minVersion));
}

llvm::Error PSClient::pullDenseNow(llvm::ArrayRef<DenseOut> tables,
                                   int64_t minVersion) {
  return runNow(pullWork(tables, minVersion));
}

llvm::Expected<std::function<llvm::Error()>>
PSClient::pullWork(llvm::ArrayRef<DenseOut> tables, int64_t minVersion) {
  std::vector<std::pair<TableInfo, Tensor *>> wanted;
  for (const DenseOut &t : tables) {
    llvm::Expected<TableInfo> info = expectKind(table(t.table), DENSE);
    if (!info)
      return info.takeError();
    if (llvm::Error e =
            checkBuffer(*info, *t.out, info->elements(), "the output"))
      return std::move(e);
    wanted.emplace_back(std::move(*info), t.out);
  }
  return [this, wanted = std::move(wanted), minVersion]() -> llvm::Error {
    // Each shard's range of each table, in pieces of at most pieceBytes().
    pullRequests.clear();
    std::vector<size_t> owner;
    for (auto [t, entry] : llvm::enumerate(wanted)) {
      const TableInfo &info = entry.first;
      for (int s = 0; s < info.shard_offsets_size() - 1; ++s) {
        int64_t range = info.shard_offsets(s + 1) - info.shard_offsets(s);
        int64_t piece = transport.pieceBytes(range * int64_t(sizeof(float))) /
                        int64_t(sizeof(float));
        int64_t step = piece > 0 ? piece : std::max<int64_t>(range, 1);
        int64_t offset = 0;
        do {
          Request &request = pullRequests.emplace_back();
          owner.push_back(t);
          request.set_shard(s);
          PullRequest *pull = request.mutable_pull();
          pull->set_table(info.name());
          pull->set_min_version(minVersion);
          pull->set_offset(offset);
          pull->set_count(std::min(step, range - offset));
          offset += step;
        } while (offset < range);
      }
    }
    pullResponses.resize(pullRequests.size());
    if (llvm::Error sent = transport.send(pullRequests, pullResponses))
      return sent;
    for (size_t i = 0; i < pullRequests.size(); ++i) {
      const Response &response = pullResponses[i];
      if (!response.error().empty())
        return psError(response.error());
      const TableInfo &info = wanted[owner[i]].first;
      const PullRequest &pull = pullRequests[i].pull();
      const std::string &values = response.pull().values();
      int s = pullRequests[i].shard();
      size_t expected = pull.count() * sizeof(float);
      if (values.size() != expected)
        return psError("table '" + info.name() + "': shard " + llvm::Twine(s) +
                       " sent " + llvm::Twine(values.size()) +
                       " bytes, expected " + llvm::Twine(expected));
      auto *dst = static_cast<char *>(wanted[owner[i]].second->rawData());
      std::memcpy(dst + (info.shard_offsets(s) + pull.offset()) * sizeof(float),
                  values.data(), expected);
    }
    return llvm::Error::success();
  };
}

/// Sends the requests of `requests` (one per shard) together.
Ticket PSClient::submitAll(Requests requests) {
  return submit(sendAll(std::move(requests)));
}

std::function<llvm::Error()> PSClient::sendAll(Requests requests) {
  return [this, requests]() -> llvm::Error {
    responses.resize(std::max(responses.size(), requests->size()));
    llvm::MutableArrayRef<Response> out(responses.data(), requests->size());
    if (llvm::Error e = transport.send(*requests, out))
      return e;
    for (const Response &response : out)
      if (!response.error().empty())
        return psError(response.error());
    return llvm::Error::success();
  };
}

PushRequest *PSClient::startPush(Request &request, int shard,
                                 const std::string &table, int64_t step,
                                 float lr, int worker) const {
  request.set_shard(shard);
  PushRequest *push = request.mutable_push();
  push->set_table(table);
  push->set_worker(worker);
  push->set_step(step);
  push->set_lr(lr);
  push->clear_ids();
  push->set_offset(0);
  push->set_count(0);
  push->set_client(clientId);
  push->set_sequence(++pushes);
  push->mutable_grads()->clear(); // keeps its capacity
  return push;
}

Ticket PSClient::pushDense(const std::string &name, const Tensor &grad,
                           int64_t step, float lr, std::optional<int> worker) {
  return pushDense({DenseGrad{name, &grad, worker}}, step, lr);
}

Ticket PSClient::pushDense(llvm::ArrayRef<DenseGrad> grads, int64_t step,
                           float lr) {
  return submitWork(pushWork(grads, step, lr));
}

llvm::Error PSClient::pushDenseNow(llvm::ArrayRef<DenseGrad> grads,
                                   int64_t step, float lr) {
  return runNow(pushWork(grads, step, lr));
}

llvm::Expected<std::function<llvm::Error()>>
PSClient::pushWork(llvm::ArrayRef<DenseGrad> grads, int64_t step, float lr) {
  std::vector<TableInfo> infos;
  for (const DenseGrad &g : grads) {
    llvm::Expected<TableInfo> info = expectKind(table(g.table), DENSE);
    if (!info)
      return info.takeError();
    if (llvm::Error e =
            checkBuffer(*info, *g.grad, info->elements(), "the gradient"))
      return std::move(e);
    infos.push_back(std::move(*info));
  }
  // Each shard's range, under BSP in pieces of at most pieceBytes() when
  // large (the server counts a worker once its pieces make up the range);
  // ASP pushes are updates of their own, whole.
  struct Piece {
    size_t table;
    int shard;
    int64_t offset, count;
  };
  std::vector<Piece> pieces;
  for (auto [t, info] : llvm::enumerate(infos))
    for (int s = 0; s < info.shard_offsets_size() - 1; ++s) {
      int64_t range = info.shard_offsets(s + 1) - info.shard_offsets(s);
      int64_t bytes = range * int64_t(sizeof(float));
      // Up to 4 MB a range goes whole: each piece is summed under the
      // shard's lock, which costs more than it overlaps there.
      int64_t piece = isBsp && bytes > (4 << 20)
                          ? transport.pieceBytes(bytes) / int64_t(sizeof(float))
                          : 0;
      int64_t size = piece > 0 ? piece : std::max<int64_t>(range, 1);
      int64_t offset = 0;
      do {
        pieces.push_back({t, s, offset, std::min(size, range - offset)});
        offset += size;
      } while (offset < range);
    }
  // The gradients go into the messages now, so the caller may reuse them.
  Requests requests = takeRequests(pieces.size());
  for (auto [request, piece] : llvm::zip(*requests, pieces)) {
    const DenseGrad &g = grads[piece.table];
    const TableInfo &info = infos[piece.table];
    PushRequest *push = startPush(request, piece.shard, g.table, step, lr,
                                  g.worker.value_or(workerIndex));
    bool whole = piece.offset == 0 &&
                 piece.count == info.shard_offsets(piece.shard + 1) -
                                    info.shard_offsets(piece.shard);
    push->set_offset(whole ? 0 : piece.offset);
    push->set_count(whole ? 0 : piece.count);
    const auto *src = static_cast<const char *>(g.grad->rawData());
    int64_t begin = info.shard_offsets(piece.shard) + piece.offset;
    push->set_grads(src + begin * sizeof(float), piece.count * sizeof(float));
  }
  return sendAll(std::move(requests));
}

static int shardOf(int64_t id, int numShards) {
  return static_cast<int>(((id % numShards) + numShards) % numShards);
}

Ticket PSClient::pullSparse(const std::string &name, std::vector<int64_t> ids,
                            Tensor &out, int64_t minVersion) {
  llvm::Expected<TableInfo> info = expectKind(table(name), SPARSE);
  if (!info)
    return failed(info.takeError());
  int64_t dim = info->dim();
  if (llvm::Error e = checkBuffer(
          *info, out, static_cast<int64_t>(ids.size()) * dim, "the output"))
    return failed(std::move(e));
  return submit([this, info = *info, ids = std::move(ids), out = &out,
                 minVersion]() -> llvm::Error {
    return fetchSparse(info, ids, *out, minVersion, commScratch);
  });
}

llvm::Error PSClient::pullSparseNow(const std::string &name,
                                    llvm::ArrayRef<int64_t> ids, Tensor &out,
                                    int64_t minVersion) {
  llvm::Expected<TableInfo> info = expectKind(table(name), SPARSE);
  if (!info)
    return info.takeError();
  if (llvm::Error e = checkBuffer(
          *info, out, static_cast<int64_t>(ids.size()) * info->dim(),
          "the output"))
    return e;
  std::lock_guard lock(nowMutex);
  return fetchSparse(*info, ids, out, minVersion, nowScratch);
}

llvm::Error PSClient::fetchSparse(const TableInfo &info,
                                  llvm::ArrayRef<int64_t> ids, Tensor &out,
                                  int64_t minVersion, SparseScratch &scratch) {
  int64_t dim = info.dim();
  std::vector<std::vector<int64_t>> &positions = scratch.positions;
  positions.resize(shards);
  // Where each shard's rows go in `out`.
  for (auto &p : positions)
    p.clear();
  for (size_t i = 0; i < ids.size(); ++i)
    positions[shardOf(ids[i], shards)].push_back(static_cast<int64_t>(i));
  float *dst = out.data<float>();
  // One request per shard that holds some of the rows, all sent together.
  std::vector<Request> &requests = scratch.requests;
  std::vector<int> &shardOfRequest = scratch.shards;
  shardOfRequest.clear();
  for (int s = 0; s < shards; ++s)
    if (!positions[s].empty())
      shardOfRequest.push_back(s);
  requests.resize(shardOfRequest.size());
  scratch.responses.resize(shardOfRequest.size());
  for (auto [request, s] : llvm::zip(requests, shardOfRequest)) {
    request.set_shard(s);
    PullRequest *pull = request.mutable_pull();
    pull->set_table(info.name());
    pull->set_min_version(minVersion);
    pull->clear_ids();
    for (int64_t i : positions[s])
      pull->add_ids(ids[i]);
  }
  if (llvm::Error e = transport.send(requests, scratch.responses))
    return e;
  for (auto [response, s] : llvm::zip(scratch.responses, shardOfRequest)) {
    if (!response.error().empty())
      return psError(response.error());
    const std::string &values = response.pull().values();
    if (values.size() != positions[s].size() * dim * sizeof(float))
      return psError("table '" + info.name() + "': shard " + llvm::Twine(s) +
                     " sent the wrong number of rows");
    const auto *rows = reinterpret_cast<const float *>(values.data());
    for (size_t k = 0; k < positions[s].size(); ++k)
      std::memcpy(dst + positions[s][k] * dim, rows + k * dim,
                  dim * sizeof(float));
  }
  return llvm::Error::success();
}

Ticket PSClient::pushSparse(const std::string &name,
                            const std::vector<int64_t> &ids,
                            const Tensor &grads, int64_t step, float lr) {
  llvm::Expected<TableInfo> info = expectKind(table(name), SPARSE);
  if (!info)
    return failed(info.takeError());
  int64_t dim = info->dim();
  if (llvm::Error e = checkBuffer(
          *info, grads, static_cast<int64_t>(ids.size()) * dim, "the gradient"))
    return failed(std::move(e));
  Requests requests = takeRequests(shards);
  for (int s = 0; s < shards; ++s)
    startPush((*requests)[s], s, name, step, lr, workerIndex);
  const auto *g = reinterpret_cast<const char *>(grads.rawData());
  for (size_t i = 0; i < ids.size(); ++i) {
    PushRequest *push = (*requests)[shardOf(ids[i], shards)].mutable_push();
    push->add_ids(ids[i]);
    push->mutable_grads()->append(g + i * dim * sizeof(float),
                                  dim * sizeof(float));
  }
  // Under BSP every shard hears from every worker at every step, with no
  // rows if the batch touched none there, so each shard's version advances.
  return submitAll(std::move(requests));
}
