//===- DeviceQueue.h - the emulated device's stream -------------*- C++ -*-===//
//
// One worker thread that runs submitted work in order, as a GPU stream
// runs kernels and copies: the caller gets a future to wait on, so copies
// are asynchronous, and kernels run off the caller's thread, as they would
// on a device.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_DEVICEQUEUE_H
#define HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_DEVICEQUEUE_H

#include "llvm/Support/Error.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace heterps::runtime::emulated {

class DeviceQueue {
public:
  /// `onStart` runs first on the queue's thread (thread counts).
  explicit DeviceQueue(std::function<void()> onStart);
  ~DeviceQueue();

  /// Queues `work`, which returns "" or an error message.
  std::shared_future<std::string> submit(std::function<std::string()> work);
  /// Runs `work` on the queue and waits for it.
  llvm::Error run(llvm::function_ref<llvm::Error()> work);

private:
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::packaged_task<std::string()>> tasks;
  bool stopping = false;
  std::thread thread;
};

} // namespace heterps::runtime::emulated

#endif // HETERPS_LIB_RUNTIME_BACKENDS_EMULATED_DEVICEQUEUE_H
