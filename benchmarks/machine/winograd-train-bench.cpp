// Grouped 3x3 stride-1 convolutions as training runs them, one step's
// three passes: oneDNN 2.6's direct forward, backward-data and
// backward-weights in 16-channel blocks, or 8 for groups of 24 (plain weights
// reordered to its format and the weight gradient back to plain, as
// ConvGrad.cpp does for grouped convolutions) against the runtime's own
// Winograd (WinogradConv.h: the weights transformed each step, the forward, the
// backward-data and the weight gradient). Shapes of RegNet's and ResNeXt's
// stages. GFLOP/s count the direct algorithm's multiply-adds of the three
// passes. Hot caches (each shape repeated); prints a markdown table with the
// largest difference of the output, input gradient and weight gradient from
// oneDNN's, relative to the largest of each. Build and run with
// winograd-train.sh.
#include "BenchTiming.h"
#include "WinogradConv.h"

#include <dnnl.hpp>

#include <cstdio>
#include <random>
#include <vector>

using namespace dnnl;
using Tag = memory::format_tag;
using heterps::runtime::DType;
using heterps::runtime::Tensor;
using namespace heterps::runtime::cpu;

namespace {

struct Case {
  const char *where;
  memory::dim n, channels, groups, size;
  /// Channels a block: 16, or 8 where a group is not whole 16-channel
  /// blocks (oneDNN then runs it in blocks of 8 too).
  memory::dim block = 16;
};

/// The largest difference of `a` from `b` relative to b's largest value.
float relativeDiff(const std::vector<float> &a, const std::vector<float> &b) {
  float largest = 0.f;
  for (float v : b)
    largest = std::max(largest, std::fabs(v));
  return maxAbsDiff(a, b) / largest;
}

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  const Case cases[] = {{"RegNet-X-3.2GF s1", 8, 96, 2, 56},
                        {"RegNet-X-3.2GF s2", 8, 192, 4, 28},
                        {"RegNet-X-3.2GF s3", 8, 432, 9, 14},
                        {"RegNet-X-3.2GF s4", 8, 1008, 21, 7},
                        {"RegNet-X-400MF s1", 8, 32, 2, 56},
                        {"RegNet-X-400MF s2", 8, 64, 4, 28},
                        {"RegNet-X-400MF s3", 8, 160, 10, 14},
                        {"RegNet-X-400MF s4", 8, 400, 25, 7},
                        {"ResNeXt-50 s3", 8, 512, 32, 14},
                        {"ResNeXt-50 s4", 8, 1024, 32, 7},
                        {"ResNeXt-101 s2", 8, 512, 32, 28},
                        {"ResNeXt-101 s3", 8, 1024, 32, 14},
                        {"ResNeXt-101 s4", 8, 2048, 32, 7},
                        {"RegNet-Y-800MF s1", 8, 64, 4, 56},
                        {"32-channel groups", 8, 256, 8, 28},
                        {"64-channel groups", 8, 256, 4, 14},
                        {"RegNet-Y-3.2GF s2", 8, 216, 9, 28, 8},
                        {"RegNet-Y-3.2GF s3", 8, 576, 24, 14, 8},
                        {"RegNet-Y-3.2GF s4", 8, 1512, 63, 7, 8},
                        {"RegNet-X-3.2GF s3", 32, 432, 9, 14},
                        {"RegNet-X-400MF s3", 32, 160, 10, 14},
                        {"ResNeXt-50 s3", 32, 512, 32, 14},
                        {"ResNeXt-50 s4", 32, 1024, 32, 7}};
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::printf("| shape | batch | channels | groups | block | image | oneDNN us "
              "| GFLOP/s | own us | GFLOP/s | speed-up | fwd | bwd-data | "
              "bwd-weights | max diffs |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
              "|---:|---|\n");
  for (const Case &s : cases) {
    memory::dim n = s.n, ch = s.channels, g = s.groups, size = s.size;
    memory::dim per = ch / g;
    memory::desc act({n, ch, size, size}, memory::data_type::f32,
                     s.block == 8 ? Tag::nChw8c : Tag::nChw16c);
    memory::desc plainWeights({g, per, per, 3, 3}, memory::data_type::f32,
                              Tag::goihw);
    memory::desc anyWeights({g, per, per, 3, 3}, memory::data_type::f32,
                            Tag::any);
    memory::desc noBias;
    memory::dims one = {1, 1}, none = {0, 0};
    convolution_forward::primitive_desc fwd(
        {prop_kind::forward_training, algorithm::convolution_direct, act,
         anyWeights, noBias, act, one, none, one, one},
        eng);
    convolution_backward_data::primitive_desc bwdData(
        {algorithm::convolution_direct, act, anyWeights, act, one, none, one,
         one},
        eng, fwd);
    convolution_backward_weights::primitive_desc bwdWeights(
        {algorithm::convolution_direct, act, anyWeights, noBias, act, one, none,
         one, one},
        eng, fwd);
    convolution_forward fwdConv(fwd);
    convolution_backward_data bwdDataConv(bwdData);
    convolution_backward_weights bwdWeightsConv(bwdWeights);

    size_t actFloats = act.get_size() / 4;
    std::vector<float> x(actFloats), dy(actFloats), yDnnl(actFloats),
        yOwn(actFloats), dxDnnl(actFloats), dxOwn(actFloats),
        dwDnnl(ch * per * 9);
    Tensor w(DType::F32, {ch, per, 3, 3}), dwOwn(DType::F32, w.shape());
    for (float &v : x)
      v = uniform(rng);
    for (float &v : dy)
      v = uniform(rng);
    for (int64_t i = 0; i < w.numElements(); ++i)
      w.data<float>()[i] = uniform(rng) / 10;
    std::vector<float> packed(fwd.weights_desc().get_size() / 4),
        packedData(bwdData.weights_desc().get_size() / 4),
        dwPacked(bwdWeights.diff_weights_desc().get_size() / 4);
    memory plainW(plainWeights, eng, w.data<float>()),
        fwdW(fwd.weights_desc(), eng, packed.data()),
        dataW(bwdData.weights_desc(), eng, packedData.data()),
        dwMem(bwdWeights.diff_weights_desc(), eng, dwPacked.data()),
        dwPlain(plainWeights, eng, dwDnnl.data()), xMem(act, eng, x.data()),
        dyMem(act, eng, dy.data()), yMem(act, eng, yDnnl.data()),
        dxMem(act, eng, dxDnnl.data());
    bool sameWeights = fwd.weights_desc() == bwdData.weights_desc();
    auto dnnlForward = [&] {
      reorder(plainW, fwdW).execute(st, plainW, fwdW);
      fwdConv.execute(st, {{DNNL_ARG_SRC, xMem},
                           {DNNL_ARG_WEIGHTS, fwdW},
                           {DNNL_ARG_DST, yMem}});
      st.wait();
    };
    auto dnnlData = [&] {
      if (!sameWeights)
        reorder(plainW, dataW).execute(st, plainW, dataW);
      bwdDataConv.execute(st, {{DNNL_ARG_DIFF_DST, dyMem},
                               {DNNL_ARG_WEIGHTS, sameWeights ? fwdW : dataW},
                               {DNNL_ARG_DIFF_SRC, dxMem}});
      st.wait();
    };
    auto dnnlWeights = [&] {
      bwdWeightsConv.execute(st, {{DNNL_ARG_SRC, xMem},
                                  {DNNL_ARG_DIFF_DST, dyMem},
                                  {DNNL_ARG_DIFF_WEIGHTS, dwMem}});
      reorder(dwMem, dwPlain).execute(st, dwMem, dwPlain);
      st.wait();
    };
    // The backward-data's pads are 2 - 1.
    WinogradShape shape{n, per, size, size, per, size, size, 1, 1, s.block, g};
    auto ownForward = [&] {
      winogradConv(x.data(), packWinogradWeights(w, g).data<float>(), nullptr,
                   yOwn.data(), shape, {}, false);
    };
    auto ownData = [&] {
      winogradConv(dy.data(), packWinogradBackwardWeights(w, g).data<float>(),
                   nullptr, dxOwn.data(), shape, {}, false);
    };
    auto ownWeights = [&] {
      winogradWeightGradient(x.data(), dy.data(), dwOwn.data<float>(), nullptr,
                             shape);
    };
    dnnlForward();
    dnnlData();
    dnnlWeights();
    ownForward();
    ownData();
    ownWeights();
    std::vector<float> dwOwnVec(dwOwn.data<float>(),
                                dwOwn.data<float>() + dwOwn.numElements());
    double flops = 3 * 2.0 * n * ch * per * 9 * size * size;
    int runs = std::max<int>(1, int(4e8 / flops));
    double us[2][3]; // [oneDNN, own][forward, backward-data, weights]
    auto time = [&](auto &&f) { return bestMicroseconds(f, 3, runs); };
    us[0][0] = time(dnnlForward);
    us[0][1] = time(dnnlData);
    us[0][2] = time(dnnlWeights);
    us[1][0] = time(ownForward);
    us[1][1] = time(ownData);
    us[1][2] = time(ownWeights);
    double dnnlUs = us[0][0] + us[0][1] + us[0][2];
    double ownUs = us[1][0] + us[1][1] + us[1][2];
    std::printf("| %s | %ld | %ld | %ld | %ld | %ldx%ld | %.0f | %.0f | %.0f | "
                "%.0f | %.2fx | %.2fx | %.2fx | %.2fx | %.0e %.0e %.0e |\n",
                s.where, long(n), long(ch), long(g), long(s.block), long(size),
                long(size), dnnlUs, flops / dnnlUs / 1e3, ownUs,
                flops / ownUs / 1e3, dnnlUs / ownUs, us[0][0] / us[1][0],
                us[0][1] / us[1][1], us[0][2] / us[1][2],
                relativeDiff(yOwn, yDnnl), relativeDiff(dxOwn, dxDnnl),
                relativeDiff(dwOwnVec, dwDnnl));
  }
}
