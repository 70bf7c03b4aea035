#include "plugin/exchange/bucket_exchange.h"

#include <chrono>

namespace gw {
namespace {

void record(ExchangeTimes* times, kernels::Event ExchangeTimes::*phase,
            const kernels::Stream& stream) {
  if (times) (times->*phase).record(stream);
}

}  // namespace

exchange::SparseExchange& BucketExchange::split_for(Communicator& comm) {
  const Levels* levels = comm.levels();
  if (levels == nullptr || levels->local->size() < 2 || levels->cross->size() < 2) return split_;
  if (!two_level_) two_level_ = std::make_unique<exchange::TwoLevelSplit>();
  return *two_level_;
}

exchange::SparseExchange* BucketExchange::sparse_for(Communicator& comm,
                                                     const compressors::ExchangePlan& plan) {
  if (plan.sparse.empty()) return nullptr;
  switch (plan.sparse_algo) {
    case compressors::SparseAlgo::kAllgather:
      return &allgather_;
    case compressors::SparseAlgo::kPadded:
      return &padded_;
    case compressors::SparseAlgo::kSplit:
      break;
  }
  return &split_for(comm);
}

const compressors::ExchangePlan& BucketExchange::run(Communicator& comm,
                                                     compressors::Compressor& compressor,
                                                     const compressors::BucketView& bucket,
                                                     TrafficKind kind, ExchangeTimes* times) {
  const kernels::Stream& stream = compressor.stream();
  const compressors::EncodedBucket& payload =
      payload_.encode(compressor, bucket, comm.size(), split_for(comm).packing(comm));
  const compressors::ExchangePlan& plan = payload_.plan();
  record(times, &ExchangeTimes::encoded, stream);
  // Note [Collectives ordered on a stream]: where the communicator orders its collectives on the
  // compressor's stream, nothing here waits for the device.
  const bool ordered = comm.orders_on(stream);
  if (!ordered) stream.synchronize();

  const float* q =
      dense_.exchange(comm, compressor.low_rank(), bucket, plan, payload, kind, stream, ordered);
  compressors::SparseInbox* sparse = nullptr;
  if (exchange::SparseExchange* algorithm = sparse_for(comm, plan)) {
    sparse = &algorithm->exchange(comm, {bucket, payload_, compressor.reselector(), stream}, kind);
  }
  record(times, &ExchangeTimes::exchanged, stream);

  payload_.decode(bucket, compressor.low_rank(), q, sparse, stream);
  record(times, &ExchangeTimes::decoded, stream);
  if (!ordered) stream.synchronize();
  return plan;
}

ExchangeTrial BucketExchange::trial(compressors::Compressor& compressor,
                                    const compressors::BucketView& bucket, int world_size) {
  const kernels::Stream& stream = compressor.stream();
  const auto begin = std::chrono::steady_clock::now();
  const compressors::EncodedBucket& payload =
      payload_.encode(compressor, bucket, world_size, {static_cast<std::size_t>(world_size), 1});
  const compressors::ExchangePlan& plan = payload_.plan();
  dense_.local_only(compressor.low_rank(), bucket, plan, payload, stream);
  compressors::decode_dense(bucket, plan, payload, stream);
  stream.synchronize();
  ExchangeTrial t;
  t.codec_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  t.dense_elements = payload.dense_count + plan.p_count();
  if (plan.dense_wire == compressors::DenseWire::kFloat16) t.dense_element_size = sizeof(Half);
  t.q_elements = plan.q_count();
  t.sparse = !plan.sparse.empty();
  t.split = payload.sparse_to != nullptr;
  t.sparse_words = payload_.sparse_words();
  return t;
}

}  // namespace gw
