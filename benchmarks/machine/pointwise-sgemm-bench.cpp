// 1x1 convolutions at batch 1 on small images, where a network's weights
// stream from memory (RegNet-X, MnasNet): oneDNN's convolution primitive,
// the kernel the runtime runs, against dnnl_sgemm on the plain layout, the
// kind of kernel ONNX Runtime's MLAS is, and our own (DirectConvAVX2.h)
// in oneDNN's blocks of 8. Each is timed over 40 different
// weight sets in turn, so that the weights come from memory as they do in
// the network, not from cache. Build and run with pointwise-sgemm.sh.
#include "BenchTiming.h"
#include "DirectConvAVX2.h"
#include "PointwiseDepthwise.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <vector>

namespace {

using Tag = dnnl::memory::format_tag;
constexpr int kWeightSets = 40;

/// Microseconds per call of `body(set)`, the sets in turn: the best of 5
/// passes over all of them, after one.
template <typename F> double microseconds(F body) {
  int set = 0;
  auto next = [&] { body(set++ % kWeightSets); };
  for (int s = 0; s < kWeightSets; ++s)
    next();
  return bestMicroseconds(next, 5, kWeightSets);
}

void row(int oc, int ic, int side) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  int hw = side * side;
  std::vector<std::vector<float>> weights(kWeightSets);
  for (auto &w : weights)
    w.assign(size_t(oc) * ic, 0.01f);
  std::vector<float> x(size_t(ic) * hw, 1.f), y(size_t(oc) * hw);

  double sgemm = microseconds([&](int s) {
    dnnl_sgemm('N', 'N', oc, hw, ic, 1.f, weights[s].data(), ic, x.data(), hw,
               0.f, y.data(), hw);
  });

  using dnnl::memory;
  auto md = [](memory::dims d, Tag t) {
    return memory::desc(d, memory::data_type::f32, t);
  };
  memory::dims src{1, ic, side, side}, wei{oc, ic, 1, 1},
      dst{1, oc, side, side};
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct,
                                    md(src, Tag::any), md(wei, Tag::any),
                                    md(dst, Tag::any), {1, 1}, {0, 0}, {0, 0});
  dnnl::convolution_forward::primitive_desc pd(d, engine);
  dnnl::convolution_forward conv(pd);
  std::vector<memory> packed;
  for (auto &w : weights) {
    memory plain(md(wei, Tag::oihw), engine, w.data());
    packed.emplace_back(pd.weights_desc(), engine);
    dnnl::reorder(plain, packed.back()).execute(stream, plain, packed.back());
  }
  memory in(pd.src_desc(), engine), out(pd.dst_desc(), engine);
  double primitive = microseconds([&](int s) {
    conv.execute(stream, {{DNNL_ARG_SRC, in},
                          {DNNL_ARG_WEIGHTS, packed[s]},
                          {DNNL_ARG_DST, out}});
    stream.wait();
  });

  // Ours in blocks of 8, checked against the primitive in the same format.
  using namespace heterps::runtime;
  std::vector<Tensor> ours;
  for (auto &w : weights) {
    Tensor plain(DType::F32, {oc, ic, 1, 1});
    std::copy(w.begin(), w.end(), plain.data<float>());
    ours.push_back(cpu::packPointwiseWeights(plain));
  }
  std::vector<float> x8(size_t(ic) * hw), y8(size_t(oc) * hw), ref(y8.size());
  for (size_t i = 0; i < x8.size(); ++i)
    x8[i] = float(i % 97) / 97.f - 0.5f;
  cpu::PointwiseShape shape{1, ic, oc, hw};
  double own = microseconds([&](int s) {
    cpu::pointwiseConvAVX2(x8.data(), ours[s].data<float>(), nullptr, y8.data(),
                           shape, {}, false);
  });
  auto blocked = [&](memory::dims d, void *data) {
    return memory(md(d, Tag::nChw8c), engine, data);
  };
  memory plain(md(wei, Tag::oihw), engine, weights[0].data());
  dnnl::convolution_forward::desc d8(
      dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
      md(src, Tag::nChw8c), md(wei, Tag::any), md(dst, Tag::nChw8c), {1, 1},
      {0, 0}, {0, 0});
  dnnl::convolution_forward::primitive_desc pd8(d8, engine);
  memory w8(pd8.weights_desc(), engine);
  dnnl::reorder(plain, w8).execute(stream, plain, w8);
  dnnl::convolution_forward(pd8).execute(
      stream, {{DNNL_ARG_SRC, blocked(src, x8.data())},
               {DNNL_ARG_WEIGHTS, w8},
               {DNNL_ARG_DST, blocked(dst, ref.data())}});
  stream.wait();
  cpu::pointwiseConvAVX2(x8.data(), ours[0].data<float>(), nullptr, y8.data(),
                         shape, {}, false);

  double flops = 2.0 * oc * ic * hw;
  std::printf("| %d -> %d, %dx%d | %.1f | %.0f | %s | %.1f | %.0f | %.1f | "
              "%.0f | %.1e |\n",
              ic, oc, side, side, primitive, flops / primitive / 1e3,
              pd.impl_info_str(), sgemm, flops / sgemm / 1e3, own,
              flops / own / 1e3, maxAbsDiff(y8, ref));
}

} // namespace

int main() {
  std::printf("| 1x1 conv, batch 1 | oneDNN conv us | GFLOP/s | impl | "
              "dnnl_sgemm us | GFLOP/s | ours us | GFLOP/s | max diff |\n"
              "|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
  row(400, 400, 7);   // RegNet-X 400MF, last stage
  row(160, 160, 14);  // RegNet-X, third stage
  row(96, 480, 14);   // MnasNet, layers.11 projection
  row(480, 96, 14);   // MnasNet, layers.11 expansion
  row(1024, 256, 14); // ResNet-50, layer3 expansion
  row(512, 2048, 7);  // ResNet-50, layer4 reduction
  row(2048, 512, 7);  // ResNet-50, layer4 expansion
  row(512, 128, 28);  // ResNet-50, layer2 expansion
  row(64, 256, 56);   // ResNet-50, layer1 reduction (ours not offered)
  return 0;
}
