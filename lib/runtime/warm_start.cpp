#include "warm_start.hpp"

#include <fstream>
#include <sstream>

namespace convjit::detail {
namespace {

constexpr const char* kHeader = "convjit-hot-configurations 1";

}  // namespace

std::string hot_configurations_path(const std::string& dir) {
  return dir + "/hot-configurations";
}

std::vector<HotConfiguration> load_hot_configurations(const std::string& dir) {
  std::vector<HotConfiguration> out;
  std::ifstream file(hot_configurations_path(dir));
  std::string line;
  if (!std::getline(file, line) || line != kHeader) return out;
  while (std::getline(file, line)) {
    std::istringstream in(line);
    HotConfiguration c{};
    convjit_conv_params& p = c.params;
    int bias = 0;
    if (!(in >> p.rank >> p.layout >> p.mode >> p.batch >> p.in_channels >> p.out_channels >> p.groups)) continue;
    if (p.rank < 1 || p.rank > 3) continue;
    bool ok = true;
    for (int64_t* field : {p.in_size, p.kernel, p.stride, p.dilation, p.pad_begin, p.pad_end}) {
      for (int d = 0; d < p.rank; ++d) ok = ok && bool(in >> field[d]);
    }
    if (!ok || !(in >> c.activation >> bias)) continue;
    c.has_bias = bias != 0;
    out.push_back(c);
  }
  return out;
}

bool save_hot_configurations(const std::string& dir, const std::vector<HotConfiguration>& configurations) {
  std::ofstream file(hot_configurations_path(dir), std::ios::trunc);
  if (!file) return false;
  file << kHeader << "\n";
  for (const HotConfiguration& c : configurations) {
    const convjit_conv_params& p = c.params;
    file << p.rank << ' ' << p.layout << ' ' << p.mode << ' ' << p.batch << ' ' << p.in_channels << ' '
         << p.out_channels << ' ' << p.groups;
    for (const int64_t* field : {p.in_size, p.kernel, p.stride, p.dilation, p.pad_begin, p.pad_end}) {
      for (int d = 0; d < p.rank; ++d) file << ' ' << field[d];
    }
    file << ' ' << c.activation << ' ' << (c.has_bias ? 1 : 0) << "\n";
  }
  return bool(file);
}

}  // namespace convjit::detail
