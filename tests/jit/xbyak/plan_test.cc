// jit/xbyak plans: for every key a sweep makes, on each ISA (plans are pure functions of the key,
// so an ISA the host lacks is planned too): the register map fits the ISA's vectors, channel
// blocks stay within the key's channel class, rows the kernel takes hold at least one full block,
// and the code buffer grows with the taps.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "conv_bwd_filter_nhwc.hpp"
#include "conv_fwd_depthwise_nhwc.hpp"
#include "conv_fwd_nchw.hpp"
#include "conv_fwd_nhwc.hpp"
#include "emit.hpp"
#include "geometry.hpp"
#include "pool_rows_nhwc.hpp"
#include "support/random_shapes.hpp"

namespace convjit::testing {
namespace {

constexpr jit::Isa kIsas[] = {jit::Isa::Avx2Fma, jit::Isa::Avx512};

std::vector<ConvDims> sweep() {
  std::vector<ConvDims> shapes = random_conv_sweep(0x9A7, 300);
  for (const ConvDims& d : random_conv_sweep(0x9A8, 100, wide_channel_limits())) shapes.push_back(d);
  return shapes;
}

jit::SpecKey key_of(const ConvDims& d, jit::Isa isa) {
  detail::ConvGeometry g;
  EXPECT_TRUE(detail::make_conv_geometry(d.to_c(), &g).ok());
  return jit::make_spec_key(g, d.rank, false, isa, false);
}

// Calls check(key, plan, traits) for the sweep's keys of `layout` that `plan_of` plans, on each
// ISA; at least 50 of them per ISA.
template <typename PlanOf, typename Check>
void for_each_plan(Layout layout, PlanOf plan_of, Check check) {
  for (jit::Isa isa : kIsas) {
    int planned = 0;
    for (const ConvDims& d : sweep()) {
      if (d.layout != layout) continue;
      const jit::SpecKey key = key_of(d, isa);
      const auto plan = plan_of(key);
      EXPECT_EQ(plan.isa.isa, isa);
      if (!plan.unsupported.empty()) continue;
      ++planned;
      check(key, plan, jit::xbyak::traits_of(isa));
    }
    EXPECT_GE(planned, 50) << jit::isa_name(isa);
  }
}

void check_nchw_plan(const jit::SpecKey& key, const jit::xbyak::NchwPlan& plan, const jit::xbyak::IsaTraits& traits) {
  EXPECT_GE(plan.oc_block, 1);
  EXPECT_LE(plan.oc_block, std::min(key.oc_class, 4)) << key.name();
  EXPECT_GE(plan.vectors, 2) << key.name();
  EXPECT_LE(plan.vector_registers_used, traits.vector_registers) << key.name();
  // Accumulators, inputs, the broadcast; at stride 2 the load halves and their helper.
  const int fixed = key.stride[2] == 1 ? 1 : 4;
  EXPECT_EQ(plan.vector_registers_used, plan.oc_block * plan.vectors + plan.vectors + fixed) << key.name();
  EXPECT_EQ(plan.min_row_pixels, 2 * traits.lanes) << key.name();
  EXPECT_EQ(plan.min_row_pixels, jit::xbyak::nchw_min_row_pixels(key.isa)) << key.name();
  ASSERT_FALSE(plan.block_vectors.empty()) << key.name();
  EXPECT_EQ(plan.block_vectors.front(), plan.vectors) << key.name();
  EXPECT_EQ(plan.block_vectors.back(), 2) << key.name();
  EXPECT_TRUE(std::is_sorted(plan.block_vectors.rbegin(), plan.block_vectors.rend())) << key.name();
  EXPECT_EQ(plan.rolled_rows,
            key.kernel[1] >= jit::xbyak::kRolledKernelRows || (traits.opmask && key.kernel[0] * key.kernel[1] > 3))
      << key.name();
  EXPECT_GE(plan.code_bytes, jit::xbyak::kFrameCodeBytes + size_t(key.kernel[0] * key.kernel[1] * key.kernel[2]) * 100)
      << key.name();
}

TEST(XbyakPlans, NchwPlansFitTheIsasRegisters) {
  for_each_plan(Layout::NCHW, jit::xbyak::plan_nchw, check_nchw_plan);
}

void check_nhwc_plan(const jit::SpecKey& key, const jit::xbyak::NhwcPlan& plan, const jit::xbyak::IsaTraits& traits) {
  EXPECT_EQ(plan.oc_block(), plan.vectors * traits.lanes);
  EXPECT_LE(plan.oc_block(), key.oc_class) << key.name();
  EXPECT_GE(plan.pixels * plan.vectors, 12) << key.name();  // enough chains to hide the FMA latency
  EXPECT_LE(plan.vector_registers_used, traits.vector_registers) << key.name();
  EXPECT_LE(plan.pixel_groups, 4) << key.name();
  EXPECT_EQ(plan.pixel_groups, (plan.pixels + 2) / 3) << key.name();
  EXPECT_EQ(plan.embedded_broadcast, traits.opmask && plan.vectors == 1) << key.name();
  ASSERT_FALSE(plan.block_pixels.empty()) << key.name();
  EXPECT_EQ(plan.block_pixels.front(), plan.pixels) << key.name();
  // Channel variants: the block's vectors, then half of them for a partial block that fits.
  const std::vector<int> variants =
      plan.vectors > 1 ? std::vector<int>{plan.vectors, plan.vectors / 2} : std::vector<int>{1};
  EXPECT_EQ(plan.block_vectors, variants) << key.name();
  EXPECT_TRUE(std::is_sorted(plan.block_pixels.rbegin(), plan.block_pixels.rend())) << key.name();
  EXPECT_GE(plan.min_row_pixels, plan.block_pixels.back()) << key.name();
  EXPECT_EQ(plan.min_row_pixels, jit::xbyak::nhwc_min_row_pixels(key.isa, key.oc_class)) << key.name();
  // The two temporaries are the last two vectors: free once the reduction is done, but no
  // accumulator may live there.
  EXPECT_LE(plan.pixels * plan.vectors, traits.vector_registers - 2) << key.name();
}

TEST(XbyakPlans, NhwcPlansFitTheIsasRegisters) {
  for_each_plan(Layout::NHWC, jit::xbyak::plan_nhwc, check_nhwc_plan);
}

// The NHWC pixel loop as the generator emits it: per step the schedule's block for the pixels
// left (the widest beyond the table), a smallest block moved back when fewer than it are left.
// Every row of at least one smallest block is covered, within the row, computing exactly its
// pixels whenever they are a sum of the block sizes (a subset-sum independent of the schedule),
// else under one smallest block more than it.
TEST(XbyakPlans, NhwcBlockScheduleCoversEveryRowWithTheFewestPixels) {
  for (jit::Isa isa : kIsas) {
    for (int32_t oc_class : {jit::kNhwcNarrowClass, jit::kNhwcWideClass}) {
      jit::SpecKey key = key_of(conv(2, Layout::NHWC, 1, 8, oc_class, 1, {40, 40, 1}, {3, 3, 1}), isa);
      ASSERT_EQ(key.oc_class, oc_class);
      const jit::xbyak::NhwcPlan plan = jit::xbyak::plan_nhwc(key);
      const std::vector<int>& sizes = plan.block_pixels;
      SCOPED_TRACE(key.name());
      EXPECT_EQ(plan.block_schedule.empty(), sizes.size() == 1);
      constexpr int kLongest = 300;
      std::vector<bool> is_sum(kLongest + 1, false);
      is_sum[0] = true;
      for (int r = 1; r <= kLongest; ++r) {
        for (int b : sizes) is_sum[r] = is_sum[r] || (r >= b && is_sum[r - b]);
      }
      for (int row = plan.min_row_pixels; row <= kLongest; ++row) {
        int left = row, computed = 0;
        while (left > 0) {
          const size_t i = size_t(left) < plan.block_schedule.size() ? size_t(plan.block_schedule[left]) : 0;
          ASSERT_LT(i, sizes.size());
          const int block = sizes[i];
          ASSERT_TRUE(block <= left || i + 1 == sizes.size()) << "only the smallest block is moved back, row " << row;
          computed += block;
          left -= std::min(block, left);
        }
        if (is_sum[row]) {
          EXPECT_EQ(computed, row) << "row " << row;
        } else {
          EXPECT_LT(computed, row + plan.min_row_pixels) << "row " << row;
        }
      }
      if (sizes == std::vector<int>{12, 8, 7, 6}) {
        EXPECT_EQ(sizes[plan.block_schedule.at(17)], 12) << "17 = 12 + 6";
      }
    }
  }
}

TEST(XbyakPlans, KeysTheGeneratorsCannotEmitAreRefusedWithAReason) {
  for (jit::Isa isa : kIsas) {
    const jit::SpecKey nhwc = key_of(conv(2, Layout::NHWC, 1, 8, 16, 1, {20, 20, 1}, {3, 3, 1}), isa);
    EXPECT_EQ(jit::xbyak::plan_nchw(nhwc).unsupported, "not NCHW");
    EXPECT_EQ(jit::xbyak::plan_nhwc(nhwc).unsupported, "");
    const jit::SpecKey stride3 = key_of(conv(2, Layout::NCHW, 1, 8, 16, 1, {20, 20, 1}, {3, 3, 1}, {3, 3, 1}), isa);
    EXPECT_EQ(jit::xbyak::plan_nchw(stride3).unsupported, "NCHW kernels support stride 1 or 2 along W");
    EXPECT_EQ(jit::xbyak::plan_nhwc(stride3).unsupported, "not NHWC");
  }
}

// Pooling rows, forward and backward: every window up to the generator's 64 taps planned within
// the ISA's registers, its code buffer growing with the taps (backward's larger: 8 instructions a
// vector, forward's 4); larger windows and other ops refused with the reason.
TEST(XbyakPlans, PoolPlansFitTheIsasRegisters) {
  for (jit::Isa isa : kIsas) {
    std::map<int32_t, size_t> last_bytes;  // per op, the last smaller window's
    for (int64_t side = 1; side <= 9; ++side) {
      convjit_pool_problem p{};
      for (int d = 0; d < 3; ++d) p.window[d] = p.stride[d] = p.dilation[d] = 1;
      p.window[1] = p.window[2] = side;
      std::map<bool, size_t> forward_bytes;  // this window's, max and mean
      for (int32_t op : {CONVJIT_OP_MAXPOOL_FORWARD, CONVJIT_OP_MEANPOOL_FORWARD, CONVJIT_OP_MAXPOOL_BACKWARD,
                         CONVJIT_OP_MEANPOOL_BACKWARD}) {
        const jit::xbyak::PoolPlan plan = jit::xbyak::plan_pool_nhwc(jit::make_pool_spec_key(p, op, 2, isa));
        SCOPED_TRACE(std::string(jit::isa_name(isa)) + " window " + std::to_string(side) + " op " + std::to_string(op));
        const bool backward = op == CONVJIT_OP_MAXPOOL_BACKWARD || op == CONVJIT_OP_MEANPOOL_BACKWARD;
        EXPECT_EQ(plan.backward, backward);
        EXPECT_EQ(plan.max, op == CONVJIT_OP_MAXPOOL_FORWARD || op == CONVJIT_OP_MAXPOOL_BACKWARD);
        if (side * side > 64) {
          EXPECT_EQ(plan.unsupported, "a window of more than 64 taps");
          continue;
        }
        EXPECT_EQ(plan.unsupported, "");
        EXPECT_LE(plan.vector_registers_used, plan.isa.vector_registers);
        EXPECT_EQ(plan.taps, side * side);
        EXPECT_GT(plan.code_bytes, last_bytes[op]);
        last_bytes[op] = plan.code_bytes;
        if (backward) {
          EXPECT_GT(plan.code_bytes, forward_bytes[plan.max]);
        } else {
          forward_bytes[plan.max] = plan.code_bytes;
        }
      }
    }
    convjit_pool_problem p{};
    for (int d = 0; d < 3; ++d) p.window[d] = p.stride[d] = p.dilation[d] = 1;
    EXPECT_EQ(jit::xbyak::plan_pool_nhwc(jit::make_pool_spec_key(p, CONVJIT_OP_LPNORMPOOL_FORWARD, 2, isa)).unsupported,
              "not max or mean pooling");
  }
}

// Backward pooling rows over overlapping windows: where the windows cover x (dilation 1, stride
// at most the window) the taps from window - stride on are written unread; the columns the next
// output shares are carried in registers where every row's fit beside the 16 fixed ones (AVX-512's
// 32: a 3x3 at stride 2, a 2x2x2 at stride 1, not a 3x3 at stride 1; AVX2's 16: none); dilation
// along W carries nothing.
TEST(XbyakPlans, PoolBackwardPlansWriteFirstReachedTapsAndCarrySharedColumns) {
  struct Case {
    int64_t window, stride, dilation, depth;  // depth: the window along D, at stride 1
    bool covers;
    int carried_avx512;
  };
  for (const Case& c : {Case{3, 2, 1, 1, true, 1}, Case{3, 1, 1, 1, true, 0}, Case{2, 1, 1, 1, true, 1},
                        Case{2, 2, 1, 1, true, 0}, Case{3, 4, 1, 1, false, 0}, Case{3, 2, 2, 1, false, 0},
                        Case{2, 1, 1, 2, true, 1}}) {
    convjit_pool_problem p{};
    for (int d = 0; d < 3; ++d) p.window[d] = p.stride[d] = p.dilation[d] = 1;
    p.window[0] = c.depth;
    p.window[1] = p.window[2] = c.window;
    p.stride[1] = p.stride[2] = c.stride;
    p.dilation[1] = p.dilation[2] = c.dilation;
    const int32_t rank = c.depth > 1 ? 3 : 2;
    for (jit::Isa isa : kIsas) {
      for (int32_t op : {CONVJIT_OP_MAXPOOL_BACKWARD, CONVJIT_OP_MEANPOOL_BACKWARD}) {
        const jit::xbyak::PoolPlan plan = jit::xbyak::plan_pool_nhwc(jit::make_pool_spec_key(p, op, rank, isa));
        SCOPED_TRACE(std::string(jit::isa_name(isa)) + " window " + std::to_string(c.window) + " stride " +
                     std::to_string(c.stride) + " dilation " + std::to_string(c.dilation) + " depth " +
                     std::to_string(c.depth));
        ASSERT_EQ(plan.unsupported, "");
        EXPECT_EQ(plan.writes_first_reached, c.covers);
        if (c.covers) {
          EXPECT_EQ(plan.first_reached[0], c.depth - 1);
          EXPECT_EQ(plan.first_reached[1], c.window - c.stride);
          EXPECT_EQ(plan.first_reached[2], c.window - c.stride);
        }
        const int carried = isa == jit::Isa::Avx512 ? c.carried_avx512 : 0;
        EXPECT_EQ(plan.carried_columns, carried);
        EXPECT_EQ(plan.vector_registers_used, 16 + c.depth * c.window * carried * 4);
        EXPECT_LE(plan.vector_registers_used, plan.isa.vector_registers);
      }
    }
  }
}

// Backward-filter rows: blocks within the ISA's registers, as many output channels as fit beside
// the input vectors (up to 12, at most the group's), full input-channel blocks and a tail that
// together cover the group's channels, and a code buffer growing with the blocks it must emit;
// under half a vector of input channels, the output channels in the lanes (every input channel a
// row, of every W tap where that holds more accumulators, as many output vectors as fit, up to 4,
// the tail covering the rest);
// NCHW keys, W kernels beyond the driver's columns and other ops refused with the reason.
TEST(XbyakPlans, FilterPlansFitTheIsasRegistersAndCoverTheChannels) {
  for (jit::Isa isa : kIsas) {
    for (int64_t ic : {1, 3, 7, 8, 9, 16, 17, 33, 48, 64, 65, 100, 300}) {
      for (int64_t oc : {1, 2, 5, 6, 12, 13, 64, 100}) {
        detail::ConvGeometry g;
        ASSERT_TRUE(
            detail::make_conv_geometry(conv(2, Layout::NHWC, 1, ic, oc, 1, {8, 8, 1}, {3, 3, 1}).to_c(), &g).ok());
        const jit::xbyak::FilterPlan plan = jit::xbyak::plan_filter_nhwc(jit::make_filter_spec_key(g, 2, isa));
        SCOPED_TRACE(std::string(jit::isa_name(isa)) + " ic " + std::to_string(ic) + " oc " + std::to_string(oc));
        ASSERT_EQ(plan.unsupported, "");
        if (ic == 1 && oc == 1) {
          EXPECT_TRUE(plan.depthwise) << "one channel is one depthwise group";
          continue;
        }
        EXPECT_FALSE(plan.depthwise);
        const int lanes = plan.isa.lanes;
        EXPECT_LE(plan.vector_registers_used, plan.isa.vector_registers);
        EXPECT_EQ(plan.transposed, 2 * ic < lanes) << "the output channels in the lanes under half a vector of inputs";
        if (plan.transposed) {
          const int free = plan.isa.vector_registers - 1 - (plan.isa.opmask || oc % lanes == 0 ? 0 : 1);
          auto vectors_beside = [&](int64_t rows) {
            return std::min<int64_t>({4, (oc + lanes - 1) / lanes, free / (rows + 1)});
          };
          // Every W tap's rows at once exactly where they hold more accumulators than one tap's.
          const bool more_at_once = 3 * ic * vectors_beside(3 * ic) > ic * vectors_beside(ic);
          EXPECT_EQ(plan.columns_at_once, more_at_once);
          EXPECT_EQ(plan.block_rows(), more_at_once ? 3 * ic : ic);
          EXPECT_EQ(plan.oc_block, plan.oc_vectors * lanes);
          EXPECT_EQ(plan.oc_vectors, vectors_beside(plan.block_rows()));
          EXPECT_EQ(plan.oc_tail, oc % plan.oc_block);
          EXPECT_EQ(plan.oc_tail_vectors > 0 ? (plan.oc_tail_vectors - 1) * lanes + plan.oc_tail_lanes : 0,
                    plan.oc_tail);
          EXPECT_LE(plan.oc_tail_lanes, lanes);
          continue;
        }
        EXPECT_EQ(plan.ic_vectors, std::min<int64_t>(isa == jit::Isa::Avx512 ? 4 : 2, (ic + lanes - 1) / lanes));
        // Another output channel would not fit beside the accumulators, or the block is full.
        const bool more_fit = plan.vector_registers_used + plan.ic_vectors <= plan.isa.vector_registers;
        EXPECT_TRUE(plan.oc_block == 12 || plan.oc_block == oc || !more_fit) << plan.oc_block;
        EXPECT_EQ(plan.oc_tail, oc % plan.oc_block);
        const int64_t covered =
            plan.ic_full_blocks * plan.ic_vectors * lanes +
            (plan.ic_tail_vectors > 0 ? (plan.ic_tail_vectors - 1) * lanes + plan.ic_tail_lanes : 0);
        EXPECT_EQ(covered, ic);
        EXPECT_GE(plan.ic_tail_lanes, plan.ic_tail_vectors > 0 ? 1 : 0);
        EXPECT_LE(plan.ic_tail_lanes, lanes);
        EXPECT_LE(plan.ic_tail_vectors, plan.ic_vectors);
        if (plan.ic_tail_vectors == plan.ic_vectors) {
          EXPECT_LT(plan.ic_tail_lanes, lanes) << "a full block as tail";
        }
        const int blocks =
            (plan.oc_tail > 0 ? 2 : 1) * ((plan.ic_full_blocks > 0 ? 1 : 0) + (plan.ic_tail_vectors > 0 ? 1 : 0));
        EXPECT_GT(plan.code_bytes, jit::xbyak::kFrameCodeBytes + size_t(blocks - 1) * 12 * 40);
      }
    }
    detail::ConvGeometry g;
    // W taps beyond the register steps' reach (5) one at a time, however few the accumulators.
    for (int64_t kw : {5, 6}) {
      ASSERT_TRUE(
          detail::make_conv_geometry(conv(2, Layout::NHWC, 1, 1, 64, 1, {8, 8, 1}, {3, kw, 1}).to_c(), &g).ok());
      const jit::xbyak::FilterPlan plan = jit::xbyak::plan_filter_nhwc(jit::make_filter_spec_key(g, 2, isa));
      EXPECT_TRUE(plan.transposed);
      EXPECT_EQ(plan.columns_at_once, kw == 5) << kw;
    }
    ASSERT_TRUE(detail::make_conv_geometry(conv(2, Layout::NCHW, 1, 8, 8, 1, {8, 8, 1}, {3, 3, 1}).to_c(), &g).ok());
    EXPECT_EQ(jit::xbyak::plan_filter_nhwc(jit::make_filter_spec_key(g, 2, isa)).unsupported, "not NHWC");
    ASSERT_TRUE(detail::make_conv_geometry(conv(1, Layout::NHWC, 1, 8, 8, 1, {80, 1, 1}, {65, 1, 1}).to_c(), &g).ok());
    EXPECT_EQ(jit::xbyak::plan_filter_nhwc(jit::make_filter_spec_key(g, 1, isa)).unsupported,
              "more than 64 taps along W");
    jit::SpecKey forward = jit::make_spec_key(g, 1, false, isa, false);
    EXPECT_EQ(jit::xbyak::plan_filter_nhwc(forward).unsupported, "not backward filter");
  }
}

// Depthwise backward-filter rows: transposed, one accumulator row per tap along W of every H tap
// where at least a vector of them fits (else of one H tap), as many vectors of the groups'
// channels as fit beside them and the loaded dy vectors (up to 4), the tail covering the rest, the
// W taps' inputs the dilation's pixels apart; more W taps than the registers hold, or taps too far
// apart for a displacement, refused with the reason.
TEST(XbyakPlans, DepthwiseFilterPlansHoldEveryTapAlongW) {
  for (jit::Isa isa : kIsas) {
    for (int64_t groups : {1, 3, 16, 17, 64, 100, 300}) {
      for (int64_t kw : {1, 3, 5, 7, 13}) {
        for (int64_t dilation : {1, 2}) {
          convjit_conv_params p = conv(2, Layout::NHWC, 1, groups, groups, groups, {8, 40, 1}, {3, kw, 1}).to_c();
          p.dilation[1] = dilation;
          detail::ConvGeometry g;
          ASSERT_TRUE(detail::make_conv_geometry(p, &g).ok());
          const jit::SpecKey key = jit::make_filter_spec_key(g, 2, isa);
          const jit::xbyak::FilterPlan plan = jit::xbyak::plan_filter_nhwc(key);
          SCOPED_TRACE(std::string(jit::isa_name(isa)) + " groups " + std::to_string(groups) + " kw " +
                       std::to_string(kw));
          EXPECT_NE(key.name().find("_dw" + std::to_string(groups) + "__"), std::string::npos) << key.name();
          const int lanes = plan.isa.lanes;
          const int free = plan.isa.vector_registers - 1 - (plan.isa.opmask || groups % lanes == 0 ? 0 : 1);
          if (free / (kw + 1) < 1) {
            EXPECT_NE(plan.unsupported.find("registers"), std::string::npos) << plan.unsupported;
            continue;
          }
          ASSERT_EQ(plan.unsupported, "");
          EXPECT_TRUE(plan.depthwise && plan.transposed && plan.columns_at_once);
          const int64_t h_taps = free / (3 * kw + 1) >= 1 ? 3 : 1;
          EXPECT_EQ(plan.depthwise_h_taps, h_taps);
          EXPECT_EQ(plan.block_rows(), h_taps * kw);
          EXPECT_EQ(plan.oc_vectors, std::min<int64_t>({4, (groups + lanes - 1) / lanes, free / (h_taps * kw + 1)}));
          EXPECT_LE(plan.vector_registers_used, plan.isa.vector_registers);
          EXPECT_EQ(plan.oc_tail, groups % plan.oc_block);
          EXPECT_EQ(plan.oc_tail_vectors > 0 ? (plan.oc_tail_vectors - 1) * lanes + plan.oc_tail_lanes : 0,
                    plan.oc_tail);
          EXPECT_EQ(plan.depthwise_tap_bytes, dilation * groups * 4);
          EXPECT_FALSE(plan.embedded_broadcast) << "x is loaded, not broadcast";
        }
      }
    }
    // Within the generators' extents (3 x 16000), not for the displacements of 40000 channels.
    convjit_conv_params p = conv(1, Layout::NHWC, 1, 40000, 40000, 40000, {1, 1, 1}, {3, 1, 1}).to_c();
    p.dilation[0] = 16000;
    p.pad_begin[0] = p.pad_end[0] = 16000;
    detail::ConvGeometry g;
    ASSERT_TRUE(detail::make_conv_geometry(p, &g).ok());
    EXPECT_EQ(jit::xbyak::plan_filter_nhwc(jit::make_filter_spec_key(g, 1, isa)).unsupported,
              "depthwise W taps too far apart for 32-bit displacements");
  }
}

// NHWC depthwise forward rows: the accumulators, every W tap's weights, an input column and AVX2's
// tail mask within the ISA's vectors; blocks of the widest size and the powers of two below it
// (so any rest under the widest goes in blocks of those, each at most once); each block's columns
// read every (pixel, W tap) once, and each pixel's taps in weight order.
TEST(XbyakPlans, DepthwiseForwardPlansFitTheRegistersAndKeepEachOutputsTapOrder) {
  for (jit::Isa isa : kIsas) {
    int planned = 0;
    for (int64_t groups : {1, 7, 8, 16, 17, 72, 129}) {
      for (int64_t kw : {1, 2, 3, 5, 7, 11, 13, 20, 29, 31}) {
        for (int64_t stride : {1, 2, 3}) {
          for (int64_t dilation : {1, 2}) {
            for (Mode mode : {Mode::CrossCorrelation, Mode::Convolution}) {
              convjit_conv_params p = conv(2, Layout::NHWC, 1, groups, groups, groups, {5, 80, 1}, {3, kw, 1},
                                           {1, stride, 1}, {0, 0, 0}, {1, dilation, 1}, mode)
                                          .to_c();
              detail::ConvGeometry g;
              ASSERT_TRUE(detail::make_conv_geometry(p, &g).ok());
              const jit::SpecKey key = jit::make_depthwise_spec_key(g, 2, true, isa);
              const jit::xbyak::DepthwisePlan plan = jit::xbyak::plan_depthwise_nhwc(key);
              SCOPED_TRACE(key.name());
              EXPECT_NE(key.name().find("_dw" + std::to_string(groups) + "_relu__"), std::string::npos);
              const int mask = !plan.isa.opmask && groups % plan.isa.lanes ? 1 : 0;
              if (plan.isa.vector_registers - kw - 1 - mask < 1) {
                EXPECT_NE(plan.unsupported.find("registers"), std::string::npos) << plan.unsupported;
                continue;
              }
              ASSERT_EQ(plan.unsupported, "");
              ++planned;
              const int widest = plan.block_pixels.front();
              EXPECT_LE(plan.vector_registers_used, plan.isa.vector_registers);
              EXPECT_EQ(plan.vector_registers_used, widest + kw + 1 + mask);
              EXPECT_EQ(plan.full_vectors * plan.isa.lanes + plan.tail_lanes, groups);
              // The emitter's order: the widest while it fits, then each smaller one where it fits.
              for (int rest = 0; rest < widest; ++rest) {
                int left = rest;
                for (size_t b = 1; b < plan.block_pixels.size(); ++b) {
                  EXPECT_LT(plan.block_pixels[b], plan.block_pixels[b - 1]);
                  if (left >= plan.block_pixels[b]) left -= plan.block_pixels[b];
                }
                EXPECT_EQ(left, 0) << "a rest of " << rest << " pixels";
              }
              ASSERT_EQ(plan.columns.size(), plan.block_pixels.size());
              for (size_t b = 0; b < plan.block_pixels.size(); ++b) {
                std::map<int, int64_t> next_tap;  // per pixel, the W tap it must read next
                int64_t previous = -1;
                for (const jit::xbyak::DepthwiseColumn& column : plan.columns[b]) {
                  if (previous >= 0) {
                    EXPECT_EQ(column.column < previous, mode == Mode::Convolution);
                  }
                  previous = column.column;
                  for (const auto& [pixel, tap] : column.reads) {
                    EXPECT_EQ(tap, next_tap[pixel]++) << "pixel " << pixel;
                    const int64_t spatial_tap = mode == Mode::Convolution ? kw - 1 - tap : tap;
                    EXPECT_EQ(column.column, pixel * stride + spatial_tap * dilation);
                  }
                }
                ASSERT_EQ(next_tap.size(), size_t(plan.block_pixels[b]));
                for (const auto& [pixel, taps] : next_tap) EXPECT_EQ(taps, kw) << "pixel " << pixel;
              }
            }
          }
        }
      }
    }
    EXPECT_GE(planned, 500) << jit::isa_name(isa);
  }
}

// A valid problem can pad its way to a dilation whose product with the kernel does not fit int64
// (one input, 2^62 padding): the generators refuse its key instead of wrapping around.
TEST(XbyakPlans, KeysWhoseDilatedExtentIsTooLargeAreRefused) {
  auto key_for = [](int64_t kernel, int64_t dilation, int64_t pad) {
    convjit_conv_params p = conv(1, Layout::NCHW, 1, 1, 1, 1, {1, 1, 1}, {kernel, 1, 1}).to_c();
    p.dilation[0] = dilation;
    p.pad_begin[0] = pad;
    detail::ConvGeometry g;
    EXPECT_TRUE(detail::make_conv_geometry(p, &g).ok());
    return jit::make_spec_key(g, 1, false, jit::Isa::Avx2Fma, false);
  };
  const int64_t huge = int64_t(1) << 62;
  EXPECT_EQ(jit::xbyak::plan_nchw(key_for(2, huge, huge)).unsupported, "kernel extent too large");
  EXPECT_EQ(jit::xbyak::plan_nchw(key_for(3, 30000, 60000)).unsupported, "kernel extent too large");
  EXPECT_EQ(jit::xbyak::plan_nchw(key_for(3, 20000, 40000)).unsupported, "");
}

}  // namespace
}  // namespace convjit::testing
