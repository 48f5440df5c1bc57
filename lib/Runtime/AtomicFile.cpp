//===- AtomicFile.cpp - files replaced whole or not at all ----------------===//

#include "heterps/Runtime/AtomicFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <unistd.h>

using namespace heterps::runtime;

static llvm::Error fileError(llvm::StringRef path, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + what);
}

/// DEST.tmp-PID for this process.
static std::string tempNameFor(llvm::StringRef path) {
  return (path + ".tmp-" + llvm::Twine(llvm::sys::Process::getProcessId()))
      .str();
}

/// Removes DEST.tmp-PID files of processes that no longer run: saves that
/// were killed before their rename.
static void removeStaleTemps(llvm::StringRef path) {
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(path));
  if (dir.empty())
    dir = ".";
  std::string prefix = (llvm::sys::path::filename(path) + ".tmp-").str();
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (!name.consume_front(prefix))
      continue;
    int pid;
    if (name.getAsInteger(10, pid) || pid <= 0)
      continue;
    if (::kill(pid, 0) != 0 && errno == ESRCH)
      llvm::sys::fs::remove(it->path());
  }
}

llvm::Error heterps::runtime::checkCanReplace(llvm::StringRef path) {
  if (llvm::sys::fs::is_directory(path))
    return fileError(path, "is a directory");
  std::string temp = tempNameFor(path);
  int fd;
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(temp, fd))
    return fileError(path, "cannot create a file next to it: " + ec.message());
  llvm::sys::Process::SafelyCloseFileDescriptor(fd);
  llvm::sys::fs::remove(temp);
  return llvm::Error::success();
}

llvm::Error heterps::runtime::writeFileAtomically(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::raw_ostream &)> write) {
  if (llvm::sys::fs::is_directory(path))
    return fileError(path, "is a directory");
  removeStaleTemps(path);
  std::string temp = tempNameFor(path);
  llvm::sys::RemoveFileOnSignal(temp);
  auto cleanUp = [&] {
    llvm::sys::fs::remove(temp);
    llvm::sys::DontRemoveFileOnSignal(temp);
  };
  {
    int fd = -1;
    if (std::error_code ec = llvm::sys::fs::openFileForWrite(temp, fd)) {
      cleanUp();
      return fileError(path,
                       "cannot create a file next to it: " + ec.message());
    }
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/false);
    llvm::Error written = write(os);
    os.flush();
    std::error_code error = os.error();
    os.clear_error();
    // On disk before the rename: after a machine's crash the name holds
    // the old file or the whole new one, never a torn one.
    if (!written && !error && ::fsync(fd) != 0)
      error = std::error_code(errno, std::generic_category());
    ::close(fd);
    if (written || error) {
      cleanUp();
      if (written)
        return written;
      return fileError(path, "write failed: " + error.message());
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    cleanUp();
    return fileError(path, ec.message());
  }
  llvm::sys::DontRemoveFileOnSignal(temp);
  // The rename itself, on disk.
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(path));
  if (dir.empty())
    dir = ".";
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
  return llvm::Error::success();
}

llvm::Error
heterps::runtime::writeJsonFileAtomically(llvm::StringRef path,
                                          const llvm::json::Value &value) {
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << llvm::formatv("{0:2}", value) << "\n";
    return llvm::Error::success();
  });
}
