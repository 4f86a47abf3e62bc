#include "describe.hpp"

#include <cstdio>

namespace convjit::detail {
namespace {

std::string joined(const int64_t* v, int rank) {
  std::string s;
  for (int d = 0; d < rank; ++d) s += (d ? "x" : "") + std::to_string(v[d]);
  return s;
}

bool all_equal(const int64_t* v, int rank, int64_t value) {
  for (int d = 0; d < rank; ++d) {
    if (v[d] != value) return false;
  }
  return true;
}

// "3x3 s1 p1" (and " d2" when dilated): the window's part of a description.
template <typename Params>
std::string describe_window(const Params& p, const int64_t* window, int rank) {
  std::string s = joined(window, rank) + " s" + joined(p.stride, rank);
  bool symmetric = true;
  for (int d = 0; d < rank; ++d) symmetric &= p.pad_begin[d] == p.pad_end[d];
  s += " p" + (symmetric ? joined(p.pad_begin, rank) : joined(p.pad_begin, rank) + "/" + joined(p.pad_end, rank));
  if (!all_equal(p.dilation, rank, 1)) s += " d" + joined(p.dilation, rank);
  return s;
}

}  // namespace

std::string describe_conv(const convjit_conv_params& p, int32_t activation, bool has_bias) {
  const int rank = p.rank >= 1 && p.rank <= 3 ? p.rank : 3;
  std::string s = describe_window(p, p.kernel, rank);
  s += " " + std::to_string(p.in_channels) + "->" + std::to_string(p.out_channels);
  if (p.groups != 1) s += " g" + std::to_string(p.groups);
  s += " " + joined(p.in_size, rank) + " n" + std::to_string(p.batch);
  s += p.layout == CONVJIT_NHWC ? " nhwc" : " nchw";
  if (p.mode == CONVJIT_CONVOLUTION) s += " flip";
  if (has_bias) s += " bias";
  if (activation == CONVJIT_ACT_RELU) s += " relu";
  return s;
}

std::string describe_pool(const convjit_pool_params& p, float lp, bool lp_norm) {
  const int rank = p.rank >= 1 && p.rank <= 3 ? p.rank : 3;
  std::string s = describe_window(p, p.window, rank) + " " + std::to_string(p.channels);
  s += " " + joined(p.in_size, rank) + " n" + std::to_string(p.batch);
  s += p.layout == CONVJIT_NHWC ? " nhwc" : " nchw";
  if (p.exclude_padding) s += " exclude_padding";
  if (lp_norm) {
    char value[32];
    std::snprintf(value, sizeof value, " p=%g", double(lp));
    s += value;
  }
  return s;
}

const char* op_name(int32_t op) {
  switch (op) {
    case CONVJIT_OP_CONV_FORWARD: return "conv_fwd";
    case CONVJIT_OP_CONV_BACKWARD_DATA: return "conv_bwd_data";
    case CONVJIT_OP_CONV_BACKWARD_FILTER: return "conv_bwd_filter";
    case CONVJIT_OP_MAXPOOL_FORWARD: return "maxpool_fwd";
    case CONVJIT_OP_MEANPOOL_FORWARD: return "meanpool_fwd";
    case CONVJIT_OP_LPNORMPOOL_FORWARD: return "lpnormpool_fwd";
    case CONVJIT_OP_MAXPOOL_BACKWARD: return "maxpool_bwd";
    case CONVJIT_OP_MEANPOOL_BACKWARD: return "meanpool_bwd";
    case CONVJIT_OP_LPNORMPOOL_BACKWARD: return "lpnormpool_bwd";
  }
  return "?";
}

}  // namespace convjit::detail
