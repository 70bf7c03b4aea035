// checkpoint_seeds --write DIR | --check DIR
// The seed corpus of fuzz_checkpoint (tests/fuzz/corpus/fuzz_checkpoint/): valid checkpoints of a
// few shapes, written by serialize_checkpoint itself, each behind the mode byte fuzz_checkpoint.cc
// reads (1: length and checksum fixed up, 0: as it is). --write writes them; --check (the test
// fuzz_checkpoint_seeds) fails when the committed files are not what the format writes today, so
// a change of the format cannot leave the fuzzer mutating files it refuses at the first check.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "reference_trainer/app/checkpoint.h"
#include "tests/trainer_app/checkpoint_sample.h"

namespace gt = gw::trainer;

namespace {

// The first rank's checkpoint of a 2-rank run, before its first step. The other seeds are the
// checkpoint tests' sample (mid-run, every section filled).
gt::Checkpoint at_start() {
  gt::Checkpoint c;
  c.world_size = 2;
  c.steps_per_epoch = 4;
  c.identity = "world_size=2\n--model=mlp\n--lr=0.1\nGRADWIRE_COMPRESSOR=none\n";
  c.parameters = {0.25f, -0.5f};
  c.optimizer_state = std::string("\0\0\0\0", 4);
  c.figures.sync.policy = "every_step";
  c.figures.compression.compressor = "none";
  return c;
}

std::map<std::string, std::string> seeds() {
  std::map<std::string, std::string> out;
  const std::string start = gt::serialize_checkpoint(at_start());
  const std::string mid = gt::serialize_checkpoint(gt::sample_checkpoint());
  out["at_start"] = '\x01' + start;
  out["mid_run"] = '\x01' + mid;
  out["mid_run_as_is"] = '\x00' + mid;
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "(missing)";
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "--write") != 0 && std::strcmp(argv[1], "--check") != 0)) {
    std::fprintf(stderr, "usage: %s --write DIR | --check DIR\n", argv[0]);
    return 2;
  }
  const bool write = std::strcmp(argv[1], "--write") == 0;
  int stale = 0;
  for (const auto& [name, bytes] : seeds()) {
    const std::string path = std::string(argv[2]) + "/" + name;
    if (write) {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out) {
        std::fprintf(stderr, "checkpoint_seeds: cannot write %s\n", path.c_str());
        return 1;
      }
    } else if (read_file(path) != bytes) {
      std::printf("stale: %s is not what serialize_checkpoint writes today\n", path.c_str());
      ++stale;
    }
  }
  if (stale != 0) {
    std::printf("FAIL: %d seed(s) stale; rewrite them: %s --write %s\n", stale, argv[0], argv[2]);
    return 1;
  }
  std::printf("%s %zu seeds in %s\n", write ? "wrote" : "ok:", seeds().size(), argv[2]);
  return 0;
}
