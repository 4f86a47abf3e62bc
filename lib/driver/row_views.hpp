// The input views of row kernels (jit/abi/conv_tile_abi.h): a tile's zero-padded band, each row
// segment's view (the band's, x itself, or a padded copy of its rows), and a tile's rows flattened
// into one segment. Shared by the forward driver's strategies (lib/driver/conv_forward.cpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "conv_tile_abi.h"
#include "geometry.hpp"

namespace convjit::detail {

// Whether the input box [origin, origin + extent) in (D, H, W) coordinates reads padding.
bool reads_padding(const ConvGeometry& g, const int64_t origin[3], const int64_t extent[3]);

// A zero-padded copy of everything a tile's rows read (the group's channels, od's tap planes, the
// rows' tap rows, the padded width), made when the rows reach into the W padding (a flattened tile:
// into any padding): then every row needs a padded view, and one copy of each input beats one per
// tap row that reads it (3x for a 3x3 kernel). Rows take their views from it.
struct InputBand {
  const float* data = nullptr;                            // null: views come from x, or from per-row copies
  int64_t origin[3] = {};                                 // input coordinates of data[0]
  int64_t channel = 0, plane = 0, row = 0, position = 0;  // element strides
  int64_t floats = 0;                                     // of the tile's scratch it holds
};

// The band takes at most half the scratch: segments too short for the row kernel go to the generic
// tile, which packs patches in the rest. A flattened tile (run_flat_rows) needs one wherever its
// rows read padding, along H and D too.
InputBand make_band(const ConvGeometry& g, const convjit_conv_tile& tile, bool flat);

// The input a row kernel reads for output row (od, oh), pixels [ow, ow + count): the band's if
// there is one, x itself where every tap of the segment is real, else a zero-padded copy of the
// input rows it reads (NCHW: [ic][kd][kh][position], NHWC: [kd][kh][position][ic], taps unflipped)
// in scratch. Zeros there are zero products, which add exactly nothing to finite sums: the generic
// tier's numbers. Returns false, leaving *view alone, if the copy does not fit in `capacity` floats.
bool make_view(const ConvGeometry& g, const InputBand& band, const float* x, int64_t od, int64_t oh, int64_t ow,
               int64_t count, float* scratch, int64_t capacity, convjit_conv_tile* view);

// The longest row segment a view serves: any with a band, else one whose padded copy fits the
// scratch.
int64_t max_segment_pixels(const ConvGeometry& g, const InputBand& band, const convjit_conv_tile& tile);

// The input of a tile's whole rows as one flattened row: the band's, or x's where no tap of the
// rows reads padding. Sets *view's input fields and *pitch (floats from one row to the next);
// false when neither serves (the tile then goes row by row).
bool flat_view(const ConvGeometry& g, const InputBand& band, const convjit_conv_tile& tile, convjit_conv_tile* view,
               int64_t* pitch);

// The row segments of a tile, each at most max_pixels long (split evenly, so no piece is much
// shorter than the rest): fn(oh, ow, count, done), done = pixels of the tile before it.
template <typename Fn>
void for_each_row_segment(const ConvGeometry& g, const convjit_conv_tile& tile, int64_t max_pixels, Fn&& fn) {
  int64_t oh = tile.oh, ow = tile.ow;
  for (int64_t done = 0; done < tile.pixel_count; ow = 0, ++oh) {
    const int64_t row = std::min(g.out[2] - ow, tile.pixel_count - done);
    const int64_t pieces = (row + max_pixels - 1) / max_pixels, piece = (row + pieces - 1) / pieces;
    for (int64_t first = 0; first < row; first += piece) {
      const int64_t count = std::min(piece, row - first);
      fn(oh, ow + first, count, done + first);
    }
    done += row;
  }
}

// The row segments of a tile that a row kernel takes (long rows split so their padded views fit
// the scratch): fn(segment, viewed, done), where segment is the tile narrowed to the segment and,
// when viewed, pointing at its input view; a segment shorter than the kernel's minimum (or whose
// view does not fit) is not viewed and goes to the generic tile (same numbers). done = pixels of
// the tile before the segment.
template <typename Fn>
void for_each_viewed_segment(const ConvGeometry& g, const convjit_conv_kernel& specialized,
                             const convjit_conv_tile& tile, const InputBand& band, Fn&& fn) {
  convjit_conv_tile rest = tile;  // the scratch beyond the band
  rest.scratch += band.floats;
  rest.scratch_floats -= band.floats;
  for_each_row_segment(
      g, rest, max_segment_pixels(g, band, rest), [&](int64_t oh, int64_t ow, int64_t count, int64_t done) {
        convjit_conv_tile segment = rest;
        segment.oh = oh;
        segment.ow = ow;
        segment.pixel_count = count;
        // make_view leaves the segment alone when the view does not fit.
        const bool viewed =
            count >= specialized.min_row_pixels &&
            make_view(g, band, tile.x, tile.od, oh, ow, count, rest.scratch, rest.scratch_floats, &segment);
        fn(segment, viewed, done);
      });
}

}  // namespace convjit::detail
