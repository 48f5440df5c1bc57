//===- Session.cpp - running a model on NumPy arrays ----------------------===//
//
// An executor over a model's plan, fed NumPy arrays without copies: a
// C-contiguous array of the input's type becomes the input tensor itself
// (the session holds a reference, so no kernel writes into it), and each
// output array owns the tensor the run produced. The GIL is released while
// the model runs; threads that share a session take turns.
//
//===----------------------------------------------------------------------===//

#include "Arrays.h"
#include "Common.h"

#include "heterps/Runtime/Executor.h"
#include "heterps/Runtime/Plan.h"
#include "heterps/Transforms/LowerToRuntime.h"

#include <pybind11/stl.h>

#include <mutex>

namespace py = pybind11;
using namespace heterps::python;
using namespace heterps::runtime;

namespace {

class Session {
public:
  Session(plan::Plan plan, int threads, bool emulate) {
    ExecutorOptions options;
    options.numThreads = threads;
    options.emulateMissingDevices = emulate;
    py::gil_scoped_release release;
    executor = unwrap(Executor::create(plan, options));
  }

  /// (name, shape with -1 for dynamic dimensions, "float32"/"int64"/"bool").
  py::list describe(bool inputs) const {
    const plan::Plan &p = executor->plan();
    py::list out;
    const auto &bindings = inputs ? p.inputs() : p.outputs();
    for (const plan::Binding &b : bindings) {
      const plan::Value &v = p.values(b.value());
      std::vector<int64_t> dims(v.dims().begin(), v.dims().end());
      out.append(
          py::make_tuple(b.name(), dims, py::str(numpyType(dtypeOf(v)))));
    }
    return out;
  }

  py::list run(std::optional<std::vector<std::string>> names,
               const py::dict &feeds) {
    const plan::Plan &p = executor->plan();
    std::vector<Tensor> inputs;
    for (const plan::Binding &b : p.inputs()) {
      if (!feeds.contains(b.name()))
        raise("missing input '" + b.name() +
              "' (the model's inputs: " + describeInputs(p) + ")");
      inputs.push_back(tensorOf(py::array::ensure(feeds[b.name().c_str()]),
                                dtypeOf(p.values(b.value())),
                                "input '" + b.name() + "'"));
    }
    for (auto item : feeds) {
      std::string name = py::str(item.first);
      if (llvm::none_of(p.inputs(), [&](const plan::Binding &b) {
            return b.name() == name;
          }))
        raise("'" + name + "' is no input of the model (its inputs: " +
              describeInputs(p) + ")");
    }
    std::vector<int> wanted;
    if (!names) {
      for (int i = 0; i < p.outputs_size(); ++i)
        wanted.push_back(i);
    } else {
      for (const std::string &name : *names) {
        auto it = llvm::find_if(p.outputs(), [&](const plan::Binding &b) {
          return b.name() == name;
        });
        if (it == p.outputs().end())
          raise("'" + name + "' is no output of the model");
        wanted.push_back(static_cast<int>(it - p.outputs().begin()));
      }
    }
    std::optional<llvm::Expected<std::vector<Tensor>>> outputs;
    {
      py::gil_scoped_release release;
      std::lock_guard lock(running);
      outputs.emplace(executor->run(inputs));
    }
    std::vector<Tensor> results = unwrap(std::move(*outputs));
    py::list out;
    for (int i : wanted)
      out.append(arrayOf(results[i]));
    return out;
  }

private:
  std::unique_ptr<Executor> executor;
  /// An executor runs one call at a time; threads sharing a session queue.
  std::mutex running;
};

} // namespace

void heterps::python::bindSession(py::module_ &m) {
  py::class_<Session>(m, "Session")
      .def(py::init([](const IRModule &model, int threads, bool emulate) {
             FirstError diagnostics(model.context.get());
             mlir::FailureOr<plan::Plan> plan =
                 mlir::hps::lowerToRuntimePlan(model.op());
             if (mlir::failed(plan))
               diagnostics.raise(model.path);
             return std::make_unique<Session>(std::move(*plan), threads,
                                              emulate);
           }),
           py::arg("model"), py::arg("threads"), py::arg("emulate"))
      .def(py::init([](const std::string &planFile, int threads, bool emulate) {
             return std::make_unique<Session>(unwrap(loadPlan(planFile)),
                                              threads, emulate);
           }),
           py::arg("plan_file"), py::arg("threads"), py::arg("emulate"))
      .def("inputs", [](const Session &s) { return s.describe(true); })
      .def("outputs", [](const Session &s) { return s.describe(false); })
      .def("run", &Session::run, py::arg("output_names"), py::arg("feeds"));
}
