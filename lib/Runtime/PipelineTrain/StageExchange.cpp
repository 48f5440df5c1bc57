//===- StageExchange.cpp - the in-process mailbox -------------------------===//

#include "heterps/Runtime/PipelineTrain/StageExchange.h"

#include <limits>

using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;

StageExchange::~StageExchange() = default;

void Mailbox::begin(int64_t step) {
  std::lock_guard lock(mutex);
  current = step;
  aborted = false;
  slots.erase(slots.begin(), slots.lower_bound(Key{step, 0, 0, 0}));
}

int64_t Mailbox::step() const {
  std::lock_guard lock(mutex);
  return current;
}

void Mailbox::deliver(int64_t step, Direction dir, int boundary, int microBatch,
                      std::vector<Tensor> values) {
  {
    std::lock_guard lock(mutex);
    if (step < current)
      return;
    slots[Key{step, dir, boundary, microBatch}] = std::move(values);
  }
  changed.notify_all();
}

void Mailbox::put(Direction dir, int boundary, int microBatch,
                  std::vector<Tensor> values) {
  deliver(step(), dir, boundary, microBatch, std::move(values));
}

std::optional<std::vector<Tensor>> Mailbox::take(Direction dir, int boundary,
                                                 int microBatch) {
  std::unique_lock lock(mutex);
  Key key{current, dir, boundary, microBatch};
  std::map<Key, std::vector<Tensor>>::iterator it;
  changed.wait(
      lock, [&] { return aborted || (it = slots.find(key)) != slots.end(); });
  if (aborted)
    return std::nullopt;
  std::vector<Tensor> values = std::move(it->second);
  slots.erase(it);
  return values;
}

void Mailbox::clear() {
  std::lock_guard lock(mutex);
  slots.clear();
  aborted = false;
  // The restored job's steps come again, and a faster peer's values for
  // the next one may arrive before this process begins it: none is "old".
  current = std::numeric_limits<int64_t>::min();
}

void Mailbox::abort() {
  {
    std::lock_guard lock(mutex);
    aborted = true;
  }
  changed.notify_all();
}
