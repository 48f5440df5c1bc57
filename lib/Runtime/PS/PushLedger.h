//===- PushLedger.h - pushes applied at most once ---------------*- C++ -*-===//
//
// Internal to the parameter server. A client that timed out cannot know
// whether its push arrived, so it sends it again with the same (client,
// sequence). The ledger remembers the answers of each client's recent
// pushes: a retry gets the first answer without being applied again, and
// a retry that arrives while the first is still being applied waits for
// it. Only the last kWindow pushes of a client are remembered; an older
// sequence is refused, since whether it was applied is no longer known.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_PS_PUSHLEDGER_H
#define HETERPS_LIB_RUNTIME_PS_PUSHLEDGER_H

#include "heterps/Runtime/PS/PS.pb.h"

#include "llvm/Support/Error.h"

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace heterps::runtime::ps {

class PushLedger {
public:
  /// Pushes remembered per client: more than a client keeps in flight at
  /// once (a stage's tables cut in pieces, over all shards).
  static constexpr size_t kWindow = 1024;
  /// Clients remembered: the one unheard of longest is forgotten beyond
  /// this (a process long gone), so that clients cannot fill the memory.
  static constexpr size_t kMaxClients = 1024;

  /// Runs `apply` for a push seen for the first time and remembers what
  /// it answered; a retry gets that answer in `response`.
  void once(const PushRequest &push, Response &response,
            const std::function<void(Response &)> &apply);
  /// Pushes answered from memory so far (duplicates and retries).
  int64_t replayed() const;

  struct Entry {
    bool done = false;
    std::string error;
    int64_t version = 0;
  };

private:
  struct Client {
    /// Shared with the retries that wait for an answer: it may be
    /// forgotten here before they wake.
    std::map<uint64_t, std::shared_ptr<Entry>> recent;
    /// Sequences below this were forgotten.
    uint64_t floor = 1;
    /// When it last pushed (the ledger's count of pushes).
    uint64_t lastHeard = 0;
  };
  mutable std::mutex mutex;
  std::condition_variable finished;
  std::unordered_map<uint64_t, Client> clients;
  int64_t replays = 0;
  uint64_t heard = 0;
};

} // namespace heterps::runtime::ps

#endif // HETERPS_LIB_RUNTIME_PS_PUSHLEDGER_H
