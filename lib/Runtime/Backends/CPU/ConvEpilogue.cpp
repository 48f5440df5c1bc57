//===- ConvEpilogue.cpp - a convolution's activation in registers ---------===//

#include "ConvEpilogue.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;
using Kind = ConvEpilogue::Kind;

std::optional<ConvEpilogue> cpu::convEpilogueOf(const dnnl::post_ops &ops) {
  if (ops.len() == 0)
    return ConvEpilogue{};
  if (ops.len() != 1 || ops.kind(0) != dnnl::primitive::kind::eltwise)
    return std::nullopt;
  float scale, alpha, beta;
  dnnl::algorithm algorithm;
  ops.get_params_eltwise(0, scale, algorithm, alpha, beta);
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
