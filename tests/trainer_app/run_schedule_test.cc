// The rules a TrainingRun asks (training_run.h): when it evaluates and stops (RunSchedule), when it
// writes a checkpoint (CheckpointSchedule, Note [When a checkpoint is taken]), and how it times
// its steps (StepTimer).
#include <gtest/gtest.h>

#include "kernels/stream.h"
#include "reference_trainer/app/checkpoint_files.h"
#include "reference_trainer/app/checkpoint_schedule.h"
#include "reference_trainer/app/run_schedule.h"
#include "reference_trainer/app/step_timer.h"

namespace gw::trainer {
namespace {

TEST(RunSchedule, EvaluatesEveryNStepsButWhereTheEpochOrTheRunEnds) {
  ScheduleOptions o;
  o.eval_every = 5;
  const RunSchedule s(o);
  EXPECT_TRUE(s.evaluation_due(5, false));
  EXPECT_TRUE(s.evaluation_due(10, false));
  EXPECT_FALSE(s.evaluation_due(7, false));
  EXPECT_FALSE(s.evaluation_due(10, true));  // the epoch's own evaluation follows
  EXPECT_FALSE(RunSchedule(ScheduleOptions{}).evaluation_due(5, false));
}

TEST(RunSchedule, StopsAtTheStepLimitTheBudgetAndTheLastEpoch) {
  ScheduleOptions o;
  o.epochs = 2;
  o.max_steps = 30;
  o.time_budget = 1.5;
  const RunSchedule s(o);
  EXPECT_FALSE(s.reached_max_steps(29));
  EXPECT_TRUE(s.reached_max_steps(30));
  EXPECT_FALSE(s.over_budget(1.49));
  EXPECT_TRUE(s.over_budget(1.5));
  EXPECT_FALSE(s.last_epoch(1));
  EXPECT_TRUE(s.last_epoch(2));
  EXPECT_EQ(s.epochs(), 2);
  const RunSchedule unlimited{ScheduleOptions{}};
  EXPECT_FALSE(unlimited.reached_max_steps(1000000));
  EXPECT_FALSE(unlimited.over_budget(1e9));
}

TEST(CheckpointSchedule, NothingIsDueWithoutAPath) {
  CheckpointOptions o;
  o.every = 4;
  const CheckpointSchedule s(o, 0);
  EXPECT_EQ(s.file(), "");
  EXPECT_FALSE(s.due_inside_epoch(4));
  EXPECT_FALSE(s.due_at_stop(3));
  EXPECT_FALSE(s.due_at_epoch_end(4, true));
}

TEST(CheckpointSchedule, EveryNStepsAtTheRunsEndAndOncePerStep) {
  CheckpointOptions o;
  o.path = "/tmp/ck";
  o.every = 4;
  CheckpointSchedule s(o, 3);
  EXPECT_EQ(s.file(), checkpoint_rank_path("/tmp/ck", 3));
  EXPECT_TRUE(s.due_inside_epoch(8));
  EXPECT_FALSE(s.due_inside_epoch(9));
  EXPECT_TRUE(s.due_at_epoch_end(8, false));
  EXPECT_FALSE(s.due_at_epoch_end(9, false));
  EXPECT_TRUE(s.due_at_epoch_end(9, true));  // where the run ends
  // A run that stops inside an epoch writes its step, unless it did already.
  EXPECT_TRUE(s.due_at_stop(8));
  s.written(8);
  EXPECT_FALSE(s.due_at_stop(8));
  EXPECT_TRUE(s.due_at_stop(9));
  s.resumed_from(2);
  EXPECT_EQ(s.result().resumed_from_step, 2);
  EXPECT_EQ(s.result().written, 1);
  EXPECT_EQ(s.result().last_step, 8);
}

TEST(StepTimer, LeavesTheProcesssFirstStepOutAndReadsEachStepOneLate) {
  const kernels::Stream host = kernels::Stream::host();
  StepTimer timer(10);  // a run resumed at step 10
  for (std::int64_t step = 10; step < 14; ++step) {
    timer.begin(step, host);
    timer.backward_done(step, host);
    timer.end(step, host, static_cast<double>(step));
  }
  DeviceResult d;
  timer.report(d);
  // Compute: steps 11 and 12, read at steps 12 and 13; the exchange: steps 11, 12 and 13.
  EXPECT_EQ(d.timed_steps, 2);
  EXPECT_DOUBLE_EQ(d.exchange_ms_per_step, 12.0);
  EXPECT_GE(d.compute_ms_per_step, 0.0);
  EXPECT_GE(d.after_backward_ms_per_step, 0.0);
}

}  // namespace
}  // namespace gw::trainer
