//===- ConvEpilogue.cpp - a convolution's activation in registers ---------===//

#include "ConvEpilogue.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

std::optional<ConvEpilogue> cpu::convEpilogueOf(const dnnl::post_ops &ops,
                                                bool leadingSum) {
  int first = 0;
  if (leadingSum) {
    if (ops.len() == 0 || ops.kind(0) != dnnl::primitive::kind::sum)
      return std::nullopt;
    float sumScale;
    ops.get_params_sum(0, sumScale);
    if (sumScale != 1.f)
      return std::nullopt;
    first = 1;
  }
  if (ops.len() == first)
    return ConvEpilogue{};
  if (ops.len() != first + 1 ||
      ops.kind(first) != dnnl::primitive::kind::eltwise)
    return std::nullopt;
  float scale, alpha, beta;
  dnnl::algorithm algorithm;
  ops.get_params_eltwise(first, scale, algorithm, alpha, beta);
  if (scale != 1.f)
    return std::nullopt;
  if (algorithm == dnnl::algorithm::eltwise_relu && alpha == 0.f)
    return ConvEpilogue{Kind::Relu};
  if ((algorithm == dnnl::algorithm::eltwise_clip ||
       algorithm == dnnl::algorithm::eltwise_clip_v2) &&
      alpha <= 0.f && beta >= 0.f)
    return ConvEpilogue{Kind::Clip, alpha, beta};
  if (algorithm == dnnl::algorithm::eltwise_hardswish)
    return ConvEpilogue{Kind::HardSwish};
  if (algorithm == dnnl::algorithm::eltwise_swish && alpha == 1.f)
    return ConvEpilogue{Kind::Swish};
  return std::nullopt;
}
