// The trainer's output files (report, parameters, checkpoints): checked before training, so a
// typo fails in the first second rather than after an hour, and written atomically, so a crash
// or a full disk never leaves a half-written file under the final name.
#pragma once

#include <cstdint>
#include <string>

namespace gw::trainer {

// Throws config::ConfigError naming `option` and `path` when no file can be created at `path`:
// its folder is missing or not writable, its file system has no room for a few pages, or `path`
// is a folder. Creates and removes a probe file beside it (holding those pages for a moment);
// leaves an existing file at `path` untouched. A character device or FIFO at `path` is accepted
// (written in place by write_file_atomically) unless the file is `rotated`, as a checkpoint is
// (Note [Outputs that are not files]).
void check_writable(const std::string& path, const char* option, bool rotated = false);

// The room a probe holds on a file system (reserve_room), given back on destruction: a file
// already unlinked, whose blocks stay allocated while its descriptor is open.
class HeldRoom {
 public:
  HeldRoom() = default;
  explicit HeldRoom(int fd) : fd_(fd) {}
  HeldRoom(HeldRoom&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  HeldRoom& operator=(HeldRoom&& other) noexcept;
  HeldRoom(const HeldRoom&) = delete;
  HeldRoom& operator=(const HeldRoom&) = delete;
  ~HeldRoom();

 private:
  int fd_ = -1;
};

// check_writable, with room for `bytes` (what the file will hold) besides the few pages, kept
// until the returned object goes: processes that share a file system and hold theirs at once are
// checked together for the room they all need (Note [Room for what a run writes]).
HeldRoom reserve_room(const std::string& path, const char* option, bool rotated,
                      std::uint64_t bytes);

// Writes `bytes` to a temporary file in `path`'s folder and flushes it to the disk (fsync);
// returns the temporary file's name. Throws std::runtime_error naming the path on failure, after
// removing the temporary file.
std::string write_temporary(const std::string& path, const std::string& bytes);

// Renames `temporary` (from write_temporary) to `path`, replacing what was there in one step,
// then flushes the folder. Throws std::runtime_error naming both on failure, and when `path` is
// there but not a regular file (which is never replaced).
void replace_with_temporary(const std::string& temporary, const std::string& path);

// Both: `path` holds either its previous contents or `bytes`, whatever happens in between. A
// character device or FIFO at `path` is written in place instead, never replaced.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace gw::trainer
