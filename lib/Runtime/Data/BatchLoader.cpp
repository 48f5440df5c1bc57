//===- BatchLoader.cpp - shuffled mini-batches, prefetched ----------------===//

#include "heterps/Runtime/Data/BatchLoader.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

BatchLoader::BatchLoader(const Dataset &data, BatchLoaderOptions options)
    : data_(data), options_(options) {
  options_.batchSize = std::max<int64_t>(1, options_.batchSize);
}

BatchLoader::~BatchLoader() { stopWorker(); }

int64_t BatchLoader::numBatches() const {
  int64_t n = data_.size(), b = options_.batchSize;
  return options_.dropLast ? n / b : (n + b - 1) / b;
}

std::vector<int64_t> BatchLoader::order(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(data_.size()));
  std::iota(order.begin(), order.end(), 0);
  if (!options_.shuffle)
    return order;
  // A generator of its own per epoch; Fisher-Yates on its raw output (not a
  // std distribution, whose algorithm is the library's choice), so the order
  // is the same on every platform.
  std::mt19937_64 rng(options_.seed + 0x9E3779B97F4A7C15ull *
                                          static_cast<uint64_t>(epoch + 1));
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[rng() % i]);
  return order;
}

void BatchLoader::startEpoch(int64_t epoch, int64_t firstBatch) {
  stopWorker();
  order_ = order(epoch);
  end_ = numBatches();
  nextBatch_ = gathered_ = std::clamp<int64_t>(firstBatch, 0, end_);
  ready_.clear();
  if (options_.prefetch > 0) {
    stop_ = false;
    worker_ = std::thread([this] { work(); });
  }
}

std::optional<Batch> BatchLoader::next() {
  if (nextBatch_ >= end_)
    return std::nullopt;
  if (options_.prefetch <= 0)
    return gather(nextBatch_++);
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !ready_.empty(); });
  Batch batch = std::move(ready_.front());
  ready_.pop_front();
  ++nextBatch_;
  changed_.notify_all();
  return batch;
}

void BatchLoader::work() {
  while (true) {
    int64_t index;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] {
        return stop_ || gathered_ >= end_ ||
               static_cast<int>(ready_.size()) < options_.prefetch;
      });
      if (stop_ || gathered_ >= end_)
        return;
      index = gathered_++;
    }
    Batch batch = gather(index);
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_)
      return;
    ready_.push_back(std::move(batch));
    changed_.notify_all();
  }
}

void BatchLoader::stopWorker() {
  if (!worker_.joinable())
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

/// Rows `order[begin, begin + count)` of `all` (its first dimension).
static Tensor gatherRows(const Tensor &all, const std::vector<int64_t> &order,
                         int64_t begin, int64_t count) {
  Shape shape = all.shape();
  size_t rowBytes = all.bytes() / static_cast<size_t>(shape[0]);
  shape[0] = count;
  Tensor out(all.dtype(), shape);
  auto *dst = static_cast<uint8_t *>(out.rawData());
  const auto *src = static_cast<const uint8_t *>(all.rawData());
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(dst + static_cast<size_t>(i) * rowBytes,
                src + static_cast<size_t>(order[begin + i]) * rowBytes,
                rowBytes);
  return out;
}

Batch BatchLoader::gather(int64_t index) const {
  int64_t begin = index * options_.batchSize;
  int64_t count = std::min(options_.batchSize, data_.size() - begin);
  return {gatherRows(data_.inputs, order_, begin, count),
          gatherRows(data_.targets, order_, begin, count), index};
}
