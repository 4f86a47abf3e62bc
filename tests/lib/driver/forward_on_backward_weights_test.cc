// lib/driver/conv_forward (run_conv_forward_on_backward_weights) and lib/driver/packed_weights: the
// NHWC forward a stride-1 backward data problem runs as (an NCHW problem: the forward's NHWC twin),
// on that problem's own weights. On random backward problems of both layouts (groups, channel
// counts around the blocks, kernels of 1-9 taps, both modes), blocks packed in place and rows
// formed from the backward weights (OHWI or OIHW) equal those packed and taken from the transposed
// weights in the NHWC forward's layout; and with a packing row kernel that takes no row (every
// segment goes to the generic tile, on rows formed per block), an NHWC call gives the bits of the
// generic tile over the transposed weights, for 1 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backward_as_forward.hpp"
#include "conv_forward.hpp"
#include "forward_kernels.hpp"
#include "geometry.hpp"
#include "nhwc_as_nchw.hpp"
#include "packed_weights.hpp"
#include "reference/reference.hpp"
#include "support/compare.hpp"
#include "support/random.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

// A backward data problem that runs as a forward, and the NHWC forward's geometry (an NCHW
// problem's: the forward's twin).
struct Rewritten {
  ConvDims backward;
  detail::ConvGeometry g, forward;
  std::string context;
};

bool rewrite(const ConvDims& d, Rewritten* out) {
  out->backward = d;
  out->context = describe(d);
  const convjit_conv_params params = d.to_c();
  convjit_conv_params forward;
  if (!detail::make_conv_geometry(params, &out->g).ok() ||
      !detail::backward_data_as_forward(out->g, params, &forward)) {
    return false;
  }
  if (d.layout == Layout::NCHW) {
    out->forward = detail::forward_twin(forward);
    return true;
  }
  return detail::make_conv_geometry(forward, &out->forward).ok();
}

// The NHWC forward's weight rows, [oc][tap][ic], from the transposed weights (in the problem's
// layout: an NCHW problem's are [oc][ic][tap]).
std::vector<float> forward_rows(const Rewritten& r, const std::vector<float>& w) {
  const detail::ConvGeometry& f = r.forward;
  std::vector<float> transposed(size_t(f.out_channels * f.reduction));
  detail::transpose_weights(r.g, w.data(), transposed.data(), 1);
  if (r.backward.layout == Layout::NHWC) return transposed;
  std::vector<float> rows(transposed.size());
  for (int64_t oc = 0; oc < f.out_channels; ++oc) {
    for (int64_t ic = 0; ic < f.ic_per_group; ++ic) {
      for (int64_t tap = 0; tap < f.taps; ++tap) {
        rows[size_t(oc * f.reduction + tap * f.ic_per_group + ic)] =
            transposed[size_t(oc * f.reduction + ic * f.taps + tap)];
      }
    }
  }
  return rows;
}

ConvDims random_backward(Rng& rng, int i, Layout layout) {
  const int32_t rank = 1 + i % 3;
  ShapeLimits limits;
  limits.max_stride = 1;
  ConvDims d = random_conv(rng, rank, layout, i % 2 ? Mode::Convolution : Mode::CrossCorrelation, limits);
  d.groups = 1 + i % 3;
  d.in_channels = d.groups * (1 + i * 7 % 37);   // the forward's output channels: blocks and tails
  d.out_channels = d.groups * (1 + i * 5 % 11);  // its input channels
  return d;
}

// The transposed weights (lib/rewrite/backward_as_forward.hpp: transpose_weights) on 1 to 3
// threads, for weights past the threads' work threshold (so their blocks of 16 output channels are
// shared out, a partial block included): each group's channels swapped, the taps kept (NCHW
// [oc][ic][tap] -> [ic][oc][tap], NHWC [oc][tap][ic] -> [ic][tap][oc]), every element written.
TEST(TransposedWeights, EveryThreadCountSwapsEachGroupsChannels) {
  struct Case {
    int32_t rank;
    int64_t groups, out_per_group, in_per_group, kernel;
  };
  const Case cases[] = {{2, 1, 300, 80, 3}, {2, 3, 130, 70, 3}, {2, 1, 600, 401, 1}, {1, 2, 205, 250, 5}};
  Rng rng(0x7A45);
  for (const Layout layout : {Layout::NCHW, Layout::NHWC}) {
    for (const Case& c : cases) {
      ConvDims d;
      d.rank = c.rank;
      d.layout = layout;
      d.groups = c.groups;
      d.out_channels = c.groups * c.out_per_group;
      d.in_channels = c.groups * c.in_per_group;
      d.in_size = {9, 9, 1};
      d.kernel = {c.kernel, c.rank == 2 ? c.kernel : 1, 1};
      detail::ConvGeometry g;
      ASSERT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok()) << describe(d);
      SCOPED_TRACE(describe(d));
      const std::vector<float> w = random_floats(rng, g.out_channels * g.reduction);
      const int64_t ocg = g.oc_per_group, icg = g.ic_per_group, taps = g.taps;
      for (int threads = 1; threads <= 3; ++threads) {
        std::vector<float> w_t = nan_buffer(g.out_channels * g.reduction);
        detail::transpose_weights(g, w.data(), w_t.data(), threads);
        int64_t wrong = 0;
        for (int64_t group = 0; group < g.groups; ++group) {
          for (int64_t oc = 0; oc < ocg; ++oc) {
            for (int64_t ic = 0; ic < icg; ++ic) {
              for (int64_t t = 0; t < taps; ++t) {
                const bool nchw = layout == Layout::NCHW;
                const int64_t from = (group * ocg + oc) * g.reduction + (nchw ? ic * taps + t : t * icg + ic);
                const int64_t to = (group * icg + ic) * ocg * taps + (nchw ? oc * taps + t : t * ocg + oc);
                wrong += std::memcmp(&w[size_t(from)], &w_t[size_t(to)], sizeof(float)) != 0 ? 1 : 0;
              }
            }
          }
        }
        EXPECT_EQ(wrong, 0) << threads << " threads";
      }
    }
  }
}

TEST(ForwardOnBackwardWeights, BlocksPackedAndRowsFormedInPlaceAreThoseOfTheTransposedWeights) {
  Rng rng(0xBAC4);
  int checked[2] = {0, 0};  // NHWC, NCHW
  for (int i = 0; i < 120; ++i) {
    Rewritten r;
    if (!rewrite(random_backward(rng, i, i / 60 ? Layout::NCHW : Layout::NHWC), &r)) continue;
    SCOPED_TRACE(r.context);
    const detail::ConvGeometry& f = r.forward;
    const std::vector<float> w = random_floats(rng, r.g.out_channels * r.g.reduction);
    const detail::BackwardWeights backward = detail::backward_weights(r.g, w.data());
    const std::vector<float> rows = forward_rows(r, w);
    for (const int64_t oc_block : {8, 16, 48}) {
      // Blocks within a group, as the driver's tiles.
      for (int64_t first = 0; first < f.out_channels;
           first += std::min(oc_block, f.oc_per_group - first % f.oc_per_group)) {
        const int64_t count = std::min(oc_block, f.oc_per_group - first % f.oc_per_group);
        std::vector<float> want(size_t(f.reduction * oc_block), NAN), got = want;
        detail::pack_weights_k_major(f, rows.data() + first * f.reduction, count, oc_block, want.data());
        detail::pack_weights_k_major_from_backward(f, backward, first, count, oc_block, got.data());
        EXPECT_EQ(got, want) << "block from " << first << " of " << count << " in " << oc_block;
        std::vector<float> formed(size_t(count * f.reduction), NAN);
        detail::weight_rows_from_backward(f, backward, first, count, formed.data());
        EXPECT_TRUE(std::equal(formed.begin(), formed.end(), rows.begin() + first * f.reduction))
            << "rows from " << first;
        ++checked[r.backward.layout == Layout::NCHW];
      }
    }
  }
  EXPECT_GE(checked[0], 100);
  EXPECT_GE(checked[1], 100);
}

// Stands for a compiled packing row kernel that takes no row: never called.
void unreachable_row_kernel(const convjit_conv_problem*, const convjit_conv_tile*) {
  std::abort();
}

TEST(ForwardOnBackwardWeights, SegmentsOnTheGenericTileGetTheirBlocksRowsAndItsBits) {
  Rng rng(0xBAC5);
  convjit_conv_kernel takes_no_row{};
  takes_no_row.compute = unreachable_row_kernel;
  takes_no_row.packs_weights = 1;
  takes_no_row.oc_block = 16;
  takes_no_row.min_row_pixels = int64_t(1) << 40;
  takes_no_row.row_lanes = 1;
  takes_no_row.row_kernel = 1;
  int ran = 0;
  for (int i = 0; i < 30; ++i) {
    Rewritten r;
    if (!rewrite(random_backward(rng, i, Layout::NHWC), &r)) continue;
    SCOPED_TRACE(r.context);
    const detail::ConvGeometry& f = r.forward;
    const detail::GenericForwardKernel& generic = detail::generic_forward_kernel(f, detail::RowKind::Tile);
    const detail::ForwardKernels kernels{&generic, &takes_no_row};
    ASSERT_TRUE(detail::packs_backward_weights_in_place(f, kernels));
    const std::vector<float> dy = random_floats(rng, ref::conv_output_elements(r.backward));
    const std::vector<float> w = random_floats(rng, r.g.out_channels * r.g.reduction);
    const int64_t dx_floats = ref::conv_input_elements(r.backward);
    std::vector<float> want = nan_buffer(dx_floats);
    detail::run_conv_forward(f, {&generic, nullptr}, 1, dy.data(), detail::weights_of_the_forward(r.g, w.data(), 1),
                             nullptr, false, want.data());
    for (int threads : {1, 3}) {
      std::vector<float> got = nan_buffer(dx_floats);
      detail::run_conv_forward_on_backward_weights(f, kernels, threads, dy.data(),
                                                   detail::backward_weights(r.g, w.data()), got.data());
      EXPECT_TRUE(bitwise_equal("dx", got, want, conv_input_shape(r.backward), r.context));
    }
    ++ran;
  }
  EXPECT_GE(ran, 20);
}

}  // namespace
}  // namespace convjit::testing
