// The trainer's output files: checked before training, written atomically (output_file.h).
#include "reference_trainer/app/output_file.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "plugin/config/registry.h"
#include "tests/common/temp_dir.h"

namespace gw::trainer {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string config_error(const std::string& path, const char* option) {
  try {
    check_writable(path, option);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckWritable, AcceptsAFileInAWritableFolderAndLeavesNothingBehind) {
  const gw::testing::TempDir temp("gw_output_file_test");
  const std::string dir = temp.str();
  const std::string path = dir + "/report.json";
  EXPECT_EQ(config_error(path, "--report"), "");
  struct stat st {};
  EXPECT_NE(::stat(path.c_str(), &st), 0) << "the check created the file itself";
  // An existing file is left as it is.
  std::ofstream(path) << "previous";
  EXPECT_EQ(config_error(path, "--report"), "");
  EXPECT_EQ(read(path), "previous");
}

TEST(CheckWritable, NamesTheOptionThePathAndWhatIsAccepted) {
  const std::string missing = config_error("/nonexistent-gradwire-dir/r.json", "--report");
  EXPECT_NE(missing.find("--report: cannot write '/nonexistent-gradwire-dir/r.json': No such file "
                         "or directory (accepted: a file path in an existing folder"),
            std::string::npos)
      << missing;
  const gw::testing::TempDir temp("gw_output_file_test");
  const std::string dir = temp.str();
  const std::string folder = config_error(dir, "--save-params");
  EXPECT_NE(folder.find("--save-params: '" + dir + "' is a folder"), std::string::npos) << folder;
  EXPECT_NE(config_error("", "--checkpoint").find("--checkpoint: the path is empty"),
            std::string::npos);
}

// Note [Outputs that are not files]: a character device or a FIFO is written in place and stays
// what it is; a checkpoint (rotated) may not name one.
TEST(WriteFileAtomically, WritesADeviceOrFifoInPlaceAndNeverReplacesIt) {
  const gw::testing::TempDir temp("gw_output_file_test");
  const std::string fifo = temp.str() + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(config_error(fifo, "--report"), "");
  std::string got;
  std::thread reader([&] { got = read(fifo); });
  write_file_atomically(fifo, "through the pipe");
  reader.join();
  EXPECT_EQ(got, "through the pipe");
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  try {
    check_writable(fifo, "--checkpoint", /*rotated=*/true);
    ADD_FAILURE() << "a checkpoint over a FIFO was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--checkpoint: '" + fifo + "' is a device or FIFO"),
              std::string::npos)
        << e.what();
  }
  const std::string null = temp.str() + "/null";
  if (::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod needs root: the device case is not run";
  }
  EXPECT_EQ(config_error(null, "--report"), "");
  write_file_atomically(null, "into /dev/null's twin");
  ASSERT_EQ(::stat(null.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced by a regular file";
}

TEST(WriteFileAtomically, ReplacesTheWholeFileAndLeavesNoTemporary) {
  const gw::testing::TempDir temp("gw_output_file_test");
  const std::string dir = temp.str();
  const std::string path = dir + "/params.bin";
  write_file_atomically(path, "first version, longer than the second");
  write_file_atomically(path, "second");
  EXPECT_EQ(read(path), "second");
  struct stat st {};
  EXPECT_NE(::stat((path + ".tmp." + std::to_string(::getpid())).c_str(), &st), 0);
}

TEST(WriteFileAtomically, AFailedWriteLeavesThePreviousFile) {
  const gw::testing::TempDir temp("gw_output_file_test");
  const std::string dir = temp.str();
  const std::string path = dir + "/report.json";
  write_file_atomically(path, "good");
  // The temporary cannot be written (a folder stands where it would go): the previous file stays.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(temporary.c_str(), 0755), 0);
  try {
    write_file_atomically(path, "new");
    ADD_FAILURE() << "wrote through a folder";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create '" + temporary + "' (for '" + path + "')"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(path), "good");
  ::rmdir(temporary.c_str());
  // The rename fails (a non-empty folder is in the way): the temporary is removed.
  const std::string blocked = dir + "/blocked";
  ::mkdir(blocked.c_str(), 0755);
  ::mkdir((blocked + "/inside").c_str(), 0755);
  try {
    write_file_atomically(blocked, "x");
    ADD_FAILURE() << "renamed a file over a non-empty folder";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a regular file: it is not replaced"),
              std::string::npos)
        << e.what();
  }
  struct stat st {};
  EXPECT_NE(::stat((blocked + ".tmp." + std::to_string(::getpid())).c_str(), &st), 0);
}

}  // namespace
}  // namespace gw::trainer
