//===- Plan.cpp - loading and verifying executable plans ------------------===//

#include "heterps/Runtime/Plan.h"

#include "heterps/Runtime/Tensor.h"
#include "heterps/Support/PrintableLine.h"

#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace heterps::runtime;

static llvm::Error planError(llvm::StringRef where, const llvm::Twine &what) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 where + ": " + what);
}

DType heterps::runtime::dtypeOf(const plan::Value &value) {
  switch (value.dtype()) {
  case plan::INT64:
    return DType::I64;
  case plan::BOOL:
    return DType::Bool;
  default:
    return DType::F32;
  }
}

bool heterps::runtime::hasValueType(const Tensor &t, const plan::Value &value) {
  if (t.dtype() != dtypeOf(value) || t.rank() != value.dims_size())
    return false;
  for (int i = 0; i < value.dims_size(); ++i)
    if (value.dims(i) >= 0 && value.dims(i) != t.dim(i))
      return false;
  return true;
}

void heterps::runtime::eraseOps(plan::Plan &plan,
                                const std::vector<bool> &dead) {
  google::protobuf::RepeatedPtrField<plan::Op> kept;
  for (int i = 0; i < plan.ops_size(); ++i)
    if (!dead[i])
      *kept.Add() = std::move(*plan.mutable_ops(i));
  plan.mutable_ops()->Swap(&kept);
}

std::string heterps::runtime::describeOp(const plan::Plan &plan, int index) {
  const plan::Op &op = plan.ops(index);
  std::string s = "op " + std::to_string(index);
  if (!op.name().empty())
    s += " '" + op.name() + "'";
  return s + " (" + (op.type().empty() ? "no type" : op.type()) + ")";
}

std::string heterps::runtime::describeInputs(const plan::Plan &plan) {
  std::vector<std::string> names;
  for (const plan::Binding &b : plan.inputs())
    names.push_back("'" + b.name() + "'");
  return llvm::join(names, ", ");
}

static bool isTextPath(llvm::StringRef path) {
  return path.ends_with(".pbtxt") || path.ends_with(".txtpb");
}

namespace {
/// Verification state: which values are defined so far and by what.
class PlanVerifier {
public:
  PlanVerifier(const plan::Plan &plan, llvm::StringRef where)
      : plan(plan), where(where), defined(plan.values_size(), false) {}

  llvm::Error verify();

private:
  llvm::Error fail(const llvm::Twine &what) { return planError(where, what); }
  bool inRange(int64_t v) const { return v >= 0 && v < plan.values_size(); }
  llvm::Error verifyValues();
  llvm::Error verifyBindings(bool inputs);
  llvm::Error verifyWeights();
  llvm::Error verifyOps();
  llvm::Error define(int32_t value, const llvm::Twine &by);

  const plan::Plan &plan;
  llvm::StringRef where;
  std::vector<bool> defined;
};
} // namespace

llvm::Error PlanVerifier::define(int32_t value, const llvm::Twine &by) {
  if (defined[value])
    return fail(by + " defines value " + llvm::Twine(value) +
                ", which is already defined");
  defined[value] = true;
  return llvm::Error::success();
}

llvm::Error PlanVerifier::verifyValues() {
  for (int i = 0; i < plan.values_size(); ++i) {
    const plan::Value &v = plan.values(i);
    if (v.dtype() != plan::FLOAT && v.dtype() != plan::INT64 &&
        v.dtype() != plan::BOOL)
      return fail("value " + llvm::Twine(i) + " '" + v.name() +
                  "' has unsupported element type " +
                  llvm::Twine(static_cast<int>(v.dtype())) +
                  " (FLOAT, INT64 and BOOL are supported)");
    for (int64_t d : v.dims())
      if (d < -1)
        return fail("value " + llvm::Twine(i) + " '" + v.name() +
                    "' has invalid dimension " + llvm::Twine(d));
  }
  return llvm::Error::success();
}

llvm::Error PlanVerifier::verifyBindings(bool inputs) {
  const auto &bindings = inputs ? plan.inputs() : plan.outputs();
  const char *kind = inputs ? "graph input" : "graph output";
  llvm::StringSet<> names;
  for (int i = 0; i < bindings.size(); ++i) {
    const plan::Binding &b = bindings[i];
    if (b.name().empty())
      return fail(llvm::Twine(kind) + " " + llvm::Twine(i) + " has no name");
    if (!names.insert(b.name()).second)
      return fail(llvm::Twine(kind) + " name '" + b.name() + "' is used twice");
    if (!inRange(b.value()))
      return fail(llvm::Twine(kind) + " '" + b.name() + "' refers to value " +
                  llvm::Twine(b.value()) + ", but the plan has " +
                  llvm::Twine(plan.values_size()) + " values");
    if (inputs) {
      if (llvm::Error e =
              define(b.value(), llvm::Twine(kind) + " '" + b.name() + "'"))
        return e;
    }
  }
  if (!inputs && bindings.empty())
    return fail("the plan has no graph outputs");
  return llvm::Error::success();
}

llvm::Error PlanVerifier::verifyWeights() {
  for (int i = 0; i < plan.weights_size(); ++i) {
    const plan::Weight &w = plan.weights(i);
    std::string what = "weight " + std::to_string(i);
    if (!inRange(w.value()))
      return fail(what + " refers to value " + llvm::Twine(w.value()) +
                  ", but the plan has " + llvm::Twine(plan.values_size()) +
                  " values");
    const plan::Value &v = plan.values(w.value());
    what += " ('" + v.name() + "')";
    for (int64_t d : v.dims())
      if (d < 0)
        return fail(what + " has a dynamic shape");
    switch (w.source_case()) {
    case plan::Weight::kInitializer:
      if (w.initializer().empty())
        return fail(what + " names no initializer");
      if (plan.model_path().empty())
        return fail(what + " refers to initializer '" + w.initializer() +
                    "', but the plan names no model file");
      break;
    case plan::Weight::kRawData: {
      int64_t expected =
          numElements(llvm::ArrayRef<int64_t>(v.dims().data(), v.dims_size())) *
          dtypeSize(dtypeOf(v));
      if (static_cast<int64_t>(w.raw_data().size()) != expected)
        return fail(what + " holds " + llvm::Twine(w.raw_data().size()) +
                    " bytes, expected " + llvm::Twine(expected));
      break;
    }
    default:
      return fail(what + " has neither an initializer name nor data");
    }
    if (llvm::Error e = define(w.value(), what))
      return e;
  }
  return llvm::Error::success();
}

llvm::Error PlanVerifier::verifyOps() {
  int32_t lastStage = 0;
  for (int i = 0; i < plan.ops_size(); ++i) {
    const plan::Op &op = plan.ops(i);
    std::string what = describeOp(plan, i);
    if (op.type().empty())
      return fail(what + " has no type");
    llvm::StringSet<> attrs;
    for (const plan::Attribute &a : op.attributes()) {
      if (!attrs.insert(a.name()).second)
        return fail(what + ": attribute '" + a.name() + "' is given twice");
      if (a.value_case() == plan::Attribute::VALUE_NOT_SET)
        return fail(what + ": attribute '" + a.name() + "' has no value");
    }
    for (int k = 0; k < op.inputs_size(); ++k) {
      int32_t v = op.inputs(k);
      if (v == -1)
        continue;
      if (!inRange(v))
        return fail(what + ": input " + llvm::Twine(k) + " refers to value " +
                    llvm::Twine(v) + ", but the plan has " +
                    llvm::Twine(plan.values_size()) + " values");
      if (!defined[v])
        return fail(what + ": input " + llvm::Twine(k) + " (value " +
                    llvm::Twine(v) + " '" + plan.values(v).name() +
                    "') is not defined by a graph input, a weight or an "
                    "earlier op");
    }
    if (op.outputs_size() == 0)
      return fail(what + " has no outputs");
    for (int k = 0; k < op.outputs_size(); ++k) {
      int32_t v = op.outputs(k);
      if (!inRange(v))
        return fail(what + ": output " + llvm::Twine(k) + " refers to value " +
                    llvm::Twine(v) + ", but the plan has " +
                    llvm::Twine(plan.values_size()) + " values");
      if (llvm::Error e = define(v, what))
        return e;
    }
    if (op.stage() < 0 ||
        (plan.stages_size() > 0 && op.stage() >= plan.stages_size()))
      return fail(what + " is in stage " + llvm::Twine(op.stage()) +
                  ", but the plan has " + llvm::Twine(plan.stages_size()) +
                  " stages");
    if (op.stage() < lastStage)
      return fail(what + " is in stage " + llvm::Twine(op.stage()) +
                  " but follows an op of stage " + llvm::Twine(lastStage) +
                  " (ops must be ordered by stage)");
    lastStage = op.stage();
  }
  for (int s = 0; s < plan.stages_size(); ++s)
    if (plan.stages(s).replicas() < 1)
      return fail("stage " + llvm::Twine(s) + " has " +
                  llvm::Twine(plan.stages(s).replicas()) +
                  " replicas (at least 1 is needed)");
  llvm::StringSet<> typeNames;
  for (const plan::DeviceType &t : plan.device_types()) {
    if (t.kind().empty())
      return fail("device type '" + heterps::printableLine(t.name()) +
                  "' has no kind");
    if (!typeNames.insert(t.name()).second)
      return fail("device type '" + heterps::printableLine(t.name()) +
                  "' is listed twice");
  }
  return llvm::Error::success();
}

llvm::Error PlanVerifier::verify() {
  if (plan.version() != kPlanVersion)
    return fail("plan format version " + llvm::Twine(plan.version()) +
                " is not supported (this runtime reads version " +
                llvm::Twine(kPlanVersion) + ")");
  if (llvm::Error e = verifyValues())
    return e;
  if (llvm::Error e = verifyBindings(/*inputs=*/true))
    return e;
  if (llvm::Error e = verifyWeights())
    return e;
  if (llvm::Error e = verifyOps())
    return e;
  if (llvm::Error e = verifyBindings(/*inputs=*/false))
    return e;
  for (const plan::Binding &b : plan.outputs())
    if (!defined[b.value()])
      return fail("graph output '" + b.name() + "' (value " +
                  llvm::Twine(b.value()) + ") is never defined");
  return llvm::Error::success();
}

llvm::Error heterps::runtime::verifyPlan(const plan::Plan &plan,
                                         llvm::StringRef where) {
  return PlanVerifier(plan, where).verify();
}

namespace {
/// Collects protobuf's text-format parse errors into one line.
class TextErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, int column, const std::string &message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ", column " +
              std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};
} // namespace

llvm::Expected<plan::Plan> heterps::runtime::parsePlan(llvm::StringRef bytes,
                                                       bool text,
                                                       llvm::StringRef where) {
  plan::Plan plan;
  if (text) {
    google::protobuf::TextFormat::Parser parser;
    TextErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(std::string(bytes), &plan))
      return planError(where, "invalid plan text: " + errors.first);
  } else if (!plan.ParseFromArray(bytes.data(),
                                  static_cast<int>(bytes.size()))) {
    return planError(where, "not a binary plan (protobuf parse failed)");
  }
  if (llvm::Error e = verifyPlan(plan, where))
    return e;
  return plan;
}

llvm::Expected<plan::Plan> heterps::runtime::loadPlan(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return planError(path, "cannot read plan: " + buffer.getError().message());
  llvm::Expected<plan::Plan> plan =
      parsePlan((*buffer)->getBuffer(), isTextPath(path), path);
  if (!plan)
    return plan.takeError();
  if (!plan->model_path().empty() &&
      llvm::sys::path::is_relative(plan->model_path())) {
    llvm::SmallString<256> model(llvm::sys::path::parent_path(path));
    llvm::sys::path::append(model, plan->model_path());
    plan->set_model_path(std::string(model));
  }
  return plan;
}

llvm::Error heterps::runtime::savePlan(const plan::Plan &plan,
                                       llvm::StringRef path) {
  std::string bytes;
  if (isTextPath(path)) {
    if (!google::protobuf::TextFormat::PrintToString(plan, &bytes))
      return planError(path, "cannot print plan as text");
  } else if (!plan.SerializeToString(&bytes)) {
    return planError(path, "cannot serialise plan");
  }
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return planError(path, "cannot write plan: " + ec.message());
  os << bytes;
  return llvm::Error::success();
}
