#include "reference_trainer/app/checkpoint_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "plugin/config_check.h"
#include "reference_trainer/app/output_file.h"
#include "reference_trainer/app/run_identity.h"

namespace gw::trainer {
namespace {

constexpr char kResume[] = "--resume";

std::string quoted(const std::string& path) { return "'" + path + "'"; }

// The bytes of `path`; false when there is no such file. Throws CheckpointError when it exists
// but cannot be read.
bool read_file(const std::string& path, std::string* bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    throw CheckpointError(std::string(kResume) + ": cannot read " + quoted(path) + ": " +
                          std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) {
    throw CheckpointError(std::string(kResume) + ": " + quoted(path) +
                          " is a folder (accepted: the path given to --checkpoint)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw CheckpointError(std::string(kResume) + ": cannot read " + quoted(path) + ": " +
                          std::strerror(errno));
  }
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    throw CheckpointError(std::string(kResume) + ": error while reading " + quoted(path));
  }
  return true;
}

std::string describe_steps(const std::vector<std::vector<std::int64_t>>& steps_per_rank) {
  std::string out;
  for (std::size_t r = 0; r < steps_per_rank.size(); ++r) {
    out += (r == 0 ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": ";
    if (steps_per_rank[r].empty()) out += "none";
    for (std::size_t i = 0; i < steps_per_rank[r].size(); ++i) {
      out += (i == 0 ? "step " : " and ") + std::to_string(steps_per_rank[r][i]);
    }
  }
  return out;
}

}  // namespace

std::string checkpoint_rank_path(const std::string& path, int rank) {
  const std::string placeholder = "{rank}";
  const std::string r = std::to_string(rank);
  if (const auto at = path.find(placeholder); at != std::string::npos) {
    std::string out = path;
    out.replace(at, placeholder.size(), r);
    return out;
  }
  return path + ".rank" + r;
}

std::string previous_generation(const std::string& rank_path) { return rank_path + ".prev"; }

std::string stage_checkpoint(const std::string& rank_path, const std::string& bytes) {
  return write_temporary(rank_path, bytes);
}

void commit_checkpoint(const std::string& staged, const std::string& rank_path, bool rotate,
                       const FaultHook& fault) {
  const std::string prev = previous_generation(rank_path);
  struct stat st {};
  if (::stat(rank_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {  // never rotated away
    ::unlink(staged.c_str());
    throw std::runtime_error(quoted(rank_path) +
                             " is not a regular file: a checkpoint is not "
                             "written over it (Note [Outputs that are not files])");
  }
  if (rotate && ::rename(rank_path.c_str(), prev.c_str()) != 0 && errno != ENOENT) {
    const std::string reason = std::strerror(errno);
    ::unlink(staged.c_str());
    throw std::runtime_error("cannot rename " + quoted(rank_path) + " to " + quoted(prev) + ": " +
                             reason);
  }
  if (fault) fault(FaultPhase::kRotate);  // Note [Faults the suite injects]
  replace_with_temporary(staged, rank_path);
}

void write_checkpoint(Communicator& comm, const std::string& rank_path, const std::string& bytes,
                      bool rotate, const FaultHook& fault) {
  std::string staged, error;
  try {
    if (fault) fault(FaultPhase::kStage);  // Note [Faults the suite injects]
    staged = stage_checkpoint(rank_path, bytes);
  } catch (const std::exception& e) {
    error = e.what();
  }
  // Every rank's new file is on the disk before any rank replaces its current one: the ranks
  // agree on the lowest rank whose staging failed (the world size: none).
  std::int32_t first_failed = error.empty() ? comm.size() : comm.rank();
  comm.allreduce(&first_failed, 1, DataType::kInt32, ReduceOp::kMin, TrafficKind::kControl);
  if (first_failed < comm.size()) {
    if (!staged.empty()) ::unlink(staged.c_str());
    // Its reason goes to every rank, so that rank 0's report can say why.
    std::string reason = error;
    std::int64_t length = static_cast<std::int64_t>(reason.size());
    comm.broadcast(&length, 1, DataType::kInt64, first_failed, TrafficKind::kControl);
    reason.resize(static_cast<std::size_t>(length));
    comm.broadcast(reason.data(), reason.size(), DataType::kUInt8, first_failed,
                   TrafficKind::kControl);
    throw CheckpointWriteFailed(
        "--checkpoint: " +
            (error.empty() ? "the checkpoint could not be written on rank " +
                                 std::to_string(first_failed) + ": " + reason
                           : error) +
            (::access(rank_path.c_str(), F_OK) == 0 ? "; the previous checkpoint is kept"
                                                    : "; no checkpoint was written before"),
        !error.empty());
  }
  if (fault) fault(FaultPhase::kCommit);
  commit_checkpoint(staged, rank_path, rotate, fault);
}

std::vector<CheckpointGeneration> read_generations(const std::string& rank_path, int rank,
                                                   const std::string& identity) {
  std::vector<CheckpointGeneration> out;
  for (const std::string& path : {rank_path, previous_generation(rank_path)}) {
    std::string bytes;
    if (!read_file(path, &bytes)) continue;
    CheckpointGeneration g;
    g.path = path;
    try {
      g.checkpoint = parse_checkpoint(bytes);
    } catch (const CheckpointError& e) {
      throw CheckpointError(std::string(kResume) + ": " + quoted(path) + ": " + e.what());
    }
    const std::string differences = identity_differences(g.checkpoint.identity, identity);
    if (!differences.empty()) {
      throw CheckpointError(
          std::string(kResume) + ": " + quoted(path) +
          " was written by a run with another configuration; what differs:\n" + differences +
          "  (a resumed run may change only --epochs, --max-steps, --time-budget, --eval-every, "
          "--checkpoint-every and the paths)");
    }
    if (g.checkpoint.rank != static_cast<std::uint32_t>(rank)) {
      throw CheckpointError(std::string(kResume) + ": " + quoted(path) + " holds rank " +
                            std::to_string(g.checkpoint.rank) + "'s state, this is rank " +
                            std::to_string(rank) + " (accepted: the path given to --checkpoint)");
    }
    out.push_back(std::move(g));
  }
  if (out.empty()) {
    throw CheckpointError(std::string(kResume) + ": no checkpoint at " + quoted(rank_path) +
                          " (nor " + quoted(previous_generation(rank_path)) +
                          "); accepted: the path given to --checkpoint, from which each rank's "
                          "file is named ({rank} replaced by the rank, else .rank<r> appended)");
  }
  return out;
}

std::int64_t newest_common_step(const std::vector<std::vector<std::int64_t>>& steps_per_rank) {
  if (steps_per_rank.empty()) return -1;
  std::int64_t best = -1;
  for (const std::int64_t step : steps_per_rank.front()) {
    const bool everywhere = std::all_of(steps_per_rank.begin(), steps_per_rank.end(),
                                        [step](const std::vector<std::int64_t>& s) {
                                          return std::find(s.begin(), s.end(), step) != s.end();
                                        });
    if (everywhere) best = std::max(best, step);
  }
  return best;
}

CheckpointGeneration agree_resume_point(Communicator& comm, const std::string& resume_path,
                                        const std::string& identity) {
  const std::string mine = checkpoint_rank_path(resume_path, comm.rank());
  std::vector<CheckpointGeneration> generations;
  agree_on_startup_errors(comm,
                          [&] { generations = read_generations(mine, comm.rank(), identity); });
  // Each rank's steps, newest file first (-1: no such generation).
  constexpr std::size_t kSlots = 2;
  std::int64_t steps[kSlots] = {-1, -1};
  for (std::size_t i = 0; i < generations.size() && i < kSlots; ++i) {
    steps[i] = generations[i].checkpoint.steps;
  }
  const auto n = static_cast<std::size_t>(comm.size());
  std::vector<std::int64_t> all(kSlots * n);
  comm.allgatherv(steps, kSlots, all.data(), std::vector<std::size_t>(n, kSlots), DataType::kInt64,
                  TrafficKind::kControl);
  std::vector<std::vector<std::int64_t>> per_rank(n);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < kSlots; ++i) {
      if (all[r * kSlots + i] >= 0) per_rank[r].push_back(all[r * kSlots + i]);
    }
  }
  const std::int64_t step = newest_common_step(per_rank);
  if (step < 0) {
    // Every rank saw the same steps, so every rank throws this.
    throw config::ConfigError(std::string(kResume) +
                                  ": no step that every rank has a checkpoint "
                                  "of (" +
                                  describe_steps(per_rank) +
                                  "): these files are not "
                                  "from one run, or from one run's last two checkpoints",
                              config::ConfigError::OnEveryRank{});
  }
  for (CheckpointGeneration& g : generations) {
    if (g.checkpoint.steps == step) return std::move(g);
  }
  throw std::logic_error("agree_resume_point: the agreed step is not among this rank's");
}

void check_left_to_train(Communicator& comm, const TrainerOptions& options, const Checkpoint& c) {
  double trained = c.figures.train_seconds + c.figures.epoch_train_seconds;
  comm.broadcast(&trained, 1, DataType::kFloat64, 0, TrafficKind::kControl);
  std::string why;
  const std::string at = "the checkpoint is at step " + std::to_string(c.steps) + " (epoch " +
                         std::to_string(c.epoch) + ", step " + std::to_string(c.step_in_epoch) +
                         " of " + std::to_string(c.steps_per_epoch) + " in it)";
  if (c.epoch > options.schedule.epochs) {
    why = at + ", after the last of --epochs " + std::to_string(options.schedule.epochs) +
          "; raise --epochs to train on";
  } else if (options.schedule.max_steps > 0 && c.steps >= options.schedule.max_steps) {
    why = at + " and --max-steps is " + std::to_string(options.schedule.max_steps) +
          "; raise --max-steps (0: no limit) to train on";
  } else if (options.schedule.time_budget > 0 && trained >= options.schedule.time_budget) {
    char seconds[64];
    std::snprintf(seconds, sizeof seconds, "%.3f", trained);
    why = at + " after " + seconds + " s of training, and --time-budget is " +
          std::to_string(options.schedule.time_budget) +
          " s; raise --time-budget (0: no limit) to train on";
  }
  if (!why.empty()) {
    // The same options and checkpoint step on every rank, and rank 0's seconds: the same
    // decision everywhere.
    throw config::ConfigError(std::string(kResume) + ": nothing left to train: " + why,
                              config::ConfigError::OnEveryRank{});
  }
}

}  // namespace gw::trainer
