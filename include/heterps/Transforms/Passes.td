//===- Passes.td - HeterPS pass declarations ---------------*- tablegen -*-===//

#ifndef HETERPS_TRANSFORMS_PASSES_TD
#define HETERPS_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LayerStats : Pass<"hps-layer-stats", "::mlir::func::FuncOp"> {
  let summary = "Print each layer's kind, FLOPs, parameter and activation bytes";
  let description = [{
    Walks the function and prints, for every op implementing
    `LayerOpInterface` (weights and constants excepted), the figures the
    cost model starts from, followed by the totals. The IR is not changed.

    Example:
    ```
    heterps-opt resnet18.onnx --hps-layer-stats=format=json -o /dev/null
    ```
  }];
  let options = [
    Option<"format", "format", "::mlir::hps::OutputFormat",
           /*default=*/"::mlir::hps::OutputFormat::Text",
           "Output format",
           [{::llvm::cl::values(
             clEnumValN(::mlir::hps::OutputFormat::Text, "text",
                        "an aligned table"),
             clEnumValN(::mlir::hps::OutputFormat::Json, "json",
                        "a JSON document"))}]>,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "File to write the statistics to; '-' writes to stdout">,
  ];
  let dependentDialects = ["::mlir::hps::HPSDialect"];
}

def AnnotateCosts : Pass<"hps-annotate-costs", "::mlir::ModuleOp"> {
  let summary = "Attach per-device-type layer costs (OCT, ODT, alpha, beta)";
  let description = [{
    Reads the cluster spec and gives every layer an `hps.costs` dictionary
    with one `#hps.cost` per device type. Costs are analytic (from the
    layer's FLOPs and bytes and the device's figures, for a batch of the
    job's batch size) unless the profile has measured values for the layer's
    node name and the device type. Records the spec itself on the module as
    `hps.cluster` (a `#hps.cluster`) for the passes that follow, which read
    no file: a saved module plans and lowers wherever it is moved. See
    docs/cost-model.md.
  }];
  let options = [
    Option<"cluster", "cluster", "std::string", /*default=*/"",
           "Cluster spec (YAML): device types, prices, limits and the job">,
    Option<"profile", "profile", "std::string", /*default=*/"",
           "Optional profile (JSON) of measured costs overriding the "
           "analytic ones">,
  ];
  let dependentDialects = ["::mlir::hps::HPSDialect"];
}

def Place : Pass<"hps-place", "::mlir::ModuleOp"> {
  let summary = "Choose a device type for every layer";
  let description = [{
    Sets `hps.device` on every layer. Strategies:

    * `all-<type>`: every layer on device type `<type>` of the spec;
    * `manual`: the device type of each layer from a JSON object keyed by
      ONNX node name (`{"conv1": "v100", ...}`); every layer must be listed;
    * `rl`: the HeterPS scheduler, an LSTM policy trained with REINFORCE on
      the plans' costs (`episodes`, `pretrain-episodes`, `hidden-size`,
      `learning-rate`, `polish`, `rebalance`, `seed`, `time-budget`);
    * `greedy`: per layer, the cheapest type meeting the floor on its own;
    * `random`: random search with `budget` evaluations;
    * `genetic`: a genetic algorithm with `budget` evaluations;
    * `exact`: the provable optimum of the same space, limits included (a
      dynamic programme over stage runs, docs/placement.md);
    * `tapp`: the TAPP scheduler, a partition network grouping the layers
      and an attention network giving each group a type, trained jointly by
      policy gradient on step times (`tapp-plans`, `tapp-groups`, `seed`,
      `time-budget`). This pass times plans with the cost model;
      `heterps-run --strategy tapp` measures them by training each for a
      few steps. `hps.search` lists every plan timed, with the cost
      model's and the oracle's step;
    * `exhaustive`: every placement (only for small models).

    The searching strategies evaluate plans exactly as `hps-form-stages` and
    `hps-provision` will build them (docs/placement.md) and record what they
    did on the module as `hps.search` (strategy, search time, evaluations),
    which `hps-report` prints. `certify=true`, with any strategy, also runs
    `exact` and records the optimal cost and the chosen plan's gap to it.
    `save=FILE` writes the chosen placement in the format `strategy=manual`
    reads.

    Needs `hps-annotate-costs` first.
  }];
  let options = [
    Option<"strategy", "strategy", "std::string", /*default=*/"",
           "manual, all-<device type>, rl, tapp, greedy, random, genetic, "
           "exact or exhaustive">,
    Option<"placement", "placement", "std::string", /*default=*/"",
           "JSON placement file read by strategy=manual">,
    Option<"save", "save", "std::string", /*default=*/"",
           "Write the chosen placement as JSON (the format strategy=manual "
           "reads) to this file">,
    Option<"throughputLimit", "throughput-limit", "double", /*default=*/"-1",
           "Throughput floor the search plans for, in samples/s, at least 0 "
           "(default: the job's throughput_limit)">,
    Option<"seed", "seed", "uint64_t", /*default=*/"1",
           "Random seed of rl, tapp, random and genetic (same seed, same "
           "plan)">,
    Option<"episodes", "episodes", "int", /*default=*/"1000000",
           "rl: at most this many episodes on the policy's own plans (the "
           "time budget usually ends training first)">,
    Option<"pretrainEpisodes", "pretrain-episodes", "int", /*default=*/"500",
           "rl: pre-training episodes on random plans">,
    Option<"hiddenSize", "hidden-size", "int", /*default=*/"16",
           "rl: LSTM hidden size">,
    Option<"learningRate", "learning-rate", "double", /*default=*/"0.01",
           "rl: learning rate">,
    Option<"polish", "polish", "int64_t", /*default=*/"200",
           "rl: evaluations of local improvement on each batch's best plan, "
           "which the policy then imitates (0: the policy alone)">,
    Option<"rebalance", "rebalance", "bool", /*default=*/"true",
           "rl: refine each new best polished plan over its sequence of "
           "stage types (exact stage boundaries per sequence, descent over "
           "sequences one stage added, removed or split away)">,
    Option<"capRefinement", "cap-refinement", "bool", /*default=*/"true",
           "rl: first move each new best polished plan to the cheapest plan "
           "(any types and stages, limits kept) whose stages fit under its "
           "largest stage time or a multiple of it, while one is better">,
    Option<"timeBudget", "time-budget", "double", /*default=*/"10",
           "rl, tapp: stop after this many seconds">,
    Option<"tappPlans", "tapp-plans", "int64_t", /*default=*/"200",
           "tapp: distinct plans to time at most (each measured once)">,
    Option<"tappGroups", "tapp-groups", "int", /*default=*/"6",
           "tapp: groups the partition network may form">,
    Option<"certify", "certify", "bool", /*default=*/"false",
           "Also find the optimum (strategy=exact) and record optimal_cost "
           "and gap = (cost - optimal_cost) / optimal_cost">,
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "random, genetic: evaluations (default 20000; the placement "
           "benchmark gives them rl's count, for comparisons at equal "
           "budgets)">,
  ];
}

def FormStages : Pass<"hps-form-stages", "::mlir::ModuleOp"> {
  let summary = "Group consecutive layers on one device type into stages";
  let description = [{
    In the function's (topological) op order, every maximal run of layers
    with the same `hps.device` becomes one pipeline stage; sets `hps.stage`.
  }];
}

def Provision : Pass<"hps-provision", "::mlir::ModuleOp"> {
  let summary = "Choose the number of devices of every stage";
  let description = [{
    Gives the stages the device counts of the cheapest plan whose
    throughput meets the limit within every type's `max_count`: from the
    smallest `k` per stage meeting the limit, the slowest stages get more
    devices while that lowers the job's cost (the other stages are paid
    while they wait for the slowest; docs/cost-model.md). Records the counts
    as `hps.replicas` on the module. When the limit cannot be met the pass
    fails with an error stating the best achievable throughput and the stage
    that caps it.
  }];
  let options = [
    Option<"throughputLimit", "throughput-limit", "double",
           /*default=*/"-1",
           "Samples per second the pipeline must sustain, at least 0 "
           "(default: the job's throughput_limit from the cluster spec)">,
  ];
}

def Report : Pass<"hps-report", "::mlir::ModuleOp"> {
  let summary = "Print the plan: stages, replicas, times, throughput and cost";
  let description = [{
    Evaluates the plan in the IR (devices, stages, replicas, costs) with the
    HeterPS formulas and prints it as a table, as the JSON document
    described in docs/cost-model.md, or as one self-contained HTML page of
    pictures (inline SVG, no scripts): the layers coloured by device type
    and grouped by stage, each stage's times, the plan against all-CPU and
    all-GPU baselines, and the optimal cost over a sweep of throughput
    floors (docs/pictures.md). The IR is not changed.
  }];
  let options = [
    Option<"format", "format", "::mlir::hps::OutputFormat",
           /*default=*/"::mlir::hps::OutputFormat::Text",
           "Output format",
           [{::llvm::cl::values(
             clEnumValN(::mlir::hps::OutputFormat::Text, "text",
                        "readable tables"),
             clEnumValN(::mlir::hps::OutputFormat::Json, "json",
                        "the report JSON document"),
             clEnumValN(::mlir::hps::OutputFormat::Html, "html",
                        "a self-contained HTML page of pictures"))}]>,
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "File to write the report to; '-' writes to stdout">,
  ];
}

def LowerToRuntime : Pass<"hps-lower-to-runtime", "::mlir::ModuleOp"> {
  let summary = "Write the model as an executable plan for lib/Runtime";
  let description = [{
    Writes the model function as the runtime's executable plan
    (`lib/Runtime/Plan.proto`): one value per SSA value (graph inputs and
    outputs named by `hps.name`), weights referenced by ONNX initializer
    name against the model file `hps.source` (constants inline), and one op
    per layer in op order with its ONNX op type, its attributes as the
    dialect spells them, and its `hps.device` and `hps.stage` when placed.
    With a cluster spec recorded (`hps-annotate-costs`), the plan lists its
    device types with their kinds (`cpu`, `cuda`), by which the runtime
    picks the backend that runs each op, and that backend's kernels.
    A `.pbtxt` output is protobuf text, anything else binary. The IR is
    left unchanged.
  }];
  let options = [
    Option<"output", "output", "std::string", /*default=*/"\"-\"",
           "Plan file to write ('-': text format on stdout)">,
  ];
}

#endif // HETERPS_TRANSFORMS_PASSES_TD
