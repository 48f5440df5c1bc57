//===- PlanBuilder.cpp - building plans by hand in tests ------------------===//

#include "PlanBuilder.h"

using namespace heterps::runtime;
using namespace heterps::runtime::testutil;

static plan::Attribute &named(std::vector<plan::Attribute> &list,
                              const std::string &name) {
  list.emplace_back();
  list.back().set_name(name);
  return list.back();
}

Attrs &Attrs::i(const std::string &name, int64_t value) {
  named(list, name).set_i(value);
  return *this;
}

Attrs &Attrs::f(const std::string &name, float value) {
  named(list, name).set_f(value);
  return *this;
}

Attrs &Attrs::s(const std::string &name, const std::string &value) {
  named(list, name).set_s(value);
  return *this;
}

Attrs &Attrs::ints(const std::string &name, std::vector<int64_t> values) {
  auto *ints = named(list, name).mutable_ints();
  for (int64_t v : values)
    ints->add_values(v);
  return *this;
}

Attrs &Attrs::floats(const std::string &name, std::vector<float> values) {
  auto *floats = named(list, name).mutable_floats();
  for (float v : values)
    floats->add_values(v);
  return *this;
}

int PlanBuilder::value(const std::string &name, const Shape &dims, DType type) {
  plan::Value *v = plan.add_values();
  v->set_name(name);
  v->set_dtype(static_cast<plan::DataType>(type));
  for (int64_t d : dims)
    v->add_dims(d);
  return plan.values_size() - 1;
}

int PlanBuilder::input(const std::string &name, Shape dims, DType type) {
  int v = value(name, dims, type);
  plan::Binding *b = plan.add_inputs();
  b->set_name(name);
  b->set_value(v);
  return v;
}

int PlanBuilder::weight(const std::string &name, const Tensor &t) {
  int v = value(name, t.shape(), t.dtype());
  plan::Weight *w = plan.add_weights();
  w->set_value(v);
  w->set_raw_data(t.rawData(), t.numElements() * dtypeSize(t.dtype()));
  return v;
}

int PlanBuilder::weightRef(const std::string &initializer, Shape dims,
                           DType type) {
  int v = value(initializer, dims, type);
  plan::Weight *w = plan.add_weights();
  w->set_value(v);
  w->set_initializer(initializer);
  return v;
}

int PlanBuilder::op(const std::string &type, std::vector<int> inputs,
                    Shape outDims, const Attrs &attrs, DType outType) {
  std::string name = type + std::to_string(plan.ops_size());
  int out = value(name + ".out", outDims, outType);
  plan::Op *op = plan.add_ops();
  op->set_name(name);
  op->set_type(type);
  for (int in : inputs)
    op->add_inputs(in);
  op->add_outputs(out);
  for (const plan::Attribute &a : attrs.list)
    *op->add_attributes() = a;
  return out;
}

std::vector<int> PlanBuilder::multiOp(const std::string &type,
                                      std::vector<int> inputs,
                                      std::vector<Shape> outDims,
                                      const Attrs &attrs) {
  int first = op(type, std::move(inputs), outDims.front(), attrs);
  std::vector<int> outs = {first};
  plan::Op *o = plan.mutable_ops(plan.ops_size() - 1);
  for (size_t i = 1; i < outDims.size(); ++i) {
    outs.push_back(
        value(o->name() + ".out" + std::to_string(i), outDims[i], DType::F32));
    o->add_outputs(outs.back());
  }
  return outs;
}

PlanBuilder &PlanBuilder::place(const std::string &device, int stage) {
  plan::Op *op = plan.mutable_ops(plan.ops_size() - 1);
  op->set_device(device);
  op->set_stage(stage);
  return *this;
}

void PlanBuilder::output(const std::string &name, int value) {
  plan::Binding *b = plan.add_outputs();
  b->set_name(name);
  b->set_value(value);
}
