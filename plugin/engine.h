// The communication engine: a background thread that runs one job per launched bucket, one at a
// time and in launch order, while the program's thread goes on with backward.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace gw {

// Note [Engine threads]
// Jobs run strictly one after another, in the order launch() was called, so the collectives a
// rank issues keep the order the launch tracker gives them (Note [Launch order]) and no two
// threads of a rank are ever inside the communicator at once (MPI_THREAD_SERIALIZED suffices;
// the mutex orders them). During backward the engine thread runs the jobs. Once the program's
// thread calls wait() (step() does), it takes over: the engine thread finishes the job it is in
// and takes no other, and the waiting thread runs the rest itself. So the end of a step costs one
// hand-over, not a thread wake-up per bucket, and never waits for the engine thread to be
// scheduled on a busy machine. A job that throws stops the batch: the jobs queued behind it are
// dropped, and wait() reports the failure (the bucket and the exception) on the waiting thread.
// The engine is then failed for good: the collectives of the ranks no longer match, and only
// ending the job (MPI_Abort) frees a peer waiting in one. A job may fail while the program's
// thread is still launching the rest of the batch (how far it got depends on the scheduling), so
// launch() into a failed engine queues nothing and returns false, and the caller asks wait() for
// the failure: the same failure reaches the caller whichever call comes first.
class Engine {
 public:
  using Job = std::function<void(std::size_t bucket)>;

  struct Failure {
    std::size_t bucket = 0;
    std::exception_ptr error;
  };

  // `capacity`: the most jobs launched between two waits (the bucket count), reserved up front so
  // launching allocates nothing.
  Engine(Job job, std::size_t capacity);
  // Waits for the running job, drops the queued ones, joins the thread.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues job(bucket) and returns true; returns false, queuing nothing, once a job has failed
  // (then wait() returns the failure). Precondition (std::logic_error): fewer than `capacity` jobs
  // launched since the last wait().
  [[nodiscard]] bool launch(std::size_t bucket);
  // Blocks until every launched job has run (helping, Note [Engine threads]); then the next batch
  // may start. Returns the failure, if a job threw in this batch or an earlier one.
  std::optional<Failure> wait();

  bool failed() const;
  // True once the destructor has begun: the jobs not yet started are dropped, and a running job
  // may look here to end early (the tests hold a job here to see the destructor drop the rest).
  bool stopping() const;

 private:
  void loop();
  // With lock held and a job queued and none running: runs it (unlocking around the call).
  void run_next(std::unique_lock<std::mutex>& lock);

  Job job_;
  mutable std::mutex mutex_;
  std::condition_variable work_;  // the engine thread: a job was queued, or stop
  std::condition_variable done_;  // waiters: a job finished
  std::size_t capacity_;
  std::vector<std::size_t> queue_;
  std::size_t head_ = 0;  // queue_[head_, size) are waiting to run
  bool running_ = false;
  int waiters_ = 0;  // threads inside wait(): they run the queued jobs, the engine thread pauses
  bool stop_ = false;
  std::optional<Failure> failure_;
  std::thread thread_;
};

}  // namespace gw
