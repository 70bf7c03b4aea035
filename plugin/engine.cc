#include "plugin/engine.h"

#include <stdexcept>
#include <string>

namespace gw {

Engine::Engine(Job job, std::size_t capacity) : job_(std::move(job)), capacity_(capacity) {
  queue_.reserve(capacity);
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stop_ = true;
    queue_.resize(head_);  // drop what has not started
    done_.wait(lock, [this] { return !running_; });
  }
  work_.notify_all();
  thread_.join();
}

bool Engine::launch(std::size_t bucket) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_) return false;
    if (queue_.size() == capacity_) {
      throw std::logic_error("Engine::launch: more than " + std::to_string(capacity_) +
                             " jobs between two waits");
    }
    queue_.push_back(bucket);
  }
  work_.notify_one();
  return true;
}

void Engine::run_next(std::unique_lock<std::mutex>& lock) {
  const std::size_t bucket = queue_[head_++];
  running_ = true;
  lock.unlock();
  std::exception_ptr error;
  try {
    job_(bucket);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  running_ = false;
  if (error && !failure_) {
    failure_ = Failure{bucket, error};
    head_ = queue_.size();  // the rest of the batch is dropped
  }
  done_.notify_all();
}

void Engine::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // A waiting caller takes over the queue (Note [Engine threads]).
    work_.wait(lock, [this] {
      return stop_ || (!running_ && waiters_ == 0 && head_ < queue_.size());
    });
    if (stop_) return;
    run_next(lock);
  }
}

std::optional<Engine::Failure> Engine::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  ++waiters_;
  for (;;) {
    if (head_ == queue_.size() && !running_) break;
    if (!running_) {
      run_next(lock);
    } else {
      done_.wait(lock);
    }
  }
  --waiters_;
  queue_.clear();
  head_ = 0;
  return failure_;
}

bool Engine::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_.has_value();
}

bool Engine::stopping() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_;
}

}  // namespace gw
