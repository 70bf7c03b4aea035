#include "plugin/exchange/bucket_exchange.h"

#include <chrono>

namespace gw {
namespace {

void record(ExchangeTimes* times, kernels::Event ExchangeTimes::*phase,
            const kernels::Stream& stream) {
  if (times) (times->*phase).record(stream);
}

}  // namespace

exchange::SparseExchange* BucketExchange::sparse_for(Communicator& comm,
                                                     const compressors::ExchangePlan& plan) {
  if (plan.sparse.empty()) return nullptr;
  if (plan.sparse_algo != compressors::SparseAlgo::kSplit) return &allgather_;
  const Levels* levels = comm.levels();
  if (levels == nullptr || levels->local->size() < 2 || levels->cross->size() < 2) return &split_;
  if (!two_level_) two_level_ = std::make_unique<exchange::TwoLevelSplit>();
  return two_level_.get();
}

const compressors::ExchangePlan& BucketExchange::run(Communicator& comm,
                                                     compressors::Compressor& compressor,
                                                     const compressors::BucketView& bucket,
                                                     TrafficKind kind, ExchangeTimes* times) {
  const int n = comm.size();
  const kernels::Stream& stream = compressor.stream();
  compressor.plan_into(bucket, n, plan_);
  exchange::SparseExchange* sparse = sparse_for(comm, plan_);
  const compressors::EncodedBucket payload = payload_.lay_out(bucket, plan_, n, stream);

  compressor.encode(bucket, plan_, n, payload);
  record(times, &ExchangeTimes::encoded, stream);
  stream.synchronize();

  dense_.exchange(comm, compressor.low_rank(), bucket, plan_, payload, kind, stream);
  if (sparse) sparse->exchange(comm, {bucket, plan_, payload, compressor.reselector(), stream}, kind);
  record(times, &ExchangeTimes::exchanged, stream);

  dense_.decode(compressor.low_rank(), bucket, plan_, payload, stream);
  if (sparse) sparse->decode(bucket, plan_, stream);
  record(times, &ExchangeTimes::decoded, stream);
  stream.synchronize();
  return plan_;
}

ExchangeTrial BucketExchange::trial(compressors::Compressor& compressor,
                                    const compressors::BucketView& bucket, int world_size) {
  const kernels::Stream& stream = compressor.stream();
  const auto begin = std::chrono::steady_clock::now();
  compressor.plan_into(bucket, world_size, plan_);
  const compressors::EncodedBucket payload = payload_.lay_out(bucket, plan_, world_size, stream);
  compressor.encode(bucket, plan_, world_size, payload);
  dense_.local_only(compressor.low_rank(), bucket, plan_, payload, stream);
  compressors::decode_dense(bucket, plan_, payload, stream);
  stream.synchronize();
  ExchangeTrial t;
  t.codec_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  t.dense_elements = payload.dense_count + plan_.p_count();
  if (plan_.dense_wire == compressors::DenseWire::kFloat16) t.dense_element_size = sizeof(Half);
  t.q_elements = plan_.q_count();
  t.sparse = !plan_.sparse.empty();
  t.split = payload.sparse_to != nullptr;
  t.sparse_words = payload_.sparse_words();
  return t;
}

}  // namespace gw
