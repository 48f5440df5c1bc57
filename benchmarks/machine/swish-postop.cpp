// What SiLU costs after a convolution: oneDNN's swish post-op inside the
// convolution against the runtime's own pass after it (SwishPass.h), on
// the EfficientNet shapes where the difference showed. Caches are flushed
// before each run, as in a network where the activation was written by
// the op before. Build and run with swish.sh.
#include "SwishPass.h"

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace dnnl;
using Tag = memory::format_tag;

namespace {

struct Shape {
  const char *name;
  memory::dim batch, in, out, size, kernel;
  bool depthwise;
};

enum class Swish { None, PostOp, Pass };

/// Best of 10 runs after 2 warm-ups, in ms.
double timeConv(const Shape &s, Tag tag, Swish swish, engine &eng,
                stream &strm) {
  memory::desc src({s.batch, s.in, s.size, s.size}, memory::data_type::f32,
                   tag);
  memory::desc dst({s.batch, s.out, s.size, s.size}, memory::data_type::f32,
                   tag);
  memory::desc wei = s.depthwise
                         ? memory::desc({s.out, 1, 1, s.kernel, s.kernel},
                                        memory::data_type::f32, Tag::any)
                         : memory::desc({s.out, s.in, s.kernel, s.kernel},
                                        memory::data_type::f32, Tag::any);
  memory::desc bias({s.out}, memory::data_type::f32, Tag::a);
  memory::dim pad = s.kernel / 2;
  post_ops ops;
  if (swish == Swish::PostOp)
    ops.append_eltwise(1.f, algorithm::eltwise_swish, 1.f, 0.f);
  primitive_attr attr;
  attr.set_post_ops(ops);
  convolution_forward::primitive_desc pd(
      convolution_forward::desc(prop_kind::forward_inference,
                                algorithm::convolution_direct, src, wei, bias,
                                dst, {1, 1}, {pad, pad}, {pad, pad}),
      attr, eng);
  memory x(src, eng), w(pd.weights_desc(), eng), b(bias, eng),
      y(pd.dst_desc(), eng);
  float *xs = static_cast<float *>(x.get_data_handle());
  for (size_t i = 0; i < src.get_size() / sizeof(float); ++i)
    xs[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  std::memset(w.get_data_handle(), 0, pd.weights_desc().get_size());
  std::memset(b.get_data_handle(), 0, bias.get_size());
  convolution_forward conv(pd);
  std::vector<char> flush(64 << 20);
  double best = 1e30;
  for (int run = 0; run < 12; ++run) {
    std::memset(flush.data(), run, flush.size());
    auto start = std::chrono::steady_clock::now();
    conv.execute(strm, {{DNNL_ARG_SRC, x},
                        {DNNL_ARG_WEIGHTS, w},
                        {DNNL_ARG_BIAS, b},
                        {DNNL_ARG_DST, y}});
    strm.wait();
    if (swish == Swish::Pass)
      heterps::runtime::cpu::swishInPlace(
          static_cast<float *>(y.get_data_handle()),
          pd.dst_desc().get_size() / sizeof(float));
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    if (run >= 2)
      best = std::min(best, ms);
  }
  return best;
}

} // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  const Shape shapes[] = {
      {"depthwise 3x3, 32 ch, 112x112", 16, 32, 32, 112, 3, true},
      {"depthwise 5x5, 240 ch, 28x28", 16, 240, 240, 28, 5, true},
      {"1x1, 24 -> 144 ch, 56x56", 16, 24, 144, 56, 1, false},
      {"depthwise 3x3, 144 ch, 56x56", 1, 144, 144, 56, 3, true}};
  std::printf("| convolution | batch | format | alone ms | + swish post-op "
              "| + swish pass |\n|---|---:|---|---:|---:|---:|\n");
  for (const Shape &s : shapes)
    for (auto [tag, name] :
         {std::pair{Tag::nChw16c, "nChw16c"}, std::pair{Tag::nhwc, "nhwc"}})
      std::printf("| %s | %ld | %s | %.3f | %.3f | %.3f |\n", s.name,
                  static_cast<long>(s.batch), name,
                  timeConv(s, tag, Swish::None, eng, strm),
                  timeConv(s, tag, Swish::PostOp, eng, strm),
                  timeConv(s, tag, Swish::Pass, eng, strm));
}
