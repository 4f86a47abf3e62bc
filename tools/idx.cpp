#include "idx.hpp"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace seednet {
namespace {

constexpr uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr int64_t kMaxElements = int64_t(1) << 32;

// gzread reads plain files too, so one reader serves .gz and uncompressed IDX files.
class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb"), gzclose) {
    if (!file_) fail(std::string("cannot open: ") + (errno ? std::strerror(errno) : "gzopen failed"));
  }

  uint32_t read_u32(const char* what) {
    unsigned char b[4];
    read(b, 4, what);
    return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | uint32_t(b[3]);
  }

  void read(void* dst, int64_t bytes, const char* what) {
    unsigned char* out = static_cast<unsigned char*>(dst);
    while (bytes > 0) {
      const unsigned chunk = unsigned(std::min<int64_t>(bytes, 1 << 30));
      const int got = gzread(file_.get(), out, chunk);
      if (got < 0) {
        int code = 0;
        std::string reason = gzerror(file_.get(), &code);
        if (reason.rfind(path_ + ": ", 0) == 0) reason.erase(0, path_.size() + 2);  // zlib names the file too
        fail(std::string("corrupt data while reading ") + what + ": " + reason);
      }
      if (got == 0) fail(std::string("truncated: the file ends inside ") + what);
      out += got;
      bytes -= got;
    }
  }

  // The header's sizes account for the whole file.
  void expect_end() {
    unsigned char extra[4096];
    int64_t count = 0;
    for (int got; (got = gzread(file_.get(), extra, sizeof extra)) > 0;) count += got;
    if (count > 0) fail(std::to_string(count) + " bytes after the data the header declares");
  }

  [[noreturn]] void fail(const std::string& message) const { throw std::runtime_error(path_ + ": " + message); }

 private:
  std::string path_;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file_;
};

void expect_magic(IdxFile& file, uint32_t magic, const char* kind) {
  const uint32_t got = file.read_u32("the header");
  if (got != magic) {
    char text[128];
    std::snprintf(text, sizeof text, "not an IDX %s file (magic number 0x%08x, expected 0x%08x)", kind, got, magic);
    file.fail(text);
  }
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
  IdxFile file(path);
  expect_magic(file, kImagesMagic, "image");
  IdxImages images;
  images.count = file.read_u32("the header");
  images.rows = file.read_u32("the header");
  images.cols = file.read_u32("the header");
  int64_t elements = 0;
  if (images.count == 0 || images.rows == 0 || images.cols == 0 ||
      __builtin_mul_overflow(images.count, images.rows, &elements) ||
      __builtin_mul_overflow(elements, images.cols, &elements) || elements > kMaxElements) {
    file.fail("implausible sizes " + std::to_string(images.count) + " x " + std::to_string(images.rows) + " x " +
              std::to_string(images.cols));
  }
  images.pixels.resize(size_t(elements));
  file.read(images.pixels.data(), elements, "the pixels");
  file.expect_end();
  return images;
}

std::vector<uint8_t> read_idx_labels(const std::string& path) {
  IdxFile file(path);
  expect_magic(file, kLabelsMagic, "label");
  const int64_t count = file.read_u32("the header");
  if (count == 0 || count > kMaxElements) file.fail("implausible label count " + std::to_string(count));
  std::vector<uint8_t> labels(size_t(count), 0);
  file.read(labels.data(), count, "the labels");
  file.expect_end();
  for (int64_t i = 0; i < count; ++i) {
    if (labels[size_t(i)] > 9)
      file.fail("label " + std::to_string(labels[size_t(i)]) + " at index " + std::to_string(i) +
                " is not a class 0-9");
  }
  return labels;
}

}  // namespace seednet
