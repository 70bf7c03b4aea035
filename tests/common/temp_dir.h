// A fresh folder for one test's files: made with mkdtemp under GoogleTest's temporary directory,
// removed with everything in it when the object goes. A folder named after the process id alone
// is not enough: a later run reusing the id would find the files an earlier run left there.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace gw::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gw_test") {
    std::string pattern = ::testing::TempDir() + prefix + "_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed for '" + pattern + "'");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace gw::testing
