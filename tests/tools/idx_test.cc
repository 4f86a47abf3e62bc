// tools/idx.{hpp,cpp}: the IDX reader of seednet. Files are made here (gzip through zlib, and
// uncompressed), read back exactly; every broken file throws std::runtime_error whose message
// names the file and says what is wrong.
#include "idx.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include "tools_support.hpp"

namespace convjit::testing::tools {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = uint8_t(rng());
  if (n >= 2) {  // the extremes, always
    v[0] = 0;
    v[n - 1] = 255;
  }
  return v;
}

// The message of the std::runtime_error f() throws; fails the test if it throws nothing or
// something else.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a " << typeid(e).name() << " that is not a std::runtime_error: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return {};
}

#define EXPECT_MESSAGE(message, part) \
  EXPECT_TRUE(contains(message, part)) << "message \"" << (message) << "\" does not contain \"" << (part) << "\""

class Idx : public ::testing::TestWithParam<bool> {  // the parameter: gzip-compressed
 protected:
  // Writes the bytes (compressed or not) and returns the path.
  std::string make(const std::string& name, const std::string& bytes) {
    const std::string path = dir_.file(name + (GetParam() ? ".gz" : ""));
    if (GetParam())
      write_gzip_file(path, bytes);
    else
      write_file(path, bytes);
    return path;
  }
  TempDir dir_;
};

TEST_P(Idx, ReadsImagesBackExactly) {
  const std::vector<uint8_t> pixels = random_bytes(3 * 4 * 5, 1);
  const std::string path = make("images", idx_images_bytes(3, 4, 5, pixels));
  const seednet::IdxImages images = seednet::read_idx_images(path);
  EXPECT_EQ(images.count, 3);
  EXPECT_EQ(images.rows, 4);
  EXPECT_EQ(images.cols, 5);
  EXPECT_EQ(images.pixels, pixels);
}

TEST_P(Idx, ReadsAFullSizeImageSetBackExactly) {  // bigger than zlib's buffers
  const std::vector<uint8_t> pixels = random_bytes(300 * 28 * 28, 2);
  const std::string path = make("images", idx_images_bytes(300, 28, 28, pixels));
  const seednet::IdxImages images = seednet::read_idx_images(path);
  EXPECT_EQ(images.count, 300);
  EXPECT_EQ(images.rows, 28);
  EXPECT_EQ(images.cols, 28);
  EXPECT_EQ(images.pixels, pixels);
}

TEST_P(Idx, ReadsLabelsBackExactly) {
  const std::vector<uint8_t> labels = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 0, 5};
  const std::string path = make("labels", idx_labels_bytes(labels));
  EXPECT_EQ(seednet::read_idx_labels(path), labels);
}

TEST_P(Idx, MissingFile) {
  const std::string path = dir_.file(std::string("absent") + (GetParam() ? ".gz" : ""));
  for (const std::string& message :
       {error_of([&] { seednet::read_idx_images(path); }), error_of([&] { seednet::read_idx_labels(path); })}) {
    EXPECT_MESSAGE(message, path);
    EXPECT_MESSAGE(message, "cannot open");
  }
}

TEST_P(Idx, WrongMagicNumber) {
  const std::string labels = make("labels", idx_labels_bytes({1, 2, 3}));
  const std::string images = make("images", idx_images_bytes(1, 2, 2, {1, 2, 3, 4}));
  const std::string other = make("other", idx_images_bytes(1, 2, 2, {1, 2, 3, 4}, 0x12345678));

  std::string m = error_of([&] { seednet::read_idx_images(labels); });
  EXPECT_MESSAGE(m, labels);
  EXPECT_MESSAGE(m, "not an IDX image file");
  EXPECT_MESSAGE(m, "0x00000801");
  m = error_of([&] { seednet::read_idx_labels(images); });
  EXPECT_MESSAGE(m, images);
  EXPECT_MESSAGE(m, "not an IDX label file");
  EXPECT_MESSAGE(m, "0x00000803");
  m = error_of([&] { seednet::read_idx_images(other); });
  EXPECT_MESSAGE(m, other);
  EXPECT_MESSAGE(m, "0x12345678");
}

TEST_P(Idx, TruncatedHeader) {
  const std::string full = idx_images_bytes(2, 3, 3, random_bytes(18, 3));
  for (size_t keep : {size_t(0), size_t(2), size_t(4), size_t(10), size_t(15)}) {
    const std::string path = make("images" + std::to_string(keep), full.substr(0, keep));
    const std::string m = error_of([&] { seednet::read_idx_images(path); });
    EXPECT_MESSAGE(m, path);
    EXPECT_MESSAGE(m, "truncated");
    EXPECT_MESSAGE(m, "the header");
  }
  const std::string labels = make("labels", idx_labels_bytes({1, 2}).substr(0, 6));
  const std::string m = error_of([&] { seednet::read_idx_labels(labels); });
  EXPECT_MESSAGE(m, labels);
  EXPECT_MESSAGE(m, "truncated");
  EXPECT_MESSAGE(m, "the header");
}

TEST_P(Idx, TruncatedData) {
  const std::string images = idx_images_bytes(3, 4, 5, random_bytes(60, 4));
  const std::string path = make("images", images.substr(0, images.size() - 1));
  std::string m = error_of([&] { seednet::read_idx_images(path); });
  EXPECT_MESSAGE(m, path);
  EXPECT_MESSAGE(m, "truncated");
  EXPECT_MESSAGE(m, "the pixels");

  const std::string header_only = make("header-only", images.substr(0, 16));
  m = error_of([&] { seednet::read_idx_images(header_only); });
  EXPECT_MESSAGE(m, header_only);
  EXPECT_MESSAGE(m, "the pixels");

  const std::string labels = idx_labels_bytes({1, 2, 3, 4});
  const std::string label_path = make("labels", labels.substr(0, labels.size() - 2));
  m = error_of([&] { seednet::read_idx_labels(label_path); });
  EXPECT_MESSAGE(m, label_path);
  EXPECT_MESSAGE(m, "truncated");
  EXPECT_MESSAGE(m, "the labels");
}

TEST_P(Idx, ZeroCounts) {
  struct Case {
    uint32_t count, rows, cols;
  };
  for (const Case& c : {Case{0, 28, 28}, Case{5, 0, 28}, Case{5, 28, 0}}) {
    const std::string path = make("images", idx_images_bytes(c.count, c.rows, c.cols, {}));
    const std::string m = error_of([&] { seednet::read_idx_images(path); });
    EXPECT_MESSAGE(m, path);
    EXPECT_MESSAGE(m, "implausible sizes " + std::to_string(c.count) + " x " + std::to_string(c.rows) + " x " +
                          std::to_string(c.cols));
  }
  const std::string labels = make("labels", idx_labels_bytes({}));
  const std::string m = error_of([&] { seednet::read_idx_labels(labels); });
  EXPECT_MESSAGE(m, labels);
  EXPECT_MESSAGE(m, "implausible label count 0");
}

TEST_P(Idx, SizesBeyondTheLimitAreRejectedBeforeAllocating) {
  // 2^16 x 2^16 x 2 = 2^33 elements, over the reader's 2^32 limit.
  std::string path = make("big", idx_images_bytes(1u << 16, 1u << 16, 2, {}));
  std::string m = error_of([&] { seednet::read_idx_images(path); });
  EXPECT_MESSAGE(m, path);
  EXPECT_MESSAGE(m, "implausible sizes");
  // 2^31 x 2^31 x 4 = 2^64 elements: the product must not wrap around to 0 and pass the check.
  path = make("wraps", idx_images_bytes(1u << 31, 1u << 31, 4, {}));
  m = error_of([&] { seednet::read_idx_images(path); });
  EXPECT_MESSAGE(m, path);
  EXPECT_MESSAGE(m, "implausible sizes");
}

TEST_P(Idx, LabelOutsideTheClasses) {
  const std::string path = make("labels", idx_labels_bytes({3, 9, 10, 1}));
  const std::string m = error_of([&] { seednet::read_idx_labels(path); });
  EXPECT_MESSAGE(m, path);
  EXPECT_MESSAGE(m, "label 10 at index 2 is not a class 0-9");
  const std::string big = make("labels255", idx_labels_bytes({255}));
  EXPECT_MESSAGE(error_of([&] { seednet::read_idx_labels(big); }), "label 255 at index 0");
}

INSTANTIATE_TEST_SUITE_P(Tools, Idx, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) { return info.param ? "Gzip" : "Plain"; });

// Damage inside a gzip stream: cut short, or bytes changed (the CRC no longer matches).
class IdxGzipStream : public ::testing::Test {
 protected:
  std::string compressed(const std::string& raw) {
    const std::string path = dir_.file("whole.gz");
    write_gzip_file(path, raw);
    return read_file(path);
  }
  TempDir dir_;
};

TEST_F(IdxGzipStream, CutShort) {
  const std::string raw = idx_images_bytes(40, 28, 28, random_bytes(40 * 28 * 28, 5));
  const std::string gz = compressed(raw);
  ASSERT_GT(gz.size(), 200u);
  for (size_t keep : {size_t(12), gz.size() / 2, gz.size() - 9}) {  // inside the header, the data, the last block
    const std::string path = dir_.file("cut" + std::to_string(keep) + ".gz");
    write_file(path, gz.substr(0, keep));
    const std::string m = error_of([&] { seednet::read_idx_images(path); });
    EXPECT_MESSAGE(m, path);
    EXPECT_TRUE(contains(m, "truncated") || contains(m, "unexpected end of file"))
        << "cut to " << keep << " of " << gz.size() << " bytes: \"" << m << "\" does not say the file is truncated";
  }
}

TEST_F(IdxGzipStream, CorruptBytes) {
  const std::string raw = idx_labels_bytes(std::vector<uint8_t>(5000, 7));
  std::string gz = compressed(idx_images_bytes(40, 28, 28, random_bytes(40 * 28 * 28, 6)));
  const std::string path = dir_.file("corrupt.gz");
  gz[gz.size() / 2] = char(gz[gz.size() / 2] ^ 0x5a);
  write_file(path, gz);
  std::string m = error_of([&] { seednet::read_idx_images(path); });
  EXPECT_MESSAGE(m, path);
  EXPECT_MESSAGE(m, "corrupt");

  std::string labels_gz = compressed(raw);
  labels_gz[labels_gz.size() - 6] = char(labels_gz[labels_gz.size() - 6] ^ 0xff);  // the CRC-32 of the trailer
  const std::string labels_path = dir_.file("crc.gz");
  write_file(labels_path, labels_gz);
  m = error_of([&] { seednet::read_idx_labels(labels_path); });
  EXPECT_MESSAGE(m, labels_path);
  EXPECT_MESSAGE(m, "corrupt");
}

}  // namespace
}  // namespace convjit::testing::tools
