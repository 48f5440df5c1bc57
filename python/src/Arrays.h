//===- Arrays.h - NumPy arrays as runtime tensors and back ------*- C++ -*-===//
//
// No copies where the layout allows: a C-contiguous array becomes a tensor
// over its own memory (the tensor keeps the array alive), and a tensor
// becomes an array that owns it.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_PYTHON_ARRAYS_H
#define HETERPS_PYTHON_ARRAYS_H

#include "heterps/Runtime/Tensor.h"

#include <pybind11/numpy.h>

namespace heterps::python {

/// float32, int64 or bool.
pybind11::dtype numpyType(runtime::DType type);

/// `array` as a tensor over its own memory (a copy only when it is not
/// C-contiguous); an error naming `name` when its element type is not
/// `type`.
runtime::Tensor tensorOf(pybind11::array array, runtime::DType type,
                         const std::string &name);

/// The same with the array's own element type (float32, int64 or bool).
runtime::Tensor tensorOf(pybind11::array array, const std::string &name);

/// A NumPy array that owns `t` (no copy).
pybind11::array arrayOf(const runtime::Tensor &t);

} // namespace heterps::python

#endif // HETERPS_PYTHON_ARRAYS_H
