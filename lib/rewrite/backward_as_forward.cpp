#include "backward_as_forward.hpp"

#include <algorithm>
#include <cstring>

#include "nhwc_as_nchw.hpp"
#include "ops_internal.hpp"
#include "threads.hpp"
#include "transpose.hpp"

namespace convjit::detail {
namespace {

// visit(ic, oc) for every pair of a group's input and output channels, in tiles of 16 x 16: NCHW
// weights keep a channel's taps together, so rows of either side are a run of taps per channel
// apart (18 KiB for resnet_3x3_7), and a tile's rows stay in L1 while it is copied.
template <typename Visit>
void for_each_channel_pair_in_tiles(int64_t icg, int64_t ocg, Visit&& visit) {
  constexpr int64_t kTile = 16;
  for (int64_t oc0 = 0; oc0 < ocg; oc0 += kTile) {
    for (int64_t ic0 = 0; ic0 < icg; ic0 += kTile) {
      for (int64_t ic = ic0; ic < std::min(icg, ic0 + kTile); ++ic) {
        for (int64_t oc = oc0; oc < std::min(ocg, oc0 + kTile); ++oc) visit(ic, oc);
      }
    }
  }
}

// A run of n floats (a channel's taps): in 8-float pieces of fixed size, which the compiler copies
// inline, and the rest float by float (std::copy_n called memmove for each run of 9 floats).
inline void copy_run(const float* from, int64_t n, float* to) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) std::memcpy(to + i, from + i, 8 * sizeof(float));
  for (; i < n; ++i) to[i] = from[i];
}

}  // namespace

bool backward_data_as_forward(const ConvGeometry& g, const convjit_conv_params& p, convjit_conv_params* forward) {
  if (g.out_channels * g.reduction > kMaxTransposedWeights) return false;
  convjit_conv_params f = p;
  for (int d = 0; d < p.rank; ++d) {
    const int64_t halo = p.dilation[d] * (p.kernel[d] - 1);
    if (p.stride[d] != 1 || p.pad_begin[d] > halo || p.pad_end[d] > halo) return false;
    f.in_size[d] = g.out[d + 3 - p.rank];
    f.pad_begin[d] = halo - p.pad_begin[d];
    f.pad_end[d] = halo - p.pad_end[d];
  }
  f.in_channels = p.out_channels;
  f.out_channels = p.in_channels;
  f.mode = p.mode == CONVJIT_CONVOLUTION ? CONVJIT_CROSS_CORRELATION : CONVJIT_CONVOLUTION;
  *forward = f;
  return true;
}

void transpose_weights(const ConvGeometry& g, const float* w, float* w_t, int threads) {
  // w: [group][oc][k] with k = (ic, tap) or (tap, ic); w_t: [group][ic][k'] with k' = (oc, tap)
  // or (tap, oc). Taps keep their index: the flip comes from the mode.
  const int64_t icg = g.ic_per_group, ocg = g.oc_per_group, taps = g.taps;
  // NHWC, or one tap: per tap an [oc][ic] -> [ic][oc] matrix transpose; NCHW: runs of taps,
  // contiguous on both sides, per pair of channels. Tasks for the threads: blocks of output
  // channels (whole tiles of 16) of each matrix (NCHW: each group). It runs before the forward,
  // and on one thread the other waited for it (resnet_3x3_14 NCHW: a tenth of the call).
  constexpr int64_t kTile = 16;
  const bool per_tap = g.layout == CONVJIT_NHWC || taps == 1;
  const int64_t matrices = g.groups * (per_tap ? taps : 1), tiles = (ocg + kTile - 1) / kTile;
  const int64_t blocks = std::clamp<int64_t>((tasks_wanted(threads) + matrices - 1) / matrices, 1, tiles);
  const int64_t block = (tiles + blocks - 1) / blocks * kTile;
  parallel_for(threads, matrices * blocks, double(g.out_channels * g.reduction), [&](int64_t task) {
    const int64_t matrix = task / blocks, oc0 = task % blocks * block, count = std::min(block, ocg - oc0);
    if (count <= 0) return;
    const int64_t group = per_tap ? matrix / taps : matrix;
    const float* src = w + group * ocg * g.reduction + oc0 * g.reduction;
    float* dst = w_t + group * icg * ocg * taps;
    if (per_tap) {
      const int64_t t = matrix % taps;
      transpose_matrix(count, icg, {src + t * icg, g.reduction}, {dst + t * ocg + oc0, ocg * taps});
      return;
    }
    for_each_channel_pair_in_tiles(icg, count, [&](int64_t ic, int64_t oc) {
      copy_run(src + oc * g.reduction + ic * taps, taps, dst + ic * ocg * taps + (oc0 + oc) * taps);
    });
  });
}

const float* weights_of_the_forward(const ConvGeometry& g, const float* w, int threads) {
  if (g.ic_per_group == 1 && g.oc_per_group == 1) return w;
  float* w_t = thread_operands(size_t(g.out_channels * g.reduction));
  transpose_weights(g, w, w_t, threads);
  return w_t;
}

bool strided_pointwise_backward_data_as_forward(const ConvGeometry& g, const convjit_conv_params& p,
                                                convjit_conv_params* forward) {
  if (g.taps != 1 || g.out_channels * g.reduction > kMaxTransposedWeights) return false;
  bool strided = false;
  for (int d = 0; d < p.rank; ++d) strided |= p.stride[d] > 1;
  if (!strided) return false;
  convjit_conv_params f = p;
  for (int d = 0; d < p.rank; ++d) {
    f.in_size[d] = g.out[d + 3 - p.rank];
    f.stride[d] = f.dilation[d] = 1;
    f.pad_begin[d] = f.pad_end[d] = 0;
  }
  f.in_channels = p.out_channels;
  f.out_channels = p.in_channels;
  *forward = f;
  return true;
}

bool strided_backward_data_phases(const ConvGeometry& g, const convjit_conv_params& p, BackwardDataPhases* phases) {
  const int lead = 3 - p.rank;  // normalized dims before the problem's own
  int64_t residues[3], most_taps[3];
  bool strided = false;
  double phase_weight_floats = double(g.out_channels) * double(g.ic_per_group);
  for (int d = 0; d < 3; ++d) {
    const int64_t s = g.stride[d], k = g.kernel[d];
    strided |= s > 1;
    if (s > 1 && (g.dilation[d] != 1 || k < s)) return false;
    most_taps[d] = (k + s - 1) / s;
    if (most_taps[d] > kMaxPhaseKernel) return false;
    residues[d] = std::min(s, g.in[d]);
    phase_weight_floats *= double(most_taps[d]) * double(residues[d]);
  }
  if (!strided || phase_weight_floats > double(kMaxTransposedWeights)) return false;
  // Depthwise: tier 0's own phases (depthwise_backward_data_phases.hpp, or NCHW's kernel at W
  // stride 2), each over its real taps only, written into dx in place.
  if (backward_data_runs_depthwise_kernel(g) || nchw_depthwise_backward_data_runs_as_nhwc(g, p)) return false;
  if (residues[0] * residues[1] * residues[2] > kMaxBackwardDataPhases) return false;
  phases->count = 0;
  int64_t r[3];
  for (r[0] = 0; r[0] < residues[0]; ++r[0]) {
    for (r[1] = 0; r[1] < residues[1]; ++r[1]) {
      for (r[2] = 0; r[2] < residues[2]; ++r[2]) {
        BackwardDataPhase& phase = phases->phase[phases->count++];
        convjit_conv_params& f = phase.forward;
        f = p;
        f.in_channels = p.out_channels;
        f.out_channels = p.in_channels;
        f.mode = CONVJIT_CROSS_CORRELATION;  // phase_weights reverses the taps (and applies the mode)
        for (int d = 0; d < 3; ++d) {
          const int64_t s = g.stride[d], k = g.kernel[d];
          int64_t pad_begin, pad_end;
          if (s == 1) {  // as backward_data_as_forward: every tap, padding halo - pad
            const int64_t halo = (k - 1) * g.dilation[d];
            phase.residue[d] = phase.first_tap[d] = 0;
            phase.taps[d] = k;
            phase.grid[d] = g.in[d];
            pad_begin = halo - g.pad_begin[d];
            pad_end = halo - (d < lead ? 0 : p.pad_end[d - lead]);
          } else {
            const int64_t first_tap = (r[d] + g.pad_begin[d]) % s, c = (r[d] + g.pad_begin[d] - first_tap) / s;
            phase.residue[d] = r[d];
            phase.first_tap[d] = first_tap;
            phase.grid[d] = (g.in[d] - r[d] + s - 1) / s;
            if (c + 1 > most_taps[d]) return false;  // padding past the widest phase kernel: tier 0
            phase.taps[d] = std::max((k - first_tap + s - 1) / s, c + 1);
            pad_begin = phase.taps[d] - 1 - c;
            pad_end = phase.grid[d] - g.out[d] - pad_begin + phase.taps[d] - 1;
          }
          if (pad_begin < 0 || pad_end < 0) return false;  // a phase reading past dy: not a padding
          if (d < lead) continue;
          f.in_size[d - lead] = g.out[d];
          f.kernel[d - lead] = phase.taps[d];
          f.stride[d - lead] = 1;
          f.dilation[d - lead] = s == 1 ? g.dilation[d] : 1;
          f.pad_begin[d - lead] = pad_begin;
          f.pad_end[d - lead] = pad_end;
        }
        ConvGeometry checked;
        if (!make_conv_geometry(f, &checked).ok()) return false;
      }
    }
  }
  return true;
}

int BackwardDataPhases::kernel_of(int i) const {
  const convjit_conv_params& f = phase[i].forward;
  for (int j = 0;; ++j) {
    if (std::equal(f.kernel, f.kernel + f.rank, phase[j].forward.kernel)) return j;
  }
}

void phase_weights(const ConvGeometry& g, const BackwardDataPhase& phase, const float* w, float* w_phase) {
  // Forward tap t' along a dim of stride s is the phase's tap j = k' - 1 - t', the original tap
  // kh = kh0 + j * s (zero weight past the kernel); unstrided dims: kh = k - 1 - t'. The mode
  // picks the original weight of tap kh: w[kh], or w[k - 1 - kh] for convolution.
  int64_t sub_kernel[3], tap_of[3][kMaxPhaseKernel];
  bool real[3][kMaxPhaseKernel];
  for (int d = 0; d < 3; ++d) {
    const int64_t s = g.stride[d], k = g.kernel[d];
    sub_kernel[d] = phase.taps[d];
    for (int64_t t = 0; t < sub_kernel[d]; ++t) {
      const int64_t kh = s == 1 ? k - 1 - t : phase.first_tap[d] + (sub_kernel[d] - 1 - t) * s;
      real[d][t] = kh < k;
      tap_of[d][t] = g.flip ? k - 1 - kh : kh;
    }
  }
  const int64_t icg = g.ic_per_group, ocg = g.oc_per_group;
  const int64_t sub_taps = sub_kernel[0] * sub_kernel[1] * sub_kernel[2];
  // visit(t, tap) for each forward tap t of the phase, tap = g's tap or -1 (a zero weight).
  auto for_each_tap = [&](auto&& visit) {
    int64_t t = 0;
    for (int64_t td = 0; td < sub_kernel[0]; ++td) {
      for (int64_t th = 0; th < sub_kernel[1]; ++th) {
        for (int64_t tw = 0; tw < sub_kernel[2]; ++tw, ++t) {
          const bool is_real = real[0][td] && real[1][th] && real[2][tw];
          visit(t, is_real ? (tap_of[0][td] * g.kernel[1] + tap_of[1][th]) * g.kernel[2] + tap_of[2][tw] : -1);
        }
      }
    }
  };
  for (int64_t group = 0; group < g.groups; ++group) {
    const float* src = w + group * ocg * g.reduction;
    float* dst = w_phase + group * icg * ocg * sub_taps;
    if (g.layout == CONVJIT_NHWC) {  // per tap an [oc][ic] -> [ic][oc] transpose (as transpose_weights)
      for_each_tap([&](int64_t t, int64_t tap) {
        if (tap >= 0) {
          transpose_matrix(ocg, icg, {src + tap * icg, g.reduction}, {dst + t * ocg, ocg * sub_taps});
          return;
        }
        for (int64_t ic = 0; ic < icg; ++ic) std::fill_n(dst + ic * ocg * sub_taps + t * ocg, ocg, 0.0f);
      });
      continue;
    }
    // NCHW: [oc][ic][tap] -> [ic][oc][t].
    for (int64_t ic = 0; ic < icg; ++ic) {
      for_each_tap([&](int64_t t, int64_t tap) {
        for (int64_t oc = 0; oc < ocg; ++oc) {
          dst[ic * ocg * sub_taps + oc * sub_taps + t] = tap >= 0 ? src[oc * g.reduction + ic * g.taps + tap] : 0.0f;
        }
      });
    }
  }
}

void spread_grid(const ConvGeometry& g, const GridPlacement& placement, const float* grid, float* dx, bool zero_first,
                 int threads) {
  const int64_t* size = placement.size;
  const int64_t grid_pixels = size[0] * size[1] * size[2], grid_image = g.in_channels * grid_pixels;
  // The grid's positions along each dim that land inside dx: q in [first, end), at q * stride +
  // origin (no product formed outside it: huge padding times a stride would overflow).
  int64_t first[3], end[3];
  for (int d = 0; d < 3; ++d) {
    const int64_t s = g.stride[d], o = placement.origin[d];
    auto ceil_div = [s](int64_t a) { return a / s + (a % s != 0); };  // a >= 0
    first[d] = std::min(size[d], o >= 0 ? 0 : ceil_div(-o));
    end[d] = std::max(first[d], std::min(size[d], o >= g.in[d] ? 0 : ceil_div(g.in[d] - o)));
  }
  if (g.layout == CONVJIT_NCHW) {
    // Channel plane by channel plane, dx's rows in order: a walk over the pixels with the channels
    // inside touched a line per channel per pixel (resnet_1x1_s2's spread cost 3 times its bytes).
    const int64_t plane = g.in[0] * g.in[1] * g.in[2];
    parallel_for(threads, g.batch * g.in_channels, double(g.batch) * double(grid_image), [&](int64_t task) {
      const int64_t n = task / g.in_channels, c = task % g.in_channels;
      float* dx_plane = dx + n * g.x.batch + c * g.x.channel;
      const float* grid_plane = grid + n * grid_image + c * grid_pixels;
      if (zero_first) std::fill(dx_plane, dx_plane + plane, 0.0f);
      if (first[2] == end[2]) return;  // no column inside dx: no row address to form
      for (int64_t q0 = first[0]; q0 < end[0]; ++q0) {
        for (int64_t q1 = first[1]; q1 < end[1]; ++q1) {
          // At the row's first position inside dx: no address outside it is formed.
          float* dx_at = dx_plane + (q0 * g.stride[0] + placement.origin[0]) * g.x.spatial[0] +
                         (q1 * g.stride[1] + placement.origin[1]) * g.x.spatial[1] +
                         (first[2] * g.stride[2] + placement.origin[2]) * g.x.spatial[2];
          const float* grid_row = grid_plane + (q0 * size[1] + q1) * size[2];
          for (int64_t q2 = first[2]; q2 < end[2]; ++q2) {
            dx_at[(q2 - first[2]) * g.stride[2] * g.x.spatial[2]] = 0.0f + grid_row[q2];
          }
        }
      }
    });
    return;
  }
  parallel_for(threads, g.batch, double(g.batch) * double(grid_image), [&](int64_t n) {
    float* dx_image = dx + n * g.x.batch;
    if (zero_first) std::fill(dx_image, dx_image + g.x.batch, 0.0f);
    const float* grid_image_start = grid + n * grid_image;
    for (int64_t q0 = first[0]; q0 < end[0]; ++q0) {
      for (int64_t q1 = first[1]; q1 < end[1]; ++q1) {
        for (int64_t q2 = first[2]; q2 < end[2]; ++q2) {
          const int64_t at = (q0 * g.stride[0] + placement.origin[0]) * g.x.spatial[0] +
                             (q1 * g.stride[1] + placement.origin[1]) * g.x.spatial[1] +
                             (q2 * g.stride[2] + placement.origin[2]) * g.x.spatial[2];
          const float* pixel = grid_image_start + ((q0 * size[1] + q1) * size[2] + q2) * g.in_channels;
          for (int64_t c = 0; c < g.in_channels; ++c) dx_image[at + c] = 0.0f + pixel[c];
        }
      }
    }
  });
}

}  // namespace convjit::detail
