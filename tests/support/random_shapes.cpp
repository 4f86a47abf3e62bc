#include "support/random_shapes.hpp"

#include <algorithm>

#include "reference/reference.hpp"

namespace convjit::testing {

namespace {

struct SpatialDim {
  int64_t in, window, stride, dilation, pad_begin, pad_end;
};

// One spatial dim with an output of at least 1.
SpatialDim random_spatial_dim(Rng& rng, int32_t rank, int64_t max_window, int64_t max_dilation,
                              const ShapeLimits& limits, bool allow_default_stride) {
  SpatialDim d{};
  d.window = rng.uniform_int(1, max_window);
  d.stride = rng.uniform_int(1, limits.max_stride);
  if (allow_default_stride && rng.chance(0.15)) d.stride = 0;
  d.dilation = d.window > 1 ? rng.uniform_int(1, max_dilation) : rng.uniform_int(1, 2);
  const int64_t extent = d.dilation * (d.window - 1) + 1;
  const double kind = rng.uniform(0.0, 1.0);
  if (kind < 0.2) {  // unpadded
    d.pad_begin = d.pad_end = 0;
  } else if (kind < 0.85) {  // asymmetric, within the window
    d.pad_begin = rng.uniform_int(0, extent - 1);
    d.pad_end = rng.uniform_int(0, extent - 1);
  } else {  // at least one side as large as the dilated window, or larger
    d.pad_begin = rng.uniform_int(0, extent + 2);
    d.pad_end = rng.uniform_int(extent, extent + 2);
    if (rng.chance(0.5)) std::swap(d.pad_begin, d.pad_end);
  }
  const int64_t min_in = std::max<int64_t>(1, extent - d.pad_begin - d.pad_end);
  const int64_t max_in = std::max(min_in, limits.max_in_size[rank - 1]);
  // Mostly small inputs; the full range now and then for long rows and many tiles.
  const int64_t hi = rng.chance(0.7) ? std::min(max_in, min_in + 8) : max_in;
  d.in = rng.uniform_int(min_in, hi);
  return d;
}

int64_t product(const Extent& e) {
  return e[0] * e[1] * e[2];
}

}  // namespace

ShapeLimits wide_channel_limits() {
  ShapeLimits limits;
  limits.max_channels = 48;
  limits.max_groups = 8;
  limits.max_batch = 2;
  limits.max_kernel = 5;
  limits.max_in_size[0] = 24;
  limits.max_in_size[1] = 9;
  limits.max_in_size[2] = 4;
  limits.max_multiply_adds = 600000;
  return limits;
}

ConvDims random_conv(Rng& rng, int32_t rank, Layout layout, Mode mode, const ShapeLimits& limits) {
  for (;;) {
    ConvDims d;
    d.rank = rank;
    d.layout = layout;
    d.mode = mode;
    d.batch = rng.uniform_int(1, limits.max_batch);
    const double kind = rng.uniform(0.0, 1.0);
    if (kind < 0.45) {  // dense
      d.groups = 1;
      d.in_channels = rng.uniform_int(1, limits.max_channels);
      d.out_channels = rng.uniform_int(1, limits.max_channels);
    } else if (kind < 0.7) {  // depthwise, with a channel multiplier
      d.in_channels = rng.uniform_int(1, limits.max_channels);
      d.groups = d.in_channels;
      const int64_t max_multiplier = std::clamp<int64_t>(limits.max_channels / d.in_channels, 1, limits.max_multiplier);
      d.out_channels = d.in_channels * rng.uniform_int(1, max_multiplier);
    } else {  // grouped
      d.groups = rng.uniform_int(2, limits.max_groups);
      const int64_t per_group = std::max<int64_t>(1, limits.max_channels / d.groups);
      d.in_channels = d.groups * rng.uniform_int(1, per_group);
      d.out_channels = d.groups * rng.uniform_int(1, per_group);
    }
    const int64_t max_kernel = rank == 3 ? limits.max_kernel_3d : limits.max_kernel;
    const int64_t max_dilation = rank == 3 ? limits.max_dilation_3d : limits.max_dilation;
    for (int i = 0; i < rank; ++i) {
      const SpatialDim s = random_spatial_dim(rng, rank, max_kernel, max_dilation, limits, false);
      d.in_size[i] = s.in;
      d.kernel[i] = s.window;
      d.stride[i] = s.stride;
      d.dilation[i] = s.dilation;
      d.pad_begin[i] = s.pad_begin;
      d.pad_end[i] = s.pad_end;
    }
    const int64_t multiply_adds = ref::conv_output_elements(d) * (d.in_channels / d.groups) * product(d.kernel);
    if (multiply_adds <= limits.max_multiply_adds && ref::conv_input_elements(d) <= limits.max_multiply_adds) {
      return d;
    }
  }
}

PoolDims random_pool(Rng& rng, int32_t rank, Layout layout, const ShapeLimits& limits) {
  for (;;) {
    PoolDims d;
    d.rank = rank;
    d.layout = layout;
    d.exclude_padding = rng.chance(0.5);
    d.batch = rng.uniform_int(1, limits.max_batch);
    d.channels = rng.uniform_int(1, limits.max_channels);
    const int64_t max_window = rank == 3 ? limits.max_kernel_3d : limits.max_kernel;
    const int64_t max_dilation = rank == 3 ? limits.max_dilation_3d : limits.max_dilation;
    for (int i = 0; i < rank; ++i) {
      const SpatialDim s = random_spatial_dim(rng, rank, max_window, max_dilation, limits, true);
      d.in_size[i] = s.in;
      d.window[i] = s.window;
      d.stride[i] = s.stride;
      d.dilation[i] = s.dilation;
      d.pad_begin[i] = s.pad_begin;
      d.pad_end[i] = s.pad_end;
    }
    const int64_t taps = ref::pool_output_elements(d) * product(d.window);
    if (taps <= limits.max_multiply_adds && ref::pool_input_elements(d) <= limits.max_multiply_adds) return d;
  }
}

std::vector<ConvDims> random_conv_sweep(uint64_t seed, int count, const ShapeLimits& limits) {
  Rng rng(seed);
  std::vector<ConvDims> cases;
  for (int i = 0; i < count; ++i) {
    const int32_t rank = 1 + i % 3;
    const Layout layout = (i / 3) % 2 == 0 ? Layout::NCHW : Layout::NHWC;
    const Mode mode = (i / 6) % 2 == 0 ? Mode::CrossCorrelation : Mode::Convolution;
    cases.push_back(random_conv(rng, rank, layout, mode, limits));
  }
  return cases;
}

std::vector<PoolDims> random_pool_sweep(uint64_t seed, int count, const ShapeLimits& limits) {
  Rng rng(seed);
  std::vector<PoolDims> cases;
  for (int i = 0; i < count; ++i) {
    const int32_t rank = 1 + i % 3;
    const Layout layout = (i / 3) % 2 == 0 ? Layout::NCHW : Layout::NHWC;
    cases.push_back(random_pool(rng, rank, layout, limits));
  }
  return cases;
}

ConvDims conv(int32_t rank, Layout layout, int64_t batch, int64_t in_channels, int64_t out_channels, int64_t groups,
              Extent in, Extent kernel, Extent stride, Extent pad, Extent dilation, Mode mode) {
  ConvDims d;
  d.rank = rank;
  d.layout = layout;
  d.mode = mode;
  d.batch = batch;
  d.in_channels = in_channels;
  d.out_channels = out_channels;
  d.groups = groups;
  d.in_size = in;
  d.kernel = kernel;
  d.stride = stride;
  d.dilation = dilation;
  d.pad_begin = d.pad_end = pad;
  return d;
}

std::vector<ConvDims> larger_conv_shapes() {
  constexpr Layout C = Layout::NCHW, L = Layout::NHWC;
  std::vector<ConvDims> shapes = {
      conv(2, C, 5, 1, 2, 1, {28, 28, 1}, {3, 3, 1}, {1, 1, 1}, {0, 0, 0}),  // seed network, layer 1
      conv(2, C, 2, 32, 48, 1, {17, 19, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}),
      conv(2, L, 2, 32, 48, 1, {17, 19, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}),
      conv(2, C, 1, 64, 64, 1, {14, 14, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}),  // 1x1
      conv(2, L, 1, 64, 64, 1, {14, 14, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}),
      conv(2, C, 1, 3, 16, 1, {40, 40, 1}, {7, 7, 1}, {2, 2, 1}, {3, 3, 0}),  // strided stem
      conv(2, L, 1, 3, 16, 1, {40, 40, 1}, {7, 7, 1}, {2, 2, 1}, {3, 3, 0}),
      conv(2, C, 2, 32, 64, 32, {15, 15, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}),  // depthwise x2
      conv(2, L, 2, 32, 64, 32, {15, 15, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}),
      conv(2, L, 1, 24, 24, 4, {12, 33, 1}, {3, 5, 1}, {1, 1, 1}, {1, 2, 0}, {2, 1, 1}),
      conv(1, C, 2, 16, 20, 1, {300, 1, 1}, {5, 1, 1}, {1, 1, 1}, {2, 0, 0}),  // long rows
      conv(1, L, 2, 16, 20, 1, {300, 1, 1}, {5, 1, 1}, {3, 1, 1}, {2, 0, 0}, {2, 1, 1}),
      conv(3, C, 1, 8, 8, 1, {8, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}),
      conv(3, L, 1, 8, 12, 2, {6, 9, 10}, {3, 1, 3}, {1, 2, 1}, {0, 1, 1}),
  };
  shapes[2].mode = shapes[5].mode = shapes[9].mode = shapes[12].mode = Mode::Convolution;
  return shapes;
}

std::vector<PoolDims> larger_pool_shapes() {
  std::vector<PoolDims> shapes;
  PoolDims d;
  d.batch = 2;
  d.channels = 32;
  d.in_size = {33, 31, 1};
  d.window = {3, 3, 1};
  d.stride = {2, 2, 0};
  d.pad_begin = d.pad_end = {1, 1, 0};
  shapes.push_back(d);
  d.layout = Layout::NHWC;
  d.exclude_padding = true;
  shapes.push_back(d);
  d.rank = 1;
  d.in_size = {500, 1, 1};
  d.window = {4, 1, 1};
  d.stride = {0, 0, 0};
  shapes.push_back(d);
  d.rank = 3;
  d.layout = Layout::NCHW;
  d.channels = 16;
  d.in_size = {9, 10, 11};
  d.window = {2, 3, 2};
  d.stride = {2, 1, 2};
  d.dilation = {1, 2, 1};
  d.pad_begin = {0, 1, 1};
  d.pad_end = {1, 1, 0};
  shapes.push_back(d);
  return shapes;
}

}  // namespace convjit::testing
