#include "process_group_communicator.h"

#include <torch/version.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/stream.h"

namespace gw::torch_bridge {
namespace {

at::ScalarType scalar_type(DataType type) {
  switch (type) {
    case DataType::kUInt8:
      return at::kByte;
    case DataType::kInt32:
      return at::kInt;
    case DataType::kInt64:
      return at::kLong;
    case DataType::kFloat16:
      return at::kHalf;
    case DataType::kFloat32:
      return at::kFloat;
    case DataType::kFloat64:
      return at::kDouble;
  }
  throw CommError("process group: unknown data type");
}

c10d::ReduceOp reduce_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return c10d::ReduceOp::SUM;
    case ReduceOp::kMax:
      return c10d::ReduceOp::MAX;
    case ReduceOp::kMin:
      return c10d::ReduceOp::MIN;
  }
  throw CommError("process group: unknown reduce op");
}

// `count` elements of `type` at `data`, as a tensor on `device` that shares the memory.
at::Tensor wrap(const void* data, std::size_t count, DataType type, c10::Device device) {
  return at::from_blob(const_cast<void*>(data), {static_cast<std::int64_t>(count)},
                       at::TensorOptions().dtype(scalar_type(type)).device(device));
}

std::size_t total(const std::vector<std::size_t>& counts) {
  std::size_t n = 0;
  for (std::size_t c : counts) n += c;
  return n;
}

std::vector<std::int64_t> as_int64(const std::vector<std::size_t>& counts) {
  return std::vector<std::int64_t>(counts.begin(), counts.end());
}

}  // namespace

ProcessGroupCommunicator::ProcessGroupCommunicator(c10::intrusive_ptr<c10d::ProcessGroup> group,
                                                   c10::Device device)
    : group_(std::move(group)), device_(device) {
  if (!group_) throw CommError("process group: none given");
  rank_ = group_->getRank();
  size_ = group_->getSize();
}

bool ProcessGroupCommunicator::staged(const Collective& c) const {
  if (!device_.is_cuda()) return false;
  if (c.ready_on != nullptr) return c.ready_on->is_host();
  return kernels::device_of(c.recv != nullptr ? c.recv : c.send) == Device::kHost;
}

WorkHandle ProcessGroupCommunicator::start(const Collective& c) {
  check_arguments(c, rank_, size_, "process group ");
  if (!staged(c)) return run_on_device(c);
  // Host buffers on a CUDA group: device copies in, the collective, the result copied back
  // (Note [Collectives on a process group]).
  std::size_t sent = c.count, received = c.count;
  if (c.op == CollectiveOp::kAllgatherv) received = total(c.recv_counts);
  if (c.op == CollectiveOp::kAlltoallv) {
    sent = total(c.send_counts);
    received = total(c.recv_counts);
  }
  const at::Tensor host_recv = wrap(c.recv, received, c.type, c10::Device(c10::kCPU));
  const at::Tensor recv = c.in_place() ? host_recv.to(device_)
                                       : at::empty({static_cast<std::int64_t>(received)},
                                                   host_recv.options().device(device_));
  const at::Tensor send =
      c.in_place() ? recv : wrap(c.send, sent, c.type, c10::Device(c10::kCPU)).to(device_);
  Collective on_device = c;
  on_device.send = send.data_ptr();
  on_device.recv = recv.data_ptr();
  on_device.ready_on = nullptr;
  run_on_device(on_device);
  host_recv.copy_(recv);
  return completed_work();
}

WorkHandle ProcessGroupCommunicator::run_on_device(const Collective& c) {
  const std::string what = std::string(to_string(c.op)) + " on rank " + std::to_string(rank_);
  try {
    switch (c.op) {
      case CollectiveOp::kAllreduce: {
        std::vector<at::Tensor> tensors{wrap(c.recv, c.count, c.type, device_)};
        c10d::AllreduceOptions options;
        options.reduceOp = reduce_op(c.reduce);
        group_->allreduce(tensors, options)->wait();
        break;
      }
      case CollectiveOp::kBroadcast: {
        std::vector<at::Tensor> tensors{wrap(c.recv, c.count, c.type, device_)};
        c10d::BroadcastOptions options;
        options.rootRank = c.root;
        group_->broadcast(tensors, options)->wait();
        break;
      }
      case CollectiveOp::kAlltoallv: {
        at::Tensor in = wrap(c.send, total(c.send_counts), c.type, device_);
        at::Tensor out = wrap(c.recv, total(c.recv_counts), c.type, device_);
        std::vector<std::int64_t> out_splits = as_int64(c.recv_counts);
        std::vector<std::int64_t> in_splits = as_int64(c.send_counts);
#if TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR >= 215
        group_->all_to_all_single(out, in, out_splits, in_splits)->wait();
#else  // its older name, deprecated since
        group_->alltoall_base(out, in, out_splits, in_splits)->wait();
#endif
        break;
      }
      case CollectiveOp::kAllgatherv:
        allgatherv(c);
        break;
    }
  } catch (const CommError&) {
    throw;
  } catch (const std::exception& e) {
    throw CommError("process group " + what + ": " + e.what());
  }
  return completed_work();
}

void ProcessGroupCommunicator::allgatherv(const Collective& c) {
  const std::size_t block = *std::max_element(c.recv_counts.begin(), c.recv_counts.end());
  if (block == 0) return;
  const std::size_t element = size_of(c.type);
  const auto options = at::TensorOptions().dtype(scalar_type(c.type)).device(device_);
  at::Tensor mine = at::zeros({static_cast<std::int64_t>(block)}, options);
  if (c.count != 0) mine.narrow(0, 0, c.count).copy_(wrap(c.send, c.count, c.type, device_));
  std::vector<at::Tensor> blocks;
  for (int r = 0; r < size_; ++r)
    blocks.push_back(at::empty({static_cast<std::int64_t>(block)}, options));
  std::vector<std::vector<at::Tensor>> outputs{blocks};
  std::vector<at::Tensor> inputs{mine};
  group_->allgather(outputs, inputs)->wait();
  std::size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    const std::size_t n = c.recv_counts[r];
    if (n != 0) {
      at::Tensor into = wrap(static_cast<char*>(c.recv) + offset * element, n, c.type, device_);
      into.copy_(outputs[0][r].narrow(0, 0, static_cast<std::int64_t>(n)));
    }
    offset += n;
  }
}

void ProcessGroupCommunicator::barrier() {
  try {
    group_->barrier()->wait();
  } catch (const std::exception& e) {
    throw CommError("process group barrier on rank " + std::to_string(rank_) + ": " + e.what());
  }
}

}  // namespace gw::torch_bridge
