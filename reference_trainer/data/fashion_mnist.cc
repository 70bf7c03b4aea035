#include "reference_trainer/data/fashion_mnist.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <stdexcept>
#include <utility>

#include "reference_trainer/data/idx_reader.h"

namespace gw::trainer {
namespace {

namespace fs = std::filesystem;

// value / 255 for every byte, computed once so that conversion is a table lookup.
const std::array<float, 256>& pixel_scale_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> values{};
    for (std::size_t v = 0; v < values.size(); ++v) values[v] = static_cast<float>(v) / 255.0f;
    return values;
  }();
  return table;
}

// The .gz file if present, else the plain one: some mirrors ship the files already unpacked.
std::string find_idx_file(const std::string& dir, const std::string& name) {
  const fs::path gz = fs::path(dir) / (name + ".gz");
  const fs::path plain = fs::path(dir) / name;
  std::error_code ec;
  if (fs::exists(gz, ec)) return gz.string();
  if (fs::exists(plain, ec)) return plain.string();
  throw DataError("Fashion-MNIST file not found: neither '" + gz.string() + "' nor '" +
                  plain.string() + "' exists (" + kMissingDataHint + ")");
}

Dataset load_split(const std::string& dir, const std::string& prefix, const char* split,
                   std::size_t first) {
  const std::string images_path = find_idx_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_idx_file(dir, prefix + "-labels-idx1-ubyte");
  Dataset data = load_idx_dataset(images_path, labels_path, first);
  if (data.rows != kFashionMnistSide || data.cols != kFashionMnistSide) {
    throw DataError(std::string("Fashion-MNIST ") + split + " images '" + images_path + "' are " +
                    std::to_string(data.rows) + " x " + std::to_string(data.cols) +
                    " pixels, expected " + std::to_string(kFashionMnistSide) + " x " +
                    std::to_string(kFashionMnistSide));
  }
  return data;
}

void check_subset(std::size_t n, std::size_t available) {
  if (n > available) {
    throw std::invalid_argument("take_subset: asked for " + std::to_string(n) +
                                " samples but the data set holds only " +
                                std::to_string(available));
  }
}

}  // namespace

Dataset load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                         std::size_t first) {
  const IdxImages images = load_idx_images(images_path);
  std::vector<std::uint8_t> labels = load_idx_labels(labels_path);
  if (images.count != labels.size()) {
    throw DataError("image and label counts differ: '" + images_path + "' holds " +
                    std::to_string(images.count) + " images but '" + labels_path + "' holds " +
                    std::to_string(labels.size()) + " labels (they must match)");
  }
  const std::size_t n = first > 0 ? first : labels.size();
  check_subset(n, labels.size());

  Dataset data;
  data.rows = images.rows;
  data.cols = images.cols;
  labels.resize(n);
  data.labels = std::move(labels);
  // Only the samples kept are converted to floats: a run on a subset of a few thousand samples
  // (the suite's) neither converts nor holds the rest.
  const auto pixels = images.pixels.begin() + static_cast<std::ptrdiff_t>(n * data.features());
  data.images.resize(n * data.features());
  const auto& scale = pixel_scale_table();
  std::transform(images.pixels.begin(), pixels, data.images.begin(),
                 [&scale](std::uint8_t v) { return scale[v]; });
  return data;
}

FashionMnist load_fashion_mnist(const std::string& dir, std::size_t train_first,
                                std::size_t test_first) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw DataError("Fashion-MNIST directory '" + dir + "' does not exist or is not a directory (" +
                    kMissingDataHint + ")");
  }
  FashionMnist data;
  data.train = load_split(dir, "train", "train", train_first);
  data.test = load_split(dir, "t10k", "test", test_first);
  return data;
}

Dataset take_subset(const Dataset& data, std::size_t n) {
  check_subset(n, data.size());
  Dataset subset;
  subset.rows = data.rows;
  subset.cols = data.cols;
  const auto pixels = static_cast<std::ptrdiff_t>(n * data.features());
  subset.images.assign(data.images.begin(), data.images.begin() + pixels);
  subset.labels.assign(data.labels.begin(), data.labels.begin() + static_cast<std::ptrdiff_t>(n));
  return subset;
}

}  // namespace gw::trainer
