//===- Attributes.h - typed access to a plan op's attributes ----*- C++ -*-===//
//
// Kernels read their attributes once, when they are created. A getter with a
// default returns it when the attribute is absent; one without reports the
// absence. A present attribute of the wrong kind is always an error. Errors
// are one line naming the attribute; the executor prefixes the op.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_ATTRIBUTES_H
#define HETERPS_RUNTIME_ATTRIBUTES_H

#include "heterps/Runtime/Plan.pb.h"

#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace heterps::runtime {

class OpAttributes {
public:
  explicit OpAttributes(const plan::Op &op) : op(op) {}

  bool has(llvm::StringRef name) const { return find(name) != nullptr; }

  llvm::Expected<int64_t>
  getInt(llvm::StringRef name,
         std::optional<int64_t> defaultValue = std::nullopt) const;
  /// Accepts an int attribute too.
  llvm::Expected<float>
  getFloat(llvm::StringRef name,
           std::optional<float> defaultValue = std::nullopt) const;
  llvm::Expected<std::string>
  getString(llvm::StringRef name,
            std::optional<std::string> defaultValue = std::nullopt) const;
  llvm::Expected<std::vector<int64_t>> getInts(
      llvm::StringRef name,
      std::optional<std::vector<int64_t>> defaultValue = std::nullopt) const;
  llvm::Expected<std::vector<float>> getFloats(
      llvm::StringRef name,
      std::optional<std::vector<float>> defaultValue = std::nullopt) const;

private:
  const plan::Attribute *find(llvm::StringRef name) const;
  llvm::Error missing(llvm::StringRef name) const;
  llvm::Error wrongKind(llvm::StringRef name, llvm::StringRef expected) const;

  const plan::Op &op;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_ATTRIBUTES_H
