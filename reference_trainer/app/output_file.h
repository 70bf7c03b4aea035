// The trainer's output files (report, parameters, checkpoints): checked before training, so a
// typo fails in the first second rather than after an hour, and written atomically, so a crash
// or a full disk never leaves a half-written file under the final name.
#pragma once

#include <string>

namespace gw::trainer {

// Throws config::ConfigError naming `option` and `path` when no file can be created at `path`:
// its folder is missing or not writable, or `path` is a folder. Creates and removes a probe file
// beside it; leaves an existing file at `path` untouched.
void check_writable(const std::string& path, const char* option);

// Writes `bytes` to a temporary file in `path`'s folder and flushes it to the disk (fsync);
// returns the temporary file's name. Throws std::runtime_error naming the path on failure, after
// removing the temporary file.
std::string write_temporary(const std::string& path, const std::string& bytes);

// Renames `temporary` (from write_temporary) to `path`, replacing what was there in one step,
// then flushes the folder. Throws std::runtime_error naming both on failure.
void replace_with_temporary(const std::string& temporary, const std::string& path);

// Both: `path` holds either its previous contents or `bytes`, whatever happens in between.
void write_file_atomically(const std::string& path, const std::string& bytes);

}  // namespace gw::trainer
