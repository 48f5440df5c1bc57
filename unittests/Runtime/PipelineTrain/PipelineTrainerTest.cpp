//===- PipelineTrainerTest.cpp - pipelined training equals full-batch -----===//
//
// A three-layer MLP with a skip connection across two stage boundaries,
// cut into 1 to 3 stages: under BSP, m micro-batches x k replicas x p
// stages reach the weights single-stage full-batch training reaches, for
// both schedules.
//
//===----------------------------------------------------------------------===//

#include "../Train/TrainTestModels.h"

#include "heterps/Runtime/PipelineTrain/PipelineTrainer.h"

#include <functional>
#include <numeric>
#include <set>

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace heterps::runtime;
using namespace heterps::runtime::pipeline;
using namespace heterps::runtime::testutil;
using namespace heterps::runtime::train;

namespace {

/// x [N, 4] -> a1 = Relu(Gemm 8) -> a2 = Relu(Gemm 8) -> Add(a2, a1)
///   -> Dropout? -> Gemm 3; `cuts` are the op indices where a stage begins.
MLP makeSkipMLP(const std::string &modelPath, std::vector<int> cuts,
                bool dropout = false) {
  std::mt19937 rng(5);
  writeInitializers(modelPath, {{"w1", randomTensor({8, 4}, rng, -0.5f, 0.5f)},
                                {"b1", randomTensor({8}, rng, -0.1f, 0.1f)},
                                {"w2", randomTensor({8, 8}, rng, -0.5f, 0.5f)},
                                {"b2", randomTensor({8}, rng, -0.1f, 0.1f)},
                                {"w3", randomTensor({3, 8}, rng, -0.5f, 0.5f)},
                                {"b3", randomTensor({3}, rng, -0.1f, 0.1f)}});

  PlanBuilder b;
  Attrs transB = Attrs().i("trans_b", 1);
  int x = b.input("x", {-1, 4});
  int a1 = b.op("Gemm", {x, b.weightRef("w1", {8, 4}), b.weightRef("b1", {8})},
                {-1, 8}, transB);
  a1 = b.op("Relu", {a1}, {-1, 8});
  int a2 = b.op("Gemm", {a1, b.weightRef("w2", {8, 8}), b.weightRef("b2", {8})},
                {-1, 8}, transB);
  a2 = b.op("Relu", {a2}, {-1, 8});
  int s = b.op("Add", {a2, a1}, {-1, 8});
  if (dropout)
    s = b.op("Dropout", {s}, {-1, 8}, Attrs().f("ratio", 0.3f));
  int y = b.op("Gemm", {s, b.weightRef("w3", {3, 8}), b.weightRef("b3", {3})},
               {-1, 3}, transB);
  b.output("logits", y);
  MLP mlp{b.build(), {}};
  int stage = 0;
  for (int i = 0; i < mlp.plan.ops_size(); ++i) {
    while (stage < static_cast<int>(cuts.size()) && i >= cuts[stage])
      ++stage;
    mlp.plan.mutable_ops(i)->set_stage(stage);
  }
  mlp.plan.set_model_path(modelPath);
  mlp.weights = llvm::cantFail(loadWeights(mlp.plan));
  return mlp;
}

std::unique_ptr<PipelineTrainer> makePipeline(const MLP &mlp,
                                              PipelineTrainerOptions options) {
  auto trainer = PipelineTrainer::create(mlp.plan, mlp.weights, options);
  EXPECT_TRUE(bool(trainer)) << llvm::toString(trainer.takeError());
  return trainer ? std::move(*trainer) : nullptr;
}

float maxDifference(const WeightMap &a, const WeightMap &b) {
  float worst = 0;
  for (const auto &[v, t] : a) {
    const Tensor &u = b.at(v);
    EXPECT_EQ(t.shape(), u.shape());
    if (t.dtype() != DType::F32)
      continue;
    for (int64_t i = 0; i < t.numElements(); ++i)
      worst =
          std::max(worst, std::abs(t.data<float>()[i] - u.data<float>()[i]));
  }
  return worst;
}

struct Split {
  std::vector<int> cuts;
  int microBatches;
  std::vector<int> replicas;
};

/// makeSkipMLP with the second Gemm reading x, w1 and b1 instead of its
/// own input and weights: the first layer's weights are tied, read by the
/// stages of ops 0 and 2 (w2 and b2 are left unread).
MLP makeTiedMLP(const std::string &modelPath, std::vector<int> cuts) {
  MLP mlp = makeSkipMLP(modelPath, std::move(cuts));
  for (int i = 0; i < 3; ++i)
    mlp.plan.mutable_ops(2)->set_inputs(i, mlp.plan.ops(0).inputs(i));
  return mlp;
}

/// Under BSP, each split of `make`'s model trains to the losses and weights
/// of single-stage full-batch training.
void expectFullBatchTraining(
    const std::function<MLP(const std::string &, std::vector<int>)> &make,
    const std::vector<Split> &splits) {
  TempDir dir;
  data::Dataset data = makeData(48, 3);
  const int steps = 6, batch = 12;
  auto batchOf = [&](int step, const Tensor &all) {
    return data::sampleRows(all, step * batch % 48, batch);
  };
  // Momentum, not Adam: Adam's update hardly changes when every gradient
  // is scaled, and would hide a wrong micro-batch or replica weighting.
  OptimizerOptions momentum;
  momentum.kind = OptimizerKind::Momentum;

  MLP reference = make(dir.file("ref.onnx"), {});
  TrainerOptions single;
  single.optimizer = momentum;
  auto trainer = makeTrainer(reference, single);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i)
    losses.push_back(
        llvm::cantFail(trainer->step(batchOf(i, data.inputs),
                                     batchOf(i, data.targets), 0.1f))
            .loss);

  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (const Split &split : splits) {
      SCOPED_TRACE(std::string(scheduleName(kind)) + " with " +
                   std::to_string(split.cuts.size() + 1) +
                   " stages, m=" + std::to_string(split.microBatches));
      MLP mlp = make(dir.file("p.onnx"), split.cuts);
      PipelineTrainerOptions options;
      options.schedule = kind;
      options.microBatches = split.microBatches;
      options.replicas = split.replicas;
      options.optimizer = momentum;
      auto pipeline = makePipeline(mlp, options);
      ASSERT_TRUE(pipeline);
      ASSERT_EQ(pipeline->numStages(), static_cast<int>(split.cuts.size()) + 1);
      for (int i = 0; i < steps; ++i) {
        auto r = pipeline->step(batchOf(i, data.inputs),
                                batchOf(i, data.targets), 0.1f);
        ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
        EXPECT_NEAR(r->loss, losses[i], 1e-5);
      }
      auto weights = pipeline->weights();
      ASSERT_TRUE(bool(weights)) << llvm::toString(weights.takeError());
      EXPECT_LT(maxDifference(llvm::cantFail(trainer->weights()), *weights),
                2e-5f);
    }
}

TEST(PipelineTrainer, BSPEqualsFullBatchTraining) {
  auto make = [](const std::string &path, std::vector<int> cuts) {
    return makeSkipMLP(path, std::move(cuts));
  };
  expectFullBatchTraining(make, {{{}, 4, {3}},
                                 {{2}, 3, {2, 2}},
                                 {{2, 4}, 4, {1, 2, 1}},
                                 {{1, 3}, 5, {2, 1, 3}}});
}

// A weight that two stages read gets both stages' shares of its gradient
// (the server sums the pushes of all their replicas), whether the stages
// are neighbours or not and whatever their replica counts.
TEST(PipelineTrainer, TiedWeightsAcrossStagesEqualFullBatchTraining) {
  expectFullBatchTraining(
      makeTiedMLP,
      {{{2}, 3, {2, 1}}, {{1, 2}, 4, {1, 2, 3}}, {{1, 4}, 2, {2, 1, 1}}});
}

TEST(PipelineTrainer, OneFOneBHoldsFewerMicroBatches) {
  TempDir dir;
  MLP mlp = makeSkipMLP(dir.file("p.onnx"), {2, 4});
  data::Dataset data = makeData(16, 4);
  for (ScheduleKind kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB}) {
    PipelineTrainerOptions options;
    options.schedule = kind;
    options.microBatches = 8;
    auto pipeline = makePipeline(mlp, options);
    ASSERT_TRUE(pipeline);
    ASSERT_TRUE(bool(pipeline->step(data.inputs, data.targets, 0.1f)));
    const auto &replicas = pipeline->lastStep().replicas;
    ASSERT_EQ(replicas.size(), 3u);
    for (const ReplicaStepStats &r : replicas) {
      EXPECT_EQ(r.microBatches, 8);
      EXPECT_EQ(r.stashSlots, kind == ScheduleKind::GPipe ? 8 : 3 - r.stage);
    }
  }
}

TEST(PipelineTrainer, DropoutMasksDoNotDependOnReplicas) {
  TempDir dir;
  MLP mlp = makeSkipMLP(dir.file("p.onnx"), {2}, /*dropout=*/true);
  data::Dataset data = makeData(12, 5);
  auto train = [&](std::vector<int> replicas) {
    PipelineTrainerOptions options;
    options.microBatches = 4;
    options.replicas = replicas;
    auto pipeline = makePipeline(mlp, options);
    for (int i = 0; i < 4; ++i)
      llvm::cantFail(pipeline->step(data.inputs, data.targets, 0.1f));
    return llvm::cantFail(pipeline->weights());
  };
  EXPECT_LT(maxDifference(train({1, 1}), train({2, 2})), 1e-5f);
}

TEST(PipelineTrainer, ASPTrains) {
  TempDir dir;
  MLP mlp = makeSkipMLP(dir.file("p.onnx"), {2});
  data::Dataset data = makeData(32, 6);
  PipelineTrainerOptions options;
  options.consistency = heterps::runtime::ps::Consistency::ASP;
  options.microBatches = 4;
  options.replicas = {2, 2};
  options.schedule = ScheduleKind::OneFOneB;
  auto pipeline = makePipeline(mlp, options);
  double first = 0, last = 0;
  for (int i = 0; i < 300; ++i) {
    auto r = pipeline->step(data.inputs, data.targets, 0.1f);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    (i ? last : first) = r->loss;
  }
  EXPECT_LT(last, first * 0.5);
  auto eval = pipeline->evaluate(data, 8);
  ASSERT_TRUE(bool(eval)) << llvm::toString(eval.takeError());
  EXPECT_GT(eval->accuracy(), 0.8);
}

TEST(PipelineTrainer, TraceHasATrackPerReplicaAndEveryTask) {
  TempDir dir;
  MLP mlp = makeSkipMLP(dir.file("p.onnx"), {2});
  data::Dataset data = makeData(8, 7);
  TraceRecorder trace;
  PipelineTrainerOptions options;
  options.microBatches = 4;
  options.replicas = {1, 2};
  options.trace = &trace;
  auto pipeline = makePipeline(mlp, options);
  for (int i = 0; i < 2; ++i)
    llvm::cantFail(pipeline->step(data.inputs, data.targets, 0.1f));
  // Per step: stage 0 pulls, 4 F, 4 B, pushes; stage 1's replicas 2 F and
  // 2 B each, a pull and a push each.
  EXPECT_EQ(trace.numEvents(), 2u * (10 + 2 * 6));
  std::string path = dir.file("trace.json");
  ASSERT_FALSE(bool(trace.write(path)));
  auto text = llvm::MemoryBuffer::getFile(path);
  ASSERT_TRUE(bool(text));
  auto json = llvm::json::parse((*text)->getBuffer());
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  const llvm::json::Array *events =
      json->getAsObject()->getArray("traceEvents");
  ASSERT_TRUE(events);
  // Three tracks, an instant event per step, the spans.
  EXPECT_EQ(events->size(), 3u + 2u + trace.numEvents());
  EXPECT_EQ(*(*events)[2].getAsObject()->getObject("args")->getString("name"),
            "stage 1 replica 1");

  // The picture: a rectangle per span of the second step (the first sets
  // up the kernels).
  std::vector<double> steps;
  for (const llvm::json::Value &e : *events)
    if (e.getAsObject()->getString("ph") == "i")
      steps.push_back(*e.getAsObject()->getNumber("ts"));
  ASSERT_EQ(steps.size(), 2u);
  size_t secondStep = llvm::count_if(*events, [&](const llvm::json::Value &e) {
    return e.getAsObject()->getString("ph") == "X" &&
           *e.getAsObject()->getNumber("ts") >= steps[1];
  });
  EXPECT_EQ(secondStep, 10u + 2 * 6);
  std::string picture = dir.file("trace.svg");
  ASSERT_FALSE(bool(trace.writePicture(picture)));
  auto svg = llvm::MemoryBuffer::getFile(picture);
  ASSERT_TRUE(bool(svg));
  llvm::StringRef body = (*svg)->getBuffer();
  EXPECT_TRUE(body.starts_with("<svg"));
  EXPECT_EQ(body.count("<rect class="), secondStep);
  EXPECT_EQ(body.count("<rect class=\"forward\""), 4u + 2 * 2);
  EXPECT_TRUE(body.contains(">stage 1 replica 1</text>"));
}

/// ids [N, 2] -> two embedding lookups (tables of 50 and 40 rows x 4) ->
/// Concat -> Gemm 1: a small CTR model. The tables hold what a sparse PS
/// table with `seed` starts from, so the dense and the sparse runs begin
/// equal.
MLP makeCTR(const std::string &modelPath, uint64_t seed) {
  std::mt19937 rng(9);
  auto initialRows = [&](int64_t rows) {
    auto server = llvm::cantFail(ps::ParameterServer::create({}));
    EXPECT_FALSE(bool(server->addSparseTable("t", rows, 4, 0.05f, seed)));
    ps::InProcessTransport transport(*server);
    auto client = llvm::cantFail(ps::PSClient::create(transport, 0));
    std::vector<int64_t> ids(rows);
    std::iota(ids.begin(), ids.end(), 0);
    Tensor out(DType::F32, {rows, 4});
    EXPECT_FALSE(bool(client->wait(client->pullSparse("t", ids, out))));
    return out;
  };
  writeInitializers(modelPath, {{"table0", initialRows(50)},
                                {"table1", initialRows(40)},
                                {"w", randomTensor({1, 8}, rng, -0.5f, 0.5f)},
                                {"b", randomTensor({1}, rng, -0.1f, 0.1f)}});
  PlanBuilder b;
  int ids = b.input("ids", {-1, 2}, DType::I64);
  std::vector<int> embeddings;
  for (int f = 0; f < 2; ++f) {
    int field =
        b.weight("field" + std::to_string(f), Tensor::fromInts({}, {f}));
    int column =
        b.op("Gather", {ids, field}, {-1}, Attrs().i("axis", 1), DType::I64);
    std::string table = "table" + std::to_string(f);
    embeddings.push_back(b.op("Gather",
                              {b.weightRef(table, {f ? 40 : 50, 4}), column},
                              {-1, 4}, Attrs().i("axis", 0)));
  }
  int x = b.op("Concat", embeddings, {-1, 8}, Attrs().i("axis", 1));
  int y = b.op("Gemm", {x, b.weightRef("w", {1, 8}), b.weightRef("b", {1})},
               {-1, 1}, Attrs().i("trans_b", 1));
  b.output("logits", y);
  MLP mlp{b.build(), {}};
  // Stage 1 from the second table's lookup on.
  for (int i = 3; i < mlp.plan.ops_size(); ++i)
    mlp.plan.mutable_ops(i)->set_stage(1);
  mlp.plan.set_model_path(modelPath);
  mlp.weights = llvm::cantFail(loadWeights(mlp.plan));
  return mlp;
}

data::Dataset makeClicks(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  data::Dataset d;
  d.name = "clicks";
  d.inputs = Tensor(DType::I64, {n, 2});
  d.targets = Tensor(DType::F32, {n, 1});
  for (int64_t i = 0; i < n; ++i) {
    int64_t a = rng() % 50, c = rng() % 40;
    d.inputs.data<int64_t>()[2 * i] = a;
    d.inputs.data<int64_t>()[2 * i + 1] = c;
    d.targets.data<float>()[i] = (a % 3 == 0) != (c % 4 == 0) ? 1.f : 0.f;
  }
  return d;
}

// The tables served sparsely (pulled and pushed by the rows a micro-batch
// touches, SGD at the server) train exactly as dense tables do.
TEST(PipelineTrainer, SparseTablesEqualDenseTables) {
  TempDir dir;
  const uint64_t seed = 3;
  MLP ctr = makeCTR(dir.file("ctr.onnx"), seed);
  data::Dataset clicks = makeClicks(32, 1);
  TrainerOptions single;
  single.loss = LossKind::BCEWithLogits;
  auto trainer = makeTrainer(ctr, single);

  std::set<int32_t> tables = gatherTables(ctr.plan, 0);
  ASSERT_EQ(tables.size(), 2u);
  WeightMap dense = ctr.weights;
  for (int32_t v : tables)
    dense.erase(v);
  PipelineTrainerOptions options;
  options.loss = LossKind::BCEWithLogits;
  options.microBatches = 4;
  options.replicas = {2, 1};
  options.seed = seed;
  options.sparseInitScale = 0.05f;
  options.sparseOptimizer.kind = ps::SparseOptimizerOptions::Kind::SGD;
  options.schedule = ScheduleKind::OneFOneB;
  auto created = PipelineTrainer::create(ctr.plan, dense, options);
  ASSERT_TRUE(bool(created)) << llvm::toString(created.takeError());
  auto &pipeline = *created;
  for (int i = 0; i < 8; ++i) {
    double expected =
        llvm::cantFail(trainer->step(clicks.inputs, clicks.targets, 0.5f)).loss;
    auto r = pipeline->step(clicks.inputs, clicks.targets, 0.5f);
    ASSERT_TRUE(bool(r)) << llvm::toString(r.takeError());
    EXPECT_NEAR(r->loss, expected, 1e-5) << "step " << i;
  }
  EXPECT_LE(pipeline->storedSparseRows(), 90);
  EXPECT_GT(pipeline->storedSparseRows(), 40);
  auto single_ = trainer->evaluate(clicks, 10);
  auto piped = pipeline->evaluate(clicks, 10);
  ASSERT_TRUE(bool(single_) && bool(piped));
  EXPECT_NEAR(piped->loss, single_->loss, 1e-5);
  EXPECT_GT(piped->auc, 0.5);
  EXPECT_NEAR(piped->auc, single_->auc, 1e-6);

  // The state, stored rows included, restored into a fresh pipeline: both
  // continue alike.
  auto state = pipeline->state();
  ASSERT_TRUE(bool(state)) << llvm::toString(state.takeError());
  ASSERT_EQ(state->sparse.size(), 2u);
  EXPECT_EQ(int64_t(state->sparse.begin()->second.ids.size() +
                    state->sparse.rbegin()->second.ids.size()),
            pipeline->storedSparseRows());
  auto resumed =
      llvm::cantFail(PipelineTrainer::create(ctr.plan, dense, options));
  ASSERT_FALSE(bool(resumed->restore(std::move(*state), 8)));
  for (int i = 0; i < 3; ++i) {
    double a =
        llvm::cantFail(pipeline->step(clicks.inputs, clicks.targets, 0.5f))
            .loss;
    double b =
        llvm::cantFail(resumed->step(clicks.inputs, clicks.targets, 0.5f)).loss;
    EXPECT_EQ(a, b) << "step " << i;
  }
}

TEST(PipelineTrainer, ClearErrors) {
  TempDir dir;
  MLP mlp = makeSkipMLP(dir.file("p.onnx"), {2});
  data::Dataset data = makeData(8, 8);
  auto message = [&](PipelineTrainerOptions options, const MLP &model) {
    auto t = PipelineTrainer::create(model.plan, model.weights, options);
    return t ? std::string("created") : llvm::toString(t.takeError());
  };
  PipelineTrainerOptions wrongStages;
  wrongStages.replicas = {1, 1, 1};
  EXPECT_EQ(message(wrongStages, mlp),
            "--replicas gives 3 counts for a plan of 2 stages");
  PipelineTrainerOptions noMicro;
  noMicro.microBatches = 0;
  EXPECT_EQ(message(noMicro, mlp), "--micro-batches must be at least 1, not 0");

  PipelineTrainerOptions eight;
  eight.microBatches = 8;
  auto pipeline = makePipeline(mlp, eight);
  data::Dataset few = makeData(4, 9);
  auto r = pipeline->step(few.inputs, few.targets, 0.1f);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "a batch of 4 samples cannot be cut into 8 micro-batches");

  PipelineTrainerOptions noReplica;
  noReplica.replicas = {1, 0};
  EXPECT_EQ(message(noReplica, mlp),
            "a stage needs at least one replica, not 0");
  // Each replica is a thread with a copy of its stage: 100000 of them is a
  // typo, refused before any is made.
  PipelineTrainerOptions tooMany;
  tooMany.replicas = {100000, 1};
  EXPECT_EQ(message(tooMany, mlp),
            "the stages have 100001 replicas in all; one process runs at most "
            "256");

  // Only Gather tables may be left out of the weights.
  MLP missing = makeSkipMLP(dir.file("m.onnx"), {2});
  missing.weights.erase(missing.plan.ops(2).inputs(1));
  EXPECT_EQ(message({}, missing), "weight 'w2' is missing (only Gather tables "
                                  "may be left to the parameter server)");
}

// A failed step names its stage and replica; the pipeline then refuses to
// go on, its replicas being out of step with the server.
TEST(PipelineTrainer, FailedStepStopsThePipeline) {
  TempDir dir;
  MLP mlp = makeSkipMLP(dir.file("p.onnx"), {2});
  auto pipeline = makePipeline(mlp, {});
  data::Dataset wide;
  wide.inputs = Tensor(DType::F32, {4, 5});
  std::fill_n(wide.inputs.data<float>(), 20, 0.5f);
  wide.targets = Tensor::fromInts({4}, {0, 1, 2, 0});
  auto r = pipeline->step(wide.inputs, wide.targets, 0.1f);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(llvm::toString(r.takeError()).rfind("stage 0 replica 0: op 0 ", 0),
            0u);
  data::Dataset data = makeData(8, 10);
  auto again = pipeline->step(data.inputs, data.targets, 0.1f);
  ASSERT_FALSE(bool(again));
  EXPECT_EQ(llvm::toString(again.takeError()),
            "an earlier step failed; the pipeline's replicas no longer agree "
            "with the parameter server");
}

TEST(PipelineTrainer, SparseTableErrors) {
  TempDir dir;
  MLP ctr = makeCTR(dir.file("ctr.onnx"), 3);
  std::set<int32_t> tables = gatherTables(ctr.plan, 0);
  WeightMap dense = ctr.weights;
  for (int32_t v : tables)
    dense.erase(v);
  auto message = [&](const plan::Plan &plan, const WeightMap &weights,
                     PipelineTrainerOptions options) {
    auto t = PipelineTrainer::create(plan, weights, options);
    return t ? std::string("created") : llvm::toString(t.takeError());
  };
  PipelineTrainerOptions frozen;
  frozen.loss = LossKind::BCEWithLogits;
  frozen.frozen = {"table0"};
  EXPECT_EQ(message(ctr.plan, dense, frozen),
            "table 'table0' is frozen, so the parameter server cannot serve "
            "it: load it");

  // Dropout after the logits.
  plan::Plan withDropout = ctr.plan;
  plan::Value *dropped = withDropout.add_values();
  *dropped = withDropout.values(withDropout.outputs(0).value());
  dropped->set_name("dropped");
  plan::Op *op = withDropout.add_ops();
  op->set_name("drop");
  op->set_type("Dropout");
  op->set_stage(1);
  op->add_inputs(withDropout.outputs(0).value());
  op->add_outputs(withDropout.values_size() - 1);
  withDropout.mutable_outputs(0)->set_value(withDropout.values_size() - 1);
  PipelineTrainerOptions options;
  options.loss = LossKind::BCEWithLogits;
  EXPECT_EQ(message(withDropout, dense, options),
            "a model with sparse tables is evaluated with its training "
            "kernels, so it cannot have Dropout ('drop') yet");

  // A sparse table's rows have one owner: two stages may not look it up.
  plan::Plan shared = ctr.plan;
  shared.mutable_ops(3)->set_inputs(0, ctr.plan.ops(1).inputs(0));
  WeightMap sharedDense = dense;
  int32_t table1 = ctr.plan.ops(3).inputs(0);
  sharedDense.emplace(table1, ctr.weights.at(table1));
  EXPECT_EQ(message(shared, sharedDense, options),
            "sparse table 'table0' is read by stages 0 and 1; a sparse table "
            "must belong to one stage");

  // A state must fit the tables: the same ones sparse, the weights alike.
  auto sparse =
      llvm::cantFail(PipelineTrainer::create(ctr.plan, dense, options));
  auto state = llvm::cantFail(sparse->state());
  auto restoreError = [&](train::Trainer::State s) {
    return llvm::toString(sparse->restore(std::move(s), 0));
  };
  train::Trainer::State noRows = state;
  noRows.sparse.erase(noRows.sparse.begin());
  EXPECT_EQ(restoreError(noRows),
            "the state has no rows for sparse table 'table0'");
  train::Trainer::State extra = state;
  extra.sparse[ctr.plan.ops(5).inputs(1)] = {};
  EXPECT_EQ(restoreError(extra), "'w' is a sparse table there, not here");
  train::Trainer::State fewer = state;
  fewer.weights.erase(fewer.weights.begin());
  EXPECT_EQ(restoreError(fewer), "the state has 3 weights, the plan 4");
}

} // namespace
