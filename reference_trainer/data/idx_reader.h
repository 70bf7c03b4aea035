// Readers for IDX files (the MNIST family's format), gzip'd or plain.
//
// An IDX file is a big-endian header (magic 0x0000TTDD: type TT, DD dimensions; then DD uint32
// sizes) followed by the payload, row-major. Only the unsigned-byte variants used by
// (Fashion-)MNIST are read. Every problem throws DataError naming the file and what was found
// versus expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference_trainer/data/data_error.h"

namespace gw::trainer {

inline constexpr std::uint32_t kIdxImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
inline constexpr std::uint32_t kIdxLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
inline constexpr std::size_t kNumClasses = 10;                // labels are 0..kNumClasses-1

// Plausibility limits on header sizes, so that a corrupt header fails before it allocates. Within
// them, the readers allocate as the data arrives, not what the header announces (a corrupt header
// in a small file fails as truncated having allocated about what the file holds).
inline constexpr std::size_t kMaxIdxCount = std::size_t{1} << 28;
inline constexpr std::size_t kMaxIdxSide = 4096;
inline constexpr std::size_t kMaxIdxPayloadBytes = std::size_t{1} << 32;

struct IdxImages {
  std::size_t count = 0;
  std::size_t rows = 0;
  std::size_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count x rows x cols, row-major
};

// Reads an IDX3 unsigned-byte file (magic 0x00000803).
IdxImages load_idx_images(const std::string& path);

// Reads an IDX1 unsigned-byte file (magic 0x00000801); every label must be < kNumClasses.
std::vector<std::uint8_t> load_idx_labels(const std::string& path);

}  // namespace gw::trainer
