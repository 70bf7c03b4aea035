// The checkpoint's RPRT and TIME sections: the run's figures so far (Note [Checkpoint figures]),
// written and read field by field (Note [Checkpoint format]). For checkpoint.cc only.
#pragma once

#include <string>

#include "reference_trainer/app/checkpoint.h"
#include "reference_trainer/app/checkpoint_bytes.h"

namespace gw::trainer {

// RPRT: what does not depend on the clock.
std::string report_payload(const RunFigures& figures);
void read_report(CheckpointReader& r, RunFigures& figures);

// TIME: the clock readings, for as many epochs and evaluations as RPRT has (read_report first).
std::string time_payload(const RunFigures& figures);
void read_time(CheckpointReader& r, RunFigures& figures);

}  // namespace gw::trainer
