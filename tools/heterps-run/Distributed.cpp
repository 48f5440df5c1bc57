//===- Distributed.cpp - --role and --ps ----------------------------------===//

#include "Distributed.h"

#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/Launch.h"
#include "heterps/Runtime/Distributed/PSServer.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::distributed;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &tools::distributedCategory() {
  static cl::OptionCategory category(
      "heterps-run distributed options (parameter-server shards as "
      "processes; see docs/distributed.md)");
  return category;
}

namespace {

cl::opt<std::string>
    role("role",
         cl::desc("Run one role of a distributed job instead of a model: "
                  "'ps' (a parameter-server shard, --shard of --ps-shards)"),
         cl::value_desc("ps"), cl::cat(tools::distributedCategory()));
cl::opt<int> shardIndex("shard",
                        cl::desc("--role=ps: the shard this process serves"),
                        cl::value_desc("I"), cl::init(-1),
                        cl::cat(tools::distributedCategory()));
cl::opt<std::string>
    listenAddress("listen",
                  cl::desc("--role=ps: the address to listen on (default "
                           "127.0.0.1:0, a free loopback port; beyond "
                           "loopback TLS is required)"),
                  cl::value_desc("HOST:PORT"), cl::init("127.0.0.1:0"),
                  cl::cat(tools::distributedCategory()));
cl::opt<std::string>
    portFile("port-file",
             cl::desc("--role=ps: write the port listened on to FILE"),
             cl::value_desc("FILE"), cl::cat(tools::distributedCategory()));
cl::opt<std::string> psOption(
    "ps",
    cl::desc("Train through parameter-server shards in other processes: "
             "'local' starts --ps-shards of them on loopback; HOST:PORT,... "
             "reaches running ones (--role=ps), shard i at address i"),
    cl::value_desc("local|HOST:PORT,..."),
    cl::cat(tools::distributedCategory()));
cl::opt<std::string> tlsCA("tls-ca",
                           cl::desc("PEM file of the CA that signs the job's "
                                    "certificates (mutual TLS)"),
                           cl::value_desc("FILE"),
                           cl::cat(tools::distributedCategory()));
cl::opt<std::string> tlsCert("tls-cert",
                             cl::desc("PEM file of this process's "
                                      "certificate"),
                             cl::value_desc("FILE"),
                             cl::cat(tools::distributedCategory()));
cl::opt<std::string> tlsKey("tls-key",
                            cl::desc("PEM file of this process's private key"),
                            cl::value_desc("FILE"),
                            cl::cat(tools::distributedCategory()));
cl::opt<std::string> tokenFile(
    "job-token-file",
    cl::desc("File holding the job token that every call carries (default: "
             "$HETERPS_JOB_TOKEN; --ps=local makes one)"),
    cl::value_desc("FILE"), cl::cat(tools::distributedCategory()));

constexpr const char *kTool = "heterps-run";

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), kTool)
      << printableLine(message.str()) << "\n";
  return 1;
}

llvm::Error distError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Expected<SecurityOptions> security() {
  return loadSecurity(tlsCA, tlsCert, tlsKey, tokenFile);
}

/// --ps-shards, read by name: the pipelined-training flag defines it.
int psShards() {
  auto *option = static_cast<cl::opt<int> *>(
      cl::getRegisteredOptions().lookup("ps-shards"));
  return option ? option->getValue() : 1;
}

class Reached : public tools::RemoteServer {
public:
  ps::Transport &transport() override { return *link; }
  /// Local servers (none for --ps=HOST:PORT,...), stopped after the
  /// transport is gone.
  std::vector<std::unique_ptr<ChildProcess>> children;
  std::string directory;
  std::unique_ptr<GrpcTransport> link;

  ~Reached() override {
    link.reset();
    for (auto &child : children)
      child->stop();
    if (!directory.empty())
      llvm::sys::fs::remove_directories(directory);
  }
};

/// Starts `shards` servers on loopback; their addresses.
llvm::Expected<std::vector<std::string>>
startLocal(Reached &reached, int shards, SecurityOptions &sec) {
  auto self = selfExecutable();
  if (!self)
    return self.takeError();
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("heterps-job", dir))
    return distError("cannot make a directory for the job: " + ec.message());
  reached.directory = dir.str().str();
  std::vector<std::pair<ChildProcess *, std::string>> started;
  for (int s = 0; s < shards; ++s) {
    std::string portPath = (dir + "/ps" + llvm::Twine(s) + ".port").str();
    std::vector<std::string> argv = {*self,
                                     "--role=ps",
                                     "--shard=" + std::to_string(s),
                                     "--ps-shards=" + std::to_string(shards),
                                     "--listen=127.0.0.1:0",
                                     "--port-file=" + portPath};
    if (sec.tls())
      for (auto [flag, file] : {std::pair{"--tls-ca=", &sec.caFile},
                                {"--tls-cert=", &sec.certFile},
                                {"--tls-key=", &sec.keyFile}})
        argv.push_back(flag + *file);
    // The token travels in the environment, never on a command line that
    // `ps` shows to every user.
    auto child = ChildProcess::spawn("ps" + std::to_string(s), argv,
                                     {{kTokenEnv, sec.token}});
    if (!child)
      return child.takeError();
    started.push_back({child->get(), portPath});
    reached.children.push_back(std::move(*child));
  }
  std::vector<std::string> addresses;
  for (auto &[child, portPath] : started) {
    auto port = waitForPort(*child, portPath, std::chrono::seconds(30));
    if (!port)
      return port.takeError();
    addresses.push_back("127.0.0.1:" + std::to_string(*port));
  }
  return addresses;
}

} // namespace

tools::RemoteServer::~RemoteServer() = default;

bool tools::roleRequested() { return role.getNumOccurrences() > 0; }

int tools::runRole() {
  if (role != "ps")
    return fail("--role: unknown role '" + role + "' (expected ps)");
  auto sec = security();
  if (!sec)
    return fail(llvm::toString(sec.takeError()));
  if (shardIndex < 0)
    return fail("--role=ps needs --shard");
  if (llvm::Error e =
          runPSShard(shardIndex, psShards(), listenAddress, *sec, portFile))
    return fail(llvm::toString(std::move(e)));
  return 0;
}

bool tools::remoteServerRequested() { return psOption.getNumOccurrences(); }

llvm::Expected<std::unique_ptr<tools::RemoteServer>>
tools::startRemoteServer(int shards) {
  auto reached = std::make_unique<Reached>();
  std::vector<std::string> addresses;
  SecurityOptions sec;
  if (psOption == "local") {
    // A token made here unless the job has one.
    if (tokenFile.empty() && !std::getenv(kTokenEnv))
      setenv(kTokenEnv, newJobToken().c_str(), 0);
    auto loaded = security();
    if (!loaded)
      return loaded.takeError();
    sec = std::move(*loaded);
    auto started = startLocal(*reached, shards, sec);
    if (!started)
      return started.takeError();
    addresses = std::move(*started);
  } else {
    auto loaded = security();
    if (!loaded)
      return loaded.takeError();
    sec = std::move(*loaded);
    auto parsed = parseAddresses(psOption);
    if (!parsed)
      return distError("--ps: " + llvm::toString(parsed.takeError()));
    addresses = std::move(*parsed);
    if (static_cast<int>(addresses.size()) != shards)
      return distError("--ps lists " + llvm::Twine(addresses.size()) +
                       " servers for " + llvm::Twine(shards) +
                       " shards (--ps-shards)");
  }
  auto link = GrpcTransport::connect(addresses, sec);
  if (!link)
    return link.takeError();
  reached->link = std::move(*link);
  return reached;
}
