#include "reference_trainer/app/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "plugin/config/registry.h"

namespace gw::trainer {
namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string errno_text() { return std::strerror(errno); }

// A file descriptor that is closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Gives the descriptor up without closing it.
  void release() { fd_ = -1; }
  // Closes now, reporting the error that close() may be the first to see.
  bool close() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0;
  }

 private:
  int fd_;
};

std::string unique_suffix() { return ".tmp." + std::to_string(::getpid()); }

// All of `bytes` to `fd`; false (errno set) on an error.
bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// What check_writable's probe reserves for a moment: a few pages, so that a file system that is
// full, or all but, fails the check.
constexpr off_t kProbeBytes = off_t{64} << 10;

// Note [Outputs that are not files]
// A report or parameters path may name a character device or a FIFO (/dev/null, a pipe to
// another program): those are written in place, never replaced: renaming a temporary file over
// /dev/null, as root, would put a regular file where the system's device was. A checkpoint is
// rotated (the current file becomes .prev), which a device cannot be: it must name a regular file
// or nothing yet. Any other kind (a folder, a socket, a block device) is refused.
bool written_in_place(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode));
}

}  // namespace

HeldRoom& HeldRoom::operator=(HeldRoom&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

HeldRoom::~HeldRoom() {
  if (fd_ >= 0) ::close(fd_);
}

void check_writable(const std::string& path, const char* option, bool rotated) {
  reserve_room(path, option, rotated, 0);
}

HeldRoom reserve_room(const std::string& path, const char* option, bool rotated,
                      std::uint64_t bytes) {
  const std::string accepted =
      rotated ? " (accepted: a regular file path in an existing folder that this process can "
                "write)"
              : " (accepted: a file path in an existing folder that this process can write, or "
                "a character device or FIFO, written in place)";
  if (path.empty())
    throw config::ConfigError(std::string(option) + ": the path is empty" + accepted);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    const bool in_place = S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode);
    if (in_place && !rotated) {
      // A FIFO is not opened here: without a reader that would block.
      if (S_ISFIFO(st.st_mode) || ::access(path.c_str(), W_OK) == 0) return HeldRoom();
      throw config::ConfigError(std::string(option) + ": cannot write '" + path +
                                "': " + errno_text() + accepted);
    }
    const char* kind = S_ISDIR(st.st_mode) ? "a folder"
                       : in_place          ? "a device or FIFO"
                                           : "not a regular file";
    throw config::ConfigError(std::string(option) + ": '" + path + "' is " + kind + accepted);
  }
  const std::string probe = path + ".probe" + unique_suffix();
  Fd fd(::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    throw config::ConfigError(std::string(option) + ": cannot write '" + path +
                              "': " + errno_text() + accepted);
  }
  // The probe also takes the file's bytes and kProbeBytes more of the disk, held until the
  // returned HeldRoom goes: a file system without room for the file fails here, not after the
  // training. Unlinked at once, the probe leaves nothing behind however this process ends.
  const std::uint64_t room = bytes + static_cast<std::uint64_t>(kProbeBytes);
  const int rc = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(room));
  ::unlink(probe.c_str());
  if (rc == ENOSPC || rc == EDQUOT || rc == EFBIG) {
    throw config::ConfigError(
        std::string(option) + ": cannot write '" + path + "': " + std::strerror(rc) +
        " (no room for " + std::to_string((room + 1023) >> 10) + " KiB in its folder" +
        (bytes > 0 ? ", what it will hold and 64 KiB more" : "") + ")" + accepted);
  }
  HeldRoom held(fd.get());
  fd.release();
  return held;
}

std::string write_temporary(const std::string& path, const std::string& bytes) {
  const std::string temporary = path + unique_suffix();
  const auto fail = [&](const char* doing) {
    const std::string reason = errno_text();
    ::unlink(temporary.c_str());
    throw std::runtime_error(std::string(doing) + " '" + temporary + "' (for '" + path +
                             "'): " + reason);
  };
  Fd fd(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail("cannot create");
  if (!write_all(fd.get(), bytes)) fail("cannot write");
  if (::fsync(fd.get()) != 0) fail("cannot flush");
  if (!fd.close()) fail("cannot close");
  return temporary;
}

void replace_with_temporary(const std::string& temporary, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    ::unlink(temporary.c_str());
    throw std::runtime_error("'" + path + "' is not a regular file: it is not replaced");
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = errno_text();
    ::unlink(temporary.c_str());
    throw std::runtime_error("cannot rename '" + temporary + "' to '" + path + "': " + reason);
  }
  // The rename is durable once the folder is flushed; a folder that cannot be opened for it
  // (some file systems) keeps the rename as the kernel has it.
  Fd folder(::open(folder_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (folder.get() >= 0) ::fsync(folder.get());
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  if (!written_in_place(path)) {
    replace_with_temporary(write_temporary(path, bytes), path);
    return;
  }
  // Note [Outputs that are not files]
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  const auto fail = [&](const char* doing) {
    throw std::runtime_error(std::string(doing) + " '" + path + "': " + errno_text());
  };
  if (fd.get() < 0) fail("cannot open");
  if (!write_all(fd.get(), bytes)) fail("cannot write");
  if (!fd.close()) fail("cannot close");
}

}  // namespace gw::trainer
