// Reader of the IDX files of MNIST and Fashion-MNIST (optionally gzip-compressed): images as
// unsigned bytes [count][rows][cols], labels as bytes. Every problem (missing file, bad magic
// number, truncated data, sizes that disagree) throws std::runtime_error naming the file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seednet {

struct IdxImages {
  int64_t count = 0, rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols
};

IdxImages read_idx_images(const std::string& path);
std::vector<uint8_t> read_idx_labels(const std::string& path);

}  // namespace seednet
