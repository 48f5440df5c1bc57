// 3x3 stride-1 convolutions: oneDNN 2.6's direct kernel in 8-channel
// blocks against the runtime's own Winograd F(4x4, 3x3) (WinogradConv.h),
// on ResNet's, VGG's and DenseNet's shapes at batches 1 and 16, and the
// grouped ones of RegNet-X and ResNeXt (16- to 64-channel groups, which
// oneDNN's Winograd does not take), ReLU after each. GFLOP/s count the
// direct algorithm's multiply-adds for both.
// Hot caches (each shape repeated); prints a markdown table with the
// largest difference between the two outputs relative to the largest
// output. Build and run with winograd.sh.
#include "BenchTiming.h"
#include "WinogradConv.h"

#include <dnnl.hpp>

#include <cstdio>
#include <random>
#include <vector>

using namespace dnnl;
using Tag = memory::format_tag;
using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

namespace {

struct Case {
  const char *where;
  memory::dim n, c, k, size, groups = 1;
};

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const Case cases[] = {{"ResNet-18 layer1", 1, 64, 64, 56},
                        {"ResNet-18 layer2", 1, 128, 128, 28},
                        {"ResNet-18 layer3", 1, 256, 256, 14},
                        {"ResNet-18 layer4", 1, 512, 512, 7},
                        {"ResNet-50 layer1", 1, 64, 64, 56},
                        {"VGG-16 conv1_2", 1, 64, 64, 224},
                        {"VGG-16 conv2_2", 1, 128, 128, 112},
                        {"VGG-16 conv3_2", 1, 256, 256, 56},
                        {"VGG-16 conv4_2", 1, 512, 512, 28},
                        {"VGG-16 conv5_2", 1, 512, 512, 14},
                        {"DenseNet-121 block1", 1, 128, 32, 56},
                        {"ResNet-18 layer1", 16, 64, 64, 56},
                        {"ResNet-18 layer3", 16, 256, 256, 14},
                        {"ResNet-18 layer4", 16, 512, 512, 7},
                        {"ResNet-18 layer4", 8, 512, 512, 7},
                        {"ResNet-18 layer3", 2, 256, 256, 14},
                        {"RegNet-X-3.2GF stage 1", 1, 96, 96, 56, 2},
                        {"RegNet-X-3.2GF stage 2", 1, 192, 192, 28, 4},
                        {"RegNet-X-3.2GF stage 3", 1, 432, 432, 14, 9},
                        {"RegNet-X-3.2GF stage 4", 1, 1008, 1008, 7, 21},
                        {"RegNet-X-400MF stage 2", 1, 64, 64, 28, 4},
                        {"RegNet-X-400MF stage 3", 1, 160, 160, 14, 10},
                        {"ResNeXt-101 32x8d layer2", 1, 512, 512, 28, 32},
                        {"ResNeXt-101 32x8d layer3", 1, 1024, 1024, 14, 32},
                        {"RegNet-X-400MF stage 3", 16, 160, 160, 14, 10}};
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::printf(
      "| shape | batch | C | K | groups | image | oneDNN | oneDNN us | "
      "GFLOP/s | own us | GFLOP/s | speed-up | max diff / max |\n"
      "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (const Case &s : cases) {
    memory::dim n = s.n, c = s.c, k = s.k, size = s.size, g = s.groups;
    memory::desc src({n, c, size, size}, memory::data_type::f32, Tag::nChw8c);
    memory::desc dst({n, k, size, size}, memory::data_type::f32, Tag::nChw8c);
    // Grouped weights as (G, K/G, C/G, 3, 3): the same bytes as ONNX's
    // (K, C/G, 3, 3).
    memory::dims wDims =
        g == 1 ? memory::dims{k, c, 3, 3} : memory::dims{g, k / g, c / g, 3, 3};
    memory::desc plainWeights(wDims, memory::data_type::f32,
                              g == 1 ? Tag::oihw : Tag::goihw);
    memory::desc anyWeights(wDims, memory::data_type::f32, Tag::any);
    memory::desc bias({k}, memory::data_type::f32, Tag::a);
    post_ops ops;
    ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    primitive_attr attr;
    attr.set_post_ops(ops);
    convolution_forward::primitive_desc pd({prop_kind::forward_inference,
                                            algorithm::convolution_direct,
                                            src,
                                            anyWeights,
                                            bias,
                                            dst,
                                            {1, 1},
                                            {1, 1},
                                            {1, 1}},
                                           attr, eng);
    convolution_forward conv(pd);

    std::vector<float> x(src.get_size() / sizeof(float));
    for (float &v : x)
      v = uniform(rng);
    Tensor w(DType::F32, {k, c / g, 3, 3});
    for (int64_t i = 0; i < w.numElements(); ++i)
      w.data<float>()[i] = uniform(rng) * 0.1f;
    std::vector<float> b(k), packedDnnl(pd.weights_desc().get_size() / 4);
    for (float &v : b)
      v = uniform(rng);
    memory fromWeights(plainWeights, eng, w.data<float>());
    memory weightsMem(pd.weights_desc(), eng, packedDnnl.data());
    reorder(fromWeights, weightsMem).execute(st, fromWeights, weightsMem);
    st.wait();
    std::vector<float> yDnnl(dst.get_size() / sizeof(float)),
        yOwn(yDnnl.size());
    memory srcMem(src, eng, x.data()), biasMem(bias, eng, b.data()),
        dstMem(dst, eng, yDnnl.data());
    Tensor packed = packWinogradWeights(w, g);
    WinogradShape shape{n, c / g, size, size, k / g, size, size, 1, 1, 8, g};
    auto runDnnl = [&] {
      conv.execute(st, {{DNNL_ARG_SRC, srcMem},
                        {DNNL_ARG_WEIGHTS, weightsMem},
                        {DNNL_ARG_BIAS, biasMem},
                        {DNNL_ARG_DST, dstMem}});
      st.wait();
    };
    auto runOwn = [&] {
      winogradConv(x.data(), packed.data<float>(), b.data(), yOwn.data(), shape,
                   {ConvEpilogue::Relu}, false);
    };
    runDnnl();
    runOwn();
    float largest = 0.f;
    for (float v : yDnnl)
      largest = std::max(largest, std::fabs(v));
    float diff = maxAbsDiff(yOwn, yDnnl) / largest;
    double flops = 2.0 * n * k * (c / g) * 9 * size * size;
    int runs = std::max<int>(1, int(2e8 / flops));
    double dnnlUs = bestMicroseconds(runDnnl, 5, runs);
    double ownUs = bestMicroseconds(runOwn, 5, runs);
    std::printf("| %s | %ld | %ld | %ld | %ld | %ldx%ld | %s | %.0f | %.0f | "
                "%.0f | %.0f | %.2fx | %.1e |\n",
                s.where, long(n), long(c), long(k), long(g), long(size),
                long(size), pd.impl_info_str(), dnnlUs, flops / dnnlUs / 1e3,
                ownUs, flops / ownUs / 1e3, dnnlUs / ownUs, diff);
  }
}
