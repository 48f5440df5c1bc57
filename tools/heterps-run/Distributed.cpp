//===- Distributed.cpp - roles, ranks and the job's processes -------------===//

#include "Distributed.h"

#include "heterps/Runtime/Distributed/Coordinator.h"
#include "heterps/Runtime/Distributed/GrpcTransport.h"
#include "heterps/Runtime/Distributed/Launch.h"
#include "heterps/Runtime/Distributed/PSServer.h"
#include "heterps/Runtime/Distributed/RemoteReplicas.h"
#include "heterps/Runtime/Distributed/Supervisor.h"
#include "heterps/Runtime/Distributed/WorkerHost.h"
#include "heterps/Support/PrintableLine.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"

#include <mutex>
#include <set>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::distributed;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &tools::distributedCategory() {
  static cl::OptionCategory category(
      "heterps-run distributed options (docs/distributed.md)");
  return category;
}

namespace {

cl::opt<std::string> distributedOption(
    "distributed",
    cl::desc("Train as a distributed job: 'local' runs every process of it "
             "(coordinator, --ps-shards parameter-server shards, a worker per "
             "stage replica) on this host over loopback"),
    cl::value_desc("local"), cl::cat(tools::distributedCategory()));
cl::opt<std::string> coordinatorAddress(
    "coordinator",
    cl::desc("One rank of a distributed job started on several hosts with "
             "the same command line: the coordinator's address (rank 0 "
             "listens on it)"),
    cl::value_desc("HOST:PORT"), cl::cat(tools::distributedCategory()));
cl::opt<int> rankOption(
    "rank",
    cl::desc("This process's rank in the job (default: $HETERPS_RANK, "
             "$SLURM_PROCID or $OMPI_COMM_WORLD_RANK): 0 coordinates, 1..S "
             "are parameter-server shards, then a worker per stage replica"),
    cl::value_desc("R"), cl::init(-1), cl::cat(tools::distributedCategory()));
cl::opt<std::string>
    role("role",
         cl::desc("Run a parameter-server shard (--shard of --ps-shards) "
                  "for a run elsewhere that names it in --ps"),
         cl::value_desc("ps"), cl::cat(tools::distributedCategory()));
cl::opt<int> shardIndex("shard",
                        cl::desc("--role=ps: the shard this process serves"),
                        cl::value_desc("I"), cl::init(-1),
                        cl::cat(tools::distributedCategory()));
cl::opt<std::string> listenAddress(
    "listen",
    cl::desc("Where a parameter-server shard or worker listens (default "
             "127.0.0.1:0, a free loopback port; beyond loopback TLS is "
             "required)"),
    cl::value_desc("HOST:PORT"), cl::init("127.0.0.1:0"),
    cl::cat(tools::distributedCategory()));
cl::opt<std::string> advertiseHost(
    "advertise",
    cl::desc("The host name or address the job's other processes reach "
             "this one by (default: the --listen host, or this host's name "
             "when it listens on every address)"),
    cl::value_desc("HOST"), cl::cat(tools::distributedCategory()));
cl::opt<std::string>
    portFile("port-file",
             cl::desc("--role=ps: write the port listened on to FILE"),
             cl::value_desc("FILE"), cl::cat(tools::distributedCategory()));
cl::opt<std::string> psOption(
    "ps",
    cl::desc("Keep the stages in this process and train through parameter-"
             "server shards in others: 'local' starts --ps-shards of them; "
             "HOST:PORT,... reaches running ones (--role=ps), shard i at "
             "address i"),
    cl::value_desc("local|HOST:PORT,..."),
    cl::cat(tools::distributedCategory()));
cl::opt<unsigned> connectTimeout(
    "connect-timeout",
    cl::desc("Seconds to wait for the job's other processes to come up and "
             "answer (default 60)"),
    cl::value_desc("S"), cl::init(60), cl::cat(tools::distributedCategory()));
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
             "$HETERPS_JOB_TOKEN; a local job makes one)"),
    cl::value_desc("FILE"), cl::cat(tools::distributedCategory()));

cl::opt<double> heartbeatTimeout(
    "heartbeat-timeout",
    cl::desc("Seconds without an answer to the coordinator's heartbeats "
             "after which a process of a distributed job is given up for "
             "dead and replaced; a process that hears no heartbeat for "
             "that long stops (default 6)"),
    cl::value_desc("S"), cl::init(6), cl::cat(tools::distributedCategory()));
cl::opt<int> maxRestartsOption(
    "max-restarts",
    cl::desc("How many times a distributed job with --checkpoint is "
             "brought back after a process dies before it fails (default "
             "3)"),
    cl::value_desc("N"), cl::init(3), cl::cat(tools::distributedCategory()));

constexpr const char *kTool = "heterps-run";

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), kTool)
      << printableLine(message.str()) << "\n";
  return 1;
}

llvm::Error distError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::chrono::milliseconds timeout() {
  return std::chrono::seconds(connectTimeout.getValue());
}

std::chrono::milliseconds heartbeat() {
  return std::chrono::milliseconds(
      static_cast<int64_t>(heartbeatTimeout.getValue() * 1000));
}

llvm::Expected<SecurityOptions> security() {
  return loadSecurity(tlsCA, tlsCert, tlsKey, tokenFile);
}

/// A local job's token: made here unless the job has one, and handed to
/// the children in the environment (never on a command line, which `ps`
/// shows to every user).
void ensureLocalToken() {
  if (tokenFile.empty() && !std::getenv(kTokenEnv))
    setenv(kTokenEnv, newJobToken().c_str(), 0);
}

/// --ps-shards, read by name: the pipelined-training flags define it.
int psShards() {
  auto *option = static_cast<cl::opt<int> *>(
      cl::getRegisteredOptions().lookup("ps-shards"));
  return option ? option->getValue() : 1;
}

/// --checkpoint, read by name (the training flags define it): where every
/// process of a job writes its part of the job's checkpoints.
std::string checkpointDir() {
  auto *option = static_cast<cl::opt<std::string> *>(
      cl::getRegisteredOptions().lookup("checkpoint"));
  return option ? option->getValue() : "";
}

/// The placement file a local job's children read (placeChildrenBy).
std::string childPlacement;

/// This process's arguments for its children: without the one that made it
/// the launcher and, when the children place by a file, without the options
/// of the search it replaces.
llvm::Expected<std::vector<std::string>> commandLineForChildren() {
  std::vector<llvm::StringRef> dropped = {"distributed"};
  if (!childPlacement.empty())
    dropped.insert(dropped.end(), {"strategy", "tapp-plans", "search-seconds"});
  auto args = tools::ownArgumentsWithout(dropped, {});
  if (args && !childPlacement.empty())
    args->push_back("--placement=" + childPlacement);
  return args;
}

class Processes : public tools::JobProcesses {
public:
  ps::Transport &server() override { return *transport; }
  pipeline::ReplicaRunner *runner() override { return replicas.get(); }
  pipeline::JobRecovery *recovery() override { return supervisor.get(); }
  pipeline::CheckpointStore *checkpoints() override { return supervisor.get(); }
  void started() override {
    if (coordinator)
      coordinator->release();
  }
  void finish() override {
    if (finished)
      return;
    finished = true;
    // Processes told to stop are not deaths.
    supervisor.reset();
    if (coordinator)
      coordinator->release("training ended before the job started");
    if (replicas)
      replicas->shutdown();
    if (transport)
      transport->shutdownServers();
    replicas.reset();
    transport.reset();
    std::lock_guard lock(childrenMutex);
    for (auto &child : children)
      child->stop(std::chrono::seconds(10));
    coordinator.reset();
    if (!directory.empty())
      llvm::sys::fs::remove_directories(directory);
  }
  ~Processes() override { finish(); }

  /// A local job's rank `rank` again: the old process killed (it may be
  /// stopped, not dead) and a new one started with its command line.
  llvm::Error restart(int rank) {
    std::lock_guard lock(childrenMutex);
    if (rank < 1 || rank > static_cast<int>(children.size()))
      return distError("rank " + llvm::Twine(rank) + " is not a child");
    auto &child = children[rank - 1];
    child->stop(std::chrono::milliseconds(0));
    reported.erase(child.get());
    auto again = ChildProcess::spawn(child->role(), commands[rank - 1],
                                     {{kTokenEnv, token}});
    if (!again)
      return again.takeError();
    child = std::move(*again);
    return llvm::Error::success();
  }

  /// Children that exited, each reported once, as "exited with status N"
  /// or "was killed by signal N".
  void probe(const std::function<void(int, std::string)> &report) {
    std::lock_guard lock(childrenMutex);
    for (size_t i = 0; i < children.size(); ++i) {
      ChildProcess &child = *children[i];
      if (!child.exited() || reported.count(&child))
        continue;
      reported.insert(&child);
      int status = child.exitStatus();
      report(static_cast<int>(i) + 1,
             status > 128
                 ? "was killed by signal " + std::to_string(status - 128)
                 : "exited with status " + std::to_string(status));
    }
  }

  /// The first child that exited while the job waits for registrations.
  llvm::Error checkChildren(const char *when) {
    std::lock_guard lock(childrenMutex);
    for (auto &child : children)
      if (child->exited())
        return distError(child->role() + " exited with status " +
                         llvm::Twine(child->exitStatus()) + " " + when);
    return llvm::Error::success();
  }

  std::mutex childrenMutex;
  /// Rank r's process at r - 1, and its command line.
  std::vector<std::unique_ptr<ChildProcess>> children;
  std::vector<std::vector<std::string>> commands;
  std::set<ChildProcess *> reported;
  std::string token;
  std::string directory;
  std::unique_ptr<Coordinator> coordinator;
  std::unique_ptr<GrpcTransport> transport;
  std::unique_ptr<RemoteReplicas> replicas;
  std::unique_ptr<Supervisor> supervisor;
  bool finished = false;
};

/// Starts `shards` parameter-server processes on loopback for --ps=local;
/// their addresses.
llvm::Expected<std::vector<std::string>>
startLocalServers(Processes &job, int shards, const SecurityOptions &sec) {
  auto self = selfExecutable();
  if (!self)
    return self.takeError();
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("heterps-job", dir))
    return distError("cannot make a directory for the job: " + ec.message());
  job.directory = dir.str().str();
  std::vector<std::pair<ChildProcess *, std::string>> started;
  for (int s = 0; s < shards; ++s) {
    std::string portPath = (dir + "/ps" + llvm::Twine(s) + ".port").str();
    std::vector<std::string> argv = {
        *self, "--role=ps", "--shard=" + std::to_string(s),
        "--ps-shards=" + std::to_string(shards), "--port-file=" + portPath};
    for (auto [flag, file] : {std::pair{"--tls-ca=", &tlsCA},
                              {"--tls-cert=", &tlsCert},
                              {"--tls-key=", &tlsKey}})
      if (!file->empty())
        argv.push_back(flag + file->getValue());
    auto child = ChildProcess::spawn("ps" + std::to_string(s), argv,
                                     {{kTokenEnv, sec.token}});
    if (!child)
      return child.takeError();
    started.push_back({child->get(), portPath});
    job.children.push_back(std::move(*child));
  }
  std::vector<std::string> addresses;
  for (auto &[child, portPath] : started) {
    auto port = waitForPort(*child, portPath, timeout());
    if (!port)
      return port.takeError();
    addresses.push_back("127.0.0.1:" + std::to_string(*port));
  }
  return addresses;
}

} // namespace

tools::JobProcesses::~JobProcesses() = default;

bool tools::roleRequested() { return role.getNumOccurrences() > 0; }

int tools::runRole() {
  if (role != "ps")
    return fail("--role: unknown role '" + role + "' (expected ps)");
  auto sec = security();
  if (!sec)
    return fail(llvm::toString(sec.takeError()));
  if (shardIndex < 0)
    return fail("--role=ps needs --shard");
  PSShardOptions options;
  options.shard = shardIndex;
  options.shards = psShards();
  options.listen = listenAddress;
  options.portFile = portFile;
  if (llvm::Error e = runPSShard(options, *sec))
    return fail(llvm::toString(std::move(e)));
  return 0;
}

bool tools::remoteServerRequested() { return psOption.getNumOccurrences(); }

llvm::Expected<std::vector<std::string>>
tools::ownArgumentsWithout(llvm::ArrayRef<llvm::StringRef> withValue,
                           llvm::ArrayRef<llvm::StringRef> flags) {
  // A /proc file reports size 0: read it as a stream.
  auto buffer = llvm::MemoryBuffer::getFileAsStream("/proc/self/cmdline");
  if (!buffer)
    return distError("cannot read /proc/self/cmdline: " +
                     buffer.getError().message());
  llvm::SmallVector<llvm::StringRef> parts;
  (*buffer)->getBuffer().split(parts, '\0', -1, /*KeepEmpty=*/false);
  std::vector<std::string> args;
  for (size_t i = 1; i < parts.size(); ++i) {
    llvm::StringRef a = parts[i];
    if (!a.consume_front("--") && !a.consume_front("-")) {
      args.push_back(a.str());
      continue;
    }
    auto [name, value] = a.split('=');
    bool hasValue = a.contains('=');
    if (llvm::is_contained(flags, name))
      continue;
    if (llvm::is_contained(withValue, name)) {
      if (!hasValue) // "--distributed local"
        ++i;
      continue;
    }
    args.push_back(parts[i].str());
  }
  return args;
}

bool tools::launchesLocalJob() {
  return distributedOption.getNumOccurrences() > 0;
}

bool tools::ranksStartedElsewhere() {
  return coordinatorAddress.getNumOccurrences() > 0;
}

void tools::placeChildrenBy(std::string placementFile) {
  childPlacement = std::move(placementFile);
}

bool tools::distributedRequested() {
  return distributedOption.getNumOccurrences() ||
         coordinatorAddress.getNumOccurrences();
}

llvm::Expected<Role> tools::distributedRole(const JobShape &shape) {
  if (psOption.getNumOccurrences())
    return distError("--ps keeps the stages in this process; a distributed "
                     "job (--distributed, --coordinator) has its own "
                     "parameter-server processes");
  if (distributedOption.getNumOccurrences()) {
    if (distributedOption != "local")
      return distError("--distributed: unknown mode '" + distributedOption +
                       "' (expected local; on several hosts give each "
                       "process --coordinator and a rank)");
    if (coordinatorAddress.getNumOccurrences() || rankOption >= 0)
      return distError("--distributed=local starts every rank itself; "
                       "--coordinator and --rank are for a job started by "
                       "a launcher");
    return roleOfRank(0, shape);
  }
  int rank = rankOption;
  if (rank < 0) {
    auto fromEnv = rankFromEnvironment();
    if (!fromEnv)
      return fromEnv.takeError();
    if (!*fromEnv)
      return distError("--coordinator needs this process's rank: --rank, "
                       "$HETERPS_RANK, $SLURM_PROCID or "
                       "$OMPI_COMM_WORLD_RANK");
    rank = **fromEnv;
  }
  return roleOfRank(rank, shape);
}

bool tools::helperRank() {
  if (!coordinatorAddress.getNumOccurrences() ||
      distributedOption.getNumOccurrences())
    return false;
  if (rankOption >= 0)
    return rankOption > 0;
  auto fromEnv = rankFromEnvironment();
  if (!fromEnv) {
    llvm::consumeError(fromEnv.takeError());
    return false;
  }
  return fromEnv->value_or(0) > 0;
}

int tools::runPSRank(const Role &r, const JobShape &shape) {
  auto sec = security();
  if (!sec)
    return fail(llvm::toString(sec.takeError()));
  PSShardOptions options;
  options.shard = r.shard;
  options.shards = shape.shards;
  options.listen = listenAddress;
  options.coordinator = coordinatorAddress;
  options.advertise = advertiseHost;
  options.timeout = timeout();
  options.heartbeatTimeout = heartbeat();
  options.checkpointDir = checkpointDir();
  if (llvm::Error e = runPSShard(options, *sec))
    return fail(llvm::toString(std::move(e)));
  return 0;
}

int tools::runWorkerRank(const Role &r, const JobShape &shape,
                         const std::string &job,
                         const WorkerTrainerFactory &make) {
  auto sec = security();
  if (!sec)
    return fail(llvm::toString(sec.takeError()));
  // Before gRPC starts threads: the stop signals come to this thread.
  blockStopSignals();
  auto host = WorkerHost::start(listenAddress, *sec);
  if (!host)
    return fail(llvm::toString(host.takeError()));
  ProcessInfo self;
  self.set_role("worker");
  self.set_stage(r.stage);
  self.set_replica(r.replica);
  self.set_address(
      advertisedAddress(listenAddress, (*host)->port(), advertiseHost));
  self.set_job(job);
  auto map = registerWith(coordinatorAddress, self, *sec, timeout());
  if (!map)
    return fail(llvm::toString(map.takeError()));
  std::vector<std::string> ps(map->ps().begin(), map->ps().end());
  auto server = GrpcTransport::connect(ps, *sec, timeout());
  if (!server)
    return fail(llvm::toString(server.takeError()));
  pipeline::StageExchange &links = (*host)->links(
      *map, {{r.stage, r.replica}}, shape.replicas, **server, heartbeat());
  auto trainer = make(**server, links);
  if (!trainer)
    return fail(llvm::toString(trainer.takeError()));
  (*host)->setCheckpointDir(checkpointDir());
  (*host)->attach(**trainer);
  llvm::errs() << kTool << ": " << r.name() << ": serving steps"
               << (map->epoch()
                       ? " (epoch " + std::to_string(map->epoch()) + ")"
                       : "")
               << "\n";
  StopReason stop = (*host)->waitForShutdown();
  (*host)->stop();
  if (stop.failed)
    return fail(r.name() + " stopped: " + stop.why);
  llvm::errs() << kTool << ": " << r.name() << ": stopping (" << stop.why
               << ")\n";
  return 0;
}

llvm::Expected<std::unique_ptr<tools::JobProcesses>>
tools::startRemoteServer(int shards) {
  auto job = std::make_unique<Processes>();
  std::vector<std::string> addresses;
  if (psOption == "local")
    ensureLocalToken();
  auto sec = security();
  if (!sec)
    return sec.takeError();
  if (psOption == "local") {
    auto started = startLocalServers(*job, shards, *sec);
    if (!started)
      return started.takeError();
    addresses = std::move(*started);
  } else {
    auto parsed = parseAddresses(psOption);
    if (!parsed)
      return parsed.takeError();
    addresses = std::move(*parsed);
    if (static_cast<int>(addresses.size()) != shards)
      return distError("--ps lists " + llvm::Twine(addresses.size()) +
                       " servers for " + llvm::Twine(shards) +
                       " shards (--ps-shards)");
  }
  auto link = GrpcTransport::connect(addresses, *sec, timeout());
  if (!link)
    return link.takeError();
  job->transport = std::move(*link);
  return std::unique_ptr<tools::JobProcesses>(std::move(job));
}

llvm::Expected<std::unique_ptr<tools::JobProcesses>>
tools::startJob(const JobShape &shape, const std::string &jobName) {
  bool local = distributedOption.getNumOccurrences() > 0;
  if (local)
    ensureLocalToken();
  auto sec = security();
  if (!sec)
    return sec.takeError();
  auto job = std::make_unique<Processes>();
  std::string address = coordinatorAddress;
  if (local) {
    // Every child is forked before this process holds any gRPC state.
    auto port = freeLoopbackPort();
    if (!port)
      return port.takeError();
    address = "127.0.0.1:" + std::to_string(*port);
    auto self = selfExecutable();
    if (!self)
      return self.takeError();
    auto args = commandLineForChildren();
    if (!args)
      return args.takeError();
    for (int rank = 1; rank < shape.worldSize(); ++rank) {
      std::vector<std::string> argv = {*self};
      argv.insert(argv.end(), args->begin(), args->end());
      argv.push_back("--coordinator=" + address);
      argv.push_back("--rank=" + std::to_string(rank));
      auto r = roleOfRank(rank, shape);
      if (!r)
        return r.takeError();
      auto child =
          ChildProcess::spawn(r->name(), argv, {{kTokenEnv, sec->token}});
      if (!child)
        return child.takeError();
      job->children.push_back(std::move(*child));
      job->commands.push_back(std::move(argv));
    }
    job->token = sec->token;
  }
  auto coordinator = Coordinator::start(address, shape, jobName, *sec);
  if (!coordinator)
    return coordinator.takeError();
  job->coordinator = std::move(*coordinator);
  llvm::errs() << kTool << ": coordinating " << shape.worldSize() - 1
               << " processes (" << shape.shards << " parameter-server shards, "
               << shape.workers() << " stage replicas) at " << address << "\n";
  auto map = job->coordinator->waitForAll(std::chrono::seconds(120), [&] {
    return job->checkChildren("before the job started");
  });
  if (!map) {
    std::string why = llvm::toString(map.takeError());
    job->coordinator->release(why);
    return distError("the job did not start: " + why);
  }
  std::vector<std::string> ps(map->ps().begin(), map->ps().end());
  auto transport = GrpcTransport::connect(ps, *sec, timeout());
  if (!transport)
    return transport.takeError();
  job->transport = std::move(*transport);
  auto replicas =
      RemoteReplicas::connect(*map, shape.replicas, *sec, timeout());
  if (!replicas)
    return replicas.takeError();
  job->replicas = std::move(*replicas);
  SupervisorOptions watch;
  watch.shape = shape;
  watch.security = *sec;
  watch.heartbeatTimeout = heartbeat();
  watch.rejoinTimeout = std::chrono::seconds(120);
  Processes *processes = job.get();
  if (local) {
    watch.restart = [processes](int rank) { return processes->restart(rank); };
    watch.probe = [processes] {
      processes->probe([processes](int rank, std::string why) {
        if (processes->supervisor)
          processes->supervisor->declareDead(rank, why);
      });
    };
    watch.check = [processes] {
      return processes->checkChildren("before it rejoined the job");
    };
  }
  job->supervisor =
      std::make_unique<Supervisor>(*job->coordinator, *job->transport,
                                   *job->replicas, *map, std::move(watch));
  return std::unique_ptr<tools::JobProcesses>(std::move(job));
}

int tools::maxRestarts() { return maxRestartsOption; }
