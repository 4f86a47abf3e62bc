#include "support/compare.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>

#include "reference/reference.hpp"

namespace convjit {

void PrintTo(const ConvDims& dims, std::ostream* os) { *os << testing::describe(dims); }
void PrintTo(const PoolDims& dims, std::ostream* os) { *os << testing::describe(dims); }

}  // namespace convjit

namespace convjit::testing {
namespace {

int shown_rank(int32_t rank) { return rank >= 1 && rank <= 3 ? rank : 3; }

std::string extent(const Extent& e, int32_t rank) {
  std::ostringstream s;
  s << "[";
  for (int i = 0; i < shown_rank(rank); ++i) s << (i ? "," : "") << e[i];
  s << "]";
  return s.str();
}

std::string layout_name(Layout layout) {
  if (layout == Layout::NCHW) return "NCHW";
  if (layout == Layout::NHWC) return "NHWC";
  return "layout(" + std::to_string(int32_t(layout)) + ")";
}

std::string mode_name(Mode mode) {
  if (mode == Mode::CrossCorrelation) return "cross-correlation";
  if (mode == Mode::Convolution) return "convolution";
  return "mode(" + std::to_string(int32_t(mode)) + ")";
}

// Spatial axis names of a rank, outermost first.
std::vector<std::string> spatial_axes(int32_t rank, const char* prefix) {
  static const char* names[3] = {"d", "h", "w"};
  std::vector<std::string> axes;
  for (int i = 3 - rank; i < 3; ++i) axes.push_back(std::string(prefix) + names[i]);
  return axes;
}

TensorShape activation_shape(Layout layout, int32_t rank, int64_t batch, int64_t channels, const Extent& size) {
  TensorShape t;
  const std::vector<std::string> spatial = spatial_axes(rank, "");
  t.axes.push_back("n");
  t.sizes.push_back(batch);
  if (layout == Layout::NCHW) {
    t.axes.push_back("c");
    t.sizes.push_back(channels);
  }
  for (int i = 0; i < rank; ++i) {
    t.axes.push_back(spatial[i]);
    t.sizes.push_back(size[i]);
  }
  if (layout != Layout::NCHW) {
    t.axes.push_back("c");
    t.sizes.push_back(channels);
  }
  return t;
}

// Enough digits to tell neighbouring floats apart.
std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

bool is_special(double want) { return !std::isfinite(want) || std::fabs(want) == double(FLT_MAX); }

bool same_special(float got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return double(got) == want;
}

}  // namespace

std::string describe(const ConvDims& d) {
  std::ostringstream s;
  s << "conv rank=" << d.rank << " " << layout_name(d.layout) << " " << mode_name(d.mode) << " batch=" << d.batch
    << " channels=" << d.in_channels << "->" << d.out_channels << " groups=" << d.groups;
  if (d.groups > 1 && d.groups == d.in_channels) s << " (depthwise)";
  s << " in=" << extent(d.in_size, d.rank) << " kernel=" << extent(d.kernel, d.rank)
    << " stride=" << extent(d.stride, d.rank) << " dilation=" << extent(d.dilation, d.rank)
    << " pad=" << extent(d.pad_begin, d.rank) << "/" << extent(d.pad_end, d.rank);
  return s.str();
}

std::string describe(const PoolDims& d) {
  std::ostringstream s;
  s << "pool rank=" << d.rank << " " << layout_name(d.layout) << (d.exclude_padding ? " exclude_padding" : "")
    << " batch=" << d.batch << " channels=" << d.channels << " in=" << extent(d.in_size, d.rank)
    << " window=" << extent(d.window, d.rank) << " stride=" << extent(d.stride, d.rank)
    << " dilation=" << extent(d.dilation, d.rank) << " pad=" << extent(d.pad_begin, d.rank) << "/"
    << extent(d.pad_end, d.rank);
  return s.str();
}

int64_t TensorShape::elements() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::string TensorShape::name(int64_t flat_index) const {
  std::vector<int64_t> coords(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    coords[i] = flat_index % sizes[i];
    flat_index /= sizes[i];
  }
  std::ostringstream s;
  for (size_t i = 0; i < axes.size(); ++i) s << (i ? " " : "") << axes[i] << "=" << coords[i];
  return s.str();
}

TensorShape conv_input_shape(const ConvDims& d) {
  return activation_shape(d.layout, d.rank, d.batch, d.in_channels, d.in_size);
}
TensorShape conv_output_shape(const ConvDims& d) {
  return activation_shape(d.layout, d.rank, d.batch, d.out_channels, ref::conv_output_size(d));
}
TensorShape conv_weight_shape(const ConvDims& d) {
  TensorShape t;
  const std::vector<std::string> taps = spatial_axes(d.rank, "k");
  t.axes.push_back("o");
  t.sizes.push_back(d.out_channels);
  if (d.layout == Layout::NCHW) {
    t.axes.push_back("i");
    t.sizes.push_back(d.in_channels / d.groups);
  }
  for (int i = 0; i < d.rank; ++i) {
    t.axes.push_back(taps[i]);
    t.sizes.push_back(d.kernel[i]);
  }
  if (d.layout != Layout::NCHW) {
    t.axes.push_back("i");
    t.sizes.push_back(d.in_channels / d.groups);
  }
  return t;
}
TensorShape pool_input_shape(const PoolDims& d) {
  return activation_shape(d.layout, d.rank, d.batch, d.channels, d.in_size);
}
TensorShape pool_output_shape(const PoolDims& d) {
  return activation_shape(d.layout, d.rank, d.batch, d.channels, ref::pool_output_size(d));
}

double tolerance(const std::vector<double>& want, int64_t reduction_length) {
  double scale = 0.0;
  for (double v : want) {
    if (!is_special(v)) scale = std::max(scale, std::fabs(v));
  }
  const double widening = std::max(1.0, std::sqrt(double(reduction_length) / 64.0));
  return kRelativeTolerance * scale * widening;
}

namespace {

// magnitude: null, or per element the sum of its terms' absolute values (see compare.hpp).
::testing::AssertionResult all_close_within(const std::string& what, const float* got, const std::vector<double>& want,
                                            const std::vector<double>* magnitude, const TensorShape& shape,
                                            int64_t reduction_length, const std::string& context) {
  const double tol = tolerance(want, reduction_length);
  const double per_term = kTermRoundings * double(FLT_EPSILON);
  auto allowed = [&](int64_t i) { return magnitude ? std::max(tol, per_term * (*magnitude)[size_t(i)]) : tol; };
  int64_t failures = 0, first = -1;
  for (int64_t i = 0; i < int64_t(want.size()); ++i) {
    const bool ok = is_special(want[i]) ? same_special(got[i], want[i])
                                        : std::fabs(double(got[i]) - want[i]) <= allowed(i);  // false for NaN
    if (!ok && failures++ == 0) first = i;
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << failures << " of " << want.size()
                                       << " elements differ; first at index " << first << " (" << shape.name(first)
                                       << "): got " << num(got[first]) << ", want " << num(want[first]) << ", |diff| "
                                       << num(std::fabs(double(got[first]) - want[first])) << " > tolerance "
                                       << num(allowed(first)) << " (reduction length " << reduction_length << ")\n  "
                                       << context;
}

}  // namespace

::testing::AssertionResult all_close(const std::string& what, const float* got, const std::vector<double>& want,
                                     const TensorShape& shape, int64_t reduction_length, const std::string& context) {
  return all_close_within(what, got, want, nullptr, shape, reduction_length, context);
}

::testing::AssertionResult all_close(const std::string& what, const float* got, const std::vector<double>& want,
                                     const std::vector<double>& magnitude, const TensorShape& shape,
                                     int64_t reduction_length, const std::string& context) {
  return all_close_within(what, got, want, &magnitude, shape, reduction_length, context);
}

::testing::AssertionResult all_equal(const std::string& what, const float* got, const std::vector<double>& want,
                                     const TensorShape& shape, const std::string& context) {
  int64_t failures = 0, first = -1;
  for (int64_t i = 0; i < int64_t(want.size()); ++i) {
    const bool ok = std::isnan(want[i]) ? std::isnan(got[i]) : double(got[i]) == want[i];
    if (!ok && failures++ == 0) first = i;
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << failures << " of " << want.size()
                                       << " elements differ; first at index " << first << " (" << shape.name(first)
                                       << "): got " << num(got[first]) << ", want exactly " << num(want[first]) << "\n  "
                                       << context;
}

::testing::AssertionResult bitwise_equal(const std::string& what, const std::vector<float>& a,
                                         const std::vector<float>& b, const TensorShape& shape,
                                         const std::string& context) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << what << ": sizes differ\n  " << context;
  int64_t failures = 0, first = -1;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && failures++ == 0) first = int64_t(i);
  }
  if (failures == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << failures << " of " << a.size()
                                       << " elements not bitwise equal; first at index " << first << " ("
                                       << shape.name(first) << "): " << num(a[first]) << " vs " << num(b[first]) << "\n  "
                                       << context;
}

std::vector<float> nan_buffer(int64_t n) {
  return std::vector<float>(size_t(n), std::numeric_limits<float>::quiet_NaN());
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

std::vector<float> to_float(const std::vector<double>& v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i) f[i] = float(v[i]);
  return f;
}

}  // namespace convjit::testing
