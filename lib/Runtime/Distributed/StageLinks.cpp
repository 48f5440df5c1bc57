//===- StageLinks.cpp - one stream per peer process -----------------------===//

#include "StageLinks.h"
#include "TensorWire.h"

#include "heterps/Support/PrintableLine.h"

#include "heterps/Runtime/Distributed/GrpcTransport.h"

#include "Services.grpc.pb.h"

#include <grpcpp/grpcpp.h>

using namespace heterps::runtime;
using namespace heterps::runtime::distributed;
using pipeline::ReplicaId;

struct StageLinks::Peer {
  std::mutex mutex;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<WorkerService::Stub> stub;
  grpc::ClientContext context;
  StreamEnd end;
  std::unique_ptr<grpc::ClientWriter<Packet>> writer;
  bool broken = false;
  Packet packet;
  /// What this stream's slots last carried.
  StreamLayouts layouts;
};

StageLinks::StageLinks(pipeline::Mailbox &mailbox, std::vector<ReplicaId> local,
                       std::vector<int> replicas,
                       std::map<std::pair<int, int>, std::string> addresses,
                       SecurityOptions security, int64_t epoch)
    : mailbox(mailbox), local(std::move(local)), replicas(std::move(replicas)),
      addresses(std::move(addresses)), security(std::move(security)),
      epoch(epoch) {}

/// Closes a peer's stream. Cancelled, not finished politely: a peer that
/// is stopped (SIGSTOP, a partition) would never answer.
static void close(StageLinks::Peer &peer);

StageLinks::~StageLinks() {
  for (auto &[address, peer] : peers)
    close(*peer);
}

void StageLinks::reset(int64_t newEpoch,
                       std::map<std::pair<int, int>, std::string> to) {
  std::lock_guard lock(peersMutex);
  for (auto &[address, peer] : peers)
    close(*peer);
  peers.clear();
  addresses = std::move(to);
  epoch = newEpoch;
  std::lock_guard failureLock(failureMutex);
  failed.clear();
}

void StageLinks::begin(int64_t s) {
  mailbox.begin(s);
  step = s;
  std::lock_guard lock(failureMutex);
  failed.clear();
}

std::string StageLinks::failure() const {
  std::lock_guard lock(failureMutex);
  return failed;
}

static void close(StageLinks::Peer &peer) {
  std::lock_guard lock(peer.mutex);
  if (!peer.writer || peer.broken)
    return;
  peer.context.TryCancel();
  peer.writer->Finish();
  peer.broken = true;
}

StageLinks::Peer &StageLinks::peer(const std::string &address) {
  std::lock_guard lock(peersMutex);
  std::unique_ptr<Peer> &slot = peers[address];
  if (!slot) {
    slot = std::make_unique<Peer>();
    grpc::ChannelArguments args = channelArguments();
    slot->channel =
        grpc::CreateCustomChannel(address, channelCredentials(security), args);
    slot->stub = WorkerService::NewStub(slot->channel);
    attachToken(slot->context, security);
    slot->writer = slot->stub->Deliver(&slot->context, &slot->end);
  }
  return *slot;
}

void StageLinks::put(Direction dir, int boundary, int microBatch,
                     std::vector<Tensor> values) {
  // Forward values go to the next stage's replica of this micro-batch,
  // gradients to the previous stage's.
  int stage = dir == Forward ? boundary + 1 : boundary;
  ReplicaId to{stage, microBatch % replicas[stage]};
  if (llvm::is_contained(local, to)) {
    mailbox.put(dir, boundary, microBatch, std::move(values));
    return;
  }
  auto fail = [&](const std::string &why) {
    {
      std::lock_guard lock(failureMutex);
      if (failed.empty())
        failed = "sending to stage " + std::to_string(to.stage) + " replica " +
                 std::to_string(to.replica) + ": " + why;
    }
    mailbox.abort();
  };
  auto address = addresses.find({to.stage, to.replica});
  if (address == addresses.end())
    return fail("no address");
  Peer &link = peer(address->second);
  std::lock_guard lock(link.mutex);
  if (link.broken)
    return fail("the stream to " + address->second + " is broken");
  Packet &packet = link.packet;
  packet.Clear();
  packet.set_epoch(epoch);
  packet.set_step(step);
  packet.set_direction(dir);
  packet.set_boundary(boundary);
  packet.set_micro_batch(microBatch);
  for (auto [i, t] : llvm::enumerate(values)) {
    TensorData &data = *packet.add_values();
    if (llvm::Error e = toWire(t, data))
      return fail(llvm::toString(std::move(e)));
    link.layouts.strip({dir, boundary, static_cast<int>(i)}, data);
  }
  if (!link.writer->Write(packet)) {
    link.broken = true;
    grpc::Status status = link.writer->Finish();
    return fail(address->second + ": " + status.error_message());
  }
}

std::optional<std::vector<Tensor>> StageLinks::take(Direction dir, int boundary,
                                                    int microBatch) {
  return mailbox.take(dir, boundary, microBatch);
}

void StageLinks::abort() { mailbox.abort(); }
