// Random, always-valid convolution and pooling problems with fixed seeds, shared by every suite
// that compares kernels with tests/reference (the generic tier now, the JIT backends later).
//
// Case i of a sweep has rank 1 + i % 3, layout (i / 3) % 2 and, for convolutions, mode
// (i / 6) % 2, so every 12 consecutive cases cover every rank x layout x mode. The rest is
// drawn: channels 1-13, groups (1, a divisor, or depthwise with a channel multiplier), batch
// 1-3, per-dim (non-square) kernels, stride 1-3 (often > kernel), dilation 1-3, asymmetric
// padding, sometimes as large as the dilated kernel or larger (windows of padding only). The
// input size is drawn so that every output dim is >= 1. Problems heavier than
// `max_multiply_adds` are redrawn, which keeps a 500-case sweep well under a second.
#pragma once

#include <cstdint>
#include <vector>

#include "convjit/dims.hpp"
#include "support/random.hpp"

namespace convjit::testing {

struct ShapeLimits {
  int64_t max_batch = 3;
  int64_t max_channels = 13;
  int64_t max_groups = 4;      // besides depthwise (groups == in_channels)
  int64_t max_multiplier = 3;  // depthwise channel multiplier (out = in * multiplier)
  int64_t max_kernel = 7;      // ranks 1 and 2
  int64_t max_kernel_3d = 3;   // rank 3 (keeps 3D cheap)
  int64_t max_stride = 3;
  int64_t max_dilation = 3;
  int64_t max_dilation_3d = 2;
  int64_t max_in_size[3] = {64, 20, 7};  // per rank (1, 2, 3): beyond what the dilated kernel needs
  int64_t max_multiply_adds = 250000;    // per forward call (conv) or window taps in total (pool)
};

// Limits for a smaller sweep with many channels (vectorized channel loops, several register
// blocks of output channels) and proportionally smaller images.
ShapeLimits wide_channel_limits();

// A problem in one line: spatial entries outermost first, the same padding at both ends.
ConvDims conv(int32_t rank, Layout layout, int64_t batch, int64_t in_channels, int64_t out_channels, int64_t groups,
              Extent in, Extent kernel, Extent stride = {1, 1, 1}, Extent pad = {0, 0, 0}, Extent dilation = {1, 1, 1},
              Mode mode = Mode::CrossCorrelation);

// One random convolution of the given rank, layout and mode.
ConvDims random_conv(Rng& rng, int32_t rank, Layout layout, Mode mode, const ShapeLimits& limits = {});
// One random pooling problem. stride entries are sometimes 0 (the C++ API's "= window").
PoolDims random_pool(Rng& rng, int32_t rank, Layout layout, const ShapeLimits& limits = {});

// `count` cases cycling through rank x layout x mode as described above.
std::vector<ConvDims> random_conv_sweep(uint64_t seed, int count, const ShapeLimits& limits = {});
std::vector<PoolDims> random_pool_sweep(uint64_t seed, int count, const ShapeLimits& limits = {});

// A fixed handful of larger problems beyond the sweep's limits (more channels than a vector
// register holds, long rows, the seed network's first layer, a strided 7x7 stem, 1x1, 3D), for
// tile paths, threading and vectorized channel loops that small shapes never reach.
std::vector<ConvDims> larger_conv_shapes();
std::vector<PoolDims> larger_pool_shapes();

}  // namespace convjit::testing
