#include "reference_trainer/app/injected_faults.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "plugin/config/registry.h"

namespace gw::trainer {
namespace {

constexpr char kVariable[] = "GW_TEST_FAULT";
constexpr char kAccepted[] =
    "accepted: RANK:STEP:PHASE:ACTION[,...] with PHASE step, stage, commit, rotate or room and "
    "ACTION "
    "kill, delay-kill=SECONDS, delay=SECONDS, throw, or full-disk (at stage only)";

[[noreturn]] void refuse(const std::string& entry, const std::string& why) {
  throw config::ConfigError(std::string(kVariable) + ": '" + entry + "': " + why + "; " +
                            kAccepted);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    out.push_back(text.substr(begin, end == std::string::npos ? end : end - begin));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

std::int64_t whole_number(const std::string& entry, const std::string& field, const char* what) {
  if (field.empty() || field.size() > 9 || field.find_first_not_of("0123456789") != field.npos) {
    refuse(entry, std::string(what) + " '" + field + "' is not a whole number below 10^9");
  }
  return std::stoll(field);
}

FaultPhase phase_named(const std::string& entry, const std::string& name) {
  if (name == "step") return FaultPhase::kStep;
  if (name == "stage") return FaultPhase::kStage;
  if (name == "commit") return FaultPhase::kCommit;
  if (name == "rotate") return FaultPhase::kRotate;
  if (name == "room") return FaultPhase::kRoom;
  refuse(entry, "no phase '" + name + "'");
}

void set_action(const std::string& entry, const std::string& text, InjectedFault* f) {
  using Action = InjectedFault::Action;
  const std::size_t eq = text.find('=');
  const std::string name = text.substr(0, eq);
  if (name == "delay" || name == "delay-kill") {
    const std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
    char* end = nullptr;
    errno = 0;
    const double seconds = value.empty() ? 0 : std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || errno != 0 ||
        !std::isfinite(seconds) || seconds <= 0 || seconds > 600) {
      refuse(entry, name + " needs =SECONDS, above 0 and at most 600");
    }
    f->action = name == "delay" ? Action::kDelay : Action::kDelayKill;
    f->seconds = seconds;
    return;
  }
  if (eq != std::string::npos) refuse(entry, "the action '" + name + "' takes no value");
  if (name == "kill") {
    f->action = Action::kKill;
  } else if (name == "throw") {
    f->action = Action::kThrow;
  } else if (name == "full-disk") {
    if (f->phase != FaultPhase::kStage) refuse(entry, "full-disk is a fault of the stage phase");
    f->action = Action::kFullDisk;
  } else {
    refuse(entry, "no action '" + text + "'");
  }
}

void sleep_for(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

[[noreturn]] void kill_now() {
  std::fflush(nullptr);
  ::kill(::getpid(), SIGKILL);
  std::abort();  // not reached
}

}  // namespace

std::vector<InjectedFault> parse_injected_faults(const std::string& value, int world_size) {
  std::vector<InjectedFault> out;
  if (value.empty()) return out;
  for (const std::string& entry : split(value, ',')) {
    const std::vector<std::string> fields = split(entry, ':');
    if (fields.size() != 4) refuse(entry, "not four fields separated by ':'");
    InjectedFault f;
    f.text = entry;
    f.rank = static_cast<int>(whole_number(entry, fields[0], "the rank"));
    if (f.rank >= world_size) {
      refuse(entry,
             "rank " + fields[0] + " is not below the world size " + std::to_string(world_size));
    }
    f.step = whole_number(entry, fields[1], "the step");
    if (f.step < 1) refuse(entry, "the step must be at least 1");
    f.phase = phase_named(entry, fields[2]);
    set_action(entry, fields[3], &f);
    out.push_back(f);
  }
  return out;
}

std::vector<InjectedFault> injected_faults_from_environment(int world_size) {
  const char* value = std::getenv(kVariable);
  return value == nullptr ? std::vector<InjectedFault>{} : parse_injected_faults(value, world_size);
}

void inject_faults(const std::vector<InjectedFault>& faults, int rank, std::int64_t step,
                   FaultPhase phase) {
  using Action = InjectedFault::Action;
  for (const InjectedFault& f : faults) {
    if (f.rank != rank || f.step != step || f.phase != phase) continue;
    const std::string what = "a fault injected by " + std::string(kVariable) + " '" + f.text + "'";
    switch (f.action) {
      case Action::kKill:
        kill_now();
      case Action::kDelayKill:
        sleep_for(f.seconds);
        kill_now();
      case Action::kDelay:
        sleep_for(f.seconds);
        break;
      case Action::kThrow:
        throw std::runtime_error(what);
      case Action::kFullDisk:
        throw std::runtime_error(std::string("cannot write this rank's checkpoint: ") +
                                 std::strerror(ENOSPC) + " (" + what + ")");
    }
  }
}

}  // namespace gw::trainer
