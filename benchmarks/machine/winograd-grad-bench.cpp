// The weight gradient of 3x3 stride-1 convolutions, as training computes
// it: oneDNN 2.6's direct backward-weights in 8-channel blocks (with the
// bias gradient) against the runtime's own Winograd weight gradient
// (winogradWeightGradient, WinogradConv.h), on ResNet's and VGG's shapes at
// batch 8. GFLOP/s count the direct algorithm's multiply-adds for both.
// Hot caches (each shape repeated); prints a markdown table with the
// largest difference between the two gradients relative to the largest.
// Build and run with winograd-grad.sh.
#include "BenchTiming.h"
#include "WinogradConv.h"

#include <dnnl.hpp>

#include <cstdio>
#include <random>
#include <vector>

using namespace dnnl;
using Tag = memory::format_tag;
using namespace heterps::runtime::cpu;

namespace {

struct Case {
  const char *where;
  memory::dim n, c, k, size;
};

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const Case cases[] = {{"ResNet-18 layer1", 8, 64, 64, 56},
                        {"ResNet-18 layer2", 8, 128, 128, 28},
                        {"ResNet-18 layer3", 8, 256, 256, 14},
                        {"ResNet-18 layer4", 8, 512, 512, 7},
                        {"ResNet-18 layer4", 16, 512, 512, 7},
                        {"ResNet-50 layer1", 8, 64, 64, 56},
                        {"VGG-16 conv1_2", 8, 64, 64, 224},
                        {"VGG-16 conv2_2", 8, 128, 128, 112},
                        {"VGG-16 conv3_2", 8, 256, 256, 56},
                        {"VGG-16 conv4_2", 8, 512, 512, 28},
                        {"VGG-16 conv5_2", 8, 512, 512, 14},
                        {"DenseNet-121 block1", 8, 128, 32, 56}};
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::printf(
      "| shape | batch | C | K | image | oneDNN | oneDNN us | GFLOP/s | "
      "own us | GFLOP/s | speed-up | max diff / max |\n"
      "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Case &s : cases) {
    memory::dim n = s.n, c = s.c, k = s.k, size = s.size;
    memory::desc src({n, c, size, size}, memory::data_type::f32, Tag::nChw8c);
    memory::desc dst({n, k, size, size}, memory::data_type::f32, Tag::nChw8c);
    memory::desc plainWeights({k, c, 3, 3}, memory::data_type::f32, Tag::oihw);
    memory::desc anyWeights({k, c, 3, 3}, memory::data_type::f32, Tag::any);
    memory::desc bias({k}, memory::data_type::f32, Tag::a);
    convolution_forward::primitive_desc hint({prop_kind::forward_training,
                                              algorithm::convolution_direct,
                                              src,
                                              anyWeights,
                                              bias,
                                              dst,
                                              {1, 1},
                                              {1, 1},
                                              {1, 1}},
                                             eng);
    convolution_backward_weights::primitive_desc pd(
        {algorithm::convolution_direct,
         src,
         anyWeights,
         bias,
         dst,
         {1, 1},
         {1, 1},
         {1, 1}},
        eng, hint);
    convolution_backward_weights conv(pd);

    std::vector<float> x(src.get_size() / 4), dy(dst.get_size() / 4);
    for (float &v : x)
      v = uniform(rng);
    for (float &v : dy)
      v = uniform(rng);
    std::vector<float> dwDnnlPacked(pd.diff_weights_desc().get_size() / 4),
        dwDnnl(k * c * 9), dwOwn(k * c * 9), dbDnnl(k), dbOwn(k);
    memory srcMem(src, eng, x.data()), dyMem(dst, eng, dy.data()),
        dwMem(pd.diff_weights_desc(), eng, dwDnnlPacked.data()),
        dbMem(bias, eng, dbDnnl.data());
    WinogradShape shape{n, c, size, size, k, size, size, 1, 1};
    auto runDnnl = [&] {
      conv.execute(st, {{DNNL_ARG_SRC, srcMem},
                        {DNNL_ARG_DIFF_DST, dyMem},
                        {DNNL_ARG_DIFF_WEIGHTS, dwMem},
                        {DNNL_ARG_DIFF_BIAS, dbMem}});
      st.wait();
    };
    auto runOwn = [&] {
      winogradWeightGradient(x.data(), dy.data(), dwOwn.data(), dbOwn.data(),
                             shape);
    };
    runDnnl();
    runOwn();
    memory plainMem(plainWeights, eng, dwDnnl.data());
    reorder(dwMem, plainMem).execute(st, dwMem, plainMem);
    st.wait();
    float largest = 0.f;
    for (float v : dwDnnl)
      largest = std::max(largest, std::fabs(v));
    float diff = maxAbsDiff(dwOwn, dwDnnl) / largest;
    double flops = 2.0 * n * k * c * 9 * size * size;
    int runs = std::max<int>(1, int(4e8 / flops));
    double dnnlUs = bestMicroseconds(runDnnl, 3, runs);
    double ownUs = bestMicroseconds(runOwn, 3, runs);
    std::printf("| %s | %ld | %ld | %ld | %ldx%ld | %s | %.0f | %.0f | %.0f | "
                "%.0f | %.2fx | %.1e |\n",
                s.where, long(n), long(c), long(k), long(size), long(size),
                pd.impl_info_str(), dnnlUs, flops / dnnlUs / 1e3, ownUs,
                flops / ownUs / 1e3, dnnlUs / ownUs, diff);
  }
}
