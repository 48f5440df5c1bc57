// Depthwise convolutions: oneDNN 2.6's kernels (jit_dw in 16-channel
// blocks, brdgmm_dw channels-last) against the runtime's own
// (DepthwiseDirect.h), on the MobileNets' and EfficientNets' shapes at
// batch 1, HardSwish after each. Hot caches (each shape repeated); prints
// a markdown table with the largest difference between the two outputs.
// Build and run with depthwise.sh.
#include "BenchTiming.h"
#include "DepthwiseDirect.h"

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace dnnl;
using Tag = memory::format_tag;
using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct Case {
  memory::dim channels, size, kernel, stride;
};

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const Case cases[] = {{32, 112, 3, 1}, {144, 56, 3, 2}, {72, 56, 3, 2},
                        {192, 28, 3, 1}, {96, 28, 5, 2},  {480, 14, 3, 1},
                        {240, 14, 5, 1}, {120, 14, 5, 1}, {576, 7, 5, 1}};
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::printf("| layout | channels | image | kernel | stride | oneDNN | oneDNN "
              "us | own us | speed-up | max diff |\n"
              "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|\n");
  for (bool channelsLast : {false, true})
    for (const Case &s : cases) {
      memory::dim c = s.channels, k = s.kernel, pad = k / 2;
      memory::dim out = (s.size + 2 * pad - k) / s.stride + 1;
      Tag tag = channelsLast ? Tag::nhwc : Tag::nChw16c;
      memory::desc src({1, c, s.size, s.size}, memory::data_type::f32, tag);
      memory::desc dst({1, c, out, out}, memory::data_type::f32, tag);
      memory::desc plainWeights({c, 1, 1, k, k}, memory::data_type::f32,
                                Tag::goihw);
      memory::desc anyWeights({c, 1, 1, k, k}, memory::data_type::f32,
                              Tag::any);
      memory::desc bias({c}, memory::data_type::f32, Tag::a);
      post_ops ops;
      ops.append_eltwise(1.f, algorithm::eltwise_hardswish, 0.f, 0.f);
      primitive_attr attr;
      attr.set_post_ops(ops);
      convolution_forward::primitive_desc pd({prop_kind::forward_inference,
                                              algorithm::convolution_direct,
                                              src,
                                              anyWeights,
                                              bias,
                                              dst,
                                              {s.stride, s.stride},
                                              {pad, pad},
                                              {pad, pad}},
                                             attr, eng);
      convolution_forward conv(pd);

      // The same random input (zeros in the padded lanes), weights, bias.
      std::vector<float> x(src.get_size() / sizeof(float), 0.f);
      std::vector<float> plainX(c * s.size * s.size);
      for (float &v : plainX)
        v = uniform(rng);
      memory plainSrc(
          {{1, c, s.size, s.size}, memory::data_type::f32, Tag::nchw}, eng,
          plainX.data());
      memory srcMem(src, eng, x.data());
      reorder(plainSrc, srcMem).execute(st, plainSrc, srcMem);
      Tensor w(DType::F32, {c, 1, k, k});
      for (int64_t i = 0; i < w.numElements(); ++i)
        w.data<float>()[i] = uniform(rng);
      std::vector<float> b(c),
          packedDnnl(pd.weights_desc().get_size() / sizeof(float));
      for (float &v : b)
        v = uniform(rng);
      memory fromWeights(plainWeights, eng, w.data<float>());
      memory weightsMem(pd.weights_desc(), eng, packedDnnl.data());
      reorder(fromWeights, weightsMem).execute(st, fromWeights, weightsMem);
      st.wait();
      std::vector<float> yDnnl(dst.get_size() / sizeof(float)),
          yOwn(yDnnl.size());
      memory biasMem(bias, eng, b.data()), dstMem(dst, eng, yDnnl.data());
      Tensor packed = packDepthwiseWeights(w);
      DepthwiseShape shape{1, c,        s.size, s.size, out,         out,
                           k, s.stride, pad,    pad,    channelsLast};
      auto runDnnl = [&] {
        conv.execute(st, {{DNNL_ARG_SRC, srcMem},
                          {DNNL_ARG_WEIGHTS, weightsMem},
                          {DNNL_ARG_BIAS, biasMem},
                          {DNNL_ARG_DST, dstMem}});
        st.wait();
      };
      auto runOwn = [&] {
        depthwiseDirect(x.data(), packed.data<float>(), b.data(), yOwn.data(),
                        shape, {ConvEpilogue::HardSwish});
      };
      runDnnl();
      runOwn();
      float diff = maxAbsDiff(yOwn, yDnnl);
      double dnnlUs = bestMicroseconds(runDnnl, 9, 50);
      double ownUs = bestMicroseconds(runOwn, 9, 50);
      std::printf("| %s | %ld | %ldx%ld | %ldx%ld | %ld | %s | %.1f | %.1f | "
                  "%.2fx | %.1e |\n",
                  channelsLast ? "nhwc" : "nChw16c", long(c), long(s.size),
                  long(s.size), long(k), long(k), long(s.stride),
                  pd.impl_info_str(), dnnlUs, ownUs, dnnlUs / ownUs, diff);
    }
}
