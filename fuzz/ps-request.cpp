//===- ps-request.cpp - fuzz target: what a parameter server is sent ------===//
//
// A parameter-server shard answers whatever a job's processes send it over
// the network (after the job token). The input is taken as one Request
// message and handed twice (a retry) to a fresh server that holds shard 1
// of 2: a dense table of 10 values and a sparse one of 100 rows x 4 (Adam
// and Adagrad, BSP, two workers, a BSP wait of 1 ms). Any request must
// end in a response or a one-line error, never a crash or a read out of
// bounds.
// The same input is then taken as a tensor on the wire (TensorData, what
// stage streams carry) and checked by fromWire.
//
// With HETERPS_FUZZ_PS_SEEDS=DIR in the environment the target writes one
// valid request of each kind into DIR and exits: the seed corpus.
//
//===----------------------------------------------------------------------===//

#include "FuzzCommon.h"
#include "TensorWire.h"

#include "heterps/Runtime/PS/ParameterServer.h"

#include "llvm/Support/raw_ostream.h"

#include <google/protobuf/stubs/logging.h>

#include <fstream>

using namespace heterps;
using namespace heterps::runtime;
using namespace heterps::runtime::ps;

namespace {

ServerOptions options() {
  ServerOptions o;
  o.numShards = 2;
  o.served = {1};
  o.numWorkers = 2;
  o.dense.kind = train::OptimizerKind::Adam;
  o.waitTimeout = std::chrono::milliseconds(1);
  o.job = "fuzz";
  return o;
}

std::unique_ptr<ParameterServer> makeServer() {
  auto server = llvm::cantFail(ParameterServer::create(options()));
  Tensor w(DType::F32, {10});
  for (int i = 0; i < 10; ++i)
    w.data<float>()[i] = 0.1f * i;
  llvm::cantFail(server->addDenseTable("w", w, 2));
  llvm::cantFail(server->addSparseTable("e", 100, 4, 0.01f, 7, 2));
  return server;
}

void writeSeeds(const std::string &dir) {
  std::vector<std::pair<std::string, Request>> seeds;
  auto add = [&](const std::string &name) -> Request & {
    seeds.emplace_back(name, Request());
    seeds.back().second.set_shard(1);
    return seeds.back().second;
  };
  add("list").mutable_list();
  PullRequest *pull = add("pull-dense").mutable_pull();
  pull->set_table("w");
  pull->set_offset(1);
  pull->set_count(3);
  pull = add("pull-sparse").mutable_pull();
  pull->set_table("e");
  for (int64_t id : {1, 3, 99})
    pull->add_ids(id);
  PushRequest *push = add("push-dense").mutable_push();
  push->set_table("w");
  push->set_lr(0.1f);
  push->set_grads(std::string(5 * sizeof(float), '\1'));
  push = add("push-retried").mutable_push();
  push->set_table("w");
  push->set_lr(0.1f);
  push->set_grads(std::string(5 * sizeof(float), '\1'));
  push->set_client(12345);
  push->set_sequence(7);
  add("fence").mutable_fence()->set_epoch(2);
  push = add("push-sparse").mutable_push();
  push->set_table("e");
  push->set_lr(0.1f);
  push->add_ids(5);
  push->set_grads(std::string(4 * sizeof(float), '\2'));
  add("save").mutable_save()->set_table("e");
  RestoreRequest *restore = add("restore").mutable_restore();
  restore->set_table("e");
  restore->mutable_state()->add_ids(7);
  restore->mutable_state()->set_rows(std::string(4 * sizeof(float), '\3'));
  restore->mutable_state()->set_accumulators(
      std::string(4 * sizeof(float), '\4'));
  AddTableRequest *table = add("add").mutable_add();
  table->mutable_info()->set_name("v");
  table->mutable_info()->set_elements(6);
  table->set_values(std::string(3 * sizeof(float), '\5'));
  *add("configure").mutable_configure()->mutable_config() = toConfig(options());
  for (const auto &[name, request] : seeds) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    out << request.SerializeAsString();
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Protobuf logs parse failures to stderr; the target only needs the bool.
  google::protobuf::SetLogHandler(nullptr);
  if (const char *dir = std::getenv("HETERPS_FUZZ_PS_SEEDS")) {
    writeSeeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Request request;
  if (request.ParseFromArray(data, static_cast<int>(size))) {
    auto server = makeServer();
    // Sent twice, as a retry is (a push then comes from the ledger), from
    // a caller in this process, of the first epoch or of a later one.
    int64_t epoch = static_cast<int64_t>(size % 3) - 1;
    for (int attempt = 0; attempt < 2; ++attempt) {
      Response response;
      server->handle(request, response, epoch);
      if (response.error().find('\n') != std::string::npos)
        fuzz::requireOneLine(llvm::createStringError(
            llvm::inconvertibleErrorCode(), response.error()));
    }
  }
  distributed::TensorData tensor;
  if (tensor.ParseFromArray(data, static_cast<int>(size))) {
    auto t = distributed::fromWire(tensor);
    fuzz::requireOneLine(t);
  }
  return 0;
}
