#include "plugin/comm/routed_communicator.h"

#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kernels/stream.h"

namespace gw {

namespace {

// Note [Host buffers beside NCCL]
class RoutedCommunicator final : public Communicator {
 public:
  RoutedCommunicator(std::unique_ptr<Communicator> device, std::unique_ptr<Communicator> host)
      : device_(std::move(device)), host_(std::move(host)) {
    if (!device_ || !host_) {
      throw std::invalid_argument("make_routed_communicator: a null communicator");
    }
    if (device_->rank() != host_->rank() || device_->size() != host_->size()) {
      throw std::invalid_argument(
          "make_routed_communicator: the communicators' ranks differ (" +
          std::to_string(device_->rank()) + " of " + std::to_string(device_->size()) + " and " +
          std::to_string(host_->rank()) + " of " + std::to_string(host_->size()) + ")");
    }
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }

  WorkHandle start(const Collective& c) override { return pick(c).start(c); }
  void run(const Collective& c) override { pick(c).run(c); }
  void barrier() override { host_->barrier(); }
  std::vector<int> node_of_rank() const override { return host_->node_of_rank(); }

 private:
  // Given a stream its inputs are ready on, the collective's buffers are that stream's memory.
  // Otherwise a null pointer (an empty block, which one rank may have where another has not) says
  // nothing of where the program keeps its buffers, so the others decide: device when every other
  // one is on a CUDA device, host when one is not or there is none. Unlike an allgatherv's, an
  // alltoallv's buffers may both be empty on one rank only (it sends and receives nothing) while
  // the others' are on a device; were both null, that rank alone would route to the host. A
  // caller whose blocks may all be empty passes non-null buffers.
  Communicator& pick(const Collective& c) {
    if (c.ready_on != nullptr) return c.ready_on->is_host() ? *host_ : *device_;
    bool any = false;
    for (const void* p : {c.send, static_cast<const void*>(c.recv)}) {
      if (p == nullptr) continue;
      if (kernels::cuda_device_of(p) < 0) return *host_;
      any = true;
    }
    return any ? *device_ : *host_;
  }

  std::unique_ptr<Communicator> device_, host_;
};

}  // namespace

std::unique_ptr<Communicator> make_routed_communicator(std::unique_ptr<Communicator> device,
                                                       std::unique_ptr<Communicator> host) {
  return std::make_unique<RoutedCommunicator>(std::move(device), std::move(host));
}

}  // namespace gw
