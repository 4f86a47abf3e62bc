// convjit_output_digest: one line per problem and op of the randomized sweeps (tests/support),
// with a hash of the output's bytes: two builds that print the same lines computed the same bits.
// tests/digest/compare_builds.sh runs it against two builds' libconvjit.so. The tier is the
// default runtime's (CONVJIT_* environment), so the same comparison covers each backend.
//
//   convjit_output_digest [cases]      (default 400 cases per sweep)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "convjit/convjit.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace {

using namespace convjit;
using testing::Rng;

uint64_t digest(const std::vector<float>& v) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

void print(const char* op, const std::string& set, size_t index, const std::vector<float>& out) {
  std::printf("%s %s %zu %016llx\n", op, set.c_str(), index, static_cast<unsigned long long>(digest(out)));
}

void conv_ops(const std::string& set, const std::vector<ConvDims>& problems) {
  for (size_t i = 0; i < problems.size(); ++i) {
    const ConvDims& d = problems[i];
    Rng rng(testing::case_seed(0xD16E57, i));
    const std::vector<float> x = testing::random_floats(rng, d.input_elements());
    const std::vector<float> w = testing::random_floats(rng, d.weight_elements());
    const std::vector<float> b = testing::random_floats(rng, d.out_channels);
    const std::vector<float> dy = testing::random_floats(rng, d.output_elements());
    std::vector<float> y(size_t(d.output_elements())), dx(size_t(d.input_elements())), dw(size_t(d.weight_elements()));
    conv_forward(d, x.data(), w.data(), b.data(), Activation::Relu, y.data());
    print("conv_fwd_bias_relu", set, i, y);
    conv_forward(d, x.data(), w.data(), y.data());
    print("conv_fwd", set, i, y);
    conv_backward_data(d, dy.data(), w.data(), dx.data());
    print("conv_bwd_data", set, i, dx);
    conv_backward_filter(d, x.data(), dy.data(), dw.data());
    print("conv_bwd_filter", set, i, dw);
  }
}

void pool_ops(const std::string& set, const std::vector<PoolDims>& problems) {
  for (size_t i = 0; i < problems.size(); ++i) {
    const PoolDims& d = problems[i];
    Rng rng(testing::case_seed(0x9001, i));
    const std::vector<float> x = testing::random_floats(rng, d.input_elements());
    const std::vector<float> dy = testing::random_floats(rng, d.output_elements());
    std::vector<float> y(size_t(d.output_elements())), dx(size_t(d.input_elements()));
    maxpool_forward(d, x.data(), y.data());
    print("maxpool_fwd", set, i, y);
    maxpool_backward(d, x.data(), y.data(), dy.data(), dx.data());
    print("maxpool_bwd", set, i, dx);
    meanpool_forward(d, x.data(), y.data());
    print("meanpool_fwd", set, i, y);
    meanpool_backward(d, dy.data(), dx.data());
    print("meanpool_bwd", set, i, dx);
    lpnormpool_forward(d, 2.5f, x.data(), y.data());
    print("lpnormpool_fwd", set, i, y);
    lpnormpool_backward(d, 2.5f, x.data(), y.data(), dy.data(), dx.data());
    print("lpnormpool_bwd", set, i, dx);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int cases = argc > 1 ? std::atoi(argv[1]) : 400;
  if (cases < 1) {
    std::fprintf(stderr, "usage: convjit_output_digest [cases]\n");
    return 2;
  }
  try {
    conv_ops("sweep", testing::random_conv_sweep(11, cases));
    conv_ops("wide", testing::random_conv_sweep(12, cases / 4, testing::wide_channel_limits()));
    conv_ops("larger", testing::larger_conv_shapes());
    pool_ops("sweep", testing::random_pool_sweep(13, cases));
    pool_ops("larger", testing::larger_pool_shapes());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "convjit_output_digest: %s\n", e.what());
    return 1;
  }
  return 0;
}
