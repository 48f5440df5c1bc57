//===- RunningStatistics.cpp - BatchNorm statistics of their own ----------===//

#include "heterps/Runtime/Train/Trainer.h"

#include <map>

using namespace heterps::runtime;

void train::separateRunningStatistics(plan::Plan &plan, WeightMap &weights) {
  std::map<int32_t, int> readers;
  for (const plan::Op &op : plan.ops())
    for (int32_t v : op.inputs())
      ++readers[v];
  for (const plan::Binding &b : plan.outputs())
    ++readers[b.value()];
  for (int i = 0; i < plan.ops_size(); ++i) {
    if (plan.ops(i).type() != "BatchNormalization" ||
        plan.ops(i).inputs_size() < 5)
      continue;
    for (int k : {3, 4}) {
      int32_t v = plan.ops(i).inputs(k);
      auto weight = weights.find(v);
      // The last reader keeps the value.
      if (readers[v] < 2 || weight == weights.end())
        continue;
      --readers[v];
      plan::Value copy = plan.values(v);
      copy.set_name(copy.name() + (k == 3 ? ".running_mean" : ".running_var"));
      auto id = static_cast<int32_t>(plan.values_size());
      *plan.add_values() = std::move(copy);
      plan.mutable_ops(i)->set_inputs(k, id);
      Tensor own = weight->second.clone();
      weights[id] = std::move(own);
    }
  }
}
