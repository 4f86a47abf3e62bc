// Uses an installed convjit through its public headers only: a hand-checked conv, a pool, an
// error, and the C ABI from C++. Exits non-zero on any mismatch.
#include <convjit/convjit.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

bool close_to(float got, double want) { return std::fabs(double(got) - want) <= 1e-5 * (1.0 + std::fabs(want)); }

}  // namespace

int main() {
  // 2D cross-correlation of [[1 2 3] [4 5 6] [7 8 9]] with [[1 2] [3 4]]:
  //   [[1+4+12+20, 2+6+15+24], [4+10+21+32, 5+12+24+36]] = [[37 47] [67 77]]
  convjit::ConvDims d;
  d.rank = 2;
  d.in_size = {3, 3, 1};
  d.kernel = {2, 2, 1};
  const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 4};
  float y[4] = {NAN, NAN, NAN, NAN};
  check(d.output_elements() == 4, "output_elements");
  convjit::conv_forward(d, x, w, y);
  check(close_to(y[0], 37) && close_to(y[1], 47) && close_to(y[2], 67) && close_to(y[3], 77), "conv_forward");

  // 2x2 max pooling of the same image with stride 1: [[5 6] [8 9]]
  convjit::PoolDims p;
  p.rank = 2;
  p.in_size = {3, 3, 1};
  p.window = {2, 2, 1};
  p.stride = {1, 1, 0};
  convjit::maxpool_forward(p, x, y);
  check(y[0] == 5 && y[1] == 6 && y[2] == 8 && y[3] == 9, "maxpool_forward");

  // Errors arrive as convjit::Error naming the field, with the output untouched.
  d.groups = 2;
  y[0] = 42;
  try {
    convjit::conv_forward(d, x, w, y);
    check(false, "no exception for groups = 2 with 1 channel");
  } catch (const convjit::Error& e) {
    check(e.status() == CONVJIT_EINVAL, "status");
    check(std::string(e.what()).find("groups") != std::string::npos, "message names groups");
  }
  check(y[0] == 42, "output untouched");

  // The C ABI is reachable from the same library.
  convjit_conv_params c = d.to_c();
  c.groups = 1;
  int64_t size[3];
  check(convjit_conv_output_size(&c, size) == CONVJIT_OK && size[0] == 2 && size[1] == 2, "C output size");

  if (failures == 0) std::printf("package consumer: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
