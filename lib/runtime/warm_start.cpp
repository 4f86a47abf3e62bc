#include "warm_start.hpp"

#include <fstream>
#include <iomanip>
#include <sstream>

namespace convjit::detail {
namespace {

constexpr const char* kHeaderV1 = "convjit-hot-configurations 1";
constexpr const char* kHeader = "convjit-hot-configurations 2";

bool read_extents(std::istream& in, int32_t rank, std::initializer_list<int64_t*> extents) {
  if (rank < 1 || rank > 3) return false;
  for (int64_t* extent : extents) {
    for (int d = 0; d < rank; ++d) {
      if (!(in >> extent[d])) return false;
    }
  }
  return true;
}

void write_extents(std::ostream& out, int32_t rank, std::initializer_list<const int64_t*> extents) {
  for (const int64_t* extent : extents) {
    for (int d = 0; d < rank; ++d) out << ' ' << extent[d];
  }
}

bool read_conv(std::istream& in, Configuration* c) {
  convjit_conv_params& p = c->conv;
  int bias = 0;
  if (!(in >> p.rank >> p.layout >> p.mode >> p.batch >> p.in_channels >> p.out_channels >> p.groups)) return false;
  if (!read_extents(in, p.rank, {p.in_size, p.kernel, p.stride, p.dilation, p.pad_begin, p.pad_end})) return false;
  if (!(in >> c->activation >> bias)) return false;
  c->has_bias = bias != 0;
  return true;
}

bool read_pool(std::istream& in, Configuration* c) {
  convjit_pool_params& p = c->pool;
  if (!(in >> p.rank >> p.layout >> p.exclude_padding >> p.batch >> p.channels)) return false;
  if (!read_extents(in, p.rank, {p.in_size, p.window, p.stride, p.dilation, p.pad_begin, p.pad_end})) return false;
  return bool(in >> c->p);
}

}  // namespace

std::string hot_configurations_path(const std::string& dir) {
  return dir + "/hot-configurations";
}

std::vector<Configuration> load_hot_configurations(const std::string& dir) {
  std::vector<Configuration> out;
  std::ifstream file(hot_configurations_path(dir));
  std::string line;
  if (!std::getline(file, line) || (line != kHeader && line != kHeaderV1)) return out;
  const bool has_op_column = line == kHeader;
  while (std::getline(file, line)) {
    std::istringstream in(line);
    Configuration c;
    if (has_op_column && !(in >> c.op)) continue;
    if (c.op < CONVJIT_OP_CONV_FORWARD || c.op > CONVJIT_OP_LPNORMPOOL_BACKWARD) continue;
    if (c.is_pool() ? read_pool(in, &c) : read_conv(in, &c)) out.push_back(c);
  }
  return out;
}

bool save_hot_configurations(const std::string& dir, const std::vector<Configuration>& configurations) {
  std::ofstream file(hot_configurations_path(dir), std::ios::trunc);
  if (!file) return false;
  file << kHeader << "\n";
  for (const Configuration& c : configurations) {
    file << c.op;
    if (c.is_pool()) {
      const convjit_pool_params& p = c.pool;
      file << ' ' << p.rank << ' ' << p.layout << ' ' << p.exclude_padding << ' ' << p.batch << ' ' << p.channels;
      write_extents(file, p.rank, {p.in_size, p.window, p.stride, p.dilation, p.pad_begin, p.pad_end});
      file << ' ' << std::setprecision(9) << c.p << "\n";
    } else {
      const convjit_conv_params& p = c.conv;
      file << ' ' << p.rank << ' ' << p.layout << ' ' << p.mode << ' ' << p.batch << ' ' << p.in_channels << ' '
           << p.out_channels << ' ' << p.groups;
      write_extents(file, p.rank, {p.in_size, p.kernel, p.stride, p.dilation, p.pad_begin, p.pad_end});
      file << ' ' << c.activation << ' ' << (c.has_bias ? 1 : 0) << "\n";
    }
  }
  return bool(file);
}

}  // namespace convjit::detail
