#include "plugin/exchange/split_ranges.h"

#include <algorithm>

namespace gw::exchange {

std::size_t range_numel(const compressors::BucketView& bucket,
                        const compressors::ExchangePlan& plan, std::size_t ranges, std::size_t r) {
  std::size_t numel = 0;
  for (std::size_t pos : plan.sparse)
    numel += compressors::split_range(bucket.tensors[pos].numel, ranges, r).len;
  return numel;
}

void lay_out_range(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                   std::size_t ranges, std::size_t r, float* data, compressors::BucketView& view) {
  view = bucket;
  std::size_t numel = 0;
  for (std::size_t pos : plan.sparse) {
    const compressors::SplitRange range =
        compressors::split_range(bucket.tensors[pos].numel, ranges, r);
    view.tensors[pos].offset = numel;
    view.tensors[pos].numel = range.len;
    numel += range.len;
  }
  view.data = data;
  view.numel = numel;
}

void range_of_bucket(const compressors::BucketView& bucket, const compressors::ExchangePlan& plan,
                     std::size_t ranges, std::size_t r, compressors::BucketView& view) {
  view = bucket;
  for (std::size_t pos : plan.sparse) {
    const compressors::SplitRange range =
        compressors::split_range(bucket.tensors[pos].numel, ranges, r);
    view.tensors[pos].offset += range.begin;
    view.tensors[pos].numel = range.len;
  }
}

void cut_plan(const compressors::ExchangePlan& from, std::size_t ranges,
              std::size_t (*kept)(std::size_t, std::size_t), compressors::ExchangePlan& out) {
  out = from;
  for (std::size_t t = 0; t < out.k.size(); ++t) out.k[t] = kept(from.k[t], ranges);
}

void KeptPairs::prepare(const compressors::ExchangePlan& from, std::size_t ranges,
                        std::size_t (*kept)(std::size_t, std::size_t),
                        const kernels::Stream& stream) {
  cut_plan(from, ranges, kept, plan);
  message.clear();
  message.reserve(compressors::max_message_words(plan), stream);
}

std::uint32_t* RangeMessages::reserve(std::size_t ranges, std::size_t total,
                                      const kernels::Stream& stream) {
  offset_.assign(ranges, 0);
  words_per_range_.assign(ranges, 0);
  return words_.reserve_discard(std::max<std::size_t>(total, 1), stream);
}

void RangeMessages::set_range(std::size_t r, std::size_t offset, std::size_t words) {
  offset_[r] = offset;
  words_per_range_[r] = words;
}

void RangeMessages::validate(const compressors::BucketView& bucket,
                             const compressors::ExchangePlan& plan,
                             const std::vector<int>* keeper, const kernels::Stream& stream) {
  const std::size_t ranges = offset_.size();
  views_.resize(ranges, bucket);
  segments_.resize(ranges);
  for (std::size_t r = 0; r < ranges; ++r) {
    range_of_bucket(bucket, plan, ranges, r, views_[r]);
    one_.assign(1, words_per_range_[r]);
    compressors::validate_sparse_messages(
        views_[r], plan, words_.data() + offset_[r], one_, segments_[r], stream,
        keeper != nullptr ? (*keeper)[r] : static_cast<int>(r));
  }
}

void RangeMessages::accumulate(const compressors::ExchangePlan& plan,
                               const kernels::Stream& stream) {
  for (std::size_t r = 0; r < views_.size(); ++r) {
    compressors::accumulate_sparse_messages(views_[r], plan, words_.data() + offset_[r],
                                            segments_[r], stream);
  }
}

}  // namespace gw::exchange
