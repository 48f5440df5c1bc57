//===- OptionChecks.h - range checks of numeric options ---------*- C++ -*-===//
//
// Each check names the option, what it takes and what it got, so that a bad
// value is one clear error line ("--momentum must be at least 0, got -1")
// instead of a crash deep in a kernel or a silently different run.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_OPTIONCHECKS_H
#define HETERPS_TOOLS_HETERPS_RUN_OPTIONCHECKS_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>

namespace heterps::tools {

/// The problem with an option's value, or nothing.
using OptionProblem = std::optional<std::string>;

namespace detail {
template <typename T> std::string show(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return llvm::formatv("{0}", llvm::format("%g", double(value))).str();
  else
    return std::to_string(value);
}

template <typename T>
OptionProblem problem(const llvm::cl::opt<T> &option, llvm::StringRef takes) {
  return llvm::formatv("--{0} must be {1}, got {2}", option.ArgStr, takes,
                       show(option.getValue()))
      .str();
}
} // namespace detail

template <typename T>
OptionProblem atLeast(const llvm::cl::opt<T> &option, T min) {
  if (option.getValue() >= min)
    return std::nullopt;
  return detail::problem(option, "at least " + detail::show(min));
}

template <typename T>
OptionProblem inRange(const llvm::cl::opt<T> &option, T min, T max) {
  if (option.getValue() >= min && option.getValue() <= max)
    return std::nullopt;
  return detail::problem(option, "between " + detail::show(min) + " and " +
                                     detail::show(max));
}

template <typename T> OptionProblem positive(const llvm::cl::opt<T> &option) {
  if (option.getValue() > 0)
    return std::nullopt;
  return detail::problem(option, "positive");
}

/// The first problem among `checks`, if any.
inline OptionProblem firstProblem(std::initializer_list<OptionProblem> checks) {
  for (const OptionProblem &p : checks)
    if (p)
      return p;
  return std::nullopt;
}

} // namespace heterps::tools

#endif // HETERPS_TOOLS_HETERPS_RUN_OPTIONCHECKS_H
