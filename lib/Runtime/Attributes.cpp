//===- Attributes.cpp - typed access to a plan op's attributes ------------===//

#include "heterps/Runtime/Attributes.h"

using namespace heterps::runtime;

const plan::Attribute *OpAttributes::find(llvm::StringRef name) const {
  for (const plan::Attribute &a : op.attributes())
    if (a.name() == name)
      return &a;
  return nullptr;
}

llvm::Error OpAttributes::missing(llvm::StringRef name) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "attribute '" + name + "' is missing");
}

llvm::Error OpAttributes::wrongKind(llvm::StringRef name,
                                    llvm::StringRef expected) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "attribute '" + name + "' must be " +
                                     expected);
}

llvm::Expected<int64_t>
OpAttributes::getInt(llvm::StringRef name,
                     std::optional<int64_t> defaultValue) const {
  const plan::Attribute *a = find(name);
  if (!a)
    return defaultValue ? llvm::Expected<int64_t>(*defaultValue)
                        : llvm::Expected<int64_t>(missing(name));
  if (a->value_case() != plan::Attribute::kI)
    return wrongKind(name, "an int");
  return a->i();
}

llvm::Expected<float>
OpAttributes::getFloat(llvm::StringRef name,
                       std::optional<float> defaultValue) const {
  const plan::Attribute *a = find(name);
  if (!a)
    return defaultValue ? llvm::Expected<float>(*defaultValue)
                        : llvm::Expected<float>(missing(name));
  if (a->value_case() == plan::Attribute::kI)
    return static_cast<float>(a->i());
  if (a->value_case() != plan::Attribute::kF)
    return wrongKind(name, "a float");
  return a->f();
}

llvm::Expected<std::string>
OpAttributes::getString(llvm::StringRef name,
                        std::optional<std::string> defaultValue) const {
  const plan::Attribute *a = find(name);
  if (!a)
    return defaultValue ? llvm::Expected<std::string>(*defaultValue)
                        : llvm::Expected<std::string>(missing(name));
  if (a->value_case() != plan::Attribute::kS)
    return wrongKind(name, "a string");
  return a->s();
}

llvm::Expected<std::vector<int64_t>>
OpAttributes::getInts(llvm::StringRef name,
                      std::optional<std::vector<int64_t>> defaultValue) const {
  using Result = llvm::Expected<std::vector<int64_t>>;
  const plan::Attribute *a = find(name);
  if (!a)
    return defaultValue ? Result(*defaultValue) : Result(missing(name));
  if (a->value_case() != plan::Attribute::kInts)
    return wrongKind(name, "a list of ints");
  return std::vector<int64_t>(a->ints().values().begin(),
                              a->ints().values().end());
}

llvm::Expected<std::vector<float>>
OpAttributes::getFloats(llvm::StringRef name,
                        std::optional<std::vector<float>> defaultValue) const {
  using Result = llvm::Expected<std::vector<float>>;
  const plan::Attribute *a = find(name);
  if (!a)
    return defaultValue ? Result(*defaultValue) : Result(missing(name));
  if (a->value_case() != plan::Attribute::kFloats)
    return wrongKind(name, "a list of floats");
  return std::vector<float>(a->floats().values().begin(),
                            a->floats().values().end());
}
