//===- WindowAttrs.h - strides, dilations and pads --------------*- C++ -*-===//
//
// The ONNX attributes that Conv and the pooling ops share; empty when the
// model leaves them out (their defaults depend on the input's rank).
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_CPU_WINDOWATTRS_H
#define HETERPS_LIB_RUNTIME_CPU_WINDOWATTRS_H

#include "heterps/Runtime/Attributes.h"

#include <vector>

namespace heterps::runtime::cpu {

struct WindowAttrs {
  std::vector<int64_t> strides, dilations, pads;
};

inline llvm::Error readWindowAttrs(const OpAttributes &a, WindowAttrs &out) {
  for (auto [name, field] :
       {std::pair("strides", &out.strides),
        std::pair("dilations", &out.dilations), std::pair("pads", &out.pads)}) {
    auto values = a.getInts(name, std::vector<int64_t>());
    if (!values)
      return values.takeError();
    *field = std::move(*values);
  }
  return llvm::Error::success();
}

} // namespace heterps::runtime::cpu

#endif // HETERPS_LIB_RUNTIME_CPU_WINDOWATTRS_H
