//===- Arrays.cpp - NumPy arrays as runtime tensors and back --------------===//

#include "Arrays.h"
#include "Common.h"

namespace py = pybind11;
using namespace heterps::python;
using namespace heterps::runtime;

py::dtype heterps::python::numpyType(DType type) {
  switch (type) {
  case DType::F32:
    return py::dtype::of<float>();
  case DType::I64:
    return py::dtype::of<int64_t>();
  case DType::Bool:
    return py::dtype::of<bool>();
  }
  raise("unsupported element type");
}

Tensor heterps::python::tensorOf(py::array array, DType type,
                                 const std::string &name) {
  if (!array.dtype().is(numpyType(type)))
    raise(name + ": expected " + std::string(py::str(numpyType(type))) +
          ", got " + std::string(py::str(array.dtype())));
  if (!(array.flags() & py::array::c_style))
    array = py::array::ensure(array, py::array::c_style);
  Shape shape(array.shape(), array.shape() + array.ndim());
  PyObject *owner = array.ptr();
  Py_INCREF(owner);
  std::shared_ptr<uint8_t> bytes(
      static_cast<uint8_t *>(const_cast<void *>(array.data())),
      [owner](uint8_t *) {
        py::gil_scoped_acquire gil;
        Py_DECREF(owner);
      });
  return Tensor::adopt(type, std::move(shape), std::move(bytes));
}

py::array heterps::python::arrayOf(const Tensor &t) {
  auto *held = new Tensor(t);
  py::capsule owner(held, [](void *p) { delete static_cast<Tensor *>(p); });
  return py::array(numpyType(t.dtype()), t.shape(), held->rawData(), owner);
}

Tensor heterps::python::tensorOf(py::array array, const std::string &name) {
  for (DType type : {DType::F32, DType::I64, DType::Bool})
    if (array.dtype().is(numpyType(type)))
      return tensorOf(std::move(array), type, name);
  raise(name + ": arrays of " + std::string(py::str(array.dtype())) +
        " are not supported (float32, int64 or bool)");
}
