#include "geometry.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace convjit::detail {
namespace {

std::string field(const char* name, int dim) {
  return std::string(name) + "[" + std::to_string(dim) + "]";
}

// `dim` < 0 names a scalar field; the message is built only on failure (this runs every call).
Status expect_at_least(const char* name, int dim, int64_t value, int64_t minimum) {
  if (value >= minimum) return Status::success();
  const std::string full = dim < 0 ? std::string(name) : field(name, dim);
  return Status::invalid(full + " = " + std::to_string(value) + ": must be >= " + std::to_string(minimum));
}

// Product of non-negative factors, failing instead of wrapping; the byte count must fit too,
// so that callers can allocate and index the tensor with int64_t/size_t.
Status checked_elements(const char* tensor, std::initializer_list<int64_t> factors, int64_t* elements) {
  int64_t product = 1;
  for (int64_t factor : factors) {
    if (__builtin_mul_overflow(product, factor, &product) || product > INT64_MAX / int64_t(sizeof(float))) {
      return Status::invalid(std::string(tensor) + " has more elements than int64 can address (overflow)");
    }
  }
  *elements = product;
  return Status::success();
}

Status check_layout_and_rank(int32_t rank, int32_t layout) {
  if (rank < 1 || rank > 3) return Status::invalid("rank = " + std::to_string(rank) + ": must be 1, 2 or 3");
  if (layout != CONVJIT_NCHW && layout != CONVJIT_NHWC) {
    return Status::invalid("layout = " + std::to_string(layout) + ": must be CONVJIT_NCHW (0) or CONVJIT_NHWC (1)");
  }
  return Status::success();
}

// The window geometry shared by convolution and pooling, for one spatial dim: the window
// spans dilation*(extent-1)+1 input elements and must fit the padded input at least once.
Status window_output_size(int dim, const char* extent_name, int64_t in, int64_t extent, int64_t stride,
                          int64_t dilation, int64_t pad_begin, int64_t pad_end, int64_t* out) {
  CONVJIT_RETURN_IF_ERROR(expect_at_least("in_size", dim, in, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least(extent_name, dim, extent, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("stride", dim, stride, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("dilation", dim, dilation, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("pad_begin", dim, pad_begin, 0));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("pad_end", dim, pad_end, 0));
  int64_t padded, span;
  if (__builtin_add_overflow(in, pad_begin, &padded) || __builtin_add_overflow(padded, pad_end, &padded) ||
      __builtin_mul_overflow(dilation, extent - 1, &span)) {
    return Status::invalid(field("in_size", dim) + " plus padding, or the dilated " + extent_name +
                           ", overflows int64");
  }
  if (padded - span - 1 < 0) {
    return Status::invalid("output size of spatial dim " + std::to_string(dim) + " < 1: padded input " +
                           std::to_string(padded) + " is smaller than the dilated " + extent_name + " " +
                           std::to_string(uint64_t(span) + 1) + " (in_size + pad_begin + pad_end must be >= dilation*(" +
                           extent_name + "-1)+1)");
  }
  *out = (padded - span - 1) / stride + 1;
  return Status::success();
}

// Strides of a dense N, C, D, H, W tensor stored NCDHW or NDHWC.
template <typename Strides>
void set_dense_strides(Strides& s, Layout layout, int64_t channels, const int64_t size[3]) {
  int64_t pixels = size[0] * size[1] * size[2];
  s.batch = channels * pixels;
  int64_t pixel_step = layout == Layout::NCHW ? 1 : channels;
  s.channel = layout == Layout::NCHW ? pixels : 1;
  s.spatial[2] = pixel_step;
  s.spatial[1] = pixel_step * size[2];
  s.spatial[0] = pixel_step * size[2] * size[1];
}

// The spatial dims of a window op (a convolution's kernel, a pooling window) normalized to
// (D, H, W), missing outer dims of size 1 with a window of 1, stride 1, dilation 1 and no padding,
// and its output sizes. p_window is the params' kernel or window, window the result's;
// window_name names it in errors.
template <typename Params, typename Result>
Status normalize_spatial(const Params& p, const int64_t (&p_window)[3], const char* window_name, Result* r,
                         int64_t (&window)[3]) {
  for (int d = 0; d < 3; ++d) {
    r->in[d] = r->out[d] = window[d] = r->stride[d] = r->dilation[d] = 1;
    r->pad_begin[d] = 0;
  }
  const int offset = 3 - p.rank;
  for (int d = 0; d < p.rank; ++d) {
    const int n = d + offset;
    CONVJIT_RETURN_IF_ERROR(window_output_size(d, window_name, p.in_size[d], p_window[d], p.stride[d], p.dilation[d],
                                               p.pad_begin[d], p.pad_end[d], &r->out[n]));
    r->in[n] = p.in_size[d];
    window[n] = p_window[d];
    r->stride[n] = p.stride[d];
    r->dilation[n] = p.dilation[d];
    r->pad_begin[n] = p.pad_begin[d];
  }
  return Status::success();
}

}  // namespace

Status make_conv_geometry(const convjit_conv_params& p, ConvGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(check_layout_and_rank(p.rank, p.layout));
  if (p.mode != CONVJIT_CROSS_CORRELATION && p.mode != CONVJIT_CONVOLUTION) {
    return Status::invalid("mode = " + std::to_string(p.mode) +
                           ": must be CONVJIT_CROSS_CORRELATION (0) or CONVJIT_CONVOLUTION (1)");
  }
  CONVJIT_RETURN_IF_ERROR(expect_at_least("batch", -1, p.batch, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("in_channels", -1, p.in_channels, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("out_channels", -1, p.out_channels, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("groups", -1, p.groups, 1));
  if (p.in_channels % p.groups != 0 || p.out_channels % p.groups != 0) {
    return Status::invalid("in_channels = " + std::to_string(p.in_channels) +
                           " and out_channels = " + std::to_string(p.out_channels) +
                           " must both be divisible by groups = " + std::to_string(p.groups));
  }
  ConvGeometry r{};
  r.layout = p.layout;
  r.flip = p.mode == CONVJIT_CONVOLUTION;
  r.batch = p.batch;
  r.groups = p.groups;
  r.in_channels = p.in_channels;
  r.out_channels = p.out_channels;
  r.ic_per_group = p.in_channels / p.groups;
  r.oc_per_group = p.out_channels / p.groups;
  CONVJIT_RETURN_IF_ERROR(normalize_spatial(p, p.kernel, "kernel", &r, r.kernel));
  int64_t x_elements, w_elements, y_elements;
  CONVJIT_RETURN_IF_ERROR(checked_elements("x", {p.batch, p.in_channels, r.in[0], r.in[1], r.in[2]}, &x_elements));
  CONVJIT_RETURN_IF_ERROR(
      checked_elements("w", {p.out_channels, r.ic_per_group, r.kernel[0], r.kernel[1], r.kernel[2]}, &w_elements));
  CONVJIT_RETURN_IF_ERROR(checked_elements("y", {p.batch, p.out_channels, r.out[0], r.out[1], r.out[2]}, &y_elements));
  r.taps = r.kernel[0] * r.kernel[1] * r.kernel[2];
  r.reduction = r.ic_per_group * r.taps;
  set_dense_strides(r.x, Layout(r.layout), r.in_channels, r.in);
  set_dense_strides(r.y, Layout(r.layout), r.out_channels, r.out);
  *g = r;
  return Status::success();
}

Status make_pool_geometry(const convjit_pool_params& p, PoolGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(check_layout_and_rank(p.rank, p.layout));
  if (p.exclude_padding != 0 && p.exclude_padding != 1) {
    return Status::invalid("exclude_padding = " + std::to_string(p.exclude_padding) + ": must be 0 or 1");
  }
  CONVJIT_RETURN_IF_ERROR(expect_at_least("batch", -1, p.batch, 1));
  CONVJIT_RETURN_IF_ERROR(expect_at_least("channels", -1, p.channels, 1));
  PoolGeometry r{};
  r.layout = Layout(p.layout);
  r.exclude_padding = p.exclude_padding == 1;
  r.batch = p.batch;
  r.channels = p.channels;
  CONVJIT_RETURN_IF_ERROR(normalize_spatial(p, p.window, "window", &r, r.window));
  int64_t x_elements, y_elements;
  CONVJIT_RETURN_IF_ERROR(checked_elements("x", {p.batch, p.channels, r.in[0], r.in[1], r.in[2]}, &x_elements));
  CONVJIT_RETURN_IF_ERROR(checked_elements("y", {p.batch, p.channels, r.out[0], r.out[1], r.out[2]}, &y_elements));
  set_dense_strides(r.x, r.layout, r.channels, r.in);
  set_dense_strides(r.y, r.layout, r.channels, r.out);
  *g = r;
  return Status::success();
}

Status validate_conv_forward(const convjit_conv_params* params, const float* x, const float* w, int32_t activation,
                             const float* y, ConvGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(require_pointers({{params, "params"}}));
  CONVJIT_RETURN_IF_ERROR(make_conv_geometry(*params, g));
  CONVJIT_RETURN_IF_ERROR(require_pointers({{x, "x"}, {w, "w"}, {y, "y"}}));
  if (activation != CONVJIT_ACT_IDENTITY && activation != CONVJIT_ACT_RELU) {
    return Status::invalid("activation = " + std::to_string(activation) +
                           ": must be CONVJIT_ACT_IDENTITY (0) or CONVJIT_ACT_RELU (1)");
  }
  return Status::success();
}

Status validate_conv_backward_data(const convjit_conv_params* params, const float* dy, const float* w, const float* dx,
                                   ConvGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(require_pointers({{params, "params"}}));
  CONVJIT_RETURN_IF_ERROR(make_conv_geometry(*params, g));
  return require_pointers({{dy, "dy"}, {w, "w"}, {dx, "dx"}});
}

Status validate_conv_backward_filter(const convjit_conv_params* params, const float* x, const float* dy,
                                     const float* dw, ConvGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(require_pointers({{params, "params"}}));
  CONVJIT_RETURN_IF_ERROR(make_conv_geometry(*params, g));
  return require_pointers({{x, "x"}, {dy, "dy"}, {dw, "dw"}});
}

namespace {

Status validate_pool(PoolOp op, const convjit_pool_params* params, float p, PoolGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(require_pointers({{params, "params"}}));
  CONVJIT_RETURN_IF_ERROR(make_pool_geometry(*params, g));
  if (op != PoolOp::LpNorm || (p > 0.0f && std::isfinite(p))) return Status::success();
  char value[32];
  std::snprintf(value, sizeof value, "%g", double(p));
  return Status::invalid(std::string("p = ") + value + ": Lp-norm pooling needs a finite p > 0");
}

}  // namespace

Status validate_pool_forward(PoolOp op, const convjit_pool_params* params, float p, const float* x, const float* y,
                             PoolGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(validate_pool(op, params, p, g));
  return require_pointers({{x, "x"}, {y, "y"}});
}

Status validate_pool_backward(PoolOp op, const convjit_pool_params* params, float p, const float* x, const float* y,
                              const float* dy, const float* dx, PoolGeometry* g) {
  CONVJIT_RETURN_IF_ERROR(validate_pool(op, params, p, g));
  if (op != PoolOp::Mean) CONVJIT_RETURN_IF_ERROR(require_pointers({{x, "x"}, {y, "y"}}));
  return require_pointers({{dy, "dy"}, {dx, "dx"}});
}

}  // namespace convjit::detail
