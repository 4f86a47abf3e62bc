#include "depthwise_backward_data_phases.hpp"

#include <algorithm>

#include "threads.hpp"

namespace convjit::detail {

void depthwise_data_phase_residues(const ConvGeometry& g, int64_t residues[3]) {
  for (int d = 0; d < 3; ++d) residues[d] = std::min(g.stride[d], g.in[d]);
}

bool depthwise_data_phase(const ConvGeometry& g, const int64_t r[3], DepthwiseDataPhase* phase) {
  convjit_conv_params f{};
  f.rank = 3;
  f.layout = CONVJIT_NHWC;
  f.mode = CONVJIT_CROSS_CORRELATION;  // the phase's taps are chosen, and the mode applied, by first_tap/tap_step
  f.batch = g.batch;
  f.in_channels = f.out_channels = f.groups = g.groups;
  phase->dy_offset = phase->dx_offset = 0;
  for (int d = 0; d < 3; ++d) {
    const int64_t s = g.stride[d], k = g.kernel[d];
    int64_t taps, first_kh, kh_step, grid, pad_begin;
    if (s == 1) {  // every tap, reversed, under padding dilation * (k - 1) - pad
      taps = k;
      first_kh = k - 1;
      kh_step = -1;
      grid = g.in[d];
      pad_begin = g.dilation[d] * (k - 1) - g.pad_begin[d];
      f.dilation[d] = g.dilation[d];
    } else {
      if (g.dilation[d] != 1 || k < s) return false;
      const int64_t kh0 = (r[d] + g.pad_begin[d]) % s, c = (r[d] + g.pad_begin[d] - kh0) / s;
      taps = (k - kh0 + s - 1) / s;
      first_kh = kh0 + (taps - 1) * s;
      kh_step = -s;
      grid = (g.in[d] - r[d] + s - 1) / s;
      pad_begin = taps - 1 - c;
      f.dilation[d] = 1;
    }
    int64_t dy_size = g.out[d];
    if (pad_begin < 0) {  // the grid's first output reads past dy's start: crop dy there
      phase->dy_offset += -pad_begin * g.y.spatial[d];
      dy_size += pad_begin;
      pad_begin = 0;
    }
    int64_t pad_end = grid - dy_size - pad_begin + f.dilation[d] * (taps - 1);
    if (pad_end < 0) {  // and its end
      dy_size += pad_end;
      pad_end = 0;
    }
    if (dy_size < 1) return false;  // no output of dy reaches the phase's inputs
    f.in_size[d] = dy_size;
    f.kernel[d] = taps;
    f.stride[d] = 1;
    f.pad_begin[d] = pad_begin;
    f.pad_end[d] = pad_end;
    phase->first_tap[d] = g.flip ? k - 1 - first_kh : first_kh;
    phase->tap_step[d] = g.flip ? -kh_step : kh_step;
    phase->dx_offset += r[d] * g.x.spatial[d];
  }
  ConvGeometry& pg = phase->forward;
  if (!make_conv_geometry(f, &pg).ok() || !depthwise_nhwc_fits(pg)) return false;
  pg.x = g.y;
  pg.y = g.x;
  for (int d = 0; d < 3; ++d) pg.y.spatial[d] = g.x.spatial[d] * g.stride[d];
  return true;
}

bool depthwise_data_phases_run(const ConvGeometry& g) {
  int64_t residues[3], r[3];
  depthwise_data_phase_residues(g, residues);
  DepthwiseDataPhase phase;
  for (r[0] = 0; r[0] < residues[0]; ++r[0]) {
    for (r[1] = 0; r[1] < residues[1]; ++r[1]) {
      for (r[2] = 0; r[2] < residues[2]; ++r[2]) {
        if (!depthwise_data_phase(g, r, &phase)) return false;
      }
    }
  }
  return true;
}

bool run_depthwise_backward_data_phases(const ConvGeometry& g, int threads, const float* dy, const float* w, float* dx,
                                        DepthwiseForwardFn forward) {
  if (!depthwise_data_phases_run(g)) return false;  // every phase runs, or none
  int64_t residues[3], r[3];
  depthwise_data_phase_residues(g, residues);
  DepthwiseDataPhase phase;
  // g's weights tap-major once; a phase's are some of their rows.
  const float* w_taps = depthwise_nhwc_taps_major(g, w);
  float* w_phase = thread_operands(size_t(g.groups * g.taps));
  for (r[0] = 0; r[0] < residues[0]; ++r[0]) {
    for (r[1] = 0; r[1] < residues[1]; ++r[1]) {
      for (r[2] = 0; r[2] < residues[2]; ++r[2]) {
        depthwise_data_phase(g, r, &phase);
        const ConvGeometry& pg = phase.forward;
        float* to = w_phase;
        for (int64_t td = 0; td < pg.kernel[0]; ++td) {
          const int64_t kd = phase.first_tap[0] + td * phase.tap_step[0];
          for (int64_t th = 0; th < pg.kernel[1]; ++th) {
            const int64_t kh = phase.first_tap[1] + th * phase.tap_step[1];
            for (int64_t tw = 0; tw < pg.kernel[2]; ++tw, to += g.groups) {
              const int64_t kw = phase.first_tap[2] + tw * phase.tap_step[2];
              std::copy_n(w_taps + ((kd * g.kernel[1] + kh) * g.kernel[2] + kw) * g.groups, g.groups, to);
            }
          }
        }
        forward(pg, threads, dy + phase.dy_offset, w_phase, nullptr, false, dx + phase.dx_offset, nullptr);
      }
    }
  }
  return true;
}

}  // namespace convjit::detail
