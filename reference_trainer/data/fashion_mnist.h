// Fashion-MNIST as the reference trainer uses it: float pixels in [0, 1] and uint8 labels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference_trainer/data/data_error.h"

namespace gw::trainer {

// Where the Debian package dataset-fashion-mnist installs the four gzip'd IDX files.
inline constexpr char kDefaultFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
inline constexpr std::size_t kFashionMnistSide = 28;

struct Dataset {
  std::vector<float> images;         // size() x features(), row-major, each pixel value / 255
  std::vector<std::uint8_t> labels;  // size() labels, each < kNumClasses
  std::size_t rows = 0;
  std::size_t cols = 0;

  std::size_t size() const { return labels.size(); }
  std::size_t features() const { return rows * cols; }
};

struct FashionMnist {
  Dataset train;
  Dataset test;
};

// Loads one IDX images file and its IDX labels file; their counts must match. first > 0 keeps
// only the first `first` samples (as take_subset does), and converts only their pixels to float:
// the whole files are still read and checked. Throws DataError, and std::invalid_argument when
// first exceeds the count.
Dataset load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                         std::size_t first = 0);

// Loads train-{images-idx3,labels-idx1}-ubyte and t10k-... from `dir`, each as NAME.gz or, when
// that is absent, as NAME. Images must be 28 x 28. train_first and test_first, when not 0, keep
// only the first samples of each split (load_idx_dataset). Throws DataError.
FashionMnist load_fashion_mnist(const std::string& dir = kDefaultFashionMnistDir,
                                std::size_t train_first = 0, std::size_t test_first = 0);

// The first n samples of `data` (a copy). Throws std::invalid_argument if n > data.size().
Dataset take_subset(const Dataset& data, std::size_t n);

}  // namespace gw::trainer
