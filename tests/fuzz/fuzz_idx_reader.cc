// The IDX data reader (reference_trainer/data/idx_reader.h) on arbitrary files, plain or gzip'd.
//
// Each input is written to an in-memory file (memfd) and read by path as an images file and as a
// labels file (the magic number decides which one can accept it). Invariants:
// - every problem is a DataError; nothing else escapes (std::bad_alloc included);
// - nothing allocates much more than the file holds: the run's -malloc_limit_mb (CMakeLists.txt)
//   is far above what an input of -max_len bytes can legitimately need, even gzip'd, and far below
//   what a header may announce;
// - what is accepted is consistent: the pixel count is count x rows x cols within the reader's
//   limits, every label is below kNumClasses, and a plain file is exactly header + payload bytes.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "reference_trainer/data/idx_reader.h"

using gw::fuzz::check;
using gw::fuzz::fail;
namespace gt = gw::trainer;

namespace {

// The in-memory file every input is written to, for the process's lifetime.
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("gw_fuzz_idx", 0)) {
    check(fd_ >= 0, "memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  void write(const std::uint8_t* data, std::size_t size) {
    check(ftruncate(fd_, 0) == 0, "ftruncate failed");
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      check(n > 0, "pwrite failed");
      done += static_cast<std::size_t>(n);
    }
  }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

bool gzip_magic(const std::uint8_t* data, std::size_t size) {
  return size >= 2 && data[0] == 0x1F && data[1] == 0x8B;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static MemoryFile file;
  file.write(data, size);
  const bool plain = !gzip_magic(data, size);

  try {
    const gt::IdxImages images = gt::load_idx_images(file.path());
    check(images.count >= 1 && images.count <= gt::kMaxIdxCount && images.rows >= 1 &&
              images.rows <= gt::kMaxIdxSide && images.cols >= 1 && images.cols <= gt::kMaxIdxSide,
          "accepted implausible image dimensions");
    check(images.pixels.size() == images.count * images.rows * images.cols,
          "the pixel count is not count x rows x cols");
    if (plain && size != 16 + images.pixels.size()) {
      fail("a plain images file of " + std::to_string(size) + " bytes was accepted with " +
           std::to_string(images.pixels.size()) + " pixels");
    }
  } catch (const gt::DataError&) {
  }

  try {
    const std::vector<std::uint8_t> labels = gt::load_idx_labels(file.path());
    check(!labels.empty() && labels.size() <= gt::kMaxIdxCount, "accepted an implausible count");
    for (const std::uint8_t label : labels) check(label < gt::kNumClasses, "a label out of range");
    if (plain && size != 8 + labels.size()) {
      fail("a plain labels file of " + std::to_string(size) + " bytes was accepted with " +
           std::to_string(labels.size()) + " labels");
    }
  } catch (const gt::DataError&) {
  }
  return 0;
}
