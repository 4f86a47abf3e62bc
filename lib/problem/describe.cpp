#include "describe.hpp"

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

}  // namespace

std::string describe_conv(const convjit_conv_params& p, int32_t activation, bool has_bias) {
  const int rank = p.rank >= 1 && p.rank <= 3 ? p.rank : 3;
  std::string s = joined(p.kernel, rank) + " s" + joined(p.stride, rank);
  bool symmetric = true;
  for (int d = 0; d < rank; ++d) symmetric &= p.pad_begin[d] == p.pad_end[d];
  s += " p" + (symmetric ? joined(p.pad_begin, rank) : joined(p.pad_begin, rank) + "/" + joined(p.pad_end, rank));
  if (!all_equal(p.dilation, rank, 1)) s += " d" + joined(p.dilation, rank);
  s += " " + std::to_string(p.in_channels) + "->" + std::to_string(p.out_channels);
  if (p.groups != 1) s += " g" + std::to_string(p.groups);
  s += " " + joined(p.in_size, rank) + " n" + std::to_string(p.batch);
  s += p.layout == CONVJIT_NHWC ? " nhwc" : " nchw";
  if (p.mode == CONVJIT_CONVOLUTION) s += " flip";
  if (has_bias) s += " bias";
  if (activation == CONVJIT_ACT_RELU) s += " relu";
  return s;
}

}  // namespace convjit::detail
