// gradwire_train's checkpoint: the format (a round trip, and every damaged file refused with a
// clear error before any large allocation), the run identity, and the files' generations.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plugin/config/params.h"
#include "reference_trainer/app/checkpoint.h"
#include "reference_trainer/app/checkpoint_files.h"
#include "reference_trainer/app/command_line.h"
#include "reference_trainer/app/output_file.h"
#include "reference_trainer/app/run_identity.h"
#include "tests/trainer_app/checkpoint_sample.h"

// The largest single allocation made while `g_watch` is set: what a forged length could make the
// parser ask for.
namespace {
std::atomic<bool> g_watch{false};
std::atomic<std::size_t> g_largest{0};
}  // namespace

void* operator new(std::size_t n) {
  if (g_watch.load(std::memory_order_relaxed) && n > g_largest.load(std::memory_order_relaxed)) {
    g_largest.store(n, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace gw::trainer {
namespace {

// The message of the CheckpointError that parsing `bytes` throws ("" when it parses).
std::string parse_error(const std::string& bytes) {
  try {
    parse_checkpoint(bytes);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

void put_u32(std::string& bytes, std::size_t at, std::uint32_t v) {
  std::memcpy(&bytes[at], &v, 4);
}
void put_u64(std::string& bytes, std::size_t at, std::uint64_t v) {
  std::memcpy(&bytes[at], &v, 8);
}

// A file whose checksum is right again after a forgery.
void fix_crc(std::string& bytes) {
  const auto crc = static_cast<std::uint32_t>(::crc32(
      0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size() - 4)));
  put_u32(bytes, bytes.size() - 4, crc);
}

// Where section `tag`'s length field is.
std::size_t section_length_at(const std::string& bytes, const char* tag) {
  const std::size_t at = bytes.find(tag, 24);
  EXPECT_NE(at, std::string::npos) << tag;
  return at + 4;
}

TEST(CheckpointFormat, RoundTripsToTheSameBytesAndValues) {
  const Checkpoint c = sample_checkpoint();
  const std::string bytes = serialize_checkpoint(c);
  const Checkpoint back = parse_checkpoint(bytes);
  EXPECT_EQ(serialize_checkpoint(back), bytes);
  EXPECT_EQ(back.rank, 2u);
  EXPECT_EQ(back.world_size, 4u);
  EXPECT_EQ(back.steps, 39);
  EXPECT_EQ(back.epoch, 2);
  EXPECT_EQ(back.step_in_epoch, 7u);
  EXPECT_EQ(back.identity, c.identity);
  ASSERT_EQ(back.parameters.size(), c.parameters.size());
  EXPECT_EQ(std::memcmp(back.parameters.data(), c.parameters.data(), 6 * sizeof(float)), 0);
  EXPECT_EQ(back.optimizer_state, c.optimizer_state);
  EXPECT_EQ(back.figures.epoch_loss_sum, 12.75);
  EXPECT_EQ(back.figures.traffic.kinds[0].received_bytes, 200u);
  EXPECT_EQ(back.figures.traffic.kinds[0].inter_node_sent_bytes, 60u);
  EXPECT_EQ(back.figures.traffic.kinds[0].inter_node_received_bytes, 50u);
  EXPECT_EQ(back.figures.epoch_traffic_start.kinds[1].calls, 11u);
  ASSERT_EQ(back.figures.epochs.size(), 1u);
  EXPECT_EQ(back.figures.epochs[0].gradient_bytes_sent, 1234u);
  EXPECT_EQ(back.figures.epochs[0].wall_seconds, 1.25);
  ASSERT_EQ(back.figures.history.size(), 2u);
  EXPECT_EQ(back.figures.history[1].wall_seconds, 1.5);
  ASSERT_EQ(back.figures.sync.points.size(), 2u);
  EXPECT_TRUE(back.figures.sync.points[1].requested);
  EXPECT_EQ(back.figures.sync.points[0].fragment, -1);
  EXPECT_EQ(back.figures.sync.points[1].fragment, 3);
  EXPECT_EQ(back.figures.sync.points[0].next_k, 2);
  EXPECT_EQ(back.figures.sync.policy, "adaptive_local_sgd");
  EXPECT_EQ(back.figures.compression.dense_fallbacks, 1);
  EXPECT_EQ(back.figures.epoch_wall_seconds, 0.5);
  // An empty model and state round-trip too (in the ASan+UBSan tree this test caught what
  // fuzz_checkpoint found: the parser passed an empty list's null data() to memcpy).
  Checkpoint empty;
  EXPECT_EQ(serialize_checkpoint(parse_checkpoint(serialize_checkpoint(empty))),
            serialize_checkpoint(empty));
}

TEST(CheckpointFormat, SectionsAreTheFileInOrderAndTimeIsApart) {
  Checkpoint a = sample_checkpoint(), b = sample_checkpoint();
  b.figures.wall_seconds += 1;
  b.figures.epochs[0].train_seconds += 1;
  b.figures.history[0].wall_seconds += 1;
  const auto sa = checkpoint_sections(a), sb = checkpoint_sections(b);
  ASSERT_EQ(sa.size(), 6u);
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].first, kCheckpointSections[i]);
    EXPECT_EQ(sa[i].second == sb[i].second, sa[i].first != "TIME") << sa[i].first;
  }
}

TEST(CheckpointFormat, EveryTruncationIsRefused) {
  const std::string bytes = serialize_checkpoint(sample_checkpoint());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::string message = parse_error(bytes.substr(0, n));
    ASSERT_NE(message, "") << "a file cut to " << n << " of " << bytes.size() << " bytes parsed";
    if (n >= 24) {
      EXPECT_NE(message.find("truncated: the header says " + std::to_string(bytes.size()) +
                             " bytes, the file has " + std::to_string(n)),
                std::string::npos)
          << message;
    }
  }
  EXPECT_NE(parse_error("GWCK").find("truncated"), std::string::npos);
  EXPECT_NE(parse_error(bytes + "x").find("trailing bytes"), std::string::npos);
}

TEST(CheckpointFormat, EveryFlippedByteIsRefused) {
  const std::string bytes = serialize_checkpoint(sample_checkpoint());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (const unsigned char bit : {0x01, 0x80}) {
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ bit);
      const std::string message = parse_error(damaged);
      ASSERT_NE(message, "") << "byte " << i << " flipped (" << int(bit) << ") parsed";
      if (i < 8) {
        EXPECT_NE(message.find("not a gradwire_train checkpoint"), std::string::npos) << message;
      } else if (i >= 24) {  // past the header: the checksum finds it
        EXPECT_NE(message.find("checksum mismatch"), std::string::npos) << i << ": " << message;
      }
    }
  }
}

TEST(CheckpointFormat, ForeignFilesAndOtherVersionsAreRefused) {
  EXPECT_NE(parse_error("").find("truncated"), std::string::npos);
  EXPECT_NE(parse_error("GWPARAM1 and then some bytes of a parameter file")
                .find("not a gradwire_train checkpoint"),
            std::string::npos);
  std::string bytes = serialize_checkpoint(sample_checkpoint());
  put_u32(bytes, 8, 1);  // version 1 had no inter-node traffic counters
  fix_crc(bytes);
  EXPECT_NE(parse_error(bytes).find("format version 1; this program reads version 2"),
            std::string::npos);
}

// A forged length with a checksum to match must be refused before the parser allocates for it.
TEST(CheckpointFormat, ForgedLengthsAreRefusedBeforeAllocating) {
  const std::string good = serialize_checkpoint(sample_checkpoint());
  const auto refused_small = [&](std::string forged, const std::string& expected) {
    fix_crc(forged);
    g_largest = 0;
    g_watch = true;
    const std::string message = parse_error(forged);
    g_watch = false;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_LE(g_largest.load(), 4 * good.size()) << "for: " << message;
  };
  // A section longer than the file.
  for (const char* tag : kCheckpointSections) {
    std::string forged = good;
    put_u64(forged, section_length_at(forged, tag), std::uint64_t{1} << 62);
    refused_small(forged, std::string("section ") + tag + " claims 4611686018427387904 bytes");
  }
  // A parameter count of 2^61 floats.
  std::string forged = good;
  put_u64(forged, section_length_at(forged, "PARM") + 8, std::uint64_t{1} << 61);
  refused_small(forged, "the parameter count is 2305843009213693952, which needs more than");
  // The epoch, evaluation and averaging point counts (RPRT), and the TIME counts.
  const std::size_t report = section_length_at(good, "RPRT") + 8;
  // Two traffic records (now and at the epoch's start): 3 kinds x 5 u64 each.
  const std::size_t epochs_at = report + 8 + 8 + 2 * 15 * 8;
  forged = good;
  put_u64(forged, epochs_at, ~std::uint64_t{0});
  refused_small(forged, "the epoch count is 18446744073709551615, which needs more than");
  forged = good;
  put_u64(forged, epochs_at + 8 + 56, std::uint64_t{1} << 60);
  refused_small(forged, "the evaluation count is");
  const std::size_t time = section_length_at(good, "TIME") + 8;
  forged = good;
  put_u64(forged, time + 32, 2);
  refused_small(forged, "times for 2 epochs, section RPRT has 1");
  // A name longer than any policy's.
  forged = good;
  const std::size_t policy = good.find("adaptive_local_sgd") - 4;
  put_u32(forged, policy, 1u << 31);
  refused_small(forged, "the sync policy's name is 2147483648 bytes long");
}

TEST(CheckpointFormat, ValuesThatCannotBeAreRefused) {
  const auto refused = [](Checkpoint c, const std::string& expected) {
    try {
      serialize_checkpoint(c);
      ADD_FAILURE() << "serialized: " << expected;
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  Checkpoint c = sample_checkpoint();
  c.rank = 4;
  refused(c, "rank 4 in a world of 4");
  c = sample_checkpoint();
  c.steps = 40;
  refused(c, "the position does not add up: 40 steps done, but epoch 2 step 7");
  c = sample_checkpoint();
  c.step_in_epoch = 32;
  refused(c, "position out of range");
  c = sample_checkpoint();
  c.identity = "no equals sign\n";
  refused(c, "line 1 is not key=value");
  c = sample_checkpoint();
  c.identity = "a=1\na=2\n";
  refused(c, "the key 'a' appears twice");
  // The parser checks the same (a flag of 2, forged with its checksum).
  std::string bytes = serialize_checkpoint(sample_checkpoint());
  // The second averaging point's "requested" flag: before its fragment (8 bytes), the last field
  // before the compressor's name.
  const std::size_t flag = bytes.find(std::string("\x03\0\0\0dgc", 7)) - 1 - 8;
  bytes[flag] = 2;
  fix_crc(bytes);
  EXPECT_NE(parse_error(bytes).find("an averaging point's requested flag is 2"), std::string::npos)
      << parse_error(bytes);
}

TEST(RunIdentity, OnlyTheOptionsThatMayChangeOnResumeAreLeftOut) {
  TrainerOptions a;
  const config::Config config;
  TrainerOptions b = a;
  b.schedule.epochs = 9;
  b.schedule.max_steps = 77;
  b.schedule.time_budget = 5;
  b.schedule.eval_every = 3;
  b.checkpoint.every = 10;
  b.checkpoint.path = "/x/ck";
  b.checkpoint.resume_path = "/y/ck";
  b.output.report_path = "r.json";
  EXPECT_EQ(run_identity(a, config, 4, 4096, 500), run_identity(b, config, 4, 4096, 500));
  for (const auto& [key, value] : config::parse_canonical(agreed_options_canonical(a))) {
    EXPECT_EQ(run_identity(a, config, 4, 4096, 500).find(key + "=") != std::string::npos,
              !may_change_on_resume(key))
        << key;
  }
  b = a;
  b.lr = 0.1;
  config::Config other;
  other.set(config::keys::kCompressor, "fp16");
  const std::string differences = identity_differences(run_identity(a, config, 4, 4096, 500),
                                                       run_identity(b, other, 2, 4096, 400));
  EXPECT_NE(differences.find("  --lr: checkpoint '0.05', this run '0.1'\n"), std::string::npos)
      << differences;
  EXPECT_NE(differences.find("  GRADWIRE_COMPRESSOR: checkpoint 'none', this run 'fp16'\n"),
            std::string::npos)
      << differences;
  EXPECT_NE(differences.find("  world_size: checkpoint '4', this run '2'\n"), std::string::npos);
  EXPECT_NE(differences.find("  test_samples: checkpoint '500', this run '400'\n"),
            std::string::npos);
  EXPECT_EQ(differences.find("train_samples"), std::string::npos);
  EXPECT_NE(identity_differences("a=1\n", "").find("a: checkpoint '1', this run '<unset>'"),
            std::string::npos);
  EXPECT_EQ(identity_differences("a=1\nb=2\n", "b=2\na=1\n"), "");
}

// A fresh folder under the test's temporary directory, removed afterwards.
class CheckpointFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/gw_checkpoint_test.XXXXXX";
    ASSERT_NE(::mkdtemp(name), nullptr);
    dir_ = name;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  static std::string read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void write(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  static bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }
  std::string dir_;
};

TEST_F(CheckpointFiles, RankPathsAreNamedAsTimelineFilesAre) {
  EXPECT_EQ(checkpoint_rank_path("/a/ck", 3), "/a/ck.rank3");
  EXPECT_EQ(checkpoint_rank_path("/a/ck_{rank}.bin", 12), "/a/ck_12.bin");
  EXPECT_EQ(previous_generation("/a/ck.rank3"), "/a/ck.rank3.prev");
}

TEST_F(CheckpointFiles, ACommitKeepsThePreviousGenerationAndAFailedWriteChangesNothing) {
  const std::string path = dir_ + "/ck.rank0";
  commit_checkpoint(stage_checkpoint(path, "one"), path);
  EXPECT_EQ(read(path), "one");
  EXPECT_FALSE(exists(previous_generation(path)));
  commit_checkpoint(stage_checkpoint(path, "two"), path);
  EXPECT_EQ(read(path), "two");
  EXPECT_EQ(read(previous_generation(path)), "one");
  // The temporary file cannot be created (a folder has its name): the write fails, nothing moves.
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(temporary.c_str(), 0755), 0);
  EXPECT_THROW(stage_checkpoint(path, "three"), std::runtime_error);
  EXPECT_THROW(write_file_atomically(path, "three"), std::runtime_error);
  EXPECT_EQ(read(path), "two");
  EXPECT_EQ(read(previous_generation(path)), "one");
  ::rmdir(temporary.c_str());
  // A kill between a rank's two renames leaves only .prev; the next commit goes on from there.
  ASSERT_EQ(::rename(path.c_str(), previous_generation(path).c_str()), 0);
  commit_checkpoint(stage_checkpoint(path, "four"), path);
  EXPECT_EQ(read(path), "four");
  EXPECT_EQ(read(previous_generation(path)), "two");
}

// Note [Checkpoint generations], the invariant: ranks at (30, 20) and (20, 10) resume from 20;
// rank 0, which resumed from its .prev, replaces its current file at its first write and keeps
// .prev, so a kill before rank 1's commit still leaves 20 on every rank. Rotating (as every write
// did) would leave (new 30, 30) beside (20, 10): nothing to resume from.
TEST_F(CheckpointFiles, AResumeFromPrevKeepsTheStepEveryRankHasThroughTheNextWrite) {
  const std::string r0 = dir_ + "/ck.rank0", r1 = dir_ + "/ck.rank1";
  for (const char* step : {"20", "30"}) commit_checkpoint(stage_checkpoint(r0, step), r0);
  for (const char* step : {"10", "20"}) commit_checkpoint(stage_checkpoint(r1, step), r1);
  const auto steps = [&](const std::string& p) {
    return std::vector<std::int64_t>{std::stoll(read(p)), std::stoll(read(previous_generation(p)))};
  };
  ASSERT_EQ(newest_common_step({steps(r0), steps(r1)}), 20);
  // The resumed run's first write at step 30, committed on rank 0, killed before rank 1's commit.
  commit_checkpoint(stage_checkpoint(r0, "30"), r0, /*rotate=*/false);
  EXPECT_EQ(steps(r0), (std::vector<std::int64_t>{30, 20}));
  EXPECT_EQ(newest_common_step({steps(r0), steps(r1)}), 20);
  // The same write rotating, as before the invariant: the step every rank had is gone.
  commit_checkpoint(stage_checkpoint(r0, "30"), r0, /*rotate=*/true);
  EXPECT_EQ(newest_common_step({steps(r0), steps(r1)}), -1);
}

TEST_F(CheckpointFiles, GenerationsAreReadCheckedAndNamed) {
  const std::string path = dir_ + "/ck.rank2";
  Checkpoint c = sample_checkpoint();
  const auto error_of = [&](const std::string& identity, int rank) -> std::string {
    try {
      read_generations(path, rank, identity);
    } catch (const CheckpointError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of(c.identity, 2).find("no checkpoint at '" + path + "'"), std::string::npos);
  write(previous_generation(path), serialize_checkpoint(c));  // only .prev: fine
  ASSERT_EQ(read_generations(path, 2, c.identity).size(), 1u);
  c.steps_per_epoch = 8;
  c.epoch = 5;
  c.step_in_epoch = 7;
  c.steps = 39;
  write(path, serialize_checkpoint(c));
  const auto both = read_generations(path, 2, c.identity);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0].path, path);
  EXPECT_EQ(both[1].path, previous_generation(path));
  EXPECT_NE(error_of(c.identity, 1).find("holds rank 2's state, this is rank 1"),
            std::string::npos);
  const std::string mismatch = error_of("world_size=4\n--lr=0.1\nGRADWIRE_COMPRESSOR=none\n", 2);
  EXPECT_NE(mismatch.find("another configuration"), std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("--lr: checkpoint '0.05', this run '0.1'"), std::string::npos);
  EXPECT_NE(mismatch.find("GRADWIRE_COMPRESSOR: checkpoint 'dgc', this run 'none'"),
            std::string::npos);
  // A damaged file is an error naming it, even with a good generation beside it.
  std::string damaged = read(path);
  damaged[damaged.size() / 2] ^= 0x10;
  write(path, damaged);
  const std::string corrupt = error_of(c.identity, 2);
  EXPECT_NE(corrupt.find("--resume: '" + path + "': checkpoint: checksum mismatch"),
            std::string::npos)
      << corrupt;
}

TEST(CheckpointGenerations, TheNewestStepThatEveryRankHas) {
  EXPECT_EQ(newest_common_step({{40, 30}, {40, 30}}), 40);
  EXPECT_EQ(newest_common_step({{40, 30}, {30, 20}, {40, 30}}), 30);  // killed between renames
  EXPECT_EQ(newest_common_step({{30}, {40, 30}}), 30);                // only .prev on rank 0
  EXPECT_EQ(newest_common_step({{40, 30}, {20, 10}}), -1);
  EXPECT_EQ(newest_common_step({{7}}), 7);
  EXPECT_EQ(newest_common_step({}), -1);
}

}  // namespace
}  // namespace gw::trainer
