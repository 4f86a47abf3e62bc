#include "row_views.hpp"

#include <algorithm>

#include "padded_rows.hpp"

namespace convjit::detail {
namespace {

// The positions [first, last) of [origin, origin + extent) along dim d (offsets from origin) that
// lie inside x.
struct RealRun {
  int64_t first, last;
};
RealRun real_run(const ConvGeometry& g, int d, int64_t origin, int64_t extent) {
  const int64_t first = std::clamp<int64_t>(-origin, 0, extent);
  return {first, std::clamp(g.in[d] - origin, first, extent)};
}

// Input row (id, ih) at W positions [origin_w, origin_w + span) into dst, zeros where it is padding
// unless dst holds them already (zeroed): NCHW one run per input channel (dst_channel apart), NHWC
// positions of icg channels each.
void copy_padded_row(const ConvGeometry& g, const float* x, int64_t id, int64_t ih, int64_t origin_w, int64_t span,
                     float* dst, int64_t dst_channel, bool zeroed) {
  const int64_t icg = g.ic_per_group;
  const bool real_row = id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1];
  const auto [first, last] = real_row ? real_run(g, 2, origin_w, span) : RealRun{span, span};
  const float* src = x + id * g.x.spatial[0] + ih * g.x.spatial[1] + origin_w * g.x.spatial[2];
  if (g.layout == CONVJIT_NCHW) {
    for (int64_t ic = 0; ic < icg; ++ic, src += g.x.channel, dst += dst_channel) {
      if (!zeroed) std::fill(dst, dst + first, 0.0f);
      std::copy(src + first, src + last, dst + first);
      if (!zeroed) std::fill(dst + last, dst + span, 0.0f);
    }
    return;
  }
  if (!zeroed) std::fill(dst, dst + first * icg, 0.0f);
  for (int64_t p = first; p < last; ++p)
    std::copy(src + p * g.x.spatial[2], src + p * g.x.spatial[2] + icg, dst + p * icg);
  if (!zeroed) std::fill(dst + last * icg, dst + span * icg, 0.0f);
}

// A padded copy of at most this many floats is zeroed whole first, then only its real runs copied:
// one call for all the padding, where zeroing each row's pads apart costs two calls a row, which
// short rows of few channels (the seed network's backward data) pay more for than for the copy.
// Larger copies zero only their pads: writing them twice costs more than the calls
// (bench/RESULTS.md, "Session 24").
constexpr int64_t kZeroWholeCopyFloats = 4096;

// Whether input coordinates [origin, origin + extent) along dim d leave x.
bool leaves_input(const ConvGeometry& g, int d, int64_t origin, int64_t extent) {
  return origin < 0 || origin + extent > g.in[d];
}

// The input every row of a tile reads, full width: the box [origin, origin + extent) in (D, H, W).
void tile_rows_input(const ConvGeometry& g, const convjit_conv_tile& tile, int64_t origin[3], int64_t extent[3]) {
  const int64_t oh_last = tile.oh + (tile.ow + tile.pixel_count - 1) / g.out[2];
  origin[0] = tile.od * g.stride[0] - g.pad_begin[0];
  origin[1] = tile.oh * g.stride[1] - g.pad_begin[1];
  origin[2] = -g.pad_begin[2];
  extent[0] = (g.kernel[0] - 1) * g.dilation[0] + 1;
  extent[1] = (oh_last - tile.oh) * g.stride[1] + (g.kernel[1] - 1) * g.dilation[1] + 1;
  extent[2] = (g.out[2] - 1) * g.stride[2] + (g.kernel[2] - 1) * g.dilation[2] + 1;
}

// The step between consecutive taps of a kernel dim, 0 with one tap: its dilation may then be any
// size, and the step is never taken.
int64_t tap_step(int64_t taps, int64_t dilation, int64_t pitch) {
  return taps > 1 ? dilation * pitch : 0;
}

// An NCHW band of the input box [origin, origin + extent): per input channel and input plane, the
// rows above and below x as one fill each and the real rows, their W padding included, as one
// padded copy.
void fill_nchw_band(const ConvGeometry& g, const float* x, const int64_t origin[3], const int64_t extent[3],
                    const InputBand& band, float* dst) {
  const int64_t span = extent[2];
  const auto [first, last] = real_run(g, 2, origin[2], span);
  const auto [h_begin, h_end] = real_run(g, 1, origin[1], extent[1]);
  for (int64_t ic = 0; ic < g.ic_per_group; ++ic) {
    for (int64_t d = 0; d < extent[0]; ++d) {
      float* plane = dst + ic * band.channel + d * band.plane;
      const int64_t id = origin[0] + d;
      if (id < 0 || id >= g.in[0] || h_begin == h_end) {
        std::fill(plane, plane + band.plane, 0.0f);
        continue;
      }
      std::fill(plane, plane + h_begin * band.row, 0.0f);
      const float* rows = x + ic * g.x.channel + id * g.x.spatial[0] + (origin[1] + h_begin) * g.x.spatial[1] +
                          (origin[2] + first) * g.x.spatial[2];
      copy_padded_rows(rows, g.x.spatial[1], plane + h_begin * band.row, band.row, h_end - h_begin, span, first, last);
      std::fill(plane + h_end * band.row, plane + band.plane, 0.0f);
    }
  }
}

}  // namespace

bool reads_padding(const ConvGeometry& g, const int64_t origin[3], const int64_t extent[3]) {
  for (int d = 0; d < 3; ++d) {
    if (leaves_input(g, d, origin[d], extent[d])) return true;
  }
  return false;
}

InputBand make_band(const ConvGeometry& g, const convjit_conv_tile& tile, bool flat) {
  InputBand band;
  float* scratch = tile.scratch;
  const int64_t capacity = tile.scratch_floats / 2;
  int64_t origin[3], extent[3];
  tile_rows_input(g, tile, origin, extent);
  const bool wanted = flat ? reads_padding(g, origin, extent) : g.windows_read_padding(2);
  // Sized in double: a padded row at W stride 1 may be near int64's limit.
  const double wanted_floats = double(g.ic_per_group) * double(extent[0]) * double(extent[1]) * double(extent[2]);
  if (!wanted || wanted_floats + 15 > double(capacity)) return band;
  const int64_t icg = g.ic_per_group, floats = int64_t(wanted_floats);
  const bool nchw = g.layout == CONVJIT_NCHW;
  band.position = nchw ? 1 : icg;
  band.row = extent[2] * band.position;
  band.plane = extent[1] * band.row;
  band.channel = nchw ? extent[0] * band.plane : 1;
  if (nchw) {
    fill_nchw_band(g, tile.x, origin, extent, band, scratch);
  } else {
    const bool zeroed = floats <= kZeroWholeCopyFloats;
    if (zeroed) std::fill(scratch, scratch + floats, 0.0f);
    for (int64_t d = 0; d < extent[0]; ++d) {
      for (int64_t h = 0; h < extent[1]; ++h) {
        copy_padded_row(g, tile.x, origin[0] + d, origin[1] + h, origin[2], extent[2],
                        scratch + d * band.plane + h * band.row, band.channel, zeroed);
      }
    }
  }
  band.data = scratch;
  band.floats = (floats + 15) / 16 * 16;  // the rest stays 64-byte aligned
  std::copy(origin, origin + 3, band.origin);
  return band;
}

bool make_view(const ConvGeometry& g, const InputBand& band, const float* x, int64_t od, int64_t oh, int64_t ow,
               int64_t count, float* scratch, int64_t capacity, convjit_conv_tile* view) {
  const int64_t kd_n = g.kernel[0], kh_n = g.kernel[1];
  const int64_t origin[3] = {od * g.stride[0] - g.pad_begin[0], oh * g.stride[1] - g.pad_begin[1],
                             ow * g.stride[2] - g.pad_begin[2]};
  if (band.data) {
    view->x = band.data + (origin[0] - band.origin[0]) * band.plane + (origin[1] - band.origin[1]) * band.row +
              (origin[2] - band.origin[2]) * band.position;
    view->view_channel = band.channel;
    view->view_position = band.position;
    view->view_tap_row = tap_step(kh_n, g.dilation[1], band.row);
    view->view_tap_plane = tap_step(kd_n, g.dilation[0], band.plane);
    return true;
  }
  const int64_t extent[3] = {(kd_n - 1) * g.dilation[0] + 1, (kh_n - 1) * g.dilation[1] + 1,
                             (count - 1) * g.stride[2] + (g.kernel[2] - 1) * g.dilation[2] + 1};
  if (!reads_padding(g, origin, extent)) {
    view->x = x + origin[0] * g.x.spatial[0] + origin[1] * g.x.spatial[1] + origin[2] * g.x.spatial[2];
    view->view_channel = g.x.channel;
    view->view_position = g.x.spatial[2];
    view->view_tap_row = tap_step(kh_n, g.dilation[1], g.x.spatial[1]);
    view->view_tap_plane = tap_step(kd_n, g.dilation[0], g.x.spatial[0]);
    return true;
  }
  const int64_t span = extent[2], icg = g.ic_per_group;
  if (double(icg) * double(kd_n * kh_n) * double(span) > double(capacity)) return false;  // as in make_band
  const int64_t floats = icg * kd_n * kh_n * span;
  const bool nchw = g.layout == CONVJIT_NCHW;
  view->x = scratch;
  view->view_channel = nchw ? kd_n * kh_n * span : 1;
  view->view_position = nchw ? 1 : icg;
  view->view_tap_row = span * view->view_position;
  view->view_tap_plane = kh_n * view->view_tap_row;
  const bool zeroed = floats <= kZeroWholeCopyFloats;
  if (zeroed) std::fill(scratch, scratch + floats, 0.0f);
  for (int64_t kd = 0; kd < kd_n; ++kd) {
    for (int64_t kh = 0; kh < kh_n; ++kh) {
      copy_padded_row(g, x, origin[0] + kd * g.dilation[0], origin[1] + kh * g.dilation[1], origin[2], span,
                      scratch + kd * view->view_tap_plane + kh * view->view_tap_row, view->view_channel, zeroed);
    }
  }
  return true;
}

int64_t max_segment_pixels(const ConvGeometry& g, const InputBand& band, const convjit_conv_tile& tile) {
  if (band.data) return g.out[2];
  const int64_t per_position = g.ic_per_group * g.kernel[0] * g.kernel[1];
  const int64_t positions = tile.scratch_floats / per_position - (g.kernel[2] - 1) * g.dilation[2];
  return positions < 1 ? 1 : (positions - 1) / g.stride[2] + 1;
}

bool flat_view(const ConvGeometry& g, const InputBand& band, const convjit_conv_tile& tile, convjit_conv_tile* view,
               int64_t* pitch) {
  if (!band.data) {  // x itself, where no tap of the rows reads padding
    int64_t origin[3], extent[3];
    tile_rows_input(g, tile, origin, extent);
    if (reads_padding(g, origin, extent)) return false;
  }
  make_view(g, band, tile.x, tile.od, tile.oh, 0, g.out[2], nullptr, 0, view);
  *pitch = band.data ? band.row : g.x.spatial[1];
  return true;
}

}  // namespace convjit::detail
