// At start, ranks compare a hash of their effective configuration (and of anything else that must
// agree, such as the parameter layout); a mismatch is a ConfigError on every rank that names the
// differing keys and the ranks' values, never a hang.
#pragma once

#include <functional>
#include <string>

#include "plugin/comm/communicator.h"

namespace gw {

// `canonical` is "KEY=value\n" lines. Collective: every rank of `comm` must call it. Throws
// config::ConfigError (the same on every rank, naming each differing key and every rank's value)
// on every rank when any rank's text differs.
void check_same_on_all_ranks(Communicator& comm, const std::string& canonical);

// Runs `step`, a start-up step that may fail on some ranks only (opening a rank-local file), and
// then agrees across ranks on whether it failed anywhere (one small allgather, control traffic).
// If it failed on any rank, every rank throws a config::ConfigError thrown on every rank: a rank
// whose step threw, with that error's message; the others with one naming the ranks that failed.
// So the job ends through MPI_Finalize with exit code 2 and the real error printed once, instead
// of one rank aborting while the others wait (Note [Ending the job on an error]). Collective.
void agree_on_startup_errors(Communicator& comm, const std::function<void()>& step);

}  // namespace gw
