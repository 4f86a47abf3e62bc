#include "shapes.hpp"

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "builtin_shapes.hpp"

namespace convjit_bench {
namespace {

Ext3 read_ext(const nlohmann::json& j, const char* key, int rank, int64_t fill, const std::string& where) {
  Ext3 e{fill, fill, fill};
  if (!j.contains(key)) return e;
  const auto& a = j.at(key);
  if (!a.is_array() || static_cast<int>(a.size()) != rank)
    throw std::runtime_error(where + ": \"" + key + "\" must be an array of " + std::to_string(rank) + " integers");
  for (int i = 0; i < rank; ++i) e[i] = a[i].get<int64_t>();
  return e;
}

int64_t out_len(int64_t in, int64_t pad_total, int64_t dil, int64_t k, int64_t stride) {
  return (in + pad_total - dil * (k - 1) - 1) / stride + 1;
}

}  // namespace

Ext3 ConvShape::lift(const Ext3& a, int64_t fill) const {
  Ext3 r{fill, fill, fill};
  for (int i = 0; i < rank; ++i) r[3 - rank + i] = a[i];
  return r;
}

Ext3 ConvShape::out() const {
  Ext3 o{1, 1, 1};
  for (int i = 0; i < rank; ++i) o[i] = out_len(in[i], 2 * pad[i], dilation[i], k[i], stride[i]);
  return o;
}

int64_t ConvShape::in_spatial() const {
  int64_t p = 1;
  for (int i = 0; i < rank; ++i) p *= in[i];
  return p;
}
int64_t ConvShape::out_spatial() const {
  const Ext3 o = out();
  int64_t p = 1;
  for (int i = 0; i < rank; ++i) p *= o[i];
  return p;
}
int64_t ConvShape::k_spatial() const {
  int64_t p = 1;
  for (int i = 0; i < rank; ++i) p *= k[i];
  return p;
}
double ConvShape::flops() const {
  return 2.0 * static_cast<double>(n) * oc * out_spatial() * (ic / groups) * k_spatial();
}

convjit::ConvDims ConvShape::dims(convjit::Layout layout, convjit::Mode mode) const {
  convjit::ConvDims d;
  d.rank = rank;
  d.layout = layout;
  d.mode = mode;
  d.batch = n;
  d.in_channels = ic;
  d.out_channels = oc;
  d.groups = groups;
  for (int i = 0; i < 3; ++i) {
    const bool used = i < rank;
    d.in_size[i] = used ? in[i] : 1;
    d.kernel[i] = used ? k[i] : 1;
    d.stride[i] = used ? stride[i] : 1;
    d.dilation[i] = used ? dilation[i] : 1;
    d.pad_begin[i] = used ? pad[i] : 0;
    d.pad_end[i] = used ? pad[i] : 0;
  }
  return d;
}

Ext3 PoolShape::lift(const Ext3& a, int64_t fill) const {
  Ext3 r{fill, fill, fill};
  for (int i = 0; i < rank; ++i) r[3 - rank + i] = a[i];
  return r;
}
Ext3 PoolShape::out() const {
  Ext3 o{1, 1, 1};
  for (int i = 0; i < rank; ++i) o[i] = out_len(in[i], 2 * pad[i], 1, window[i], stride[i]);
  return o;
}
int64_t PoolShape::in_spatial() const {
  int64_t p = 1;
  for (int i = 0; i < rank; ++i) p *= in[i];
  return p;
}
int64_t PoolShape::out_spatial() const {
  const Ext3 o = out();
  int64_t p = 1;
  for (int i = 0; i < rank; ++i) p *= o[i];
  return p;
}
convjit::PoolDims PoolShape::dims(convjit::Layout layout) const {
  convjit::PoolDims d;
  d.rank = rank;
  d.layout = layout;
  d.exclude_padding = false;
  d.batch = n;
  d.channels = c;
  for (int i = 0; i < 3; ++i) {
    const bool used = i < rank;
    d.in_size[i] = used ? in[i] : 1;
    d.window[i] = used ? window[i] : 1;
    d.stride[i] = used ? stride[i] : 1;
    d.dilation[i] = 1;
    d.pad_begin[i] = used ? pad[i] : 0;
    d.pad_end[i] = used ? pad[i] : 0;
  }
  return d;
}

namespace {

// `origin` names the text in error messages: the file's path or the built-in list.
ShapeSet parse_shapes(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot parse '" + origin + "': " + e.what());
  }
  ShapeSet set;
  for (const auto& c : j.value("conv", nlohmann::json::array())) {
    ConvShape s;
    s.name = c.at("name").get<std::string>();
    const std::string where = origin + ": conv shape " + s.name;
    const auto& in = c.at("in");
    s.rank = static_cast<int>(in.size());
    if (s.rank < 1 || s.rank > 3) throw std::runtime_error(where + ": \"in\" must have 1 to 3 entries");
    s.n = c.at("n").get<int64_t>();
    s.ic = c.at("ic").get<int64_t>();
    s.oc = c.at("oc").get<int64_t>();
    s.groups = c.value("groups", int64_t{1});
    s.in = read_ext(c, "in", s.rank, 1, where);
    s.k = read_ext(c, "k", s.rank, 1, where);
    s.stride = read_ext(c, "stride", s.rank, 1, where);
    s.pad = read_ext(c, "pad", s.rank, 0, where);
    s.dilation = read_ext(c, "dilation", s.rank, 1, where);
    set.conv.push_back(s);
  }
  for (const auto& c : j.value("pool", nlohmann::json::array())) {
    PoolShape s;
    s.name = c.at("name").get<std::string>();
    const std::string where = origin + ": pool shape " + s.name;
    s.op = c.at("op").get<std::string>();
    const auto& in = c.at("in");
    s.rank = static_cast<int>(in.size());
    if (s.rank < 1 || s.rank > 3) throw std::runtime_error(where + ": \"in\" must have 1 to 3 entries");
    s.n = c.at("n").get<int64_t>();
    s.c = c.at("c").get<int64_t>();
    s.in = read_ext(c, "in", s.rank, 1, where);
    s.window = read_ext(c, "window", s.rank, 1, where);
    s.stride = c.contains("stride") ? read_ext(c, "stride", s.rank, 1, where) : s.window;
    s.pad = read_ext(c, "pad", s.rank, 0, where);
    set.pool.push_back(s);
  }
  return set;
}

}  // namespace

std::string shapes_origin(const std::string& path) { return path.empty() ? kBuiltinShapesName : path; }

ShapeSet load_shapes(const std::string& path) {
  if (path.empty()) return parse_shapes(kBuiltinShapesJson, kBuiltinShapesName);
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open shapes file '" + path + "'");
  std::stringstream text;
  text << f.rdbuf();
  return parse_shapes(text.str(), path);
}

void Buffer::Free::operator()(float* p) const { std::free(p); }

Buffer::Buffer(std::size_t count) : size_(count) {
  const std::size_t bytes = ((count * sizeof(float) + 63) / 64) * 64;
  float* p = static_cast<float*>(std::aligned_alloc(64, bytes == 0 ? 64 : bytes));
  if (p == nullptr) throw std::bad_alloc();
  data_.reset(p);
  for (std::size_t i = 0; i < count; ++i) p[i] = 0.0f;
}

void fill_random(Buffer& b, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = u(rng);
}

uint64_t seed_of(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return h;
}

std::string pool_runtime_label(convjit::Runtime& rt, convjit::Op op, const convjit::PoolDims& dims) {
  const convjit::PoolDims as_called =
      convjit::PoolDims::from_c(dims.to_c());  // strides resolved, as the stats hold them
  for (const convjit::ConfigStats& c : rt.stats().configurations) {
    const convjit::PoolDims& p = c.pool_dims;
    if (c.op == op && p.layout == dims.layout && p.batch == dims.batch && p.channels == dims.channels &&
        p.in_size == as_called.in_size && p.window == as_called.window && p.stride == as_called.stride) {
      return c.state == "jit" ? c.kernel : c.state;
    }
  }
  return "?";
}

bool same_dims(const convjit::ConvDims& a, const convjit::ConvDims& b) {
  if (a.rank != b.rank || a.layout != b.layout || a.mode != b.mode || a.batch != b.batch ||
      a.in_channels != b.in_channels || a.out_channels != b.out_channels || a.groups != b.groups)
    return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.in_size[i] != b.in_size[i] || a.kernel[i] != b.kernel[i] || a.stride[i] != b.stride[i] ||
        a.dilation[i] != b.dilation[i] || a.pad_begin[i] != b.pad_begin[i] || a.pad_end[i] != b.pad_end[i])
      return false;
  return true;
}

}  // namespace convjit_bench
