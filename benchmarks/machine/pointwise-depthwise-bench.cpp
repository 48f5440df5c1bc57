// A 1x1 convolution widening the channels, then a 3x3 depthwise one, Swish
// after each (EfficientNet's block), in 16-channel blocks: oneDNN 2.6's 1x1
// kernel then our own depthwise kernel (DepthwiseDirect.h), oneDNN's fused
// depthwise post-op, and our own kernel for the pair
// (PointwiseDepthwise.h); then with the block's projection back to the
// narrow width (plus the residual at stride 1): our own pair then oneDNN's
// 1x1 kernel, against our own kernel for the whole block. Best of 7 rounds;
// prints markdown tables with the largest difference between our fused
// outputs and the convolutions apart.
// Build and run with pointwise-depthwise.sh.
#include "BenchTiming.h"
#include "DepthwiseDirect.h"
#include "PointwiseDepthwise.h"

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

using namespace dnnl;
using Tag = memory::format_tag;
using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct Case {
  memory::dim batch, in, wide, size, stride;
};

memory::desc blocked(memory::dims dims) {
  return {dims, memory::data_type::f32, Tag::nChw16c};
}

/// `plain` (oihw or goihw) reordered into `to`.
std::vector<float> reordered(const std::vector<float> &plain,
                             const memory::desc &from, const memory::desc &to,
                             engine &eng, stream &st) {
  std::vector<float> out(to.get_size() / sizeof(float));
  memory src(from, eng, const_cast<float *>(plain.data()));
  memory dst(to, eng, out.data());
  reorder(src, dst).execute(st, src, dst);
  st.wait();
  return out;
}

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  // MobileNetV2's and EfficientNet-B0's expansions at 112, 56, 28 and 14,
  // at batch 1 and 16.
  const Case cases[] = {{1, 16, 96, 112, 2},  {1, 24, 144, 56, 1},
                        {1, 24, 144, 56, 2},  {1, 40, 240, 28, 1},
                        {1, 80, 480, 14, 1},  {16, 16, 96, 112, 2},
                        {16, 24, 144, 56, 1}, {16, 80, 480, 14, 1}};
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  auto randoms = [&](memory::dim n) {
    std::vector<float> v(n);
    for (float &f : v)
      f = uniform(rng);
    return v;
  };
  std::vector<std::string> blockRows;
  std::printf(
      "| batch | 1x1 | image | dw stride | 1x1 + own dw apart us | "
      "oneDNN fused us | own fused us | vs apart | vs oneDNN fused | "
      "max diff |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const Case &c : cases) {
    memory::dim out = (c.size - 1) / c.stride + 1;
    memory::desc src = blocked({c.batch, c.in, c.size, c.size});
    memory::desc mid = blocked({c.batch, c.wide, c.size, c.size});
    memory::desc dst = blocked({c.batch, c.wide, out, out});
    memory::desc plainPw({c.wide, c.in, 1, 1}, memory::data_type::f32,
                         Tag::oihw);
    memory::desc anyPw({c.wide, c.in, 1, 1}, memory::data_type::f32, Tag::any);
    memory::desc bias({c.wide}, memory::data_type::f32, Tag::a);
    post_ops swish;
    swish.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f);
    primitive_attr swishAttr;
    swishAttr.set_post_ops(swish);
    auto pwDesc = [&](const memory::desc &to) {
      return convolution_forward::desc(prop_kind::forward_inference,
                                       algorithm::convolution_direct, src,
                                       anyPw, bias, to, {1, 1}, {0, 0}, {0, 0});
    };
    convolution_forward::primitive_desc pwPd(pwDesc(mid), swishAttr, eng);
    post_ops fusedOps;
    fusedOps.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f);
    fusedOps.append_dw(memory::data_type::f32, memory::data_type::f32,
                       memory::data_type::f32, 3, c.stride, 1, 0, {1.f});
    fusedOps.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f);
    primitive_attr fusedAttr;
    fusedAttr.set_post_ops(fusedOps);
    convolution_forward::primitive_desc fusedPd(pwDesc(mid), fusedAttr, eng);

    std::vector<float> x(src.get_size() / sizeof(float));
    std::vector<float> plainX = randoms(c.batch * c.in * c.size * c.size);
    memory::desc plainSrc({c.batch, c.in, c.size, c.size},
                          memory::data_type::f32, Tag::nchw);
    x = reordered(plainX, plainSrc, src, eng, st);
    std::vector<float> pw = randoms(c.wide * c.in), pwBias = randoms(c.wide),
                       dw = randoms(c.wide * 9), dwBias = randoms(c.wide);
    std::vector<float> pwDnnl =
        reordered(pw, plainPw, pwPd.weights_desc(), eng, st);
    memory::desc dwFusedMd = fusedPd.query_md(
        query::exec_arg_md, DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS);
    std::vector<float> dwDnnl = reordered(
        dw, {{c.wide, 1, 1, 3, 3}, memory::data_type::f32, Tag::goihw},
        dwFusedMd, eng, st);
    std::vector<float> midData(mid.get_size() / sizeof(float)),
        yApart(dst.get_size() / sizeof(float)), yFused(yApart.size()),
        yOwn(yApart.size());

    memory xMem(src, eng, x.data()),
        pwMem(pwPd.weights_desc(), eng, pwDnnl.data()),
        pwBiasMem(bias, eng, pwBias.data()), midMem(mid, eng, midData.data()),
        fusedDst(dst, eng, yFused.data()), dwMem(dwFusedMd, eng, dwDnnl.data()),
        dwBiasMem(bias, eng, dwBias.data());
    convolution_forward pwConv(pwPd), fusedConv(fusedPd);
    std::vector<float> scratch(
        fusedPd.scratchpad_desc().get_size() / sizeof(float) + 1);
    memory scratchMem(fusedPd.scratchpad_desc(), eng, scratch.data());

    Tensor dwPlain(DType::F32, {c.wide, 1, 3, 3});
    std::copy(dw.begin(), dw.end(), dwPlain.data<float>());
    Tensor dwPacked = packDepthwiseWeights(dwPlain);
    Tensor pwPlain(DType::F32, {c.wide, c.in, 1, 1});
    std::copy(pw.begin(), pw.end(), pwPlain.data<float>());
    Tensor pwPacked = packPointwiseWeights(pwPlain);
    Tensor pwBiasPlain(DType::F32, {c.wide});
    std::copy(pwBias.begin(), pwBias.end(), pwBiasPlain.data<float>());
    Tensor pwBiasPacked = packPointwiseBias(&pwBiasPlain, c.wide);
    ConvEpilogue swishEpilogue{ConvEpilogue::Swish};
    DepthwiseShape dwShape{c.batch, c.wide,   c.size, c.size, out,  out,
                           3,       c.stride, 1,      1,      false};
    PointwiseDepthwiseShape pairShape{c.batch, c.in,     c.wide, c.size, c.size,
                                      3,       c.stride, 1,      out,    out};

    auto runApart = [&] {
      pwConv.execute(st, {{DNNL_ARG_SRC, xMem},
                          {DNNL_ARG_WEIGHTS, pwMem},
                          {DNNL_ARG_BIAS, pwBiasMem},
                          {DNNL_ARG_DST, midMem}});
      st.wait();
      depthwiseDirect(midData.data(), dwPacked.data<float>(), dwBias.data(),
                      yApart.data(), dwShape, swishEpilogue);
    };
    auto runFused = [&] {
      fusedConv.execute(
          st, {{DNNL_ARG_SRC, xMem},
               {DNNL_ARG_WEIGHTS, pwMem},
               {DNNL_ARG_BIAS, pwBiasMem},
               {DNNL_ARG_DST, fusedDst},
               {DNNL_ARG_SCRATCHPAD, scratchMem},
               {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS, dwMem},
               {DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS, dwBiasMem}});
      st.wait();
    };
    auto runOwn = [&] {
      pointwiseDepthwise(x.data(), pwPacked.data<float>(),
                         pwBiasPacked.data<float>(), swishEpilogue,
                         dwPacked.data<float>(), dwBias.data(), swishEpilogue,
                         yOwn.data(), pairShape);
    };
    // The projection back to c.in channels, the residual x at stride 1.
    bool residual = c.stride == 1;
    memory::desc narrow = blocked({c.batch, c.in, out, out});
    post_ops sum;
    if (residual)
      sum.append_sum(1.f);
    primitive_attr sumAttr;
    sumAttr.set_post_ops(sum);
    memory::desc anyProj({c.in, c.wide, 1, 1}, memory::data_type::f32,
                         Tag::any);
    memory::desc narrowBias({c.in}, memory::data_type::f32, Tag::a);
    convolution_forward::primitive_desc projPd({prop_kind::forward_inference,
                                                algorithm::convolution_direct,
                                                dst,
                                                anyProj,
                                                narrowBias,
                                                narrow,
                                                {1, 1},
                                                {0, 0},
                                                {0, 0}},
                                               sumAttr, eng);
    std::vector<float> proj = randoms(c.in * c.wide), projBias = randoms(c.in);
    std::vector<float> projDnnl = reordered(
        proj, {{c.in, c.wide, 1, 1}, memory::data_type::f32, Tag::oihw},
        projPd.weights_desc(), eng, st);
    std::vector<float> yBlockApart(narrow.get_size() / sizeof(float)),
        yBlockOwn(yBlockApart.size());
    memory pairOut(dst, eng, yOwn.data()),
        projMem(projPd.weights_desc(), eng, projDnnl.data()),
        projBiasMem(narrowBias, eng, projBias.data()),
        blockDst(narrow, eng, yBlockApart.data());
    convolution_forward projConv(projPd);
    auto runBlockApart = [&] {
      runOwn();
      if (residual)
        std::copy(x.begin(), x.end(), yBlockApart.begin());
      projConv.execute(st, {{DNNL_ARG_SRC, pairOut},
                            {DNNL_ARG_WEIGHTS, projMem},
                            {DNNL_ARG_BIAS, projBiasMem},
                            {DNNL_ARG_DST, blockDst}});
      st.wait();
    };
    Tensor projPlain(DType::F32, {c.in, c.wide, 1, 1});
    std::copy(proj.begin(), proj.end(), projPlain.data<float>());
    Tensor projPacked = packPointwiseWeights(projPlain);
    Tensor projBiasPlain(DType::F32, {c.in});
    std::copy(projBias.begin(), projBias.end(), projBiasPlain.data<float>());
    Tensor projBiasPacked = packPointwiseBias(&projBiasPlain, c.in);
    Projection projection{c.in, projPacked.data<float>(),
                          projBiasPacked.data<float>(),
                          residual ? x.data() : nullptr, ConvEpilogue{}};
    auto runBlockOwn = [&] {
      pointwiseDepthwise(x.data(), pwPacked.data<float>(),
                         pwBiasPacked.data<float>(), swishEpilogue,
                         dwPacked.data<float>(), dwBias.data(), swishEpilogue,
                         yBlockOwn.data(), pairShape, &projection);
    };
    runBlockApart();
    runBlockOwn();
    float blockDiff = maxAbsDiff(yBlockOwn, yBlockApart);
    double blockApartUs = bestMicroseconds(runBlockApart, 7, 20);
    double blockOwnUs = bestMicroseconds(runBlockOwn, 7, 20);
    char row[256];
    std::snprintf(row, sizeof row,
                  "| %ld | %ld -> %ld -> %ld | %ldx%ld | %ld | %s | %.1f | "
                  "%.1f | %.2fx | %.1e |\n",
                  long(c.batch), long(c.in), long(c.wide), long(c.in),
                  long(c.size), long(c.size), long(c.stride),
                  residual ? "yes" : "no", blockApartUs, blockOwnUs,
                  blockApartUs / blockOwnUs, blockDiff);
    blockRows.push_back(row);

    runApart();
    runOwn();
    float diff = maxAbsDiff(yOwn, yApart);
    double apartUs = bestMicroseconds(runApart, 7, 20);
    double fusedUs = bestMicroseconds(runFused, 7, 20);
    double ownUs = bestMicroseconds(runOwn, 7, 20);
    std::printf("| %ld | %ld -> %ld | %ldx%ld | %ld | %.1f | %.1f | %.1f | "
                "%.2fx | %.2fx | %.1e |\n",
                long(c.batch), long(c.in), long(c.wide), long(c.size),
                long(c.size), long(c.stride), apartUs, fusedUs, ownUs,
                apartUs / ownUs, fusedUs / ownUs, diff);
  }
  std::printf("\n| batch | block | image | dw stride | residual | own pair + "
              "oneDNN 1x1 us | own block us | speed-up | max diff |\n"
              "|---:|---|---:|---:|---|---:|---:|---:|---:|\n");
  for (const std::string &row : blockRows)
    std::printf("%s", row.c_str());
}
