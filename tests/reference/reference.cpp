// Deliberately naive: every output (or every input/weight contribution) is one iteration of a
// plain loop nest over the definitions in README.md ("Semantics"). No blocking, no precomputed offsets, no
// shared code with lib/. Speed is irrelevant; obviousness is the point.
#include "reference/reference.hpp"

#include <cfloat>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace convjit::ref {
namespace {

// One problem with three spatial dims (D, H, W). Rank r fills the last r of them; the missing
// outer dims have size 1, window 1, stride 1, dilation 1 and no padding.
struct Geometry {
  Layout layout = Layout::NCHW;
  bool flip = false;
  int64_t batch = 1, in_channels = 1, out_channels = 1, groups = 1;
  int64_t in[3] = {1, 1, 1}, window[3] = {1, 1, 1}, stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1};
  int64_t pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0}, out[3] = {1, 1, 1};
};

[[noreturn]] void invalid(const std::string& what) { throw std::invalid_argument("convjit::ref: " + what); }

void fill_spatial(Geometry& g, int32_t rank, const Extent& in, const Extent& window, const Extent& stride,
                  const Extent& dilation, const Extent& pad_begin, const Extent& pad_end) {
  if (rank < 1 || rank > 3) invalid("rank must be 1, 2 or 3");
  const int offset = 3 - rank;
  for (int d = 0; d < rank; ++d) {
    const int n = d + offset;
    g.in[n] = in[d];
    g.window[n] = window[d];
    g.stride[n] = stride[d];
    g.dilation[n] = dilation[d];
    g.pad_begin[n] = pad_begin[d];
    g.pad_end[n] = pad_end[d];
    if (g.in[n] < 1 || g.window[n] < 1 || g.stride[n] < 1 || g.dilation[n] < 1 || g.pad_begin[n] < 0 ||
        g.pad_end[n] < 0) {
      invalid("spatial parameter out of range");
    }
    // floor division of a non-negative numerator, so plain integer division is floor.
    const int64_t numerator = g.in[n] + g.pad_begin[n] + g.pad_end[n] - g.dilation[n] * (g.window[n] - 1) - 1;
    if (numerator < 0) invalid("output size < 1");
    g.out[n] = numerator / g.stride[n] + 1;
  }
}

Geometry conv_geometry(const ConvDims& dims) {
  Geometry g;
  if (dims.layout != Layout::NCHW && dims.layout != Layout::NHWC) invalid("layout");
  if (dims.mode != Mode::CrossCorrelation && dims.mode != Mode::Convolution) invalid("mode");
  g.layout = dims.layout;
  g.flip = dims.mode == Mode::Convolution;
  g.batch = dims.batch;
  g.in_channels = dims.in_channels;
  g.out_channels = dims.out_channels;
  g.groups = dims.groups;
  if (g.batch < 1 || g.in_channels < 1 || g.out_channels < 1 || g.groups < 1) invalid("non-positive count");
  if (g.in_channels % g.groups != 0 || g.out_channels % g.groups != 0) invalid("groups");
  fill_spatial(g, dims.rank, dims.in_size, dims.kernel, dims.stride, dims.dilation, dims.pad_begin, dims.pad_end);
  return g;
}

Geometry pool_geometry(const PoolDims& dims) {
  Geometry g;
  if (dims.layout != Layout::NCHW && dims.layout != Layout::NHWC) invalid("layout");
  g.layout = dims.layout;
  g.batch = dims.batch;
  g.in_channels = g.out_channels = g.groups = dims.channels;
  if (g.batch < 1 || g.in_channels < 1) invalid("non-positive count");
  Extent stride = dims.stride;
  for (int d = 0; d < 3; ++d) {
    if (stride[d] == 0) stride[d] = dims.window[d];  // the C++ API's default
  }
  fill_spatial(g, dims.rank, dims.in_size, dims.window, stride, dims.dilation, dims.pad_begin, dims.pad_end);
  return g;
}

int64_t volume(const int64_t size[3]) { return size[0] * size[1] * size[2]; }

// Offset of element (n, c, z, y, x) of an activation tensor with `channels` channels and
// spatial size `size`: NCDHW or NDHWC.
int64_t activation_index(Layout layout, int64_t channels, const int64_t size[3], int64_t n, int64_t c, int64_t z,
                         int64_t y, int64_t x) {
  if (layout == Layout::NCHW) return (((n * channels + c) * size[0] + z) * size[1] + y) * size[2] + x;
  return (((n * size[0] + z) * size[1] + y) * size[2] + x) * channels + c;
}

// Offset of weight (o, i, kz, ky, kx), i within the group: OIDHW with NCHW, ODHWI with NHWC.
int64_t weight_index(const Geometry& g, int64_t o, int64_t i, int64_t kz, int64_t ky, int64_t kx) {
  const int64_t ipg = g.in_channels / g.groups;
  if (g.layout == Layout::NCHW) return (((o * ipg + i) * g.window[0] + kz) * g.window[1] + ky) * g.window[2] + kx;
  return (((o * g.window[0] + kz) * g.window[1] + ky) * g.window[2] + kx) * ipg + i;
}

bool inside(int64_t i, int64_t size) { return i >= 0 && i < size; }

// Calls f(x_index, y_index, w_index) for every (output element, input channel, kernel tap)
// whose tap lands on a real input element: the one loop nest behind all three conv ops.
template <typename F>
void for_each_conv_term(const Geometry& g, F f) {
  const int64_t ipg = g.in_channels / g.groups;
  const int64_t opg = g.out_channels / g.groups;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t o = 0; o < g.out_channels; ++o)
      for (int64_t oz = 0; oz < g.out[0]; ++oz)
        for (int64_t oy = 0; oy < g.out[1]; ++oy)
          for (int64_t ox = 0; ox < g.out[2]; ++ox) {
            const int64_t group = o / opg;
            const int64_t yi = activation_index(g.layout, g.out_channels, g.out, n, o, oz, oy, ox);
            for (int64_t i = 0; i < ipg; ++i) {
              const int64_t c = group * ipg + i;
              for (int64_t kz = 0; kz < g.window[0]; ++kz)
                for (int64_t ky = 0; ky < g.window[1]; ++ky)
                  for (int64_t kx = 0; kx < g.window[2]; ++kx) {
                    const int64_t iz = oz * g.stride[0] - g.pad_begin[0] + kz * g.dilation[0];
                    const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dilation[1];
                    const int64_t ix = ox * g.stride[2] - g.pad_begin[2] + kx * g.dilation[2];
                    if (!inside(iz, g.in[0]) || !inside(iy, g.in[1]) || !inside(ix, g.in[2])) continue;
                    // Convolution reads the kernel reversed in every spatial dim.
                    const int64_t wz = g.flip ? g.window[0] - 1 - kz : kz;
                    const int64_t wy = g.flip ? g.window[1] - 1 - ky : ky;
                    const int64_t wx = g.flip ? g.window[2] - 1 - kx : kx;
                    f(activation_index(g.layout, g.in_channels, g.in, n, c, iz, iy, ix), yi,
                      weight_index(g, o, i, wz, wy, wx));
                  }
            }
          }
}

// Calls f(y_index, taps) for every pooling window, where taps lists the x indices of its real
// taps in row-major scan order (z outermost, then y, then x).
template <typename F>
void for_each_pool_window(const Geometry& g, F f) {
  std::vector<int64_t> taps;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t c = 0; c < g.in_channels; ++c)
      for (int64_t oz = 0; oz < g.out[0]; ++oz)
        for (int64_t oy = 0; oy < g.out[1]; ++oy)
          for (int64_t ox = 0; ox < g.out[2]; ++ox) {
            taps.clear();
            for (int64_t kz = 0; kz < g.window[0]; ++kz)
              for (int64_t ky = 0; ky < g.window[1]; ++ky)
                for (int64_t kx = 0; kx < g.window[2]; ++kx) {
                  const int64_t iz = oz * g.stride[0] - g.pad_begin[0] + kz * g.dilation[0];
                  const int64_t iy = oy * g.stride[1] - g.pad_begin[1] + ky * g.dilation[1];
                  const int64_t ix = ox * g.stride[2] - g.pad_begin[2] + kx * g.dilation[2];
                  if (inside(iz, g.in[0]) && inside(iy, g.in[1]) && inside(ix, g.in[2])) {
                    taps.push_back(activation_index(g.layout, g.in_channels, g.in, n, c, iz, iy, ix));
                  }
                }
            f(activation_index(g.layout, g.in_channels, g.out, n, c, oz, oy, ox), taps);
          }
}

int64_t input_elements(const Geometry& g) { return g.batch * g.in_channels * volume(g.in); }
int64_t output_elements(const Geometry& g) { return g.batch * g.out_channels * volume(g.out); }
int64_t weight_elements(const Geometry& g) { return g.out_channels * (g.in_channels / g.groups) * volume(g.window); }

Extent public_output_size(const Geometry& g, int32_t rank) {
  Extent e{1, 1, 1};
  for (int d = 0; d < rank; ++d) e[d] = g.out[d + 3 - rank];
  return e;
}

template <typename T>
std::vector<double> conv_forward_impl(const ConvDims& dims, const T* x, const T* w, const T* bias,
                                      Activation activation) {
  const Geometry g = conv_geometry(dims);
  if (activation != Activation::Identity && activation != Activation::Relu) invalid("activation");
  std::vector<double> y(output_elements(g), 0.0);
  for_each_conv_term(g, [&](int64_t xi, int64_t yi, int64_t wi) { y[yi] += double(x[xi]) * double(w[wi]); });
  for (int64_t i = 0; i < int64_t(y.size()); ++i) {
    const int64_t o = g.layout == Layout::NCHW ? (i / volume(g.out)) % g.out_channels : i % g.out_channels;
    if (bias != nullptr) y[i] += double(bias[o]);
    if (activation == Activation::Relu) y[i] = y[i] > 0.0 ? y[i] : 0.0;
  }
  return y;
}

template <typename T>
std::vector<double> conv_backward_data_impl(const ConvDims& dims, const T* dy, const T* w) {
  const Geometry g = conv_geometry(dims);
  std::vector<double> dx(input_elements(g), 0.0);
  for_each_conv_term(g, [&](int64_t xi, int64_t yi, int64_t wi) { dx[xi] += double(dy[yi]) * double(w[wi]); });
  return dx;
}

template <typename T>
std::vector<double> conv_backward_filter_impl(const ConvDims& dims, const T* x, const T* dy) {
  const Geometry g = conv_geometry(dims);
  std::vector<double> dw(weight_elements(g), 0.0);
  for_each_conv_term(g, [&](int64_t xi, int64_t yi, int64_t wi) { dw[wi] += double(x[xi]) * double(dy[yi]); });
  return dw;
}

template <typename T>
std::vector<double> maxpool_forward_impl(const PoolDims& dims, const T* x) {
  const Geometry g = pool_geometry(dims);
  std::vector<double> y(output_elements(g));
  for_each_pool_window(g, [&](int64_t yi, const std::vector<int64_t>& taps) {
    if (taps.empty()) {
      y[yi] = -double(FLT_MAX);
      return;
    }
    bool seen_number = false;
    double best = 0.0;
    for (int64_t xi : taps) {
      const double v = double(x[xi]);
      if (std::isnan(v)) continue;
      if (!seen_number || v > best) best = v;
      seen_number = true;
    }
    y[yi] = seen_number ? best : std::numeric_limits<double>::quiet_NaN();
  });
  return y;
}

double mean_divisor(const Geometry& g, const PoolDims& dims, size_t real_taps) {
  return dims.exclude_padding ? double(real_taps) : double(volume(g.window));
}

template <typename T>
std::vector<double> meanpool_forward_impl(const PoolDims& dims, const T* x) {
  const Geometry g = pool_geometry(dims);
  std::vector<double> y(output_elements(g));
  for_each_pool_window(g, [&](int64_t yi, const std::vector<int64_t>& taps) {
    double sum = 0.0;
    for (int64_t xi : taps) sum += double(x[xi]);
    const double divisor = mean_divisor(g, dims, taps.size());
    y[yi] = divisor > 0.0 ? sum / divisor : 0.0;
  });
  return y;
}

template <typename T>
std::vector<double> lpnormpool_forward_impl(const PoolDims& dims, double p, const T* x) {
  const Geometry g = pool_geometry(dims);
  if (!(p > 0.0) || std::isinf(p)) invalid("p");
  std::vector<double> y(output_elements(g));
  for_each_pool_window(g, [&](int64_t yi, const std::vector<int64_t>& taps) {
    double sum = 0.0;
    for (int64_t xi : taps) sum += std::pow(std::fabs(double(x[xi])), p);
    y[yi] = std::pow(sum, 1.0 / p);
  });
  return y;
}

template <typename T>
std::vector<double> maxpool_backward_impl(const PoolDims& dims, const T* x, const T* y, const T* dy) {
  const Geometry g = pool_geometry(dims);
  std::vector<double> dx(input_elements(g), 0.0);
  for_each_pool_window(g, [&](int64_t yi, const std::vector<int64_t>& taps) {
    for (int64_t xi : taps) {
      if (double(x[xi]) == double(y[yi])) {
        dx[xi] += double(dy[yi]);
        break;  // only the first equal tap
      }
    }
  });
  return dx;
}

template <typename T>
std::vector<double> meanpool_backward_impl(const PoolDims& dims, const T* dy) {
  const Geometry g = pool_geometry(dims);
  std::vector<double> dx(input_elements(g), 0.0);
  for_each_pool_window(g, [&](int64_t yi, const std::vector<int64_t>& taps) {
    const double divisor = mean_divisor(g, dims, taps.size());
    if (divisor == 0.0) return;
    for (int64_t xi : taps) dx[xi] += double(dy[yi]) / divisor;
  });
  return dx;
}

template <typename T>
std::vector<double> lpnormpool_backward_impl(const PoolDims& dims, double p, const T* x, const T* y, const T* dy) {
  const Geometry g = pool_geometry(dims);
  if (!(p > 0.0) || std::isinf(p)) invalid("p");
  std::vector<double> dx(input_elements(g), 0.0);
  for_each_pool_window(g, [&](int64_t yi, const std::vector<int64_t>& taps) {
    const double out = double(y[yi]);
    if (out == 0.0) return;
    for (int64_t xi : taps) {
      const double v = double(x[xi]);
      if (v == 0.0) continue;  // sign(0) = 0
      const double sign = v > 0.0 ? 1.0 : -1.0;
      dx[xi] += double(dy[yi]) * std::pow(std::fabs(v), p - 1.0) * sign / std::pow(out, p - 1.0);
    }
  });
  return dx;
}

}  // namespace

Extent conv_output_size(const ConvDims& dims) { return public_output_size(conv_geometry(dims), dims.rank); }
Extent pool_output_size(const PoolDims& dims) { return public_output_size(pool_geometry(dims), dims.rank); }

int64_t conv_input_elements(const ConvDims& dims) { return input_elements(conv_geometry(dims)); }
int64_t conv_weight_elements(const ConvDims& dims) { return weight_elements(conv_geometry(dims)); }
int64_t conv_output_elements(const ConvDims& dims) { return output_elements(conv_geometry(dims)); }
int64_t pool_input_elements(const PoolDims& dims) { return input_elements(pool_geometry(dims)); }
int64_t pool_output_elements(const PoolDims& dims) { return output_elements(pool_geometry(dims)); }

std::vector<double> conv_forward(const ConvDims& dims, const float* x, const float* w, const float* bias,
                                 Activation activation) {
  return conv_forward_impl(dims, x, w, bias, activation);
}
std::vector<double> conv_forward(const ConvDims& dims, const double* x, const double* w, const double* bias,
                                 Activation activation) {
  return conv_forward_impl(dims, x, w, bias, activation);
}
std::vector<double> conv_backward_data(const ConvDims& dims, const float* dy, const float* w) {
  return conv_backward_data_impl(dims, dy, w);
}
std::vector<double> conv_backward_data(const ConvDims& dims, const double* dy, const double* w) {
  return conv_backward_data_impl(dims, dy, w);
}
std::vector<double> conv_backward_filter(const ConvDims& dims, const float* x, const float* dy) {
  return conv_backward_filter_impl(dims, x, dy);
}
std::vector<double> conv_backward_filter(const ConvDims& dims, const double* x, const double* dy) {
  return conv_backward_filter_impl(dims, x, dy);
}

std::vector<double> maxpool_forward(const PoolDims& dims, const float* x) { return maxpool_forward_impl(dims, x); }
std::vector<double> maxpool_forward(const PoolDims& dims, const double* x) { return maxpool_forward_impl(dims, x); }
std::vector<double> meanpool_forward(const PoolDims& dims, const float* x) { return meanpool_forward_impl(dims, x); }
std::vector<double> meanpool_forward(const PoolDims& dims, const double* x) {
  return meanpool_forward_impl(dims, x);
}
std::vector<double> lpnormpool_forward(const PoolDims& dims, double p, const float* x) {
  return lpnormpool_forward_impl(dims, p, x);
}
std::vector<double> lpnormpool_forward(const PoolDims& dims, double p, const double* x) {
  return lpnormpool_forward_impl(dims, p, x);
}

std::vector<double> maxpool_backward(const PoolDims& dims, const float* x, const float* y, const float* dy) {
  return maxpool_backward_impl(dims, x, y, dy);
}
std::vector<double> maxpool_backward(const PoolDims& dims, const double* x, const double* y, const double* dy) {
  return maxpool_backward_impl(dims, x, y, dy);
}
std::vector<double> meanpool_backward(const PoolDims& dims, const float* dy) {
  return meanpool_backward_impl(dims, dy);
}
std::vector<double> meanpool_backward(const PoolDims& dims, const double* dy) {
  return meanpool_backward_impl(dims, dy);
}
std::vector<double> lpnormpool_backward(const PoolDims& dims, double p, const float* x, const float* y,
                                        const float* dy) {
  return lpnormpool_backward_impl(dims, p, x, y, dy);
}
std::vector<double> lpnormpool_backward(const PoolDims& dims, double p, const double* x, const double* y,
                                        const double* dy) {
  return lpnormpool_backward_impl(dims, p, x, y, dy);
}

}  // namespace convjit::ref
