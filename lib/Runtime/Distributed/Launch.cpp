//===- Launch.cpp - fork + exec, prefixed output --------------------------===//

#include "heterps/Runtime/Distributed/Launch.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netinet/in.h>
#include <random>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;

/// Messages echo what peers sent: one printable line.
static llvm::Error launchError(const llvm::Twine &message) {
  return heterps::printableError(message);
}

/// Lines from all children go to stderr whole, never interleaved mid-line.
static std::mutex &outputMutex() {
  static std::mutex mutex;
  return mutex;
}

/// Reads a child's merged stdout and stderr and writes them prefixed.
struct ChildProcess::Output {
  int fd = -1;
  std::thread reader;

  void run(std::string prefix) {
    std::string pending;
    char buffer[4096];
    while (true) {
      ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      pending.append(buffer, n);
      size_t start = 0, end;
      while ((end = pending.find('\n', start)) != std::string::npos) {
        emit(prefix, llvm::StringRef(pending).slice(start, end));
        start = end + 1;
      }
      pending.erase(0, start);
    }
    if (!pending.empty())
      emit(prefix, pending);
    ::close(fd);
  }

  static void emit(const std::string &prefix, llvm::StringRef line) {
    std::string text = prefix + line.str() + "\n";
    std::lock_guard lock(outputMutex());
    ssize_t unused = ::write(STDERR_FILENO, text.data(), text.size());
    (void)unused;
  }
};

llvm::Expected<std::unique_ptr<ChildProcess>>
ChildProcess::spawn(const std::string &role,
                    const std::vector<std::string> &argv,
                    const std::map<std::string, std::string> &env) {
  if (argv.empty())
    return launchError("no program to start for " + role);
  // Everything exec needs is built before fork: the child only calls
  // async-signal-safe functions.
  std::vector<char *> args;
  for (const std::string &a : argv)
    args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> envStrings;
  for (char **e = environ; *e; ++e) {
    llvm::StringRef name = llvm::StringRef(*e).split('=').first;
    if (!env.count(name.str()))
      envStrings.push_back(*e);
  }
  for (const auto &[name, value] : env)
    envStrings.push_back(name + "=" + value);
  std::vector<char *> envp;
  for (std::string &e : envStrings)
    envp.push_back(e.data());
  envp.push_back(nullptr);

  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0)
    return launchError("cannot start " + role +
                       ": pipe: " + std::strerror(errno));
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
    return launchError("cannot start " + role +
                       ": fork: " + std::strerror(errno));
  }
  if (pid == 0) {
    // The child: dies with the launcher, writes into the pipe.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent)
      ::_exit(127);
    ::dup2(pipeFds[1], STDOUT_FILENO);
    ::dup2(pipeFds[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(args[0], args.data(), envp.data());
    const char message[] = "exec failed\n";
    ssize_t unused = ::write(STDERR_FILENO, message, sizeof message - 1);
    (void)unused;
    ::_exit(127);
  }
  ::close(pipeFds[1]);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->name = role;
  child->pid = pid;
  child->output = std::make_unique<Output>();
  child->output->fd = pipeFds[0];
  child->output->reader =
      std::thread([out = child->output.get(), prefix = "[" + role + "] "] {
        out->run(prefix);
      });
  return child;
}

bool ChildProcess::exited() {
  if (done)
    return true;
  int raw = 0;
  if (::waitpid(pid, &raw, WNOHANG) != pid)
    return false;
  done = true;
  status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return true;
}

int ChildProcess::stop(std::chrono::milliseconds grace) {
  if (!exited()) {
    ::kill(pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + grace;
    while (!exited() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!exited()) {
      ::kill(pid, SIGKILL);
      int raw = 0;
      ::waitpid(pid, &raw, 0);
      done = true;
      status = 128 + SIGKILL;
    }
  }
  if (output && output->reader.joinable())
    output->reader.join();
  return status;
}

ChildProcess::~ChildProcess() { stop(); }

llvm::Expected<std::string> distributed::selfExecutable() {
  llvm::SmallString<256> path;
  if (std::error_code ec = llvm::sys::fs::real_path("/proc/self/exe", path))
    return launchError("cannot find this program: /proc/self/exe: " +
                       ec.message());
  return path.str().str();
}

llvm::Expected<int>
distributed::waitForPort(ChildProcess &child, const std::string &portFile,
                         std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto buffer = llvm::MemoryBuffer::getFile(portFile)) {
      unsigned port = 0;
      if (!(*buffer)->getBuffer().trim().getAsInteger(10, port) && port > 0 &&
          port < 65536)
        return static_cast<int>(port);
    }
    if (child.exited())
      return launchError(child.role() + " exited with status " +
                         llvm::Twine(child.exitStatus()) +
                         " before it listened");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return launchError(child.role() + " did not listen within " +
                     llvm::Twine(static_cast<int64_t>(timeout.count())) +
                     " ms");
}

llvm::Expected<int> distributed::freeLoopbackPort() {
  int low = 32768;
  if (auto range = llvm::MemoryBuffer::getFileAsStream(
          "/proc/sys/net/ipv4/ip_local_port_range"))
    (*range)->getBuffer().trim().split('\t').first.trim().getAsInteger(10, low);
  std::random_device random;
  for (int attempt = 0; attempt < 200 && low > 10000; ++attempt) {
    int port = 10000 + static_cast<int>(random() % unsigned(low - 10000));
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
      break;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool free =
        ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (free)
      return port;
  }
  return launchError("no free loopback port below the ephemeral range");
}
