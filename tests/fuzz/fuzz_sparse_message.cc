// A peer's sparse payload through the receiver's checks and decoding (compressors/sparse_message.h,
// Note [Sparse message format]).
//
// The input is little-endian 32-bit words:
//   world size      n = 1 + w % 4
//   tensor count    T = 1 + w % 6
//   T descriptors   numel = (w & 0xFFFF) % 257; dense when w >> 16 == 0xFFFF, else sparse with
//                   k = (w >> 16) % (numel + 1)
//   n lengths       each rank's announced message length in words (signed)
//   the messages    rank 0's words, rank 1's, ... (zeros where the input runs out)
// Invariants, against a reference decoder written here for clarity (no speed):
// - validation accepts exactly what the reference accepts: counts within k, lengths that match,
//   every index in range and strictly increasing within its tensor; values are not judged (a NaN is
//   a gradient the AMP check deals with);
// - a rejection is a PayloadError naming the first bad rank, and leaves the bucket untouched;
// - after an acceptance, each sparse tensor holds the sum of every rank's pairs (bit for bit, in
//   rank order, NaN where the reference has NaN) and each dense tensor is untouched.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compressors/sparse_message.h"
#include "fuzz_check.h"

using gw::fuzz::check;
using gw::fuzz::fail;
namespace gc = gw::compressors;

namespace {

struct Case {
  std::size_t world = 1;
  gc::BucketView bucket;
  gc::ExchangePlan plan;
  std::vector<std::int64_t> announced;
  std::vector<std::uint32_t> words;
};

class WordReader {
 public:
  WordReader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  bool next(std::uint32_t* out) {
    if (at_ + 4 > size_) return false;
    *out = std::uint32_t{data_[at_]} | std::uint32_t{data_[at_ + 1]} << 8 |
           std::uint32_t{data_[at_ + 2]} << 16 | std::uint32_t{data_[at_ + 3]} << 24;
    at_ += 4;
    return true;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

std::optional<Case> read_case(const std::uint8_t* data, std::size_t size,
                              std::vector<float>& storage) {
  WordReader in(data, size);
  std::uint32_t w = 0;
  Case c;
  if (!in.next(&w)) return std::nullopt;
  c.world = 1 + w % 4;
  if (!in.next(&w)) return std::nullopt;
  const std::size_t tensors = 1 + w % 6;
  std::size_t offset = 0;
  for (std::size_t t = 0; t < tensors; ++t) {
    if (!in.next(&w)) return std::nullopt;
    const std::size_t numel = (w & 0xFFFF) % 257;
    c.bucket.tensors.push_back({t, offset, numel});
    if ((w >> 16) != 0xFFFF) {
      c.plan.sparse.push_back(t);
      c.plan.k.push_back((w >> 16) % (numel + 1));
    } else {
      c.plan.dense.push_back(t);
    }
    offset += numel;
  }
  c.bucket.numel = offset;
  c.bucket.index = 7;
  for (std::size_t r = 0; r < c.world; ++r) {
    if (!in.next(&w)) return std::nullopt;
    c.announced.push_back(static_cast<std::int32_t>(w));
  }
  while (in.next(&w)) c.words.push_back(w);
  // A recognisable pattern, to see that rejection leaves the bucket alone.
  storage.assign(offset, 0.0f);
  for (std::size_t i = 0; i < offset; ++i) storage[i] = 0.25f * static_cast<float>(i % 13) - 1.0f;
  c.bucket.data = storage.data();
  return c;
}

float as_float(std::uint32_t w) {
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

// The reference: the first rank whose message breaks the format, or -1 when every one is valid.
int first_bad_rank(const Case& c, const std::vector<std::size_t>& sizes) {
  std::size_t offset = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    const std::uint32_t* msg = c.words.data() + offset;
    offset += sizes[r];
    std::size_t at = 0;
    bool bad = false;
    for (std::size_t j = 0; j < c.plan.sparse.size() && !bad; ++j) {
      const std::size_t numel = c.bucket.tensors[c.plan.sparse[j]].numel;
      if (at >= sizes[r]) {
        bad = true;
        break;
      }
      const std::size_t count = msg[at++];
      if (count > c.plan.k[j] || (sizes[r] - at) / 2 < count) {
        bad = true;
        break;
      }
      // Every index in range and strictly above the one before (Note [Sparse message format]).
      for (std::size_t i = 0; i < count; ++i) {
        const std::uint32_t index = msg[at + 2 * i];
        if (index >= numel || (i > 0 && index <= msg[at + 2 * i - 2])) bad = true;
      }
      at += 2 * count;
    }
    if (bad || at != sizes[r]) return static_cast<int>(r);
  }
  return -1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<float> storage;
  std::optional<Case> parsed = read_case(data, size, storage);
  if (!parsed) return 0;
  Case& c = *parsed;
  const std::vector<float> before = storage;
  const auto unchanged = [&] {
    return storage.empty() ||
           std::memcmp(storage.data(), before.data(), storage.size() * sizeof(float)) == 0;
  };

  std::vector<std::size_t> sizes;
  try {
    gc::check_message_sizes(c.bucket, c.plan, c.announced, sizes);
  } catch (const gc::PayloadError&) {
    const std::size_t most = gc::max_message_words(c.plan);
    bool any_bad = false;
    for (std::int64_t a : c.announced) any_bad |= a < 0 || static_cast<std::uint64_t>(a) > most;
    check(any_bad, "check_message_sizes rejected lengths within the plan's limit");
    return 0;
  }
  std::size_t total = 0;
  for (std::size_t s : sizes) {
    check(s <= gc::max_message_words(c.plan), "an accepted length exceeds the plan's limit");
    total += s;
  }
  c.words.resize(total, 0u);  // what the allgatherv would deliver: exactly the announced words

  const int expected_bad = first_bad_rank(c, sizes);
  // One for the whole run, as BucketExchange keeps one: what an earlier input left in it must not
  // change this one's result.
  static gc::SparseSegments sent;
  try {
    gc::validate_sparse_messages(c.bucket, c.plan, c.words.data(), sizes, sent);
  } catch (const gc::PayloadError& e) {
    if (expected_bad < 0) fail(std::string("a valid message was rejected: ") + e.what());
    const std::string sender = "from rank " + std::to_string(expected_bad) + " ";
    if (std::string(e.what()).find(sender) == std::string::npos) {
      fail("the error does not name rank " + std::to_string(expected_bad) + ": " + e.what());
    }
    check(unchanged(), "a rejected message changed the bucket");
    return 0;
  }
  if (expected_bad >= 0) {
    fail("accepted a malformed message from rank " + std::to_string(expected_bad) +
         " (a count, an index out of range or not above the one before)");
  }
  check(unchanged(), "validation changed the bucket");

  // The reference sums, in rank order as the decoder adds them.
  std::vector<float> expected = before;
  for (std::size_t pos : c.plan.sparse) {
    const gc::TensorSlot& t = c.bucket.tensors[pos];
    for (std::size_t i = 0; i < t.numel; ++i) expected[t.offset + i] = 0.0f;
  }
  std::size_t offset = 0;
  for (std::size_t s : sizes) {
    std::size_t at = offset;
    for (std::size_t pos : c.plan.sparse) {
      const gc::TensorSlot& t = c.bucket.tensors[pos];
      const std::size_t count = c.words[at++];
      for (std::size_t i = 0; i < count; ++i) {
        expected[t.offset + c.words[at + 2 * i]] += as_float(c.words[at + 2 * i + 1]);
      }
      at += 2 * count;
    }
    offset += s;
  }
  gc::accumulate_sparse_messages(c.bucket, c.plan, c.words.data(), sent);
  for (std::size_t i = 0; i < storage.size(); ++i) {
    const bool same = std::isnan(expected[i])
                          ? std::isnan(storage[i])
                          : std::memcmp(&expected[i], &storage[i], sizeof(float)) == 0;
    if (!same) {
      fail("element " + std::to_string(i) + " decoded as " + std::to_string(storage[i]) +
           ", the reference sum is " + std::to_string(expected[i]));
    }
  }
  return 0;
}
