#include "plugin/comm/staging_communicator.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/device.h"

namespace gw {

// Note [Staging device buffers]
// MPI here is not CUDA-aware (and a CUDA-aware MPI is not something gradwire can count on), so
// MpiCommunicator knows host memory only, and a StagingCommunicator over it carries CUDA device
// memory: the device inputs are copied into pinned host memory, the wrapped communicator's host
// collective (MPI's path for host buffers, with its float16 ops and its way of waiting) runs on
// the pinned copy, and the result is copied back. The copies run on a stream the stager owns, made
// on first use on the buffer's device (remade if a later buffer is on another device), and the
// pinned buffer is kept and grown, never shrunk, so a steady state allocates nothing. This is what
// lets several ranks share one GPU, which NCCL refuses. The factories put a stager over every
// MpiCommunicator they make where a CUDA device is usable (with_device_staging); in a two-level
// world each level has its own, below the HierarchicalCommunicator, whose two-level allreduce
// still takes host buffers only.
// - Staged collectives are blocking: start on device memory returns a Work that is already
//   complete. One pinned buffer cannot serve two operations in flight (a Trip refuses to start
//   while another holds it), and the copy back needs the collective's result anyway; overlap with
//   computation comes from the engine thread that calls the communicator, not from here.
// - Where the inputs are ready (Collective::ready_on, Note [A collective described once]). Without
//   a stream: the copy stream is non-blocking (Note [Streams]), so it does not wait for work the
//   caller enqueued elsewhere; device work that wrote a buffer must be complete before the call
//   (the caller synchronises its stream, or waits on its event), as for any host reader of that
//   memory; and each call asks the runtime where its buffers live (kernels::cuda_device_of, a
//   pointer-attribute query). Given a stream: the buffers are that stream's memory, nothing is
//   asked, and the copy stream waits for an event recorded on that stream before it copies in, so
//   the caller need not synchronise.
// - Host buffers: where no CUDA device is usable there is no stager (with_device_staging), and one
//   made anyway asks nothing (it checks once, when made); a collective with no device buffer
//   passes to the wrapped communicator as it is, its async form included.
// - allgatherv and alltoallv stage send and receive independently (either may be host memory),
//   both in one pinned allocation: [send | receive]. allreduce and broadcast work in place on one
//   pinned copy (a broadcast's root copies in only, the other ranks copy out only).
// - The arguments are checked (check_arguments) before anything is copied; a backend's own limits
//   (MPI's INT_MAX elements) are checked by the wrapped communicator, after the copy in.

// One collective's way through the pinned buffer: made, it holds the pinned buffer and has copied
// the device inputs in; host() is the collective on the host copies; finish() copies the device
// outputs back. Destroyed (a failed collective included), it gives the pinned buffer back.
class StagingCommunicator::Trip {
 public:
  Trip(StagingCommunicator& stager, const Collective& c, const Placement& where)
      : hold_(stager.in_trip_), stager_(stager), device_(c), host_(c), where_(where) {
    const std::size_t element = size_of(c.type);
    const int rank = stager_.rank();
    const std::size_t in_bytes = c.elements_read(rank) * element;
    out_bytes_ = c.elements_written(rank) * element;
    const bool stage_send = where.send_device >= 0;
    const bool stage_recv = where.recv_device >= 0;
    // In place, one copy is input and output; else [send | receive]. Either way the input's copy
    // starts the pinned buffer.
    const std::size_t send_room = stage_send && !c.in_place() ? in_bytes : 0;
    const std::size_t recv_room = !stage_recv ? 0 : c.in_place() ? c.count * element : out_bytes_;
    unsigned char* pinned = stager_.pinned_.reserve_discard(send_room + recv_room);
    host_.ready_on = nullptr;  // the host copies are complete when the collective runs
    if (stage_recv) host_.recv = pinned + send_room;
    if (stage_send) host_.send = pinned;
    if (c.ready_on != nullptr) stager_.inputs_ready_.record(*c.ready_on);
    if (stage_send && in_bytes > 0) copy(pinned, c.send, in_bytes, where.send_device);
  }
  Trip(const Trip&) = delete;
  Trip& operator=(const Trip&) = delete;

  const Collective& host() const { return host_; }

  void finish() {
    if (where_.recv_device >= 0 && out_bytes_ > 0) {
      copy(device_.recv, host_.recv, out_bytes_, where_.recv_device);
    }
  }

 private:
  // Marks the stager's pinned buffer taken for the trip's life.
  class Hold {
   public:
    explicit Hold(bool& taken) : taken_(taken) {
      if (taken_) throw std::logic_error("StagingCommunicator: two staged collectives at once");
      taken_ = true;
    }
    ~Hold() { taken_ = false; }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    bool& taken_;
  };

  // A copy between the device and the pinned buffer, on the stager's stream for `device`, after
  // the work so far of the stream the inputs are ready on, if the collective names one; waited for.
  void copy(void* dst, const void* src, std::size_t bytes, int device) {
    const kernels::Stream& stream = stager_.copy_stream(device);
    if (device_.ready_on != nullptr) stager_.inputs_ready_.make_wait(stream);
    kernels::copy_bytes(dst, src, bytes, stream);
    stream.synchronize();
  }

  Hold hold_;
  StagingCommunicator& stager_;
  const Collective& device_;
  Collective host_;
  Placement where_;
  std::size_t out_bytes_ = 0;
};

StagingCommunicator::StagingCommunicator(std::unique_ptr<Communicator> host)
    : host_(std::move(host)), cuda_usable_(kernels::cuda_device_available()) {
  if (!host_) throw std::invalid_argument("StagingCommunicator needs a communicator to wrap");
}

StagingCommunicator::Placement StagingCommunicator::locate(const Collective& c) const {
  if (c.ready_on != nullptr) {
    const int device = c.ready_on->is_host() ? -1 : c.ready_on->cuda_device();
    return {device, device};
  }
  if (!cuda_usable_) return {};
  const int recv = kernels::cuda_device_of(c.recv);
  return {c.in_place() ? recv : kernels::cuda_device_of(c.send), recv};
}

const kernels::Stream& StagingCommunicator::copy_stream(int device) {
  if (copy_stream_.is_host() || copy_stream_.cuda_device() != device) {
    copy_stream_ = kernels::Stream::cuda(device);
  }
  return copy_stream_;
}

void StagingCommunicator::run_staged(const Collective& c, const Placement& where) {
  check_arguments(c, rank(), size());
  Trip trip(*this, c, where);
  host_->run(trip.host());
  trip.finish();
}

WorkHandle StagingCommunicator::start(const Collective& c) {
  const Placement where = locate(c);
  if (!where.staged()) return host_->start(c);
  run_staged(c, where);
  return completed_work();
}

void StagingCommunicator::run(const Collective& c) {
  const Placement where = locate(c);
  if (!where.staged()) return host_->run(c);
  run_staged(c, where);
}

std::unique_ptr<Communicator> with_device_staging(std::unique_ptr<Communicator> host) {
  if (!kernels::cuda_device_available()) return host;
  return std::make_unique<StagingCommunicator>(std::move(host));
}

}  // namespace gw
