#include "reference_trainer/data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>

#if GRADWIRE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

namespace gw::trainer {
namespace {

// zlib's internal buffer, and the most one gzread call is asked for (gzread takes an unsigned and
// returns an int, so a call must stay well under INT_MAX).
constexpr unsigned kGzBufferBytes = 1u << 20;
constexpr std::size_t kReadChunkBytes = std::size_t{1} << 24;
// The payload buffer's first size; it doubles from there as the data keeps coming.
constexpr std::size_t kFirstPayloadBytes = std::size_t{1} << 20;

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzHandle = std::unique_ptr<gzFile_s, GzCloser>;

std::string hex32(std::uint32_t value) {
  std::array<char, 16> text{};
  std::snprintf(text.data(), text.size(), "0x%08X", static_cast<unsigned>(value));
  return text.data();
}

std::uint32_t read_be32(const std::uint8_t* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

// Says what a magic number means, so that "found 0x00000801" reads as "a labels file".
std::string describe_magic(std::uint32_t magic) {
  if ((magic >> 16) != 0) return "not an IDX file";
  const unsigned type = (magic >> 8) & 0xFF;
  const unsigned dims = magic & 0xFF;
  std::string what = "IDX";
  switch (type) {
    case 0x08:
      what += " unsigned bytes";
      break;
    case 0x09:
      what += " signed bytes";
      break;
    case 0x0B:
      what += " int16";
      break;
    case 0x0C:
      what += " int32";
      break;
    case 0x0D:
      what += " float32";
      break;
    case 0x0E:
      what += " float64";
      break;
    default:
      return "not an IDX file";
  }
  return what + ", " + std::to_string(dims) + (dims == 1 ? " dimension" : " dimensions");
}

// Note [Whole-file decoding]
// Every rank of every run reads the whole data set, and zlib's streaming inflate was most of a
// small run's start-up (the training images alone are 26 MB of gzip). So a regular file is first
// read whole and, when gzip'd, decoded by libdeflate's whole-buffer decoder, which is several
// times faster and checks every member's CRC-32 and length. That path only ever succeeds: a file
// it cannot read or decode whole (a damaged stream, a cut trailer, anything libdeflate refuses, a
// file over the size limits, a build without libdeflate) is read again through zlib's streaming
// reader below, whose diagnostics (a truncated header or payload, the gzip stream ending early, a
// corrupt stream) are the reader's errors either way. Where both succeed they yield the same
// bytes: the concatenated members. One case zlib's reader misses: a trailer cut off where a read
// ended exactly at the data's end (gzread then reports the end of the file, not an error); so a
// file libdeflate refused as bad data is refused even when zlib reads it to its end. Memory stays
// bounded by what the file holds: the decode buffer starts at the last member's recorded length
// (capped at kMaxHintRatio times the compressed size) and doubles only while libdeflate reports it
// short, up to kMaxDecodedBytes.
constexpr std::size_t kMaxDecodedBytes = kMaxIdxPayloadBytes + 16;  // the largest header + payload
constexpr std::size_t kMaxHintRatio = 16;

// The whole regular file at `path`, or false where it cannot be read or exceeds `limit` bytes.
bool read_whole_file(const std::string& path, std::size_t limit, std::vector<std::uint8_t>& out) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > limit) return false;
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  out.resize(static_cast<std::size_t>(size));
  file.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
  return file.gcount() == static_cast<std::streamsize>(out.size()) && file.peek() == EOF;
}

enum class WholeGzip { kDecoded, kBadData, kNotDecoded };

// The concatenated members of the gzip file `in`, decoded whole into `out`; kBadData where
// libdeflate refused a member as damaged, kNotDecoded where it could not try (too short, too
// large, no libdeflate). See Note [Whole-file decoding].
WholeGzip decode_gzip_whole([[maybe_unused]] const std::vector<std::uint8_t>& in,
                            [[maybe_unused]] std::vector<std::uint8_t>& out) {
#if GRADWIRE_HAVE_LIBDEFLATE
  if (in.size() < 18) return WholeGzip::kNotDecoded;  // a member's header and trailer: 18 bytes
  struct Free {
    void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
  };
  const std::unique_ptr<libdeflate_decompressor, Free> decoder(libdeflate_alloc_decompressor());
  if (!decoder) return WholeGzip::kNotDecoded;
  const std::uint8_t* isize = in.data() + in.size() - 4;  // little-endian, modulo 2^32
  const std::size_t hint = std::uint32_t{isize[0]} | (std::uint32_t{isize[1]} << 8) |
                           (std::uint32_t{isize[2]} << 16) | (std::uint32_t{isize[3]} << 24);
  out.resize(
      std::clamp<std::size_t>(hint, 1, std::min(kMaxDecodedBytes, kMaxHintRatio * in.size())));
  std::size_t in_used = 0, out_used = 0;
  while (in_used < in.size()) {
    std::size_t member_in = 0, member_out = 0;
    const libdeflate_result result = libdeflate_gzip_decompress_ex(
        decoder.get(), in.data() + in_used, in.size() - in_used, out.data() + out_used,
        out.size() - out_used, &member_in, &member_out);
    if (result == LIBDEFLATE_INSUFFICIENT_SPACE && out.size() < kMaxDecodedBytes) {
      out.resize(std::min(kMaxDecodedBytes, 2 * out.size()));
      continue;  // the same member again, into the larger buffer
    }
    if (result == LIBDEFLATE_BAD_DATA) return WholeGzip::kBadData;
    if (result != LIBDEFLATE_SUCCESS) return WholeGzip::kNotDecoded;
    in_used += member_in;
    out_used += member_out;
  }
  out.resize(out_used);
  return WholeGzip::kDecoded;
#else
  return WholeGzip::kNotDecoded;
#endif
}

// One IDX file: read whole where it can be (Note [Whole-file decoding]), else through zlib, which
// reads gzip'd and plain files alike.
class IdxInput {
 public:
  IdxInput(std::string path, const char* kind) : path_(std::move(path)), kind_(kind) {
    std::error_code ec;
    const auto status = std::filesystem::status(path_, ec);
    if (status.type() == std::filesystem::file_type::not_found) {
      fail(std::string("file not found (") + kMissingDataHint + ")");
    }
    if (status.type() == std::filesystem::file_type::directory) {
      fail("is a directory, expected an IDX file");
    }
    if (status.type() == std::filesystem::file_type::regular && read_whole()) return;
    errno = 0;
    file_.reset(gzopen(path_.c_str(), "rb"));
    if (!file_) {
      const std::string reason = errno != 0 ? std::strerror(errno) : "gzopen failed";
      fail("cannot open: " + reason + " (" + kMissingDataHint + ")");
    }
    gzbuffer(file_.get(), kGzBufferBytes);
  }

  [[noreturn]] void fail(const std::string& problem) const {
    throw DataError(std::string(kind_) + " '" + path_ + "': " + problem);
  }

  // Reads up to n bytes, fewer only at the end of the data. A corrupt gzip stream throws; a gzip
  // stream cut short returns what it held (see truncated_gzip()).
  std::size_t read(std::uint8_t* dst, std::size_t n) {
    if (whole_) {
      const std::size_t got = std::min(n, bytes_.size() - offset_);
      std::copy_n(bytes_.data() + offset_, got, dst);
      offset_ += got;
      return got;
    }
    std::size_t total = 0;
    while (total < n) {
      const auto ask = static_cast<unsigned>(std::min(n - total, kReadChunkBytes));
      const int got = gzread(file_.get(), dst + total, ask);
      if (got < 0) fail_zlib();
      if (got == 0) break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

  // Reads past the payload to the end of the data. Returns the number of extra bytes; reading to
  // the end is also what makes zlib check the gzip trailer (CRC and length).
  std::size_t drain() {
    if (whole_) {
      const std::size_t extra = bytes_.size() - offset_;
      offset_ = bytes_.size();
      return extra;
    }
    std::array<std::uint8_t, 1 << 16> sink{};
    std::size_t extra = 0;
    for (;;) {
      const int got = gzread(file_.get(), sink.data(), static_cast<unsigned>(sink.size()));
      if (got < 0) fail_zlib();
      if (got == 0) return extra;
      extra += static_cast<std::size_t>(got);
    }
  }

  // True when the file is gzip'd but its compressed stream stops before the gzip trailer.
  bool truncated_gzip() const {
    if (whole_) return false;
    int errnum = Z_OK;
    gzerror(file_.get(), &errnum);
    return errnum == Z_BUF_ERROR;
  }

  std::string truncated_gzip_note() const {
    return truncated_gzip() ? " (the gzip stream ends early: " + zlib_message() + ")" : "";
  }

  // Reads the `bytes` bytes of `what` that the header announces; a short read is reported as a
  // truncated file. The buffer grows with the data actually read, never to the announced size up
  // front: a gzip'd file's size says nothing of its contents, so a corrupt header in a small file
  // would otherwise allocate up to kMaxIdxPayloadBytes before the file turns out short. It holds
  // at most twice the bytes read (and at least kFirstPayloadBytes).
  std::vector<std::uint8_t> read_payload(std::size_t bytes, const std::string& what) {
    if (whole_) return take_payload(bytes, what);
    std::vector<std::uint8_t> out;
    std::size_t have = 0;
    while (have < bytes) {
      const std::size_t want = std::min(bytes, std::max(kFirstPayloadBytes, 2 * have));
      out.resize(want);
      have += read(out.data() + have, want - have);
      if (have < want) {
        fail("truncated " + what + ": expected " + std::to_string(bytes) + " bytes, got " +
             std::to_string(have) + truncated_gzip_note());
      }
    }
    return out;
  }

  // read_payload of a file read whole: its buffer, moved out, the header erased in place, so the
  // payload is not copied into fresh memory; what follows the payload stays for expect_end.
  std::vector<std::uint8_t> take_payload(std::size_t bytes, const std::string& what) {
    const std::size_t have = bytes_.size() - offset_;
    if (have < bytes) {
      fail("truncated " + what + ": expected " + std::to_string(bytes) + " bytes, got " +
           std::to_string(have));
    }
    std::vector<std::uint8_t> out = std::move(bytes_);
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(offset_));
    bytes_.assign(out.begin() + static_cast<std::ptrdiff_t>(bytes), out.end());
    offset_ = 0;
    out.resize(bytes);
    return out;
  }

  // Checks that nothing follows the payload and that the gzip stream, if any, ends cleanly.
  void expect_end(std::size_t file_bytes) {
    const std::size_t extra = drain();
    if (extra != 0) {
      fail("trailing garbage: " + std::to_string(extra) + " bytes after the expected " +
           std::to_string(file_bytes) + " bytes (header + data)");
    }
    if (truncated_gzip()) {
      fail("truncated gzip stream after all " + std::to_string(file_bytes) +
           " data bytes: " + zlib_message());
    }
    if (refused_as_bad_data_) {  // Note [Whole-file decoding]: zlib missed what libdeflate saw
      fail("truncated gzip stream or damaged trailer after all " + std::to_string(file_bytes) +
           " data bytes: the gzip trailer (CRC-32 and length) is missing or does not match "
           "the data (libdeflate refused the file)");
    }
  }

  // Reads a header of `bytes` bytes (magic first) and checks its magic. A wrong magic is reported
  // before a short header, so that a short non-IDX file is called what it is.
  void read_header(std::uint8_t* dst, std::size_t bytes, std::uint32_t expected_magic) {
    const std::size_t got = read(dst, bytes);
    if (got >= 4) {
      const std::uint32_t magic = read_be32(dst);
      if (magic != expected_magic) {
        fail("wrong magic number: found " + hex32(magic) + " (" + describe_magic(magic) +
             "), expected " + hex32(expected_magic) + " (" + describe_magic(expected_magic) + ")");
      }
    }
    if (got != bytes) {
      fail("truncated header: expected " + std::to_string(bytes) + " bytes, got " +
           std::to_string(got) + truncated_gzip_note());
    }
  }

 private:
  // Reads the file whole, decoding it when gzip'd; false where that fails (the file is then read
  // through zlib).
  bool read_whole() {
    std::vector<std::uint8_t> file;
    if (!read_whole_file(path_, kMaxDecodedBytes, file)) return false;
    const bool gzipped = file.size() >= 2 && file[0] == 0x1f && file[1] == 0x8b;
    if (!gzipped) {
      bytes_ = std::move(file);
    } else if (const WholeGzip got = decode_gzip_whole(file, bytes_); got != WholeGzip::kDecoded) {
      bytes_ = {};
      refused_as_bad_data_ = got == WholeGzip::kBadData;
      return false;
    }
    whole_ = true;
    return true;
  }

  // gzerror's text starts with the path, which our own prefix already names.
  std::string zlib_message() const {
    int errnum = Z_OK;
    std::string message = gzerror(file_.get(), &errnum);
    const std::string prefix = path_ + ": ";
    if (message.compare(0, prefix.size(), prefix) == 0) message.erase(0, prefix.size());
    return "zlib: " + message;
  }

  [[noreturn]] void fail_zlib() const {
    int errnum = Z_OK;
    gzerror(file_.get(), &errnum);
    if (errnum == Z_ERRNO) fail("read error (" + zlib_message() + ")");
    fail("not a valid gzip file or corrupt gzip stream (" + zlib_message() + ")");
  }

  std::string path_;
  const char* kind_;
  GzHandle file_;                     // the streaming path
  bool whole_ = false;                // read whole instead: bytes_ from offset_ on are unread
  bool refused_as_bad_data_ = false;  // libdeflate refused it as damaged: refused here too
  std::vector<std::uint8_t> bytes_;
  std::size_t offset_ = 0;
};

}  // namespace

IdxImages load_idx_images(const std::string& path) {
  IdxInput input(path, "IDX images file");
  std::array<std::uint8_t, 16> header{};
  input.read_header(header.data(), header.size(), kIdxImagesMagic);

  IdxImages images;
  images.count = read_be32(header.data() + 4);
  images.rows = read_be32(header.data() + 8);
  images.cols = read_be32(header.data() + 12);
  const std::size_t payload = images.count * images.rows * images.cols;
  if (images.count < 1 || images.count > kMaxIdxCount || images.rows < 1 ||
      images.rows > kMaxIdxSide || images.cols < 1 || images.cols > kMaxIdxSide ||
      payload > kMaxIdxPayloadBytes) {
    input.fail("implausible dimensions " + std::to_string(images.count) + " x " +
               std::to_string(images.rows) + " x " + std::to_string(images.cols) +
               " (expected 1.." + std::to_string(kMaxIdxCount) + " images of 1.." +
               std::to_string(kMaxIdxSide) + " x 1.." + std::to_string(kMaxIdxSide) +
               " pixels, at most " + std::to_string(kMaxIdxPayloadBytes) + " bytes in all)");
  }

  images.pixels = input.read_payload(payload, "pixel data for " + std::to_string(images.count) +
                                                  " x " + std::to_string(images.rows) + " x " +
                                                  std::to_string(images.cols));
  input.expect_end(header.size() + payload);
  return images;
}

std::vector<std::uint8_t> load_idx_labels(const std::string& path) {
  IdxInput input(path, "IDX labels file");
  std::array<std::uint8_t, 8> header{};
  input.read_header(header.data(), header.size(), kIdxLabelsMagic);

  const std::size_t count = read_be32(header.data() + 4);
  if (count < 1 || count > kMaxIdxCount) {
    input.fail("implausible dimensions: " + std::to_string(count) + " labels (expected 1.." +
               std::to_string(kMaxIdxCount) + ")");
  }

  std::vector<std::uint8_t> labels =
      input.read_payload(count, "label data for " + std::to_string(count) + " labels");
  input.expect_end(header.size() + count);

  const auto bad = std::find_if(labels.begin(), labels.end(),
                                [](std::uint8_t label) { return label >= kNumClasses; });
  if (bad != labels.end()) {
    input.fail("label value " + std::to_string(*bad) + " at index " +
               std::to_string(bad - labels.begin()) + " is out of range (expected 0.." +
               std::to_string(kNumClasses - 1) + ")");
  }
  return labels;
}

}  // namespace gw::trainer
