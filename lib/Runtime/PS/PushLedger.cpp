//===- PushLedger.cpp - pushes applied at most once -----------------------===//

#include "PushLedger.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

using namespace heterps::runtime::ps;

static void answer(const PushLedger::Entry &entry, Response &response) {
  response.clear_body();
  response.set_error(entry.error);
  if (entry.error.empty())
    response.mutable_push()->set_version(entry.version);
}

void PushLedger::once(const PushRequest &push, Response &response,
                      const std::function<void(Response &)> &apply) {
  if (push.sequence() == 0) {
    apply(response);
    return;
  }
  std::unique_lock lock(mutex);
  if (clients.size() >= kMaxClients && !clients.count(push.client())) {
    auto quietest = std::min_element(
        clients.begin(), clients.end(), [](const auto &a, const auto &b) {
          return a.second.lastHeard < b.second.lastHeard;
        });
    clients.erase(quietest);
  }
  Client &client = clients[push.client()];
  client.lastHeard = ++heard;
  if (push.sequence() < client.floor && !client.recent.count(push.sequence())) {
    response.clear_body();
    response.set_error(
        (llvm::Twine("table '") + push.table() + "': push " +
         llvm::Twine(push.sequence()) + " of client " +
         llvm::Twine(push.client()) + " is older than the last " +
         llvm::Twine(kWindow) +
         " this server remembers; it may have been applied, so it is not "
         "applied again")
            .str());
    return;
  }
  std::shared_ptr<Entry> &slot = client.recent[push.sequence()];
  if (slot) {
    // A retry: the first answer, once there is one.
    std::shared_ptr<Entry> entry = slot;
    finished.wait(lock, [&] { return entry->done; });
    ++replays;
    answer(*entry, response);
    return;
  }
  auto entry = std::make_shared<Entry>();
  slot = entry;
  lock.unlock();
  apply(response);
  lock.lock();
  entry->done = true;
  entry->error = response.error();
  entry->version = response.has_push() ? response.push().version() : 0;
  finished.notify_all();
  // Forget the oldest answers that are final (in flight ones stay). The
  // client may itself have been forgotten meanwhile.
  auto it = clients.find(push.client());
  if (it == clients.end())
    return;
  std::map<uint64_t, std::shared_ptr<Entry>> &recent = it->second.recent;
  while (recent.size() > kWindow && recent.begin()->second->done) {
    it->second.floor = recent.begin()->first + 1;
    recent.erase(recent.begin());
  }
}

int64_t PushLedger::replayed() const {
  std::lock_guard lock(mutex);
  return replays;
}
