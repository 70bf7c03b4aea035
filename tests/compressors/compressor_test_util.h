// Helpers for the compressor tests: buckets over local buffers, and a single-process stand-in for
// the exchange (the real one runs under mpirun in tests/plugin).
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "compressors/compressor.h"
#include "compressors/sparse_message.h"
#include "kernels/sparse_wire.h"

namespace gw::compressors::testing {

// A bucket over `storage` holding tensors of the given sizes, back to back.
inline BucketView make_bucket(std::vector<float>& storage, const std::vector<std::size_t>& numels) {
  BucketView b;
  std::size_t offset = 0;
  for (std::size_t p = 0; p < numels.size(); ++p) {
    b.tensors.push_back({p, offset, numels[p]});
    offset += numels[p];
  }
  storage.resize(offset);
  b.data = storage.data();
  b.numel = offset;
  return b;
}

inline std::vector<float> normal_values(std::size_t n, std::uint64_t seed, float stddev = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// One rank's encoded bucket, kept for a simulated exchange.
struct Encoded {
  ExchangePlan plan;
  std::vector<float> dense;  // fp32 dense part
  std::vector<std::uint32_t> words;
};

inline Encoded encode_copy(Compressor& c, const BucketView& bucket, int world_size) {
  Encoded e;
  e.plan = c.plan(bucket, world_size);
  std::size_t dense = 0;
  for (std::size_t pos : e.plan.dense) dense += bucket.tensors[pos].numel;
  e.dense.resize(dense);
  SparseMessageWriter writer;
  EncodedBucket out;
  out.f32 = e.dense.data();
  out.dense_count = dense;
  out.sparse = &writer;
  c.encode(bucket, e.plan, world_size, out);
  e.words = writer.words();
  return e;
}

// The sum over "ranks" of what they sent, as the plugin would leave it in `bucket`.
inline void combine(const std::vector<Encoded>& ranks, const BucketView& bucket) {
  const ExchangePlan& plan = ranks.front().plan;
  std::vector<float> dense(ranks.front().dense.size(), 0.0f);
  std::vector<std::uint32_t> words;
  std::vector<std::size_t> sizes;
  for (const auto& r : ranks) {
    for (std::size_t i = 0; i < dense.size(); ++i) dense[i] += r.dense[i];
    words.insert(words.end(), r.words.begin(), r.words.end());
    sizes.push_back(r.words.size());
  }
  EncodedBucket reduced;
  reduced.f32 = dense.data();
  reduced.dense_count = dense.size();
  decode_dense(bucket, plan, reduced);
  if (!plan.sparse.empty()) {
    SparseSegments sent;
    validate_sparse_messages(bucket, plan, words.data(), sizes, sent);
    accumulate_sparse_messages(bucket, plan, words.data(), sent);
  }
}

// The dense tensor a single rank's sparse message stands for (zeros elsewhere), per sparse entry.
inline std::vector<std::vector<float>> unpack(const Encoded& e, const BucketView& bucket) {
  std::vector<std::vector<float>> out;
  std::size_t at = 0;
  for (std::size_t j = 0; j < e.plan.sparse.size(); ++j) {
    std::vector<float> t(bucket.tensors[e.plan.sparse[j]].numel, 0.0f);
    if (is_compact(e.plan.sparse_wire)) {
      const std::size_t k = e.plan.k[j];
      std::vector<std::uint32_t> pairs(2 * k);
      std::vector<std::uint64_t> scratch(kernels::wire_scratch(k));
      const kernels::WireCheck check = kernels::decode_wire(
          e.words.data() + at, e.words.size() - at, t.size(), k, false, pairs.data(),
          scratch.data(), kernels::Stream::host(), wire_value_bits(e.plan.sparse_wire));
      if (!check.ok()) throw std::runtime_error(kernels::to_string(check.problem));
      for (std::size_t i = 0; i < check.pairs; ++i) {
        float v;
        std::memcpy(&v, &pairs[2 * i + 1], sizeof v);
        t[pairs[2 * i]] += v;
      }
      at += check.words;
      out.push_back(std::move(t));
      continue;
    }
    const std::size_t count = e.words[at++];
    for (std::size_t i = 0; i < count; ++i) {
      float v;
      static_assert(sizeof v == sizeof e.words[0]);
      std::memcpy(&v, &e.words[at + 2 * i + 1], sizeof v);
      t[e.words[at + 2 * i]] += v;
    }
    at += 2 * count;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace gw::compressors::testing
