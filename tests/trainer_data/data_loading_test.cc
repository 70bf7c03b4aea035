// IDX reading and Fashion-MNIST loading: exact values from small files written here, every kind of
// corrupt file, and the real data set when it is installed.
#include <zlib.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "reference_trainer/data/fashion_mnist.h"
#include "reference_trainer/data/idx_reader.h"
#include "tests/common/temp_dir.h"

// The largest single allocation made while a test watches (LargestAllocation below), counted by
// replacing the global operator new in this binary.
namespace {
std::atomic<bool> g_watching{false};
std::atomic<std::size_t> g_largest{0};
}  // namespace

void* operator new(std::size_t size) {
  if (g_watching.load(std::memory_order_relaxed)) {
    std::size_t seen = g_largest.load();
    while (size > seen && !g_largest.compare_exchange_weak(seen, size)) {
    }
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace gw::trainer {
namespace {

// Watches operator new from construction to largest().
class LargestAllocation {
 public:
  LargestAllocation() {
    g_largest = 0;
    g_watching = true;
  }
  ~LargestAllocation() { g_watching = false; }
  LargestAllocation(const LargestAllocation&) = delete;
  LargestAllocation& operator=(const LargestAllocation&) = delete;
  std::size_t largest() const { return g_largest.load(); }
};

namespace fs = std::filesystem;
using Bytes = std::vector<std::uint8_t>;
using ::testing::HasSubstr;

using gw::testing::TempDir;

void append_be32(Bytes& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(v >> shift));
}

Bytes idx_images(std::uint32_t count, std::uint32_t rows, std::uint32_t cols, const Bytes& pixels) {
  Bytes out;
  append_be32(out, kIdxImagesMagic);
  append_be32(out, count);
  append_be32(out, rows);
  append_be32(out, cols);
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

Bytes idx_labels(const Bytes& labels) {
  Bytes out;
  append_be32(out, kIdxLabelsMagic);
  append_be32(out, static_cast<std::uint32_t>(labels.size()));
  out.insert(out.end(), labels.begin(), labels.end());
  return out;
}

// Pixel i of a test file: a fixed pattern that covers 0 and 255.
Bytes pattern_pixels(std::size_t n) {
  Bytes out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::uint8_t>((i * 37 + 11) % 256);
  return out;
}

Bytes random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(rng() >> 56);
  return out;
}

void write_plain(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_gzip(const std::string& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  if (file == nullptr) throw std::runtime_error("cannot gzopen " + path);
  const int wrote =
      bytes.empty() ? 0 : gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  const int closed = gzclose(file);
  if (wrote != static_cast<int>(bytes.size()) || closed != Z_OK) {
    throw std::runtime_error("cannot gzwrite " + path);
  }
}

Bytes read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The DataError message of `load`, or a test failure if it does not throw one.
template <typename Load>
std::string data_error_of(Load load) {
  try {
    load();
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a DataError";
  return "";
}

enum class Compression { kPlain, kGzip };

class IdxFileTest : public ::testing::TestWithParam<Compression> {
 protected:
  // Writes `bytes` as `name` (with .gz appended when gzip'd) and returns the path.
  std::string write(const std::string& name, const Bytes& bytes) {
    if (GetParam() == Compression::kGzip) {
      const std::string path = dir_.file(name + ".gz");
      write_gzip(path, bytes);
      return path;
    }
    const std::string path = dir_.file(name);
    write_plain(path, bytes);
    return path;
  }

  TempDir dir_;
};

INSTANTIATE_TEST_SUITE_P(Compressions, IdxFileTest,
                         ::testing::Values(Compression::kPlain, Compression::kGzip),
                         [](const auto& param_info) {
                           return param_info.param == Compression::kGzip ? "Gzip" : "Plain";
                         });

TEST_P(IdxFileTest, ReadsImagesExactly) {
  const Bytes pixels = pattern_pixels(3 * 2 * 4);
  const IdxImages images = load_idx_images(write("images", idx_images(3, 2, 4, pixels)));
  EXPECT_EQ(images.count, 3u);
  EXPECT_EQ(images.rows, 2u);
  EXPECT_EQ(images.cols, 4u);
  EXPECT_EQ(images.pixels, pixels);
}

TEST_P(IdxFileTest, ReadsLabelsExactly) {
  const Bytes labels = {0, 9, 3, 3, 7, 1, 0};
  EXPECT_EQ(load_idx_labels(write("labels", idx_labels(labels))), labels);
}

TEST_P(IdxFileTest, ReadsFilesLargerThanOneReadChunk) {
  // 300 x 256 x 256 bytes is more than the reader's 16 MiB chunk, so several gzread calls are
  // stitched together.
  const Bytes pixels = pattern_pixels(300u * 256u * 256u);
  const IdxImages images = load_idx_images(write("big", idx_images(300, 256, 256, pixels)));
  EXPECT_EQ(images.count, 300u);
  EXPECT_TRUE(images.pixels == pixels);
}

TEST_P(IdxFileTest, TruncatedHeaderNamesPathAndByteCounts) {
  Bytes bytes = idx_images(2, 2, 2, pattern_pixels(8));
  bytes.resize(10);
  const std::string path = write("images", bytes);
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("truncated header: expected 16 bytes, got 10"));

  Bytes labels = idx_labels({1, 2, 3});
  labels.resize(6);
  const std::string labels_path = write("labels", labels);
  const std::string labels_message = data_error_of([&] { load_idx_labels(labels_path); });
  EXPECT_THAT(labels_message, HasSubstr(labels_path));
  EXPECT_THAT(labels_message, HasSubstr("truncated header: expected 8 bytes, got 6"));
}

TEST_P(IdxFileTest, EmptyFileIsATruncatedHeader) {
  const std::string path = write("images", {});
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("truncated header: expected 16 bytes, got 0"));
}

TEST_P(IdxFileTest, TruncatedDataNamesPathAndByteCounts) {
  // The header promises 5 images of 2 x 3 = 30 bytes; only 3 images (18 bytes) follow.
  const std::string path = write("images", idx_images(5, 2, 3, pattern_pixels(18)));
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("truncated pixel data for 5 x 2 x 3: expected 30 bytes, got 18"));

  Bytes labels = idx_labels({1, 2, 3, 4});
  labels.pop_back();
  const std::string labels_path = write("labels", labels);
  const std::string labels_message = data_error_of([&] { load_idx_labels(labels_path); });
  EXPECT_THAT(labels_message, HasSubstr(labels_path));
  EXPECT_THAT(labels_message,
              HasSubstr("truncated label data for 4 labels: expected 4 bytes, got 3"));
}

// Regression (fuzz_idx_reader): a header that announces far more data than the file holds (here
// 256 MiB, within the plausibility limits) made the reader allocate all of it before it found the
// file short. Now it fails as truncated having allocated about what the file holds.
TEST_P(IdxFileTest, AHeaderAnnouncingMoreThanTheFileHoldsIsNotAllocated) {
  constexpr std::size_t kAtMost = std::size_t{4} << 20;  // the reader starts at 1 MiB
  const std::string images_path = write("images", idx_images(16, 4096, 4096, pattern_pixels(100)));
  std::string message;
  {
    LargestAllocation watch;
    message = data_error_of([&] { load_idx_images(images_path); });
    EXPECT_LE(watch.largest(), kAtMost);
  }
  EXPECT_THAT(message,
              HasSubstr("truncated pixel data for 16 x 4096 x 4096: expected 268435456 bytes, "
                        "got 100"));

  Bytes labels;
  append_be32(labels, kIdxLabelsMagic);
  append_be32(labels, std::uint32_t{1} << 28);
  labels.resize(labels.size() + 100, 1);
  const std::string labels_path = write("labels", labels);
  {
    LargestAllocation watch;
    message = data_error_of([&] { load_idx_labels(labels_path); });
    EXPECT_LE(watch.largest(), kAtMost);
  }
  EXPECT_THAT(message,
              HasSubstr("truncated label data for 268435456 labels: expected 268435456 bytes, "
                        "got 100"));
}

// The buffer grows while the data comes (1 MiB, then doubling): a payload past several steps,
// and one a byte short of it, read exactly.
TEST_P(IdxFileTest, PayloadsLargerThanTheFirstReadAreReadWhole) {
  const std::size_t n = 3 * 1000 * 1000;
  const Bytes pixels = pattern_pixels(n);
  const IdxImages images = load_idx_images(write("images", idx_images(3, 1000, 1000, pixels)));
  EXPECT_EQ(images.pixels, pixels);
  const Bytes short_by_one(pixels.begin(), pixels.end() - 1);
  const std::string path = write("short", idx_images(3, 1000, 1000, short_by_one));
  EXPECT_THAT(data_error_of([&] { load_idx_images(path); }),
              HasSubstr("expected 3000000 bytes, got 2999999"));
}

TEST_P(IdxFileTest, WrongMagicSaysFoundAndExpected) {
  const std::string labels_path = write("labels", idx_labels({1, 2}));
  const std::string message = data_error_of([&] { load_idx_images(labels_path); });
  EXPECT_THAT(message, HasSubstr(labels_path));
  EXPECT_THAT(message, HasSubstr("wrong magic number: found 0x00000801"));
  EXPECT_THAT(message, HasSubstr("expected 0x00000803"));

  const std::string images_path = write("images", idx_images(1, 1, 1, {5}));
  const std::string images_message = data_error_of([&] { load_idx_labels(images_path); });
  EXPECT_THAT(images_message, HasSubstr(images_path));
  EXPECT_THAT(images_message, HasSubstr("wrong magic number: found 0x00000803"));
  EXPECT_THAT(images_message, HasSubstr("expected 0x00000801"));
}

TEST_P(IdxFileTest, TrailingGarbageIsReported) {
  Bytes bytes = idx_images(2, 2, 2, pattern_pixels(8));
  bytes.insert(bytes.end(), {1, 2, 3, 4, 5});
  const std::string path = write("images", bytes);
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("trailing garbage: 5 bytes after the expected 24 bytes"));

  Bytes labels = idx_labels({1, 2, 3});
  labels.push_back(0);
  const std::string labels_path = write("labels", labels);
  const std::string labels_message = data_error_of([&] { load_idx_labels(labels_path); });
  EXPECT_THAT(labels_message, HasSubstr(labels_path));
  EXPECT_THAT(labels_message, HasSubstr("trailing garbage: 1 bytes after the expected 11 bytes"));
}

TEST_P(IdxFileTest, LabelOutOfRangeNamesIndexAndValue) {
  const std::string path = write("labels", idx_labels({1, 2, 12, 3, 10}));
  const std::string message = data_error_of([&] { load_idx_labels(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("label value 12 at index 2 is out of range (expected 0..9)"));
}

TEST_P(IdxFileTest, ImplausibleDimensionsAreRejected) {
  const std::string zero_rows = write("zero_rows", idx_images(2, 0, 28, {}));
  EXPECT_THAT(data_error_of([&] { load_idx_images(zero_rows); }),
              HasSubstr("implausible dimensions 2 x 0 x 28"));
  const std::string huge = write("huge", idx_images(60000, 100000, 28, {}));
  const std::string message = data_error_of([&] { load_idx_images(huge); });
  EXPECT_THAT(message, HasSubstr(huge));
  EXPECT_THAT(message, HasSubstr("implausible dimensions 60000 x 100000 x 28"));
  const std::string no_images = write("no_images", idx_images(0, 28, 28, {}));
  EXPECT_THAT(data_error_of([&] { load_idx_images(no_images); }),
              HasSubstr("implausible dimensions 0 x 28 x 28"));
  const std::string no_labels = write("no_labels", idx_labels({}));
  EXPECT_THAT(data_error_of([&] { load_idx_labels(no_labels); }),
              HasSubstr("implausible dimensions: 0 labels"));
}

TEST(IdxReaderTest, MissingFileNamesPathAndHint) {
  TempDir dir;
  const std::string path = dir.file("nope-images-idx3-ubyte.gz");
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("file not found"));
  EXPECT_THAT(message, HasSubstr("dataset-fashion-mnist"));
  EXPECT_THAT(message, HasSubstr("--data-dir"));
}

TEST(IdxReaderTest, DirectoryIsNotAFile) {
  TempDir dir;
  const std::string message = data_error_of([&] { load_idx_labels(dir.path().string()); });
  EXPECT_THAT(message, HasSubstr(dir.path().string()));
  EXPECT_THAT(message, HasSubstr("is a directory"));
}

TEST(IdxReaderTest, RandomGarbageIsNotAnIdxFile) {
  TempDir dir;
  const Bytes garbage = random_bytes(4096, 7);
  // Neither gzip (1f 8b) nor IDX (00 00 ...): read as plain bytes with a meaningless magic.
  ASSERT_FALSE(garbage[0] == 0x1f && garbage[1] == 0x8b);
  ASSERT_FALSE(garbage[0] == 0 && garbage[1] == 0);
  const std::string path = dir.file("garbage.gz");
  write_plain(path, garbage);
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("wrong magic number"));
  EXPECT_THAT(message, HasSubstr("not an IDX file"));
  EXPECT_THAT(data_error_of([&] { load_idx_labels(path); }), HasSubstr("wrong magic number"));
}

TEST(IdxReaderTest, CorruptGzipStreamIsAZlibError) {
  TempDir dir;
  // A gzip header (magic, deflate, no flags) followed by bytes that are not a deflate stream.
  Bytes bytes = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03};
  const Bytes tail = random_bytes(256, 11);
  bytes.insert(bytes.end(), tail.begin(), tail.end());
  bytes[10] = 0xFF;  // deflate block type 3 is reserved: an immediate "invalid block type"
  const std::string path = dir.file("corrupt.gz");
  write_plain(path, bytes);
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("corrupt gzip stream (zlib: "));
}

TEST(IdxReaderTest, GzipChecksumMismatchIsAZlibError) {
  TempDir dir;
  const std::string path = dir.file("images.gz");
  write_gzip(path, idx_images(4, 3, 3, pattern_pixels(36)));
  Bytes bytes = read_raw(path);
  bytes[bytes.size() - 8] ^= 0xFF;  // the trailer's CRC-32
  write_plain(path, bytes);
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("corrupt gzip stream (zlib: incorrect data check)"));
}

TEST(IdxReaderTest, GzipStreamCutShortIsTruncated) {
  TempDir dir;
  const std::string path = dir.file("images.gz");
  // Random pixels barely compress, so cutting the file in half cuts the pixel data.
  write_gzip(path, idx_images(64, 16, 16, random_bytes(64 * 16 * 16, 3)));
  Bytes bytes = read_raw(path);
  bytes.resize(bytes.size() / 2);
  write_plain(path, bytes);
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("truncated pixel data for 64 x 16 x 16: expected 16384 bytes"));
  EXPECT_THAT(message, HasSubstr("the gzip stream ends early"));
}

TEST(IdxReaderTest, GzipTrailerCutShortIsTruncated) {
  TempDir dir;
  const std::string path = dir.file("labels.gz");
  write_gzip(path, idx_labels({1, 2, 3}));
  Bytes bytes = read_raw(path);
  bytes.resize(bytes.size() - 4);  // drop the length field of the trailer; all data is intact
  write_plain(path, bytes);
  const std::string message = data_error_of([&] { load_idx_labels(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("truncated gzip stream"));
}

TEST(IdxReaderTest, GzipWithoutItsTrailerIsTruncated) {
  TempDir dir;
  const std::string path = dir.file("images.gz");
  write_gzip(path, idx_images(64, 10, 10, random_bytes(64 * 10 * 10, 3)));
  Bytes bytes = read_raw(path);
  bytes.resize(bytes.size() - 8);  // the whole trailer (CRC-32 and length); all data is intact
  write_plain(path, bytes);
  const std::string message = data_error_of([&] { load_idx_images(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("truncated gzip stream"));
}

// A gzip file read whole (Note [Whole-file decoding], idx_reader.cc) or streamed reads the same
// bytes: its members concatenated, in order.
TEST(IdxReaderTest, GzipMembersAreReadInOrder) {
  TempDir dir;
  const Bytes pixels = random_bytes(8 * 10 * 10, 5);
  const Bytes whole = idx_images(8, 10, 10, pixels);
  const Bytes first(whole.begin(), whole.begin() + 300);
  const Bytes rest(whole.begin() + 300, whole.end());
  write_gzip(dir.file("a.gz"), first);
  write_gzip(dir.file("b.gz"), rest);
  Bytes joined = read_raw(dir.file("a.gz"));
  const Bytes second = read_raw(dir.file("b.gz"));
  joined.insert(joined.end(), second.begin(), second.end());
  const std::string path = dir.file("images.gz");
  write_plain(path, joined);
  EXPECT_EQ(load_idx_images(path).pixels, pixels);
}

// Data that compresses far beyond the decoder's first buffer (its trailer's length capped at 16
// times the file's size) is read whole all the same.
TEST(IdxReaderTest, HighlyCompressibleGzipIsReadWhole) {
  TempDir dir;
  const std::string path = dir.file("images.gz");
  const Bytes pixels(300 * 256 * 256, 0);
  write_gzip(path, idx_images(300, 256, 256, pixels));
  ASSERT_LT(read_raw(path).size() * 64, pixels.size());
  EXPECT_EQ(load_idx_images(path).pixels, pixels);
}

TEST(IdxReaderTest, GzipLengthMismatchIsAZlibError) {
  TempDir dir;
  const std::string path = dir.file("labels.gz");
  write_gzip(path, idx_labels({1, 2, 3}));
  Bytes bytes = read_raw(path);
  bytes[bytes.size() - 4] ^= 0x01;  // the trailer's length, modulo 2^32
  write_plain(path, bytes);
  const std::string message = data_error_of([&] { load_idx_labels(path); });
  EXPECT_THAT(message, HasSubstr(path));
  EXPECT_THAT(message, HasSubstr("corrupt gzip stream (zlib: incorrect length check)"));
}

// --- Dataset and Fashion-MNIST
// --------------------------------------------------------------------

// Writes a Fashion-MNIST-shaped split (`prefix`-images/labels) with `count` images of side x side.
void write_split(const TempDir& dir, const std::string& prefix, std::uint32_t count,
                 std::uint32_t side, const Bytes& labels, Compression compression) {
  const Bytes images =
      idx_images(count, side, side, pattern_pixels(std::size_t{count} * side * side));
  const std::string images_name = prefix + "-images-idx3-ubyte";
  const std::string labels_name = prefix + "-labels-idx1-ubyte";
  if (compression == Compression::kGzip) {
    write_gzip(dir.file(images_name + ".gz"), images);
    write_gzip(dir.file(labels_name + ".gz"), idx_labels(labels));
  } else {
    write_plain(dir.file(images_name), images);
    write_plain(dir.file(labels_name), idx_labels(labels));
  }
}

TEST(DatasetTest, PixelsAreScaledToUnitInterval) {
  TempDir dir;
  const Bytes pixels = {0, 1, 128, 255, 51, 204};
  write_plain(dir.file("i"), idx_images(3, 1, 2, pixels));
  write_plain(dir.file("l"), idx_labels({4, 0, 9}));
  const Dataset data = load_idx_dataset(dir.file("i"), dir.file("l"));
  EXPECT_EQ(data.size(), 3u);
  EXPECT_EQ(data.rows, 1u);
  EXPECT_EQ(data.cols, 2u);
  EXPECT_EQ(data.features(), 2u);
  EXPECT_EQ(data.labels, (Bytes{4, 0, 9}));
  ASSERT_EQ(data.images.size(), pixels.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    EXPECT_EQ(data.images[i], static_cast<float>(pixels[i]) / 255.0f) << "pixel " << i;
  }
  EXPECT_EQ(data.images[0], 0.0f);
  EXPECT_EQ(data.images[3], 1.0f);
  EXPECT_EQ(data.images[4], 0.2f);
}

TEST(DatasetTest, CountMismatchNamesBothFilesAndCounts) {
  TempDir dir;
  write_plain(dir.file("i"), idx_images(3, 2, 2, pattern_pixels(12)));
  write_plain(dir.file("l"), idx_labels({1, 2}));
  const std::string message =
      data_error_of([&] { load_idx_dataset(dir.file("i"), dir.file("l")); });
  EXPECT_THAT(message, HasSubstr("'" + dir.file("i") + "' holds 3 images"));
  EXPECT_THAT(message, HasSubstr("'" + dir.file("l") + "' holds 2 labels"));
}

TEST(FashionMnistTest, LoadsGzipAndPlainFiles) {
  TempDir dir;
  write_split(dir, "train", 5, 28, {0, 1, 2, 3, 9}, Compression::kGzip);
  write_split(dir, "t10k", 2, 28, {5, 6}, Compression::kPlain);
  const FashionMnist data = load_fashion_mnist(dir.path().string());
  EXPECT_EQ(data.train.size(), 5u);
  EXPECT_EQ(data.test.size(), 2u);
  EXPECT_EQ(data.train.features(), 784u);
  EXPECT_EQ(data.train.images.size(), 5u * 784u);
  EXPECT_EQ(data.test.labels, (Bytes{5, 6}));
  const Bytes pixels = pattern_pixels(5 * 784);
  EXPECT_EQ(data.train.images[1000], static_cast<float>(pixels[1000]) / 255.0f);
}

TEST(FashionMnistTest, PrefersGzipWhenBothExist) {
  TempDir dir;
  write_split(dir, "train", 2, 28, {1, 1}, Compression::kGzip);
  write_split(dir, "train", 3, 28, {2, 2, 2}, Compression::kPlain);
  write_split(dir, "t10k", 1, 28, {3}, Compression::kGzip);
  EXPECT_EQ(load_fashion_mnist(dir.path().string()).train.labels, (Bytes{1, 1}));
}

TEST(FashionMnistTest, CountMismatchNamesBothFilesAndCounts) {
  TempDir dir;
  write_split(dir, "train", 3, 28, {1, 2, 3}, Compression::kGzip);
  write_split(dir, "t10k", 3, 28, {1, 2, 3}, Compression::kGzip);
  write_gzip(dir.file("t10k-labels-idx1-ubyte.gz"), idx_labels({1, 2}));
  const std::string message = data_error_of([&] { load_fashion_mnist(dir.path().string()); });
  EXPECT_THAT(message, HasSubstr("'" + dir.file("t10k-images-idx3-ubyte.gz") + "' holds 3 images"));
  EXPECT_THAT(message, HasSubstr("'" + dir.file("t10k-labels-idx1-ubyte.gz") + "' holds 2 labels"));
}

TEST(FashionMnistTest, WrongImageSizeIsRejected) {
  TempDir dir;
  write_split(dir, "train", 2, 5, {1, 2}, Compression::kGzip);
  write_split(dir, "t10k", 1, 28, {3}, Compression::kGzip);
  const std::string message = data_error_of([&] { load_fashion_mnist(dir.path().string()); });
  EXPECT_THAT(message, HasSubstr(dir.file("train-images-idx3-ubyte.gz")));
  EXPECT_THAT(message, HasSubstr("are 5 x 5 pixels, expected 28 x 28"));
}

TEST(FashionMnistTest, MissingFileNamesBothCandidates) {
  TempDir dir;
  write_split(dir, "train", 2, 28, {1, 2}, Compression::kGzip);
  write_gzip(dir.file("t10k-images-idx3-ubyte.gz"), idx_images(1, 28, 28, pattern_pixels(784)));
  const std::string message = data_error_of([&] { load_fashion_mnist(dir.path().string()); });
  EXPECT_THAT(message, HasSubstr(dir.file("t10k-labels-idx1-ubyte.gz")));
  EXPECT_THAT(message, HasSubstr(dir.file("t10k-labels-idx1-ubyte") + "' exists"));
  EXPECT_THAT(message, HasSubstr("dataset-fashion-mnist"));
}

TEST(FashionMnistTest, MissingDirectoryIsADataError) {
  TempDir dir;
  const std::string missing = dir.file("no-such-dir");
  const std::string message = data_error_of([&] { load_fashion_mnist(missing); });
  EXPECT_THAT(message, HasSubstr(missing));
  EXPECT_THAT(message, HasSubstr("does not exist"));
  EXPECT_THAT(message, HasSubstr("--data-dir"));
}

TEST(FashionMnistTest, TakeSubsetKeepsTheFirstSamples) {
  Dataset data;
  data.rows = 1;
  data.cols = 2;
  data.images = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f};
  data.labels = {7, 8, 9};
  const Dataset subset = take_subset(data, 2);
  EXPECT_EQ(subset.size(), 2u);
  EXPECT_EQ(subset.rows, 1u);
  EXPECT_EQ(subset.cols, 2u);
  EXPECT_EQ(subset.images, (std::vector<float>{0.0f, 0.1f, 0.2f, 0.3f}));
  EXPECT_EQ(subset.labels, (Bytes{7, 8}));
  EXPECT_EQ(take_subset(data, 0).size(), 0u);
  EXPECT_EQ(take_subset(data, 3).images, data.images);
  try {
    take_subset(data, 4);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(std::string(e.what()),
                HasSubstr("asked for 4 samples but the data set holds only 3"));
  }
}

TEST(FashionMnistTest, LoadingTheFirstSamplesEqualsTakingThemAfterwards) {
  TempDir dir;
  write_split(dir, "train", 5, 28, {0, 1, 2, 3, 9}, Compression::kGzip);
  write_split(dir, "t10k", 3, 28, {5, 6, 7}, Compression::kPlain);
  const FashionMnist whole = load_fashion_mnist(dir.path().string());
  const FashionMnist first = load_fashion_mnist(dir.path().string(), 2, 3);
  EXPECT_EQ(first.train.images, take_subset(whole.train, 2).images);
  EXPECT_EQ(first.train.labels, (Bytes{0, 1}));
  EXPECT_EQ(first.train.rows, 28u);
  EXPECT_EQ(first.test.images, whole.test.images);
  EXPECT_EQ(first.test.labels, whole.test.labels);
  try {
    load_idx_dataset(dir.file("train-images-idx3-ubyte.gz"), dir.file("train-labels-idx1-ubyte.gz"),
                     6);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(std::string(e.what()),
                HasSubstr("asked for 6 samples but the data set holds only 5"));
  }
}

TEST(FashionMnistTest, RealDataSet) {
  if (!fs::is_directory(kDefaultFashionMnistDir)) {
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << kDefaultFashionMnistDir
                 << " (install the Debian package dataset-fashion-mnist to run this test)";
  }
  const FashionMnist data = load_fashion_mnist();
  ASSERT_EQ(data.train.size(), 60000u);
  ASSERT_EQ(data.test.size(), 10000u);
  for (const Dataset* split : {&data.train, &data.test}) {
    EXPECT_EQ(split->rows, 28u);
    EXPECT_EQ(split->cols, 28u);
    EXPECT_EQ(split->images.size(), split->size() * 784u);
    std::array<std::size_t, kNumClasses> per_class{};
    for (std::uint8_t label : split->labels) {
      ASSERT_LT(label, kNumClasses);
      ++per_class[label];
    }
    const std::size_t expected_per_class = split->size() / kNumClasses;
    for (std::size_t c = 0; c < kNumClasses; ++c) {
      EXPECT_EQ(per_class[c], expected_per_class) << "class " << c;
    }
    float lo = 1.0f;
    float hi = 0.0f;
    for (float v : split->images) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    EXPECT_EQ(lo, 0.0f);
    EXPECT_EQ(hi, 1.0f);
  }
}

}  // namespace
}  // namespace gw::trainer
