//===- DeviceQueue.cpp - the emulated device's stream ---------------------===//

#include "DeviceQueue.h"

using namespace heterps::runtime::emulated;

DeviceQueue::DeviceQueue(std::function<void()> onStart) {
  thread = std::thread([this, onStart = std::move(onStart)] {
    onStart();
    std::unique_lock lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stopping || !tasks.empty(); });
      if (tasks.empty())
        return;
      std::packaged_task<std::string()> task = std::move(tasks.front());
      tasks.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  });
}

DeviceQueue::~DeviceQueue() {
  {
    std::lock_guard lock(mutex);
    stopping = true;
  }
  changed.notify_all();
  thread.join();
}

std::shared_future<std::string>
DeviceQueue::submit(std::function<std::string()> work) {
  std::packaged_task<std::string()> task(std::move(work));
  std::shared_future<std::string> done = task.get_future().share();
  {
    std::lock_guard lock(mutex);
    tasks.push_back(std::move(task));
  }
  changed.notify_all();
  return done;
}

llvm::Error DeviceQueue::run(llvm::function_ref<llvm::Error()> work) {
  std::string error = submit([&]() -> std::string {
                        if (llvm::Error e = work())
                          return llvm::toString(std::move(e));
                        return "";
                      }).get();
  return error.empty()
             ? llvm::Error::success()
             : llvm::createStringError(llvm::inconvertibleErrorCode(), error);
}
